"""Suggestions: better translations that a service's users send (POST /suggest, LibreTranslate's:
seq2seq/service/libretranslate.py), kept in an SQLite file to fine-tune the model on.

    the service  Suggestions(path).add(q, s, source, target): one transaction each, on disk
                 before it returns (synchronous=FULL: a crash, kill -9 or a power cut, loses no
                 suggestion the client saw acknowledged); a suggestion made again is counted,
                 not kept twice
    make data    a corpus source {suggestions: FILE} (text/sources.py): read_suggestions, the
                 file's (q, s) pairs for corpus.src_lang -> tgt_lang, each once, oldest first
    serve.memory Suggestions(path).recall(q, source, target): the latest suggestion `s` for
                 q's normalised form (normalised: its white space collapsed and stripped), or
                 None; one look-up in the memory table's primary key, not a scan
    serve.improve_after  Suggestions(path).count(source, target): the pair's, to start an
                 improvement every N new ones (seq2seq/service/improving.py)

    suggestions(q, s, source, target, count, first_at, last_at)   one row per different one
    memory(source, target, key, s, at)   per pair, each normalised text's latest suggestion:
                                         add() keeps it in the same transaction (a file from
                                         before the table: made from its suggestions)
"""

import datetime
import sqlite3
import threading
from pathlib import Path

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
COUNT = "SELECT COUNT(*) FROM suggestions WHERE source = ? AND target = ?"


class Suggestions:
    """The suggestions file, opened for writing (its folder and tables made if need be); add()
    may be called from any thread, one at a time; recall() from one thread (the service's
    event loop), on a connection of its own: the file in WAL mode, it never waits for add()."""

    def __init__(self, path: Path):
        try:
            self.connection = shared_database(path, SCHEMA)
            self.make_memory()
            self.reader = shared_database(path, SCHEMA)
        except (OSError, sqlite3.Error) as error:
            raise UserError(f"{path}: cannot keep suggestions there: {error}") from None
        self.lock = threading.Lock()

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
        self.connection.commit()

    def add(self, q: str, s: str, source: str, target: str) -> None:
        """Keeps one suggestion, and makes it the memory's for q's normalised form, committed
        when this returns."""
        now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        with self.lock, self.connection:  # one transaction, committed at the end
            self.connection.execute(ADD, (q, s, source, target, now, now))
            self.connection.execute(REMEMBER, (source, target, normalised(q), s, now))

    def recall(self, q: str, source: str, target: str) -> str | None:
        """The latest suggestion for q's normalised form from `source` to `target`, or None."""
        rows = self.reader.execute(RECALL, (source, target, normalised(q))).fetchall()
        return rows[0][0] if rows else None  # fetched to the end: no read left open

    def count(self, source: str, target: str) -> int:
        """How many different suggestions the file holds from `source` to `target`."""
        with self.lock:
            return self.connection.execute(COUNT, (source, target)).fetchone()[0]

    def close(self) -> None:
        self.connection.close()
        self.reader.close()


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
