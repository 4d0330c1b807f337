"""A service's suggestions file (serve.suggestions_file) listed, cleaned and filled, as it runs.

The file holds the service's users' better translations and the translation memory they make
(seq2seq/localization/suggestions.py); these commands work on it from outside the service.
FILE may also be the PostgreSQL URL of serve.database, where several instances keep them.

    python -m seq2seq.suggestions list FILE [--pair en-de] [--grep TEXT] [--since DATE]
        each suggestion, a line: its id, pair, count, when last sent, q and s (tab-separated,
        a newline inside written \\n)
    python -m seq2seq.suggestions remove FILE ID [ID ...]
        gone from the suggestions, so from what the next improvement trains on (it reads them
        whole, from the original model), and from the memory, where the text's entry falls
        back to its latest suggestion left, if any: the service answers so at once
    python -m seq2seq.suggestions import FILE --from CATALOG --target de [--source en]
        a translation memory or catalog (.tmx .po .mo .xlf .xliff: localization/catalog_formats.py),
        each pair checked as POST /suggest checks one (serving/checks.py's SuggestionChecks,
        serve.suggestion_chars from --config), then kept as suggestions, 500 a transaction
        (the service's /suggest waits for one at most): the memory answers them. A refused
        entry is counted by why, not fatal.

    CATALOG --catalog_formats--> (q, s) --SuggestionChecks--> kept: Suggestions.add_all
                                    |                 \\--> refused[reason] += 1
                                    +--> skipped[why] (the reader's: untranslated, fuzzy, ...)
    then one line: kept, refused by why, skipped by why
"""

import argparse
import datetime
from collections.abc import Iterable, Iterator
from pathlib import Path

from tqdm import tqdm

from seq2seq.config import DEFAULT_CONFIG, ServeConfig, load_config
from seq2seq.documents.detection import Detector
from seq2seq.localization.catalog_formats import Reader
from seq2seq.localization.catalogs import catalog_reader, one_line
from seq2seq.localization.suggestions import Suggestions
from seq2seq.serving.checks import SuggestionChecks
from seq2seq.serving.refusals import Unwanted
from seq2seq.support.database import is_url, shown
from seq2seq.support.errors import UserError, command_parser, run_cli, warn


def arguments() -> argparse.ArgumentParser:
    parser = command_parser("seq2seq.suggestions", __doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list", help="each suggestion with its id")
    listing.add_argument("file", help="the suggestions file (serve.suggestions_file), or URL")
    listing.add_argument("--pair", help="one pair's only: SOURCE-TARGET, e.g. en-de")
    listing.add_argument("--grep", help="those holding TEXT in q or s (case aside)")
    listing.add_argument("--since", type=date, help="those last sent on DATE (YYYY-MM-DD) or later")
    removing = commands.add_parser("remove", help="remove suggestions by id, and from the memory")
    removing.add_argument("file", help="the suggestions file, or URL")
    removing.add_argument("ids", type=int, nargs="+", metavar="ID", help="as list shows them")
    importing = commands.add_parser("import", help="a TMX, PO, MO or XLIFF file's pairs, checked")
    importing.add_argument("file", help="the suggestions file (made if need be), or URL")
    importing.add_argument(
        "--from", dest="catalog", type=Path, required=True, metavar="CATALOG",
        help="a .tmx .po .mo .xlf or .xliff file",
    )  # fmt: skip
    importing.add_argument("--source", default="en", help="the source language (default: en)")
    importing.add_argument("--target", required=True, help="the target language, e.g. de")
    importing.add_argument("--config", default=DEFAULT_CONFIG, help="for serve.suggestion_chars")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = arguments().parse_args(argv)
    if args.command != "import" and not (is_url(args.file) or Path(args.file).is_file()):
        raise UserError(f"{args.file}: no such suggestions file")
    read = catalog(args.catalog) if args.command == "import" else None  # before the file is made
    suggestions = Suggestions(args.file)
    try:
        if args.command == "list":
            for row in suggestions.listed(args.pair, args.grep, args.since):
                fields = row.id, f"{row.source}-{row.target}", row.count, row.last_at, row.q, row.s
                print("\t".join(one_line(str(field)) for field in fields))
        elif args.command == "remove":
            suggestions.remove(args.ids)
            removed = f"removed {len(set(args.ids))} suggestion(s) from {shown(args.file)}"
            print(f"{removed} and its memory")
        else:
            most = ServeConfig().suggestion_chars
            if Path(args.config).is_file():
                most = load_config(args.config).serve.suggestion_chars
            pair = args.source, args.target
            print(import_catalog(suggestions, args.catalog, read, pair, most))
    finally:
        suggestions.close()


def date(text: str) -> str:
    """--since: an ISO date, as the file's times begin."""
    try:
        return datetime.date.fromisoformat(text).isoformat()
    except ValueError:
        raise UserError(f"--since {text}: not a date (YYYY-MM-DD)") from None


def catalog(path: Path) -> Reader:
    """--from's reader, by its suffix; a file that is there."""
    read = catalog_reader(path)
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    return read


def import_catalog(
    suggestions: Suggestions, catalog: Path, read: Reader, pair: tuple[str, str], most: int
) -> str:
    """The catalog's pairs (`read`: its format's reader), checked, kept in `suggestions`; the
    summary line."""
    checks, refused, skipped = SuggestionChecks(most), {}, {}
    detector = checks.detector(*pair)
    if not isinstance(detector, Detector):
        warn(f"no wrong-language check of {pair[0]}-{pair[1]}: {detector}")
    entries = tqdm(read(catalog, pair, skipped), desc=catalog.name, unit=" entries", disable=None)
    kept = Counted(checked(entries, checks, pair, refused))
    suggestions.add_all(kept, *pair)
    said = [f"kept {kept.count:,} of {catalog}'s pairs as {pair[0]}-{pair[1]} suggestions"]
    for what, counts in (("refused", refused), ("skipped", skipped)):
        if counts:
            said.append(f"{what} {sum(counts.values()):,} ({', '.join(tally(counts))})")
    return "; ".join(said)


def checked(
    pairs: Iterable[tuple[str, str]], checks: SuggestionChecks, pair: tuple[str, str],
    refused: dict[str, int],
) -> Iterator[tuple[str, str]]:  # fmt: skip
    """The pairs the checks let through; the others counted in `refused`, by reason."""
    for q, s in pairs:
        try:
            checks.check(q, s, *pair)
        except Unwanted as unwanted:
            refused[unwanted.reason] = refused.get(unwanted.reason, 0) + 1
            continue
        yield q, s


class Counted:
    """An iterator of pairs that counts them as they go."""

    def __init__(self, pairs: Iterator[tuple[str, str]]):
        self.pairs, self.count = pairs, 0

    def __iter__(self) -> Iterator[tuple[str, str]]:
        for pair in self.pairs:
            self.count += 1
            yield pair


def tally(counts: dict[str, int]) -> list[str]:
    return [f"{why} {count:,}" for why, count in sorted(counts.items())]


if __name__ == "__main__":
    run_cli(main)
