"""corpus.type sources: sentence pairs from corpora by name, URLs and files, mixed (their
options checked: corpora/source_checks.py).

    corpus.train_sources: [Source, ...]   corpus.valid_source, test_source: Source
    each Source (seq2seq/options.py) is one of
        {opus: Tatoeba}     an OPUS corpus, its Moses zip for the pair (the OPUS API says where)
        {sacrebleu: wmt14}  a test set through sacreBLEU's own registry and download code
        {url: URL}          a .tsv, .tsv.gz, a .zip of a Moses pair, or a pair named with {lang};
                            or a catalog: .po, .mo, .xlf, .xliff, .tmx (localization/catalogs.py)
        {file: PATH}        the same, a file of yours, or a folder of catalogs (its hold_out:
                            whole catalogs held out for valid and test)
        {suggestions: PATH} a service's suggestions file (localization/suggestions.py): what its
                            users corrected

    Source --fetch--> its files: downloaded into data/<corpus.name>/raw/ (corpora/download.py:
                      checked, recorded in raw/manifest.json), or your own where they are
           --read-->  (source, target) pairs: a Part of its split (corpora/cleaning.py)
           --clean--> --max_pairs: the first N kept--> --weight: N times--> the split

Every source of every split is fetched, and each zip's pair of files found, before a pair is
written: a source that cannot be had is an error before data/<corpus.name>/ changes. Once
its files are in the manifest, a source is read from raw/ with no request at all (the OPUS
API and sacreBLEU included). The cleaning, max_pairs and weight are build_corpus's, with
every corpus type's cleaning (corpora/cleaning.py: clean_mixed), so that each source is cleaned
before its max_pairs and weight, and its weight's copies are not duplicates; `make data`
prints, and writes to report.json, each source's counts beside its split's (a catalog's
entries that are no pairs too: header, fuzzy, untranslated, obsolete).
"""

import copy
import difflib
import hashlib
import posixpath
import tarfile
import urllib.parse
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sacrebleu import DATASETS

from seq2seq.corpora.cleaning import Mixed, Part
from seq2seq.corpora.download import DownloadError, Downloads
from seq2seq.localization import catalogs
from seq2seq.localization.suggestions import read_suggestions
from seq2seq.options import Config, CorpusConfig, Source
from seq2seq.support.paths import RAW
from seq2seq.text.parallel import (
    SPLITS,
    CorpusError,
    PairStream,
    iter_parallel,
    iter_tsv,
    utf8_lines,
    zip_parallel,
)

OPUS_API = "https://opus.nlpl.eu/opusapi/"
LANG = "{lang}"  # in a url or file: a Moses pair, one file per language


@dataclass
class Fetched:
    """A source whose files are at hand: what it is, and how to read its pairs."""

    label: str
    read: Callable[[catalogs.Skipped], PairStream]  # what is no pair counted in its argument


def splits(config: Config) -> dict[str, Mixed]:
    """Each split's sources as its parts: every source fetched now, read as the split is
    written."""
    corpus = config.corpus
    downloads = Downloads(config.data_dir / RAW, corpus.mirror)
    mixed = {split: Mixed([]) for split in SPLITS}
    for i, source in enumerate(corpus.train_sources):
        key = f"train_sources[{i}]"
        if source.hold_out:
            for split, held in held_out_parts(key, source, corpus).items():
                mixed[split].parts.append(held)
        else:
            mixed["train"].parts.append(part(key, source, corpus, downloads))
    for split in ("valid", "test"):
        if source := getattr(corpus, f"{split}_source"):
            mixed[split].parts.append(part(f"{split}_source", source, corpus, downloads))
    return {split: m for split, m in mixed.items() if m.parts}  # none: split off train


def part(key: str, source: Source, corpus: CorpusConfig, downloads: Downloads) -> Part:
    """A source as a part of its split, named by its config key and what it is."""
    fetched = fetch(source, corpus, downloads)
    skipped: catalogs.Skipped = {}
    pairs = fetched.read(skipped)
    return Part(f"{key} {fetched.label}", pairs, source.max_pairs, source.weight, skipped)


