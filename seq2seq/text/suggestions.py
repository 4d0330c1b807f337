"""Suggestions: better translations that a service's users send (POST /suggest, LibreTranslate's:
seq2seq/service/libretranslate.py), kept in an SQLite file to fine-tune the model on.

    the service  Suggestions(path).add(q, s, source, target): one transaction each, on disk
                 before it returns (synchronous=FULL: a crash, kill -9 or a power cut, loses no
                 suggestion the client saw acknowledged); a suggestion made again is counted,
                 not kept twice
    make data    a corpus source {suggestions: FILE} (text/sources.py): read_suggestions, the
                 file's (q, s) pairs for corpus.src_lang -> tgt_lang, each once, oldest first

    suggestions(q, s, source, target, count, first_at, last_at)   one row per different one
"""

import datetime
import sqlite3
import threading
from pathlib import Path

from seq2seq.support.errors import UserError

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
ADD = """INSERT INTO suggestions (q, s, source, target, first_at, last_at) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (source, target, q, s) DO UPDATE SET count = count + 1, last_at = excluded.last_at"""
BUSY_S = 30  # seconds a writer waits for another (serve.workers share the file)


class Suggestions:
    """The suggestions file, opened for writing (its folder and table made if need be); add()
    may be called from any thread, one at a time."""

    def __init__(self, path: Path):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.connection = sqlite3.connect(path, timeout=BUSY_S, check_same_thread=False)
            self.connection.execute("PRAGMA journal_mode=WAL")  # readers never block the writer
            self.connection.execute("PRAGMA synchronous=FULL")  # each commit synced to disk
            self.connection.execute(SCHEMA)
        except (OSError, sqlite3.Error) as error:
            raise UserError(f"{path}: cannot keep suggestions there: {error}") from None
        self.lock = threading.Lock()

    def add(self, q: str, s: str, source: str, target: str) -> None:
        """Keeps one suggestion, committed when this returns."""
        now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        with self.lock, self.connection:  # one transaction, committed at the end
            self.connection.execute(ADD, (q, s, source, target, now, now))

    def close(self) -> None:
        self.connection.close()


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
