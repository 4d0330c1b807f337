"""Suggestions: better translations that a service's users send (POST /suggest, LibreTranslate's:
seq2seq/service/libretranslate.py), kept to fine-tune the model on and to answer the same text
with: in an SQLite file (serve.suggestions_file), or in PostgreSQL (serve.database), where
several instances of the service share them (support/database.py: one store, two kinds).

    the service  Suggestions(where).add(q, s, source, target): one transaction each, on disk
                 before it returns (synchronous=FULL: a crash, kill -9 or a power cut, loses no
                 suggestion the client saw acknowledged); a suggestion made again is counted,
                 not kept twice (across instances too: one writer at a time)
    make data    a corpus source {suggestions: FILE} (corpora/sources.py): read_suggestions, the
                 store's (q, s) pairs for corpus.src_lang -> tgt_lang, each once, oldest first
    serve.memory Suggestions(where).recalled(texts, source, target): each text's latest
                 suggestion `s` for its normalised form (white space collapsed and stripped),
                 or None; one look-up in the memory table's unique index, not a scan
    serve.memory_fuzzy  Suggestions(where).similar(texts, source, target, least): each text's
                 fuzzy match (Match: the memory's text most like it, its suggestion, how
                 alike: localization/fuzzy.py), or None; through an index of the memory's words
                 (SQLite's FTS5, PostgreSQL's text search), the texts holding the text's rarest
                 words, not a scan. Both: None for each while the database fails (said once)

    python -m seq2seq.suggestions (seq2seq/suggestions.py), on the same store, as the service runs:
      list   Suggestions.listed(pair, grep, since): each one with its id (its rowid)
      remove Suggestions.remove(ids): gone from the suggestions, hence from read_suggestions (the
             next improvement's corpus), and from the memory: each text's entry falls back to
             its latest suggestion left, or goes; one transaction
      import Suggestions.add_all(pairs, source, target): a catalog's pairs, checked, as add()
             keeps them, CHUNK a transaction: the service's add() waits for a chunk at most
    serve.improve_after  Suggestions(where).count(source, target): the pair's, to start an
                 improvement every N new ones (seq2seq/serving/improving.py)

    suggestions(q, s, source, target, count, first_at, last_at)   one row per different one
    memory(source, target, key, s, at)   per pair, each normalised text's latest suggestion:
                                         add() keeps it in the same transaction (an SQLite file
                                         from before the table: made from its suggestions)
    SQLite      memory_words, memory_vocab: FTS5's index of the memory's texts' words, kept by
                triggers, and its count of the texts holding each
    PostgreSQL  memory.words: each text's tsvector ('simple': lower case, no stemming), a GIN
                index; the unique indexes on md5 of the texts (a B-tree entry holds ~2,700
                bytes, a text up to serve.suggestion_chars)
"""

import collections
import datetime
import itertools
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from seq2seq.localization import fuzzy
from seq2seq.support.database import Database, DatabaseFailed, is_url, open_database, shown
from seq2seq.support.errors import UserError, warn

COLUMNS = """q TEXT NOT NULL, s TEXT NOT NULL, source TEXT NOT NULL, target TEXT NOT NULL,
count INTEGER NOT NULL DEFAULT 1, first_at TEXT NOT NULL, last_at TEXT NOT NULL"""
MEMORY = """source TEXT NOT NULL, target TEXT NOT NULL, key TEXT NOT NULL, s TEXT NOT NULL,
at TEXT NOT NULL"""
CANDIDATES = 50  # the texts a fuzzy look-up scores, those holding most of the rarest words
READ_MOST = 20_000  # the index entries it reads at most (a few ms a thousand)
CHUNK = 500  # suggestions an import commits at once: tens of milliseconds
PAUSE_S = 0.02  # after each chunk, for another writer's turn (SQLite's wait polls)
LIST = "SELECT rowid, source, target, count, last_at, q, s FROM suggestions"
REMOVE = "DELETE FROM suggestions WHERE rowid = ?"
COUNT = "SELECT COUNT(*) FROM suggestions WHERE source = ? AND target = ?"
# by rowid, the pair checked after (asked for, the pair's index would be chosen: a scan)
ENTRIES = "SELECT key, s, source, target FROM memory WHERE rowid IN ({})"
OF_PAIR = "SELECT q, s FROM suggestions WHERE source = ? AND target = ? ORDER BY rowid"


