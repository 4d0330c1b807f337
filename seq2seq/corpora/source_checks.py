"""corpus.type sources' options checked (problems: each source one of a kind, well formed)
and told (description: a model card's words); the sources fetched and read are sources.py's.

    corpus.train_sources[i], valid_source, test_source (seq2seq/options.py, Source)
      --problems--> "'corpus.train_sources[0]' needs exactly one of opus, sacrebleu, ...", ...
                    (the config's first problem is its ConfigError: seq2seq/config.py)
"""

import re
import urllib.parse
from collections.abc import Iterator

from seq2seq.corpora.download import url_problems
from seq2seq.corpora.sources import LANG, is_folder
from seq2seq.localization import catalogs
from seq2seq.options import CorpusConfig, Source

KINDS = ("opus", "sacrebleu", "url", "file", "suggestions")
SUFFIXES = (".tsv", ".tsv.gz", ".zip", *catalogs.SUFFIXES)  # of a url or file source
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # an OPUS corpus's or release's name


def problems(corpus: CorpusConfig) -> Iterator[str]:
    """corpus.type sources: its language pair, and each source one of a kind, well formed."""
    if not corpus.src_lang.strip() or not corpus.tgt_lang.strip():
        yield "'corpus.src_lang' and 'tgt_lang' must name languages with corpus.type: sources"
    if corpus.src_lang == corpus.tgt_lang:
        yield "'corpus.src_lang' and 'tgt_lang' must differ"
    if not corpus.train_sources:
        yield "'corpus.train_sources' needs at least one source with corpus.type: sources"
    yield from url_problems("corpus.mirror", corpus.mirror)
    for key, source in keyed(corpus.train_sources, "corpus.train_sources"):
        yield from source_problems(source, key)
    for split in ("valid", "test"):
        source = getattr(corpus, f"{split}_source")
        if source is None:  # split off the training sources (corpus.valid_size, test_size)
            continue
        yield from source_problems(source, f"corpus.{split}_source")
        if source.weight != 1:
            yield f"'corpus.{split}_source.weight' is for training sources only"
        if any(s.hold_out for s in corpus.train_sources):
            yield (
                f"'corpus.{split}_source' is given, but a training source's hold_out makes the "
                "valid and test splits: one or the other"
            )


def keyed(sources: list[Source], key: str) -> Iterator[tuple[str, Source]]:
    return ((f"{key}[{i}]", source) for i, source in enumerate(sources))


def catalog_sources(corpus: CorpusConfig) -> Iterator[str]:
    """The keys of the sources read as catalogs (the catalogs extra's): a catalog file or URL,
    or a folder of them."""
    named = [*keyed(corpus.train_sources, "corpus.train_sources"),
             ("corpus.valid_source", corpus.valid_source),
             ("corpus.test_source", corpus.test_source)]  # fmt: skip
    for key, source in named:
        if source is None:
            continue
        path = source.file or urllib.parse.urlsplit(source.url or "").path
        if path.endswith(catalogs.SUFFIXES) or (source.file and is_folder(source.file)):
            yield key


def source_problems(source: Source, key: str) -> Iterator[str]:
    kinds = [kind for kind in KINDS if getattr(source, kind) is not None]
    if len(kinds) != 1:
        yield f"'{key}' needs exactly one of {', '.join(KINDS)}; it has {kinds or 'none'}"
        return
    kind = kinds[0]
    if source.weight < 1:
        yield f"'{key}.weight' must be at least 1, got {source.weight}"
    if source.max_pairs is not None and source.max_pairs < 1:
        yield f"'{key}.max_pairs' must be at least 1, got {source.max_pairs}"
    if kind != "opus" and source.version != "latest":
        yield f"'{key}.version' is for opus sources only"
    if kind == "opus":
        for field in ("opus", "version"):
            if not NAME.fullmatch(getattr(source, field)):
                yield f"'{key}.{field}' is {getattr(source, field)!r}: a name, not a path"
    if kind in ("url", "file"):
        location = getattr(source, kind)
        path = urllib.parse.urlsplit(location).path if kind == "url" else location
        folder = kind == "file" and is_folder(path)
        if LANG not in path and not folder and not path.endswith(SUFFIXES):
            yield (
                f"'{key}.{kind}' must end in .tsv, .tsv.gz or .zip, name a Moses pair with "
                f"{LANG}, be a catalog ({', '.join(catalogs.SUFFIXES)})"
                f"{' or a folder of them' if kind == 'file' else ''}; got {location!r}"
            )
    if source.hold_out:
        yield from hold_out_problems(source, key, kind)
    if source.programs != "all":
        yield from folder_only(source, key, kind, "programs")
    if kind == "url":
        yield from url_problems(f"{key}.url", source.url)


def folder_only(source: Source, key: str, kind: str, option: str) -> Iterator[str]:
    """An option of a folder of catalogs set on another kind of source, as an error."""
    if kind != "file" or not is_folder(source.file):
        yield f"'{key}.{option}' is for a file: source that names a folder of catalogs"


def hold_out_problems(source: Source, key: str, kind: str) -> Iterator[str]:
    if not 0 < source.hold_out < 1:
        yield f"'{key}.hold_out' must be in [0, 1), got {source.hold_out}"
    yield from folder_only(source, key, kind, "hold_out")
    if not key.startswith("corpus.train_sources"):
        yield f"'{key}.hold_out' is for training sources only"


def description(corpus: CorpusConfig) -> str:
    """A model card's words for the corpus: its pair and its training sources."""
    names = [
        f"{kind} {getattr(s, kind)}"
        for s in corpus.train_sources
        for kind in KINDS
        if getattr(s, kind)
    ]
    mirror = f" (downloaded from the mirror {corpus.mirror})" if corpus.mirror else ""
    return f"{corpus.src_lang}-{corpus.tgt_lang} pairs from {', '.join(names)}{mirror}"
