"""Suggestions: better translations that a service's users send (POST /suggest, LibreTranslate's:
seq2seq/service/libretranslate.py), kept in an SQLite file to fine-tune the model on.

    the service  Suggestions(path).add(q, s, source, target): one transaction each, on disk
                 before it returns (synchronous=FULL: a crash, kill -9 or a power cut, loses no
                 suggestion the client saw acknowledged); a suggestion made again is counted,
                 not kept twice
    make data    a corpus source {suggestions: FILE} (corpora/sources.py): read_suggestions, the
                 file's (q, s) pairs for corpus.src_lang -> tgt_lang, each once, oldest first
    serve.memory Suggestions(path).recall(q, source, target): the latest suggestion `s` for
                 q's normalised form (normalised: its white space collapsed and stripped), or
                 None; one look-up in the memory table's primary key, not a scan
    serve.memory_fuzzy  Suggestions(path).similar(texts, source, target, least): each text's
                 fuzzy match (Match: the memory's text most like it, its suggestion, how
                 alike: localization/fuzzy.py), or None; through a word index (memory_words), the
                 texts holding the text's rarest words, not a scan

    python -m seq2seq.suggestions (seq2seq/suggestions.py), on the same file, as the service runs:
      list   Suggestions.listed(pair, grep, since): each one with its id (its rowid)
      remove Suggestions.remove(ids): gone from the suggestions, hence from read_suggestions (the
             next improvement's corpus), and from the memory: each text's entry falls back to
             its latest suggestion left, or goes; one transaction
      import Suggestions.add_all(pairs, source, target): a catalog's pairs, checked, as add()
             keeps them, CHUNK a transaction: the service's add() waits for a chunk at most
    serve.improve_after  Suggestions(path).count(source, target): the pair's, to start an
                 improvement every N new ones (seq2seq/serving/improving.py)

    suggestions(q, s, source, target, count, first_at, last_at)   one row per different one
    memory(source, target, key, s, at)   per pair, each normalised text's latest suggestion:
                                         add() keeps it in the same transaction (a file from
                                         before the table: made from its suggestions)
    memory_words, memory_vocab           FTS5's index of the memory's texts' words, kept by
                                         triggers, and its count of the texts holding each
"""

import collections
import datetime
import functools
import itertools
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from seq2seq.localization import fuzzy
from seq2seq.support.errors import UserError
from seq2seq.support.files import shared_database

