"""Translation catalogs as a corpus source: a catalog, or a folder of them, read as sentence
pairs (each format's entries: localization/catalog_formats.py).

    a {file: PATH} or {url: URL} source (corpora/sources.py) whose name ends in .po .mo .xlf
    .xliff or .tmx (SUFFIXES), or a {file: FOLDER}: every catalog under it, at any depth, in
    the order of their paths (a folder of one language, e.g. usr/share/locale/de/LC_MESSAGES
    or a project's po/de/)

    each catalog --entries--> skip? --no--> (source, target) --> a Part of its split
                                 |                                 (corpora/cleaning.py: cleaned)
                                 +--yes--> skipped[why] += 1 --> report.json, beside the
                                                                  source's read, removed, kept

Duplicates (one string in many catalogs, or in two contexts with one translation) are the
cleaning's, as for any source: its `duplicate` rule keeps the first, per split.

A newline inside an entry is written as the two characters \\n (as a PO file writes it): the
corpus files hold one pair a line. A pair's accelerator ("_Save" / "_Speichern") is taken out
of both sides, as translation takes it out of a request (text/placeholders.py,
accelerator_free): the model learns the words, and the mark goes back after translation.

A folder source with hold_out (seq2seq/options.py, Source) gives its valid and test splits
whole catalogs, chosen by a hash of their paths (`held_out`), so that the scores are on
programs the model has not seen.

A folder source's `programs` takes one group of its programs (PROGRAM_GROUPS): a base model's
own, a user's (what a fine-tune learns from), or those held out from every training (tests on
programs never seen), by a hash of the program's name with a key of its own, not the config's
seed: a program is in the same group in every language's folder, every config and every run.

A folder's gettext catalogs of one language (gettext_catalogs: a vocabulary map's,
seq2seq/exports/vocab_map.py) are those whose Language header names it, or, without one,
whose path does in gettext's layouts: <language>/LC_MESSAGES/<program>.mo, po/<language>.po.
"""

from collections.abc import Iterable, Iterator
from pathlib import Path

from seq2seq.localization.catalog_formats import (
    FORMATS,
    SUFFIXES,
    Pair,
    Reader,
    Skipped,
    gettext_language,
    same_language,
)
from seq2seq.text.parallel import SPLITS, CorpusError, keyed_hash
from seq2seq.text.placeholders import accelerator_free


def is_catalog(path: str | Path) -> bool:
    return str(path).lower().endswith(SUFFIXES)


# The groups a folder's programs fall in (Source.programs), each its share of them, in order.
PROGRAM_GROUPS = {"base": 0.6, "user": 0.2, "held_out": 0.2}
PROGRAM_KEY = 67  # the key of the programs' hashes: fixed, so that every config agrees
GETTEXT = (".po", ".mo")  # a gettext catalog's suffixes


def catalog_files(folder: Path, programs: str = "all") -> list[Path]:
    """The catalogs under a folder, at any depth, in the order of their paths: those of one
    group of its programs (program_group), or all."""
    found = sorted(path for path in folder.rglob("*") if path.is_file() and is_catalog(path))
    if programs != "all":
        found = [path for path in found if program_group(program(folder, path)) == programs]
    if not found:
        group = "" if programs == "all" else f" of the {programs} programs"
        raise CorpusError(f"{folder} holds no catalog{group} (no {', '.join(SUFFIXES)} file)")
    return found


def gettext_files(folder: Path) -> list[Path]:
    """The gettext catalogs (.po, .mo) under a folder, at any depth, in the order of their
    paths."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in GETTEXT)


def gettext_catalogs(folder: Path, language: str) -> list[Path]:
    """gettext_files whose language is `language` (same_language): their Language header's,
    else their path's (the module's docstring)."""
    return [p for p in gettext_files(folder) if same_language(catalog_language(p), language)]


def catalog_language(path: Path) -> str:
    """A gettext catalog's language: its Language header, else <language>/LC_MESSAGES/x.mo's
    folder, else <language>.po's name."""
    named = path.parent.parent.name if path.parent.name == "LC_MESSAGES" else path.stem
    return gettext_language(path) or named


def program(folder: Path, path: Path) -> str:
    """A catalog's program: its path under the folder less its suffix (x.po and x.mo: x)."""
    return path.relative_to(folder).as_posix().rsplit(".", 1)[0]


def program_group(name: str) -> str:
    """The group of PROGRAM_GROUPS a program falls in: where its keyed hash lies among their
    shares."""
    position = keyed_hash(name, PROGRAM_KEY) / 2**64  # in [0, 1)
    for group, share in PROGRAM_GROUPS.items():
        if position < share:
            return group
        position -= share
    return group  # the last: a share's rounding


def read_catalogs(
    paths: Iterable[Path], languages: tuple[str, str], skipped: Skipped
) -> Iterator[Pair]:
    """The pairs of these catalogs, one after another; the entries skipped counted in
    `skipped`. languages: corpus.src_lang, tgt_lang."""
    for path in paths:
        for source, target in catalog_reader(path)(path, languages, skipped):
            yield accelerator_free(one_line(source), one_line(target))


def catalog_reader(path: Path) -> Reader:
    """The reader of a catalog's format (FORMATS), by its name's suffix."""
    suffix = next((s for s in SUFFIXES if path.name.lower().endswith(s)), None)
    if suffix is None:
        raise CorpusError(f"{path}: not a catalog: its name ends in none of {', '.join(SUFFIXES)}")
    return FORMATS[suffix]


def one_line(text: str) -> str:
    return text.strip().replace("\r\n", "\n").replace("\n", "\\n")


def held_out(folder: Path, paths: list[Path], share: float, seed: int) -> dict[str, list[Path]]:
    """A folder's catalogs by split, whole: `share` of its programs held out, half for test and
    half for valid (one each at least, and one left to train), those whose path (under the
    folder, less its suffix: x.po and x.mo are one program) has the smallest hash keyed by
    `seed`; the rest train."""
    programs = {path: program(folder, path) for path in paths}
    ranked = sorted(set(programs.values()), key=lambda name: keyed_hash(name, seed))
    if len(ranked) < 3:
        raise CorpusError(
            f"{folder} holds {len(ranked)} program(s)' catalogs: hold_out needs 3 at least, one "
            "each for train, valid and test"
        )
    count = min(max(1, round(len(ranked) * share / 2)), (len(ranked) - 1) // 2)
    split_of = {name: "test" if i < count else "valid" if i < 2 * count else "train"
                for i, name in enumerate(ranked)}  # fmt: skip
    return {split: [p for p in paths if split_of[programs[p]] == split] for split in SPLITS}
