"""The fixtures of the corpora's tests: the mirror that plays the real sources (server), the
sacreBLEU cache, and both with a test's working directory (served): tests/sources_mirror.py."""

from sources_mirror import sacrebleu_cache, served, server  # noqa: F401 (fixtures)