class SQLiteStatements:
    """What an SQLite file's store says its own way: a primary key over the texts, FTS5."""

    ADD = """INSERT INTO suggestions (q, s, source, target, first_at, last_at)
VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (source, target, q, s)
DO UPDATE SET count = count + 1, last_at = excluded.last_at"""
    REMEMBER = """INSERT INTO memory (source, target, key, s, at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (source, target, key) DO UPDATE SET s = excluded.s, at = excluded.at"""
    RECALL = "SELECT s FROM memory WHERE source = ? AND target = ? AND key = ?"
    FORGET = "DELETE FROM memory WHERE source = ? AND target = ? AND key = ?"
    WORD_COUNTS = "SELECT term, doc FROM memory_vocab"  # a scan of the index
    HOLDING = "SELECT rowid FROM memory_words WHERE memory_words MATCH ?"
    IMPORTED = ""  # what an import ends with
    # The memory's words, indexed for fuzzy matches (fuzzy.py), kept by triggers; and how many
    # texts hold each word, to ask the index for the rarest.
    INDEX = (
        "CREATE VIRTUAL TABLE memory_words USING fts5(key, content='memory', "
        "content_rowid='rowid')",
        "CREATE VIRTUAL TABLE memory_vocab USING fts5vocab(memory_words, 'row')",
        """CREATE TRIGGER memory_added AFTER INSERT ON memory BEGIN
        INSERT INTO memory_words (rowid, key) VALUES (new.rowid, new.key); END""",
        """CREATE TRIGGER memory_removed AFTER DELETE ON memory BEGIN
        INSERT INTO memory_words (memory_words, rowid, key) VALUES ('delete', old.rowid, old.key);
        END""",
        """CREATE TRIGGER memory_changed AFTER UPDATE OF key ON memory BEGIN
        INSERT INTO memory_words (memory_words, rowid, key) VALUES ('delete', old.rowid, old.key);
        INSERT INTO memory_words (rowid, key) VALUES (new.rowid, new.key); END""",
        "INSERT INTO memory_words (memory_words) VALUES ('rebuild')",
    )

    @staticmethod
    def word(word: str) -> str:
        return fuzzy.query([word])

    @classmethod
    def make(cls, db: Database) -> None:
        """The tables and the index, made if need be; a file from before the memory: its
        suggestions remembered, oldest first, so that the latest wins."""
        texts = "PRIMARY KEY (source, target, q, s)"
        db.execute(f"CREATE TABLE IF NOT EXISTS suggestions ({COLUMNS}, {texts})")
        if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'memory'").fetchall():
            db.execute(f"CREATE TABLE memory ({MEMORY}, PRIMARY KEY (source, target, key))")
            rows = db.execute(
                "SELECT source, target, q, s, last_at FROM suggestions ORDER BY last_at, rowid"
            )
            remembered = [
                (source, target, normalised(q), s, at) for source, target, q, s, at in rows
            ]
            db.executemany(cls.REMEMBER, remembered)
        if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'memory_words'").fetchall():
            for statement in cls.INDEX:
                db.execute(statement)


