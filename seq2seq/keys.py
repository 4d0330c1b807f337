"""API keys with limits of their own, in a keys database, as LibreTranslate's `ltmanage keys`.

    python -m seq2seq.keys add [--requests-per-minute N] [--max-chars N]
        [--chars-per-month N] [--key KEY]
        a key (a new random one unless given), printed: keep it, the file holds its SHA-256
    python -m seq2seq.keys list    each key's id, limits, when it was added, and the
                                   characters it sent this month (DeepL's /v2/usage)
    python -m seq2seq.keys remove KEY_OR_ID

The database (seq2seq/serving/keystore.py): --db, else the config's serve.api_keys if it ends
in .db or is a postgresql:// URL (several instances' keys), else runs/keys.db.
`serve.api_keys: runs/keys.db` makes the service take these keys, and see a key added or
removed within a second, without a restart.
"""

from dataclasses import astuple
from pathlib import Path

from seq2seq.config import DEFAULT_CONFIG, load_config
from seq2seq.serving.keystore import KeyLimits, KeyStore
from seq2seq.support.database import is_url, shown
from seq2seq.support.errors import UserError, command_parser, run_cli

DEFAULT_DB = "runs/keys.db"


def keys_file(db: str | None, config_path: str) -> str:
    """--db, else the config's serve.api_keys if it is a keys database (a .db file or a
    PostgreSQL URL), else DEFAULT_DB."""
    if db:
        return db
    named = load_config(config_path).serve.api_keys if Path(config_path).is_file() else ""
    return named if named.endswith(".db") or is_url(named) else DEFAULT_DB


def main(argv: list[str] | None = None) -> None:
    parser = command_parser("seq2seq.keys", __doc__.splitlines()[0])
    parser.add_argument(
        "--db", help="the keys database: a file, or a postgresql:// URL (default: see above)"
    )
    parser.add_argument("--config", default=DEFAULT_CONFIG, help="experiment config (YAML)")
    commands = parser.add_subparsers(dest="command", required=True)
    add = commands.add_parser("add", help="add a key and print it")
    add.add_argument("--requests-per-minute", type=int, default=0, help="0: no limit of its own")
    add.add_argument("--max-chars", type=int, default=0, help="a request's; 0: none of its own")
    add.add_argument(
        "--chars-per-month", type=int, default=0,
        help="a month's characters to translate (UTC), a quota; 0: none",
    )  # fmt: skip
    add.add_argument("--key", help="the key (default: a new random one)")
    commands.add_parser("list", help="each key's id, limits and when it was added")
    remove = commands.add_parser("remove", help="remove a key, given or by its id")
    remove.add_argument("key", metavar="KEY_OR_ID")
    args = parser.parse_args(argv)
    path = keys_file(args.db, args.config)
    if args.command == "add":
        limits = KeyLimits(args.requests_per_minute, args.max_chars, args.chars_per_month)
        if min(astuple(limits)) < 0:
            parser.error(
                "--requests-per-minute, --max-chars and --chars-per-month are 0 (none) or more"
            )
        print(KeyStore(path, create=True).add(limits, args.key))
    elif args.command == "list":
        listed = KeyStore(path).listed()
        for id_, limits, added, used in listed:
            per_minute = limits.requests_per_minute or "no limit of its own"
            chars = limits.max_chars or "no limit of its own"
            quota = f" of {limits.chars_per_month:,}" if limits.chars_per_month else ""
            print(f"{id_}  requests a minute: {per_minute}  characters a request: {chars}  "
                  f"characters this month: {used:,}{quota}  added {added}")  # fmt: skip
        if not listed:
            print(f"no keys in {shown(path)}")
    elif not KeyStore(path).remove(args.key):
        raise UserError(f"{shown(path)}: no key {args.key} (a key, or an id that list shows)")


if __name__ == "__main__":
    run_cli(main)