def held_out_parts(key: str, source: Source, corpus: CorpusConfig) -> dict[str, Part]:
    """A folder of catalogs as a part of each split: whole catalogs, by program, held out for
    valid and test (catalogs.held_out), each split's named in its label."""
    folder = Path(source.file)
    if not folder.is_dir():
        raise CorpusError(f"{folder}: not a folder ({key}.hold_out is for a folder of catalogs)")
    paths = catalogs.catalog_files(folder, source.programs)
    parts = {}
    for split, chosen in catalogs.held_out(folder, paths, source.hold_out, corpus.seed).items():
        names = ", ".join(path.relative_to(folder).as_posix() for path in chosen)
        skipped: catalogs.Skipped = {}
        pairs = catalogs.read_catalogs(chosen, sides(corpus), skipped)
        if split == "train":
            label = f"{key} ({source.file}, {len(chosen)} catalogs)"
            parts[split] = Part(label, pairs, source.max_pairs, source.weight, skipped)
        else:
            label = f"{key} ({source.file}, {len(chosen)} held out: {names})"
            parts[split] = Part(label, pairs, skipped=skipped)
    return parts


def fetch(source: Source, corpus: CorpusConfig, downloads: Downloads) -> Fetched:
    """The source's files, downloaded (or found in the cache) and checked."""
    if source.opus:
        return Fetched(
            f"(opus {source.opus})", pair_reader(opus(source, corpus, downloads), corpus)
        )
    if source.sacrebleu:
        files = sacrebleu_files(source.sacrebleu, corpus, downloads)
        return Fetched(f"(sacrebleu {source.sacrebleu})", pair_reader(files, corpus))
    if source.url:
        return Fetched(
            f"({source.url})", pair_reader(url_files(source.url, corpus, downloads), corpus)
        )
    if source.suggestions:
        pairs = read_suggestions(Path(source.suggestions), *sides(corpus))  # now: it may grow
        return Fetched(f"({source.suggestions})", lambda skipped: iter(pairs))
    group = "" if source.programs == "all" else f", its {source.programs} programs"
    files = local_files(source.file, corpus)
    return Fetched(f"({source.file}{group})", pair_reader(files, corpus, source.programs))


def pair_reader(
    files: Path | tuple[Path, Path], corpus: CorpusConfig, programs: str = "all"
) -> Callable[[catalogs.Skipped], PairStream]:
    """How to read a source's files: a Moses pair, a zip holding one, a TSV file, a catalog, or
    a folder of catalogs (those of its `programs`: Source.programs)."""
    if isinstance(files, tuple):
        return lambda skipped: iter_parallel(*files)
    if files.is_dir() or catalogs.is_catalog(files):
        paths = catalogs.catalog_files(files, programs) if files.is_dir() else [files]
        return lambda skipped: catalogs.read_catalogs(paths, sides(corpus), skipped)
    if files.name.endswith(".zip"):
        members = moses_members(files, corpus)
        return lambda skipped: read_zip(files, members)
    return lambda skipped: iter_tsv(files)


def sides(corpus: CorpusConfig) -> tuple[str, str]:
    return corpus.src_lang, corpus.tgt_lang


def local_files(path: str, corpus: CorpusConfig) -> Path | tuple[Path, Path]:
    files = tuple(Path(path.replace(LANG, lang)) for lang in sides(corpus))
    for file in files:
        if is_folder(path) and not file.is_dir():
            raise CorpusError(f"{file}: no such folder (a folder of catalogs)")
        if not is_folder(path) and not file.is_file():
            raise CorpusError(f"{file} not found")
    return files if LANG in path else files[0]


def is_folder(path: str) -> bool:
    """A file: source's path names a folder (of catalogs) when its last part has no suffix,
    or it ends in /."""
    return LANG not in path and (path.endswith("/") or not Path(path).suffix)


def url_files(url: str, corpus: CorpusConfig, downloads: Downloads) -> Path | tuple[Path, Path]:
    """The file (or Moses pair) at a URL, in raw/ as url-<its hash>-<its name>."""
    tag = hashlib.sha256(url.encode()).hexdigest()[:8]
    files = []
    for lang in sides(corpus):
        one = url.replace(LANG, lang)
        name = posixpath.basename(urllib.parse.urlsplit(one).path)
        files.append(downloads.fetch(one, f"url-{tag}-{name}"))
    return tuple(files) if LANG in url else files[0]