class PostgreSQLStatements:
    """What PostgreSQL's store says its own way: unique indexes on md5 of the texts (a text
    is one memory entry by its md5), the words a stored tsvector with a GIN index."""

    ADD = """INSERT INTO suggestions (q, s, source, target, first_at, last_at)
VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (source, target, md5(q), md5(s))
DO UPDATE SET count = suggestions.count + 1, last_at = excluded.last_at"""
    REMEMBER = """INSERT INTO memory (source, target, key, s, at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (source, target, md5(key)) DO UPDATE SET s = excluded.s, at = excluded.at"""
    RECALL = "SELECT s FROM memory WHERE source = ? AND target = ? AND md5(key) = md5(?)"
    FORGET = "DELETE FROM memory WHERE source = ? AND target = ? AND md5(key) = md5(?)"
    WORD_COUNTS = "SELECT word, ndoc FROM ts_stat('SELECT words FROM memory')"  # a scan
    HOLDING = "SELECT rowid FROM memory WHERE words @@ to_tsquery('simple', ?)"
    IMPORTED = "ANALYZE memory"  # the planner's statistics: the GIN index, not a scan
    WORDS = "words tsvector GENERATED ALWAYS AS (to_tsvector('simple', key)) STORED"
    INDEX = (
        "CREATE UNIQUE INDEX IF NOT EXISTS suggestions_texts ON suggestions "
        "(source, target, md5(q), md5(s))",
        "CREATE UNIQUE INDEX IF NOT EXISTS memory_texts ON memory (source, target, md5(key))",
        "CREATE INDEX IF NOT EXISTS memory_words ON memory USING GIN (words)",
    )

    @staticmethod
    def word(word: str) -> str:
        return f"'{word}'"  # a \\w+ word: no quote in it

    @classmethod
    def make(cls, db: Database) -> None:
        db.create("suggestions", COLUMNS)
        db.create("memory", f"{MEMORY}, {cls.WORDS}")
        for statement in cls.INDEX:
            db.execute(statement)


class Match(NamedTuple):
    """A fuzzy match: the memory's text, its suggestion, and how alike (localization/fuzzy.py)."""

    text: str
    s: str
    score: float


class Row(NamedTuple):
    """A suggestion as listed."""

    id: int  # its rowid
    source: str
    target: str
    count: int
    last_at: str
    q: str
    s: str


