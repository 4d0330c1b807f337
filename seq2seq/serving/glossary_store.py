"""The service's glossaries, kept in SQLite (serve.glossaries_file) beside its other state:
each one whole in one row, so that a glossary is kept whole or not at all, and gone at once.

    GlossaryStore(path)          opened at the first use (its folder and table made then)
      create(glossary, owner)    -> its Stored facts, with a new id (a UUID, as DeepL's
                                 glossary_id); past MAX_GLOSSARIES of the owner's: a
                                 GlossaryError
      listed(owner)              the owner's, oldest first (without their entries)
      get(id, owner)             one's facts, or None
      glossary(id, owner)        one with its entries (localization/glossary.py's Glossary), or None
      delete(id, owner)          whether there was one to delete

    glossaries(id, owner, name, source_lang, target_lang, created_at, entry_count, entries)
      owner     the SHA-256 of the API key that made it (keystore.py's digest; "" without
                keys): each key sees its own glossaries, as each DeepL account its own
      entries   a JSON list of [source, target], in their order

Each call is one transaction (the create's count and insert together); the connection is
shared by the threads of one process (a lock), the file by serve.workers (SQLite's locking).
"""

import datetime
import json
import sqlite3
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path

from seq2seq.localization.glossary import Glossary, GlossaryError
from seq2seq.support.files import shared_database

SCHEMA = """CREATE TABLE IF NOT EXISTS glossaries (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    name TEXT NOT NULL,
    source_lang TEXT NOT NULL,
    target_lang TEXT NOT NULL,
    created_at TEXT NOT NULL,
    entry_count INTEGER NOT NULL,
    entries TEXT NOT NULL
)"""
FACTS = "id, name, source_lang, target_lang, created_at, entry_count"
MAX_GLOSSARIES = 1000  # an owner's, at most (DeepL's, an account's)


class StoreFailed(Exception):
    """The glossaries file cannot be opened or written: the server's fault, not the request's."""


@dataclass(frozen=True)
class Stored:
    """A kept glossary's facts, as DeepL's API gives them (glossary_info)."""

    id: str
    name: str
    source_lang: str
    target_lang: str
    created_at: str  # ISO 8601, UTC
    entry_count: int

    def glossary_info(self) -> dict:
        return {
            "glossary_id": self.id, "name": self.name, "ready": True,
            "source_lang": self.source_lang, "target_lang": self.target_lang,
            "creation_time": self.created_at, "entry_count": self.entry_count,
        }  # fmt: skip


class GlossaryStore:
    """The glossaries file; opened (made if need be) when first used."""

    def __init__(self, path: Path):
        self.path, self.connection, self.lock = path, None, threading.Lock()

    def run(self, sql: str, parameters: tuple = ()) -> list[tuple]:
        """One statement in a transaction of its own: its rows."""
        with self.lock:
            try:
                connection = self.connected()
                with connection:
                    return connection.execute(sql, parameters).fetchall()
            except (OSError, sqlite3.Error) as error:
                raise StoreFailed(f"{self.path}: cannot keep glossaries there: {error}") from None

    def connected(self) -> sqlite3.Connection:
        if self.connection is None:
            self.connection = shared_database(self.path, SCHEMA)
        return self.connection

    def create(self, glossary: Glossary, owner: str) -> Stored:
        """Keeps `glossary` for `owner` (a GlossaryError past MAX_GLOSSARIES of theirs)."""
        now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")
        stored = Stored(
            str(uuid.uuid4()), glossary.name, glossary.source_lang, glossary.target_lang,
            now.replace("+00:00", "Z"), len(glossary.entries),
        )  # fmt: skip
        entries = json.dumps(list(glossary.entries.items()), ensure_ascii=False)
        # one statement: the owner's count and the insert in one transaction
        added = self.run(
            f"INSERT INTO glossaries SELECT ?, ?, ?, ?, ?, ?, ?, ? WHERE (SELECT count(*) FROM "
            f"glossaries WHERE owner = ?) < {MAX_GLOSSARIES} RETURNING id",
            (stored.id, owner, stored.name, stored.source_lang, stored.target_lang,
             stored.created_at, stored.entry_count, entries, owner),
        )  # fmt: skip
        if not added:
            raise GlossaryError(
                f"{MAX_GLOSSARIES:,} glossaries are kept at most: delete one first "
                "(DELETE /v2/glossaries/ID)"
            )
        return stored

    def listed(self, owner: str) -> list[Stored]:
        rows = self.run(f"SELECT {FACTS} FROM glossaries WHERE owner = ? ORDER BY rowid", (owner,))
        return [Stored(*row) for row in rows]

    def get(self, id_: str, owner: str) -> Stored | None:
        rows = self.run(f"SELECT {FACTS} FROM glossaries WHERE id = ? AND owner = ?", (id_, owner))
        return Stored(*rows[0]) if rows else None

    def glossary(self, id_: str, owner: str) -> Glossary | None:
        rows = self.run(
            "SELECT name, source_lang, target_lang, entries FROM glossaries "
            "WHERE id = ? AND owner = ?",
            (id_, owner),
        )
        if not rows:
            return None
        name, source_lang, target_lang, entries = rows[0]
        return Glossary(name, source_lang, target_lang, dict(json.loads(entries)))

    def delete(self, id_: str, owner: str) -> bool:
        rows = self.run(
            "DELETE FROM glossaries WHERE id = ? AND owner = ? RETURNING id", (id_, owner)
        )
        return bool(rows)

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