def moses_members(path: Path, corpus: CorpusConfig) -> tuple[str, str]:
    """The two files of a Moses pair in a zip: the one file ending .<src_lang>, and .<tgt_lang>."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = [info.filename for info in archive.infolist() if not info.is_dir()]
    except (zipfile.BadZipFile, OSError) as error:
        raise CorpusError(f"{path}: not a readable zip file ({error})") from None
    found = []
    for lang in sides(corpus):
        matches = [name for name in names if name.endswith(f".{lang}")]
        if len(matches) != 1:
            what = "no file" if not matches else f"{len(matches)} files"
            raise CorpusError(
                f"{path} holds {what} ending .{lang} (a Moses pair needs one per language; it "
                f"holds {', '.join(names) or 'nothing'})"
            )
        found.append(matches[0])
    return found[0], found[1]


def read_zip(path: Path, members: tuple[str, str]) -> PairStream:
    """The pairs of a Moses pair inside a zip, streamed from it."""
    names = [f"{path}:{member}" for member in members]
    try:
        with (
            zipfile.ZipFile(path) as archive,
            archive.open(members[0]) as src,
            archive.open(members[1]) as tgt,
        ):
            yield from zip_parallel(utf8_lines(src, names[0]), utf8_lines(tgt, names[1]), *names)
    except (zipfile.BadZipFile, OSError, EOFError) as error:
        raise CorpusError(f"{path}: not a readable zip file ({error})") from None


def opus(source: Source, corpus: CorpusConfig, downloads: Downloads) -> Path:
    """An OPUS corpus's Moses zip for the pair: the OPUS API gives its URL (OPUS names a pair in
    alphabetical order, en-fr for fr -> en too)."""
    pair = "-".join(sorted(sides(corpus)))
    name = f"opus-{source.opus}-{source.version}-{pair}.txt.zip"
    if cached := downloads.cached(name):
        return cached
    query = {
        "corpus": source.opus,
        "source": corpus.src_lang,
        "target": corpus.tgt_lang,
        "preprocessing": "moses",
        "version": source.version,
    }
    answer = downloads.read_json(f"{OPUS_API}?{urllib.parse.urlencode(query)}")
    files = answer.get("corpora") if isinstance(answer, dict) else None
    if not files:
        hint = opus_hint(source, corpus, downloads)
        raise DownloadError(f"OPUS has no {source.opus} {source.version} for {pair}{hint}")
    return downloads.fetch(files[0]["url"], name)


def opus_hint(source: Source, corpus: CorpusConfig, downloads: Downloads) -> str:
    """What OPUS does have for the pair, to say with an unknown corpus."""
    query = {"corpora": "True", "source": corpus.src_lang, "target": corpus.tgt_lang}
    answer = downloads.read_json(f"{OPUS_API}?{urllib.parse.urlencode(query)}")
    names = answer.get("corpora", []) if isinstance(answer, dict) else []
    if not names:
        return " (nor any corpus for this pair)"
    close = difflib.get_close_matches(source.opus, names, n=1)
    if close and close[0] != source.opus:
        return f" (did you mean {close[0]}?)"
    return f" (release {source.version}; its corpora for the pair: {', '.join(names[:20])})"


def sacrebleu_files(test_set: str, corpus: CorpusConfig, downloads: Downloads) -> tuple[Path, Path]:
    """A sacreBLEU test set's source text and (first) reference, downloaded and made text by
    sacreBLEU into its cache ($SACREBLEU, else ~/.sacrebleu), then copied into raw/ as a Moses
    pair and recorded in the manifest."""
    pair = "-".join(sides(corpus))
    names = [f"sacrebleu-{test_set.replace('/', '_')}.{pair}.{lang}" for lang in sides(corpus)]
    cached = [downloads.cached(name) for name in names]
    if all(cached):
        return cached[0], cached[1]
    if test_set not in DATASETS:
        close = difflib.get_close_matches(test_set, list(DATASETS), n=1)
        hint = f" (did you mean {close[0]}?)" if close else " (`sacrebleu --list` lists them)"
        raise CorpusError(f"sacreBLEU has no test set {test_set!r}{hint}")
    dataset = copy.copy(DATASETS[test_set])
    if pair not in dataset.langpairs:
        pairs = ", ".join(p for p in dataset.langpairs if "-" in p)
        raise CorpusError(f"sacreBLEU's {test_set} has no {pair} (it has {pairs})")
    dataset.data = [downloads.mirrored(url) for url in dataset.data]
    try:
        files = (dataset.get_source_file(pair), dataset.get_reference_files(pair)[0])
    except (OSError, tarfile.TarError) as error:  # urllib's errors are OSErrors
        raise DownloadError(f"sacreBLEU could not get {test_set} ({error})") from None
    except SystemExit:  # what sacreBLEU does after logging a wrong MD5 sum
        raise DownloadError(
            f"sacreBLEU's download of {test_set} failed its MD5 check (its message above "
            "names the file to delete)"
        ) from None
    origin = f"sacrebleu:{test_set}"
    return downloads.keep(names[0], Path(files[0]), origin), downloads.keep(
        names[1], Path(files[1]), origin
    )
