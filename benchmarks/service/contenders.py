"""Each contender of the service benchmarks, started from its name, its models and a beam, like
for like: the one way latency.py, pairs.py, documents.py, profile.py and adapt/served.py start
a server (process.py starts and stops its process).

    with started("ours", [model, ...], beam, settings) as service:    (a Service: url, pid)
        python -m seq2seq.serve --model MODEL ... decode.beam_size=BEAM serve.threads=1 SETTINGS
        a model: a checkpoint, an export or an Argos package; SETTINGS: more of serve's
        arguments (--engine torch, serve.workers=2); its requests by either API, ours or
        LibreTranslate's (clients.Shape)
    with started("libretranslate", [package, ...], beam, python=P) as service:
        LibreTranslate 1.9.6 (libretranslate_peer.py) on the packages, its defaults but
        like_for_like(beam): ARGOS_BEAM_SIZE=BEAM and one decoding thread, as ours
"""

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path

from benchmarks.service.libretranslate_peer import PYTHON, like_for_like, running_libretranslate
from benchmarks.service.process import Service, running_server

SERVERS = ("ours", "libretranslate")


@contextlib.contextmanager
def started(
    name: str,
    models: Sequence[Path],
    beam: int,
    settings: Sequence[str] = (),
    config: str = "config.yaml",
    python: Path = PYTHON,
) -> Iterator[Service]:
    """The contender `name` (SERVERS) serving `models` at beam size `beam` (see the module)."""
    if name == "libretranslate":
        with running_libretranslate(python, list(models), like_for_like(beam)) as service:
            yield service
        return
    args = [arg for model in models for arg in ("--model", str(model))]
    overrides = [f"decode.beam_size={beam}", "serve.threads=1", *settings]
    with running_server(args, config, overrides) as service:
        yield service
