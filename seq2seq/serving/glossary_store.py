"""The service's glossaries, kept beside its other state: in SQLite (serve.glossaries_file),
or in PostgreSQL, shared by every instance (serve.database; support/database.py); a glossary
(DeepL's) holds dictionaries, each one pair's entries; each change is one transaction, so that
a glossary is kept whole or not at all, and gone at once.

    GlossaryStore(where)         a file's path or a postgresql:// URL, opened at the first use
                                 (its folder and tables made then; an SQLite file of an earlier
                                 version, each glossary one pair, read as glossaries of one
                                 dictionary)
      create(name, dictionaries, owner) -> its Stored facts, with a new id (a UUID, as
                                 DeepL's glossary_id); past MAX_GLOSSARIES of the owner's: a
                                 GlossaryError
      listed(owner)              the owner's, oldest first (without their entries)
      get(id, owner)             one's facts, or None
      dictionaries(id, owner, pair) its dictionaries (localization/glossary.py's Glossary,
                                 each with its entries; of `pair` only, if given), or None
      update(id, owner, name, dictionaries, merge), drop(id, owner, pair)
                                 DeepL's edits (/v3/glossaries): its facts after, or None
      delete(id, owner)          whether there was one to delete

    glossaries(id, owner, name, created_at)
      owner     the SHA-256 of the API key that made it (keystore.py's digest; "" without
                keys): each key sees its own glossaries, as each DeepL account its own
    dictionaries(glossary, source_lang, target_lang, entry_count, entries)
      entries   a JSON list of [source, target], in their order

The connection is shared by the threads of one process, the database by serve.workers and
by other instances (one writer at a time: Database.transaction).
"""

import datetime
import json
import uuid
from dataclasses import dataclass
from pathlib import Path

from seq2seq.localization.glossary import MAX_ENTRIES, Glossary, GlossaryError
from seq2seq.support.database import Database, DatabaseFailed, open_database

GLOSSARIES = (
    "id TEXT PRIMARY KEY, owner TEXT NOT NULL, name TEXT NOT NULL, created_at TEXT NOT NULL"
)
DICTIONARIES = """glossary TEXT NOT NULL,
    source_lang TEXT NOT NULL,
    target_lang TEXT NOT NULL,
    entry_count INTEGER NOT NULL,
    entries TEXT NOT NULL,
    PRIMARY KEY (glossary, source_lang, target_lang)"""
EARLIER = ("source_lang", "target_lang", "entry_count", "entries")  # glossaries' columns once
MAX_GLOSSARIES = 1000  # an owner's, at most (DeepL's, an account's)
Pair = tuple[str, str]  # (source_lang, target_lang)


class StoreFailed(Exception):
    """The glossaries' database cannot be opened or written: the server's fault, not the
    request's."""


@dataclass(frozen=True)
class Stored:
    """A kept glossary's facts: its dictionaries' pairs and entry counts, in order."""

    id: str
    name: str
    created_at: str  # ISO 8601, UTC
    dictionaries: tuple[tuple[str, str, int], ...]  # (source_lang, target_lang, entry_count)

    def glossary_info(self) -> dict:
        """As DeepL's /v2 gives a glossary (of one dictionary: v2's)."""
        [(source, target, count)] = self.dictionaries
        return {
            "glossary_id": self.id, "name": self.name, "ready": True, "source_lang": source,
            "target_lang": target, "creation_time": self.created_at, "entry_count": count,
        }  # fmt: skip

    def multilingual_info(self) -> dict:
        """As DeepL's /v3 gives a glossary."""
        dictionaries = [
            {"source_lang": source, "target_lang": target, "entry_count": count}
            for source, target, count in self.dictionaries
        ]
        return {"glossary_id": self.id, "name": self.name, "dictionaries": dictionaries,
                "creation_time": self.created_at}  # fmt: skip