SCHEMA = """CREATE TABLE IF NOT EXISTS suggestions (
    q TEXT NOT NULL,
    s TEXT NOT NULL,
    source TEXT NOT NULL,
    target TEXT NOT NULL,
    count INTEGER NOT NULL DEFAULT 1,
    first_at TEXT NOT NULL,
    last_at TEXT NOT NULL,
    PRIMARY KEY (source, target, q, s)
)"""
MEMORY = """CREATE TABLE IF NOT EXISTS memory (
    source TEXT NOT NULL,
    target TEXT NOT NULL,
    key TEXT NOT NULL,
    s TEXT NOT NULL,
    at TEXT NOT NULL,
    PRIMARY KEY (source, target, key)
)"""
ADD = """INSERT INTO suggestions (q, s, source, target, first_at, last_at) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (source, target, q, s) DO UPDATE SET count = count + 1, last_at = excluded.last_at"""
REMEMBER = """INSERT INTO memory (source, target, key, s, at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (source, target, key) DO UPDATE SET s = excluded.s, at = excluded.at"""
REMEMBER_ALL = """INSERT OR REPLACE INTO memory (source, target, key, s, at)
SELECT source, target, normalised(q), s, last_at FROM suggestions ORDER BY last_at, rowid"""
RECALL = "SELECT s FROM memory WHERE source = ? AND target = ? AND key = ?"
# The memory's words, indexed for fuzzy matches (fuzzy.py), kept by triggers; and how many
# texts hold each word, to ask the index for the rarest.
INDEX = (
    "CREATE VIRTUAL TABLE memory_words USING fts5(key, content='memory', content_rowid='rowid')",
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
WORD_COUNTS = "SELECT term, doc FROM memory_vocab"  # a scan of the index (one term: no faster)
CANDIDATES = 50  # the texts a fuzzy look-up scores, those holding most of the rarest words
READ_MOST = 20_000  # the index entries it reads at most (a few ms a thousand)
HOLDING = "SELECT rowid FROM memory_words WHERE memory_words MATCH ?"
# by rowid: "+" keeps the pair's columns from choosing the primary key's index, a scan
ENTRIES = "SELECT key, s FROM memory WHERE rowid IN ({}) AND +source = ? AND +target = ?"


class Match(NamedTuple):
    """A fuzzy match: the memory's text, its suggestion, and how alike (localization/fuzzy.py)."""

    text: str
    s: str
    score: float


LIST = "SELECT rowid, source, target, count, last_at, q, s FROM suggestions"
REMOVE = "DELETE FROM suggestions WHERE rowid = ?"
FORGET = "DELETE FROM memory WHERE source = ? AND target = ? AND key = ?"
FALL_BACK = """INSERT INTO memory (source, target, key, s, at)
SELECT source, target, normalised(q), s, last_at FROM suggestions
WHERE source = ?1 AND target = ?2 AND normalised(q) = ?3
ORDER BY last_at DESC, rowid DESC LIMIT 1"""
CHUNK = 500  # suggestions an import commits at once: tens of milliseconds
PAUSE_S = 0.02  # after each chunk, for another writer's turn (SQLite's wait polls)


class Row(NamedTuple):
    """A suggestion as listed."""

    id: int  # its rowid
    source: str
    target: str
    count: int
    last_at: str
    q: str
    s: str


COUNT = "SELECT COUNT(*) FROM suggestions WHERE source = ? AND target = ?"


class Suggestions:
    """The suggestions file, opened for writing (its folder and tables made if need be); add()
    may be called from any thread, one at a time; recall() from one thread (the service's
    event loop), on a connection of its own: the file in WAL mode, it never waits for add()."""

    def __init__(self, path: Path):
        self.path = path
        try:
            self.connection = shared_database(path, SCHEMA)
            self.make_memory()
            self.reader = shared_database(path, SCHEMA)
            self.finder = shared_database(path, SCHEMA)  # similar()'s, under self.finding
        except (OSError, sqlite3.Error) as error:
            raise UserError(f"{path}: cannot keep suggestions there: {error}") from None
        self.lock, self.finding = threading.Lock(), threading.Lock()

    def make_memory(self) -> None:
        """The memory table, made if need be, with the suggestions of a file from before it
        (oldest first, so that the latest wins), in one transaction: of several workers
        opening the file at once, one makes it."""
        self.connection.create_function("normalised", 1, normalised, deterministic=True)
        self.connection.execute("BEGIN IMMEDIATE")  # the others wait here
        made = self.connection.execute("SELECT 1 FROM sqlite_master WHERE name = 'memory'")
        if not made.fetchall():
            self.connection.execute(MEMORY)
            self.connection.execute(REMEMBER_ALL)
        indexed = self.connection.execute("SELECT 1 FROM sqlite_master WHERE name = 'memory_words'")
        if not indexed.fetchall():
            for statement in INDEX:
                self.connection.execute(statement)
        self.connection.commit()

    def add(self, q: str, s: str, source: str, target: str) -> None:
        """Keeps one suggestion, and makes it the memory's for q's normalised form, committed
        when this returns."""
        now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        with self.lock, self.connection:  # one transaction, committed at the end
            self.connection.execute(ADD, (q, s, source, target, now, now))
            new = not self.connection.execute(RECALL, (source, target, normalised(q))).fetchall()
            self.connection.execute(REMEMBER, (source, target, normalised(q), s, now))
        if new and "word_counts" in self.__dict__:  # read already: kept
            self.word_counts.update(set(fuzzy.words(q)))

    def recall(self, q: str, source: str, target: str) -> str | None:
        """The latest suggestion for q's normalised form from `source` to `target`, or None."""
        rows = self.reader.execute(RECALL, (source, target, normalised(q))).fetchall()
        return rows[0][0] if rows else None  # fetched to the end: no read left open

    def similar(self, texts: list[str], source: str, target: str, least: float) -> list:
        """Each text's fuzzy match (Match, or None): match(), one look-up at a time, from
        any thread (the service's: a worker thread, tens of milliseconds a text at most)."""
        with self.finding:
            return [self.match(text, source, target, least) for text in texts]

    def match(self, q: str, source: str, target: str, least: float) -> Match | None:
        """The memory's text most like q (localization/fuzzy.py's similarity, at least `least`; not
        q's normalised form itself, which recall finds) from `source` to `target`, with its
        suggestion; else None. The candidates: the CANDIDATES texts that hold most of q's
        rarest words, as many of them as a match may have changed and one more, so that every
        match holds one; each word's texts read from the index, READ_MOST in all (beyond, the
        words are too common to tell a match: fewer are read)."""
        mine = fuzzy.words(q)
        counts = {word: self.word_counts.get(word, 0) for word in set(mine)}
        wanted, read = int((1 - least) * len(mine) / least) + 1, 0
        held: collections.Counter = collections.Counter()
        for word in sorted(counts, key=lambda word: (counts[word], word))[:wanted]:
            if read + counts[word] > READ_MOST:
                break
            if counts[word]:  # (a word no text holds: one of those a match changed)
                read += counts[word]
                held.update(row for (row,) in self.finder.execute(HOLDING, (fuzzy.query([word]),)))
        rows = [row for row, _ in held.most_common(CANDIDATES)]
        found = self.finder.execute(
            ENTRIES.format(", ".join("?" * len(rows))), (*rows, source, target)
        ).fetchall()
        scored = [Match(key, s, fuzzy.similarity(mine, fuzzy.words(key))) for key, s in found]
        best = max(scored, key=lambda match: match.score, default=None)
        return best if best and best.score >= least and best.text != normalised(q) else None

    @functools.cached_property
    def word_counts(self) -> collections.Counter:
        """How many of the memory's texts hold each word (any pair's): read once, then kept
        by add() (another worker's adds are not counted: the counts only order q's words)."""
        return collections.Counter(dict(self.finder.execute(WORD_COUNTS).fetchall()))

    def add_all(self, pairs: Iterable[tuple[str, str]], source: str, target: str) -> None:
        """Keeps each (q, s) as add() does, CHUNK at a time: each chunk a transaction of its
        own (executemany), then a pause (PAUSE_S), so that the service's add() on the same file
        waits for one chunk at most, never for the whole import (SQLite has one writer at a
        time). Stopped midway, the chunks committed are kept: importing again keeps each pair
        once (counted twice)."""
        now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        pairs = iter(pairs)
        while chunk := list(itertools.islice(pairs, CHUNK)):
            with self.lock, self.connection:
                kept = [(q, s, source, target, now, now) for q, s in chunk]
                self.connection.executemany(ADD, kept)
                remembered = [(source, target, normalised(q), s, now) for q, s in chunk]
                self.connection.executemany(REMEMBER, remembered)
            time.sleep(PAUSE_S)

    def listed(self, pair: str | None, grep: str | None, since: str | None) -> Iterator[Row]:
        """Each suggestion, oldest first: of `pair` ("en-de"), holding `grep` in q or s
        (ASCII case aside), last sent on `since` (an ISO date) or later; None: any."""
        query = LIST + " WHERE (? IS NULL OR source || '-' || target = ?)"
        query += " AND (? IS NULL OR instr(lower(q), lower(?)) OR instr(lower(s), lower(?)))"
        query += " AND (? IS NULL OR last_at >= ?) ORDER BY rowid"
        values = (pair, pair, grep, grep, grep, since, since)
        return (Row(*row) for row in self.reader.execute(query, values))

    def remove(self, ids: list[int]) -> None:
        """Removes these suggestions, by id; the memory's entry of each one's text falls back
        to the latest suggestion left for it (the text normalised), or goes. One transaction:
        an id that is no suggestion's removes none (a UserError naming it)."""
        with self.lock, self.connection:
            by_id = LIST + " WHERE rowid = ?"
            rows = [Row(*r) for i in set(ids) for r in self.connection.execute(by_id, (i,))]
            missing = sorted(set(ids) - {row.id for row in rows})
            if missing:
                named = ", ".join(map(str, missing))
                raise UserError(f"{self.path}: no suggestion {named}: list shows the ids")
            self.connection.executemany(REMOVE, [(row.id,) for row in rows])
            texts = {(row.source, row.target, normalised(row.q)) for row in rows}
            self.connection.executemany(FORGET, texts)
            self.connection.executemany(FALL_BACK, texts)  # each: its latest left, if any

    def count(self, source: str, target: str) -> int:
        """How many different suggestions the file holds from `source` to `target`."""
        with self.lock:
            return self.connection.execute(COUNT, (source, target)).fetchone()[0]

    def close(self) -> None:
        for connection in (self.connection, self.reader, self.finder):
            connection.close()


def normalised(text: str) -> str:
    """A text as the memory knows it: each run of white space one space, none at either end."""
    return " ".join(text.split())


def read_suggestions(path: Path, source: str, target: str) -> list[tuple[str, str]]:
    """The file's suggestions from `source` to `target`: (text, better translation) pairs,
    each once, oldest first. The file is opened read-only: a service may go on writing it."""
    if not path.is_file():
        raise UserError(f"{path}: no such suggestions file")
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        rows = connection.execute(
            "SELECT q, s FROM suggestions WHERE source = ? AND target = ? ORDER BY rowid",
            (source, target),
        ).fetchall()
        connection.close()
    except sqlite3.Error as error:
        raise UserError(f"{path}: not a suggestions file ({error})") from None
    return rows