class Suggestions:
    """The suggestions' store (module docstring), opened for writing, its tables made if need
    be (a UserError if it cannot be). Three connections, each one thread at a time: the
    writer's (add), the memory's look-ups (recalled) and the fuzzy ones' (similar): SQLite in
    WAL mode, neither look-up waits for add()."""

    def __init__(self, where: str | Path):
        self.where = str(where)
        self.db, self.reader, self.finder = [open_database(where, "suggestions") for _ in range(3)]
        self.answering = True  # whether the last look-up's database answered (said once)
        self.word_counts: collections.Counter | None = None  # counted(), then kept by add()
        self.sql = PostgreSQLStatements if self.db.kind == "postgresql" else SQLiteStatements
        try:
            self.db.transaction(self.sql.make)  # of several workers starting at once: one
        except DatabaseFailed as error:
            raise UserError(str(error)) from None

    def add(self, q: str, s: str, source: str, target: str) -> None:
        """Keeps one suggestion, and makes it the memory's for q's normalised form, committed
        when this returns (DatabaseFailed: nothing kept)."""
        now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")

        def add(db: Database) -> bool:
            db.execute(self.sql.ADD, (q, s, source, target, now, now))
            new = not db.execute(self.sql.RECALL, (source, target, normalised(q))).fetchall()
            db.execute(self.sql.REMEMBER, (source, target, normalised(q), s, now))
            return new

        if self.db.transaction(add) and self.word_counts is not None:  # read already: kept
            self.word_counts.update(set(fuzzy.words(q)))

    def recalled(self, texts: list[str], source: str, target: str) -> list[str | None]:
        """Each text's latest suggestion from `source` to `target` (its normalised form's), or
        None; from any thread (the service's: a worker thread, the database may be remote)."""

        def recall(db: Database) -> list[str | None]:
            found = [
                db.execute(self.sql.RECALL, (source, target, normalised(text))).fetchall()
                for text in texts
            ]
            return [rows[0][0] if rows else None for rows in found]

        return self.looked_up(self.reader, recall, len(texts))

    def similar(self, texts: list[str], source: str, target: str, least: float) -> list:
        """Each text's fuzzy match (Match, or None): match(), one look-up at a time, from
        any thread (the service's: a worker thread, tens of milliseconds a text at most)."""

        def similar(db: Database) -> list[Match | None]:
            return [self.match(db, text, source, target, least) for text in texts]

        return self.looked_up(self.finder, similar, len(texts))

    def looked_up(self, db: Database, work, many: int) -> list:
        """db.read(work), or `many` Nones while the database fails: the memory's failure said
        once (translations go on without it)."""
        try:
            found = db.read(work)
        except DatabaseFailed as error:
            if self.answering:
                warn(f"{error}: translations go on without the memory until it answers")
            self.answering = False
            return [None] * many
        self.answering = True
        return found

    def match(self, db: Database, q: str, source: str, target: str, least: float) -> Match | None:
        """The memory's text most like q (localization/fuzzy.py's similarity, at least `least`; not
        q's normalised form itself, which recall finds) from `source` to `target`, with its
        suggestion; else None. The candidates: the CANDIDATES texts that hold most of q's
        rarest words, as many of them as a match may have changed and one more, so that every
        match holds one; each word's texts read from the index, READ_MOST in all (beyond, the
        words are too common to tell a match: fewer are read)."""
        mine = fuzzy.words(q)
        known = self.counted(db)
        counts = {word: known.get(word, 0) for word in set(mine)}
        wanted, read = int((1 - least) * len(mine) / least) + 1, 0
        held: collections.Counter = collections.Counter()
        for word in sorted(counts, key=lambda word: (counts[word], word))[:wanted]:
            if read + counts[word] > READ_MOST:
                break
            if counts[word]:  # (a word no text holds: one of those a match changed)
                read += counts[word]
                held.update(row for (row,) in db.execute(self.sql.HOLDING, (self.sql.word(word),)))
        rows = [row for row, _ in held.most_common(CANDIDATES)]
        if not rows:
            return None
        found = db.execute(ENTRIES.format(", ".join("?" * len(rows))), tuple(rows)).fetchall()
        scored = [
            Match(key, s, fuzzy.similarity(mine, fuzzy.words(key)))
            for key, s, *pair in found
            if pair == [source, target]
        ]
        best = max(scored, key=lambda match: match.score, default=None)
        return best if best and best.score >= least and best.text != normalised(q) else None

    def counted(self, db: Database) -> collections.Counter:
        """How many of the memory's texts hold each word (any pair's): read on `db` (the
        finder's) once, then kept by add() (another worker's or instance's adds are not
        counted: the counts only order q's words)."""
        if self.word_counts is None:
            self.word_counts = collections.Counter(
                dict(db.execute(self.sql.WORD_COUNTS).fetchall())
            )
        return self.word_counts

    def add_all(self, pairs: Iterable[tuple[str, str]], source: str, target: str) -> None:
        """Keeps each (q, s) as add() does, CHUNK at a time: each chunk a transaction of its
        own, then a pause (PAUSE_S), so that the service's add() on the same store waits for
        one chunk at most, never for the whole import (one writer at a time). Stopped midway,
        the chunks committed are kept: importing again keeps each pair once (counted twice)."""
        now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        pairs = iter(pairs)
        while chunk := list(itertools.islice(pairs, CHUNK)):

            def add(db: Database) -> None:
                db.executemany(self.sql.ADD, [(q, s, source, target, now, now) for q, s in chunk])
                remembered = [(source, target, normalised(q), s, now) for q, s in chunk]
                db.executemany(self.sql.REMEMBER, remembered)

            self.db.run(add)
            time.sleep(PAUSE_S)
        if self.sql.IMPORTED:
            self.db.run(lambda db: db.execute(self.sql.IMPORTED))

    def listed(self, pair: str | None, grep: str | None, since: str | None) -> list[Row]:
        """Each suggestion, oldest first: of `pair` ("en-de"), holding `grep` in q or s
        (case aside), last sent on `since` (an ISO date) or later; None: any."""
        query, values = LIST + " WHERE 1 = 1", []
        if pair:
            query += " AND source || '-' || target = ?"
            values.append(pair)
        if grep:
            query += " AND (lower(q) LIKE ? ESCAPE '!' OR lower(s) LIKE ? ESCAPE '!')"
            escaped = grep.lower().replace("!", "!!").replace("%", "!%").replace("_", "!_")
            values += [f"%{escaped}%"] * 2
        if since:
            query += " AND last_at >= ?"
            values.append(since)
        rows = self.db.run(
            lambda db: db.execute(query + " ORDER BY rowid", tuple(values)).fetchall(), write=False
        )
        return [Row(*row) for row in rows]

    def remove(self, ids: list[int]) -> None:
        """Removes these suggestions, by id; the memory's entry of each one's text falls back
        to the latest suggestion left for it (the text normalised), or goes. One transaction:
        an id that is no suggestion's removes none (a UserError naming it)."""

        def remove(db: Database) -> None:
            by_id = LIST + " WHERE rowid = ?"
            rows = [Row(*r) for i in set(ids) for r in db.execute(by_id, (i,)).fetchall()]
            missing = sorted(set(ids) - {row.id for row in rows})
            if missing:
                named = ", ".join(map(str, missing))
                raise UserError(f"{shown(self.where)}: no suggestion {named}: list shows the ids")
            for row in rows:
                db.execute(REMOVE, (row.id,))
            for text in {(row.source, row.target, normalised(row.q)) for row in rows}:
                db.execute(self.sql.FORGET, text)
                if latest := latest_left(db, *text):
                    db.execute(self.sql.REMEMBER, (*text, *latest))

        self.db.run(remove)

    def count(self, source: str, target: str) -> int:
        """How many different suggestions the store holds from `source` to `target`."""
        return self.db.read(lambda db: db.execute(COUNT, (source, target)).fetchone()[0])

    def close(self) -> None:
        for db in (self.db, self.reader, self.finder):
            db.close()