class GlossaryStore:
    """The glossaries' database; its tables made (and migrated) when first used."""

    def __init__(self, where: str | Path):
        self.db, self.made = open_database(where, "glossaries"), False

    def transaction(self, work, write: bool = True):
        """work(db) in one transaction (one writer at a time), or, not `write`, as reads
        (Database.read): what it returns."""
        try:
            if not self.made:
                self.db.transaction(made)  # one worker makes and migrates, the others wait
                self.made = True
            return self.db.transaction(work) if write else self.db.read(work)
        except DatabaseFailed as error:
            raise StoreFailed(str(error)) from None

    def create(self, name: str, dictionaries: list[Glossary], owner: str) -> Stored:
        """Keeps a glossary of `dictionaries` for `owner` (a GlossaryError past
        MAX_GLOSSARIES of theirs)."""
        now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")
        id_, created = str(uuid.uuid4()), now.replace("+00:00", "Z")

        def create(db) -> Stored:
            count = "SELECT count(*) FROM glossaries WHERE owner = ?"
            if db.execute(count, (owner,)).fetchone()[0] >= MAX_GLOSSARIES:
                raise GlossaryError(
                    f"{MAX_GLOSSARIES:,} glossaries are kept at most: delete one first "
                    "(DELETE /v2/glossaries/ID)"
                )
            db.execute("INSERT INTO glossaries VALUES (?, ?, ?, ?)", (id_, owner, name, created))
            for dictionary in dictionaries:
                write(db, id_, dictionary)
            return facts(db, owner, id_)[0]

        return self.transaction(create)

    def listed(self, owner: str) -> list[Stored]:
        return self.transaction(lambda db: facts(db, owner), write=False)

    def get(self, id_: str, owner: str) -> Stored | None:
        found = self.transaction(lambda db: facts(db, owner, id_), write=False)
        return found[0] if found else None

    def dictionaries(self, id_: str, owner: str, pair: Pair | None = None) -> list | None:
        """The glossary's dictionaries (those of `pair` only, if given), each a Glossary with
        its entries; None: no such glossary of the owner's."""

        def read(db):
            rows = db.execute(
                "SELECT name, source_lang, target_lang, entries FROM glossaries JOIN "
                "dictionaries ON glossary = id WHERE id = ? AND owner = ? ORDER BY "
                "dictionaries.rowid",
                (id_, owner),
            ).fetchall()
            if not rows and not facts(db, owner, id_):
                return None
            return [
                Glossary(name, source, target, dict(json.loads(entries)))
                for name, source, target, entries in rows
                if pair is None or (source, target) == pair
            ]

        return self.transaction(read, write=False)

    def update(self, id_: str, owner: str, name: str | None, dictionaries: list[Glossary],
               merge: bool) -> Stored | None:  # fmt: skip
        """The glossary renamed (unless `name` is None), each of `dictionaries` replacing its
        pair's (merge: its entries added to those kept, each replacing a kept one of its
        source term), or added; in one transaction: its facts after, or None (not one of the
        owner's)."""

        def update(db):
            if not facts(db, owner, id_):
                return None
            if name is not None:
                db.execute("UPDATE glossaries SET name = ? WHERE id = ?", (name, id_))
            for dictionary in dictionaries:
                write(db, id_, merged(db, id_, dictionary) if merge else dictionary)
            return facts(db, owner, id_)[0]

        return self.transaction(update)

    def drop(self, id_: str, owner: str, pair: Pair) -> bool:
        """Whether the glossary had a dictionary of `pair`, now gone."""

        def drop(db) -> bool:
            if not facts(db, owner, id_):
                return False
            return bool(db.execute(
                "DELETE FROM dictionaries WHERE glossary = ? AND source_lang = ? AND "
                "target_lang = ? RETURNING glossary", (id_, *pair),
            ).fetchall())  # fmt: skip

        return self.transaction(drop)

    def delete(self, id_: str, owner: str) -> bool:
        def delete(db) -> bool:
            if not facts(db, owner, id_):
                return False
            db.execute("DELETE FROM dictionaries WHERE glossary = ?", (id_,))
            db.execute("DELETE FROM glossaries WHERE id = ?", (id_,))
            return True

        return self.transaction(delete)

    def close(self) -> None:
        self.db.close()


def made(db: Database) -> None:
    """The tables, made if need be; an SQLite file of an earlier version migrated."""
    db.create("glossaries", GLOSSARIES)
    db.create("dictionaries", DICTIONARIES)
    if db.kind == "sqlite":
        migrated(db)


def facts(db: Database, owner: str, id_: str | None = None) -> list[Stored]:
    """The owner's glossaries (or the one of id `id_`), oldest first, with their
    dictionaries' pairs and counts: one query."""
    where = "owner = ?" + (" AND id = ?" if id_ else "")
    rows = db.execute(
        "SELECT id, name, created_at, source_lang, target_lang, entry_count FROM glossaries "
        f"LEFT JOIN dictionaries ON glossary = id WHERE {where} "
        "ORDER BY glossaries.rowid, dictionaries.rowid",
        (owner, id_) if id_ else (owner,),
    ).fetchall()
    found: dict[str, tuple[str, str, list]] = {}  # id -> (name, created_at, dictionaries)
    for glossary, name, created, source, target, count in rows:
        dictionaries = found.setdefault(glossary, (name, created, []))[2]
        if source is not None:  # a glossary without a dictionary: none joined
            dictionaries.append((source, target, count))
    return [Stored(glossary, *kept[:2], tuple(kept[2])) for glossary, kept in found.items()]


def merged(db: Database, id_: str, dictionary: Glossary) -> Glossary:
    """`dictionary`'s entries added to those the glossary keeps for its pair."""
    pair = dictionary.source_lang, dictionary.target_lang
    kept = db.execute(
        "SELECT entries FROM dictionaries WHERE glossary = ? AND source_lang = ? AND "
        "target_lang = ?", (id_, *pair),
    ).fetchall()  # fmt: skip
    entries = {**(dict(json.loads(kept[0][0])) if kept else {}), **dictionary.entries}
    if len(entries) > MAX_ENTRIES:
        raise GlossaryError(f"a dictionary holds at most {MAX_ENTRIES:,} entries")
    return Glossary(dictionary.name, *pair, entries)


def write(db: Database, id_: str, dictionary: Glossary) -> None:
    """The glossary's dictionary of `dictionary`'s pair: it, in place of any kept."""
    entries = json.dumps(list(dictionary.entries.items()), ensure_ascii=False)
    db.execute(
        "INSERT INTO dictionaries VALUES (?, ?, ?, ?, ?) ON CONFLICT (glossary, source_lang, "
        "target_lang) DO UPDATE SET "
        "entry_count = excluded.entry_count, entries = excluded.entries",  # in its place
        (id_, dictionary.source_lang, dictionary.target_lang, len(dictionary.entries), entries),
    )


def migrated(db: Database) -> None:
    """A file of an earlier version (each glossary one pair, its entries in its row): each
    glossary's entries moved to a dictionary of it."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(glossaries)")}
    if "entries" not in columns:
        return
    db.execute(
        "INSERT OR IGNORE INTO dictionaries SELECT id, source_lang, target_lang, entry_count, "
        "entries FROM glossaries"
    )
    for column in EARLIER:
        db.execute(f"ALTER TABLE glossaries DROP COLUMN {column}")
