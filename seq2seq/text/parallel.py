"""Parallel text: reading, checking and writing the sentence pairs of a corpus.

A corpus lives in data/<corpus.name>/ as plain parallel text files, one sentence a line,
UTF-8: train.src / train.tgt, valid.src / valid.tgt, test.src / test.tgt. Line N of a .tgt
file translates line N of the .src file.

seq2seq/corpora/corpus_types.py makes those files, with `write_pairs`, from each corpus type's
pairs; this module reads the user's own parallel text for corpus.type: parallel (`splits`: two files
per split, or one TSV file, plain or gzip), checking it. `read_lines` is the one reader for
all of them: UTF-8 always (never the locale's encoding), a byte-order mark and Windows line endings
are accepted, and a mismatch is an error that names the files and the line. A split the
config does not name (valid, test) is split off the training data: seq2seq/corpora/cleaning.py,
which also drops the pairs the config's `clean` section rules out, and counts them.
"""

import gzip
import hashlib
import itertools
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from seq2seq.options import Config, CorpusConfig, SplitFiles
from seq2seq.support.errors import UserError
from seq2seq.support.files import atomic_write
from seq2seq.support.paths import text_files

SPLITS = ("train", "valid", "test")

Pairs = list[tuple[str, str]]  # a split, in memory
PairStream = Iterable[tuple[str, str]]  # pairs as they are read (a file, a generator)


class CorpusError(UserError):
    pass


def iter_lines(path: str | Path) -> Iterator[str]:
    """The lines of a UTF-8 text file (gzip-compressed if its name ends in .gz), one at a time,
    without line endings (LF or CRLF) or a leading byte-order mark: a file of any size is read
    in constant memory."""
    path = Path(path)
    gz = path.suffix == ".gz"
    try:
        with gzip.open(path, "rb") if gz else path.open("rb") as file:
            yield from utf8_lines(file, str(path))
    except FileNotFoundError:
        raise CorpusError(f"{path} not found") from None
    except (OSError, EOFError, zlib.error) as error:  # a truncated or non-gzip .gz file
        what = "not a readable gzip file" if gz else "not readable"
        raise CorpusError(f"{path}: {what} ({error})") from None


def read_lines(path: str | Path) -> list[str]:
    """All the lines of a (small) text file, as iter_lines reads them."""
    return list(iter_lines(path))


def utf8_lines(
    raw_lines: Iterable[bytes],
    name: str,
    on_invalid: Callable[[int, UnicodeDecodeError], None] | None = None,
) -> Iterator[str]:
    """Lines of UTF-8 bytes, each ending in "\n" but perhaps the last (a binary file or stream
    splits on "\n" only, never on other characters) -> text lines, each without its "\r\n" or
    "\n"; a leading byte-order mark dropped. Invalid UTF-8 is an error naming `name` and the
    line, unless on_invalid(line number, error) is given: then it is called and the bad bytes
    become U+FFFD."""
    for number, raw in enumerate(raw_lines, start=1):
        raw = raw.removesuffix(b"\n")
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            if on_invalid is None:
                raise CorpusError(
                    f"{name}, line {number}: invalid UTF-8 ({error.reason})"
                ) from None
            on_invalid(number, error)
            line = raw.decode("utf-8", errors="replace")
        if number == 1:
            line = line.removeprefix("\ufeff")
        yield line.removesuffix("\r")


def iter_parallel(src_path: str | Path, tgt_path: str | Path) -> Iterator[tuple[str, str]]:
    """Sentence pairs from two parallel files, which must have the same number of lines."""
    return zip_parallel(iter_lines(src_path), iter_lines(tgt_path), src_path, tgt_path)


