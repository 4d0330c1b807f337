"""API keys in an SQLite file, each with limits of its own, as LibreTranslate's keys database:
what `python -m seq2seq.keys` manages (add, list, remove) and the service reads
(serve.api_keys: a file ending .db; access.py).

    keys(digest, id, requests_per_minute, max_chars, added_at)   one row a key
      digest   the key's SHA-256 (hex): the key itself is not kept, so that the file does not
               give the keys away; `add` prints a new key once
      id       the digest's first ID_CHARS characters, to list and remove a key by
      requests_per_minute   its POSTs a minute at most (0: no limit of its own)
      max_chars             characters in one request's texts at most (0: none of its own)
"""

import datetime
import hashlib
import secrets
import sqlite3
from dataclasses import astuple, dataclass
from pathlib import Path

from seq2seq.support.errors import UserError

SCHEMA = """CREATE TABLE IF NOT EXISTS keys (
    digest TEXT PRIMARY KEY,
    id TEXT NOT NULL,
    requests_per_minute INTEGER NOT NULL,
    max_chars INTEGER NOT NULL,
    added_at TEXT NOT NULL
)"""
ID_CHARS = 8


@dataclass(frozen=True)
class KeyLimits:
    """What one key may do besides the service's own limits (0: nothing more)."""

    requests_per_minute: int = 0
    max_chars: int = 0


def digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


class KeyStore:
    """The keys file; `create`: made (with its folder) if it is not there, else a UserError."""

    def __init__(self, path: Path, create: bool = False):
        self.path = path
        if not create and not path.is_file():
            raise UserError(f"{path}: no such API keys file (python -m seq2seq.keys add makes it)")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.connection = sqlite3.connect(path, timeout=30)
            self.connection.execute(SCHEMA)
            self.connection.commit()
        except (OSError, sqlite3.Error) as error:
            raise UserError(f"{path}: not an API keys file ({error})") from None

    def add(self, limits: KeyLimits, key: str | None = None) -> str:
        """Adds a key (a new random one unless given) with its limits; returns it."""
        key = key or secrets.token_urlsafe(24)
        if not (key.isascii() and key.isprintable() and " " not in key):
            raise UserError("an API key is printable ASCII without spaces")
        added = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        row = (digest(key), digest(key)[:ID_CHARS], *astuple(limits), added)
        try:
            with self.connection:
                self.connection.execute("INSERT INTO keys VALUES (?, ?, ?, ?, ?)", row)
        except sqlite3.IntegrityError:
            raise UserError(f"{self.path}: that key is there already") from None
        return key

    def remove(self, key_or_id: str) -> int:
        """Removes the key given, or the one whose id it is; returns how many (0 or 1)."""
        with self.connection:
            found = self.connection.execute(
                "DELETE FROM keys WHERE digest = ? OR id = ?", (digest(key_or_id), key_or_id)
            )
        return found.rowcount

    def listed(self) -> list[tuple[str, KeyLimits, str]]:
        """Each key's id, limits and when it was added, oldest first."""
        rows = self.connection.execute(
            "SELECT id, requests_per_minute, max_chars, added_at FROM keys ORDER BY rowid"
        )
        return [
            (id_, KeyLimits(per_minute, chars), added) for id_, per_minute, chars, added in rows
        ]

    def limits(self) -> dict[str, KeyLimits]:
        """Each key's limits, by its digest."""
        rows = self.connection.execute("SELECT digest, requests_per_minute, max_chars FROM keys")
        return {key: KeyLimits(per_minute, chars) for key, per_minute, chars in rows}

    def close(self) -> None:
        self.connection.close()
