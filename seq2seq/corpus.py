"""Parallel text: reading, checking and writing the sentence pairs of a corpus.

A corpus lives in data/<corpus.name>/ as plain parallel text files, one sentence a line,
UTF-8: train.src / train.tgt, valid.src / valid.tgt, test.src / test.tgt. Line N of a .tgt
file translates line N of the .src file.

`build_corpus` makes those files, either from the built-in numbers generator or by reading
the user's own parallel text (corpus.type: parallel: two files per split, or one TSV file,
plain or gzip), checking it, and copying it in. `read_lines` is the one reader for all of
them: UTF-8 always (never the locale's encoding), a byte-order mark and Windows line endings
are accepted, and a mismatch is an error that names the files and the line. Pairs with an
empty side, or longer than corpus.max_words words, are dropped and counted.
"""

import gzip
import zlib
from collections.abc import Callable
from pathlib import Path

from seq2seq import multi30k, numbers
from seq2seq.config import Config
from seq2seq.errors import UserError
from seq2seq.files import write_lines

SPLITS = ("train", "valid", "test")

Pairs = list[tuple[str, str]]


class CorpusError(UserError):
    pass


def read_lines(path: str | Path) -> list[str]:
    """The lines of a UTF-8 text file (gzip-compressed if its name ends in .gz), without line
    endings (LF or CRLF) or a leading byte-order mark."""
    path = Path(path)
    try:
        data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    except FileNotFoundError:
        raise CorpusError(f"{path} not found") from None
    except (OSError, EOFError, zlib.error) as error:  # a truncated or non-gzip .gz file
        raise CorpusError(f"{path}: not a readable gzip file ({error})") from None
    return decode_lines(data, str(path))


def decode_lines(
    data: bytes, name: str, on_invalid: Callable[[int, UnicodeDecodeError], None] | None = None
) -> list[str]:
    """UTF-8 bytes -> lines, split on "\n" only (no other character starts a new line), each
    without its "\r"; a leading byte-order mark dropped. Invalid UTF-8 is an error naming
    `name` and the line, unless on_invalid(line number, error) is given: then it is called
    and the bad bytes become U+FFFD."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the newline that ends the last line
    text_lines = []
    for number, raw in enumerate(lines, start=1):
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
        text_lines.append(line.removesuffix("\r"))
    return text_lines


def read_parallel(src_path: str | Path, tgt_path: str | Path) -> Pairs:
    """Sentence pairs from two parallel files, which must have the same number of lines."""
    src, tgt = read_lines(src_path), read_lines(tgt_path)
    if len(src) != len(tgt):
        raise CorpusError(
            f"{src_path} has {len(src)} lines but {tgt_path} has {len(tgt)}: "
            "parallel files need one line each per sentence pair"
        )
    return [(s.strip(), t.strip()) for s, t in zip(src, tgt, strict=True)]


def read_tsv(path: str | Path) -> Pairs:
    """Sentence pairs from a file of "source<TAB>target" lines."""
    pairs = []
    for number, line in enumerate(read_lines(path), start=1):
        fields = line.split("\t")
        if len(fields) != 2:
            raise CorpusError(
                f"{path}, line {number}: expected source<TAB>target, found {len(fields)} fields"
            )
        pairs.append((fields[0].strip(), fields[1].strip()))
    return pairs


def split_paths(data_dir: Path, split: str) -> tuple[Path, Path]:
    return data_dir / f"{split}.src", data_dir / f"{split}.tgt"


def load_split(config: Config, split: str) -> Pairs:
    """A split of the prepared corpus in data/<corpus.name>/."""
    src, tgt = split_paths(config.data_dir, split)
    if not src.exists() or not tgt.exists():
        raise CorpusError(f"no {split} split in {config.data_dir}/: run `make data` first")
    return read_parallel(src, tgt)


def usable_pairs(pairs: Pairs, max_words: int, label: str) -> Pairs:
    """Drop pairs with an empty side or more than max_words words on a side; say how many."""
    kept = [(s, t) for s, t in pairs if s and t]
    if len(kept) < len(pairs):
        print(f"{label}: dropped {len(pairs) - len(kept)} pairs with an empty side")
    short = [(s, t) for s, t in kept if max(len(s.split()), len(t.split())) <= max_words]
    if len(short) < len(kept):
        print(
            f"{label}: dropped {len(kept) - len(short)} pairs longer than {max_words} words "
            "(corpus.max_words)"
        )
    if not short:
        raise CorpusError(f"{label}: no sentence pairs left to use")
    return short


def build_corpus(config: Config) -> dict[str, int]:
    """Write the corpus of `config` to data/<corpus.name>/; returns the pairs per split."""
    corpus = config.corpus
    if corpus.type == "numbers":
        if corpus.preset == "seed":
            splits = {split: list(numbers.SEED_PAIRS) for split in SPLITS}
        else:
            splits = numbers.generate(corpus)
    elif corpus.type == "multi30k":
        files = multi30k.download(corpus, config.data_dir / "raw")
        splits = {
            split: usable_pairs(read_parallel(src, tgt), corpus.max_words, f"{split} ({src})")
            for split, (src, tgt) in files.items()
        }
    else:
        splits = {}
        for split in SPLITS:
            files = getattr(corpus, split)
            pairs = read_tsv(files.tsv) if files.tsv else read_parallel(files.src, files.tgt)
            splits[split] = usable_pairs(
                pairs, corpus.max_words, f"{split} ({files.tsv or files.src})"
            )
    for split, pairs in splits.items():
        src_path, tgt_path = split_paths(config.data_dir, split)
        write_lines(src_path, [s for s, _ in pairs])
        write_lines(tgt_path, [t for _, t in pairs])
    return {split: len(pairs) for split, pairs in splits.items()}