def latest_left(db: Database, source: str, target: str, key: str) -> tuple[str, str] | None:
    """The latest suggestion (s, last_at) of the pair for a text whose normalised form is
    `key`, or None: the candidates those holding its words in order (LIKE), then compared."""
    escaped = [
        word.replace("!", "!!").replace("%", "!%").replace("_", "!_") for word in key.split(" ")
    ]
    rows = db.execute(
        "SELECT q, s, last_at FROM suggestions WHERE source = ? AND target = ? AND q LIKE ? "
        "ESCAPE '!' ORDER BY last_at DESC, rowid DESC",
        (source, target, "%" + "%".join(escaped) + "%"),
    ).fetchall()
    return next(((s, at) for q, s, at in rows if normalised(q) == key), None)


def normalised(text: str) -> str:
    """A text as the memory knows it: each run of white space one space, none at either end."""
    return " ".join(text.split())


def read_suggestions(where: str | Path, source: str, target: str) -> list[tuple[str, str]]:
    """The store's suggestions from `source` to `target`: (text, better translation) pairs,
    each once, oldest first. An SQLite file is opened read-only (nothing written, not even its
    journal's mode): a service may go on writing it."""
    if is_url(str(where)):
        database = open_database(where, "suggestions")

        def read(db: Database) -> list[tuple[str, str]]:
            return db.execute(OF_PAIR, (source, target)).fetchall()

        try:
            return database.run(read, write=False)
        finally:
            database.close()
    path = Path(where)
    if not path.is_file():
        raise UserError(f"{path}: no such suggestions file")
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        rows = connection.execute(OF_PAIR, (source, target)).fetchall()
        connection.close()
    except sqlite3.Error as error:
        raise UserError(f"{path}: not a suggestions file ({error})") from None
    return rows