def zip_parallel(
    src: Iterator[str], tgt: Iterator[str], src_path: str | Path, tgt_path: str | Path
) -> Iterator[tuple[str, str]]:
    """Sentence pairs from the lines of two parallel files (named for errors: a file, or a file
    in a zip archive), which must have as many lines each."""
    for count, (s, t) in enumerate(itertools.zip_longest(src, tgt)):
        if s is None or t is None:  # one file ended first: count the rest of the other
            src_count = count + (s is not None) + sum(1 for _ in src)
            tgt_count = count + (t is not None) + sum(1 for _ in tgt)
            raise CorpusError(
                f"{src_path} has {src_count} lines but {tgt_path} has {tgt_count}: "
                "parallel files need one line each per sentence pair"
            )
        yield s.strip(), t.strip()


def read_parallel(src_path: str | Path, tgt_path: str | Path) -> Pairs:
    return list(iter_parallel(src_path, tgt_path))


def iter_tsv(path: str | Path) -> Iterator[tuple[str, str]]:
    """Sentence pairs from a file of "source<TAB>target" lines."""
    for number, line in enumerate(iter_lines(path), start=1):
        fields = line.split("\t")
        if len(fields) != 2:
            raise CorpusError(
                f"{path}, line {number}: expected source<TAB>target, found {len(fields)} fields"
            )
        yield fields[0].strip(), fields[1].strip()


def load_split(config: Config, split: str) -> Pairs:
    """A split of the prepared corpus in data/<corpus.name>/."""
    src, tgt = text_files(config.data_dir, split)
    if not src.exists() or not tgt.exists():
        raise CorpusError(
            f"no {split} split in {config.data_dir}/: run {config.make_command('data')} first"
        )
    return read_parallel(src, tgt)


def write_pairs(data_dir: Path, split: str, pairs: Iterable[tuple[str, str]]) -> int:
    """Write a split's two text files, a pair at a time; returns the number of pairs."""
    src_path, tgt_path = text_files(data_dir, split)
    count = 0
    with atomic_write(src_path) as src, atomic_write(tgt_path) as tgt:
        for s, t in pairs:
            src.write(s + "\n")
            tgt.write(t + "\n")
            count += 1
    return count


def splits(config: Config) -> dict[str, Iterator[tuple[str, str]]]:
    """corpus.type parallel: the pairs of each split the config names, streamed from the
    user's files (a corpus of any size goes through in constant memory)."""
    named = {split: getattr(config.corpus, split) for split in SPLITS}
    return {split: iter_files(files) for split, files in named.items() if files is not None}


def iter_files(files: SplitFiles) -> Iterator[tuple[str, str]]:
    """The sentence pairs of a src and tgt pair of files, or of a tsv file."""
    return iter_tsv(files.tsv) if files.tsv else iter_parallel(files.src, files.tgt)


def files_problem(files: SplitFiles, key: str) -> str | None:
    """What is wrong with the files a config's `key` names, if anything."""
    pair = files.src is not None and files.tgt is not None
    alone = files.tsv is not None and files.src is None and files.tgt is None
    if (pair and files.tsv is None) or alone:
        return None
    return f"'{key}' needs either both 'src' and 'tgt', or 'tsv' alone"


def problems(corpus: CorpusConfig) -> Iterator[str]:
    """corpus.type parallel: the training split names its files, as a src and tgt pair or a
    tsv, and so do valid and test where given; those not given have sizes to split off."""
    for split in SPLITS:
        files = getattr(corpus, split)
        if files is None:
            if split == "train":
                yield (
                    "'corpus.train' (src and tgt files, or a tsv file) is needed with "
                    "corpus.type: parallel"
                )
            elif getattr(corpus, f"{split}_size") <= 0:
                yield f"'corpus.{split}_size' must be positive to split off a {split} split"
            continue
        if problem := files_problem(files, f"corpus.{split}"):
            yield problem


def keyed_hash(text: str, seed: int) -> int:
    """A 64-bit hash of a text keyed by a seed: the same on every run and machine."""
    digest = hashlib.blake2b(text.encode(), digest_size=8, key=str(seed).encode()).digest()
    return int.from_bytes(digest, "big")
