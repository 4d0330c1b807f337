"""The API keys a request may present (serve.api_keys), each with its limits: in a file, in
an environment variable, or in a keys database with limits of its own, as LibreTranslate's:
an SQLite file, or PostgreSQL, which several instances share (support/database.py); `python -m
seq2seq.keys` manages either (add, list, remove).

    serve.api_keys: a file, env:NAME, or a keys database (.db, or a postgresql:// URL)
      ->  ApiKeys.load (at start-up; a database is read again when it changes, so that keys
      added or removed count within a second: an SQLite file when its file changes, PostgreSQL
      every second, in a thread of its own, never on the event loop)
    ApiKeys.limits(the key a request presented): its KeyLimits, looked up by its SHA-256, or
      Forbidden (checks.py's Checks.key asks, for every route)
    ApiKeys.charge(digest, limits, chars): a request's characters counted against the key's
      month (a keys database only), or QuotaUsed past its chars_per_month; used(digest): the
      month's count so far (DeepL's /v2/usage)

    keys(digest, id, requests_per_minute, max_chars, added_at, chars_per_month)   a key a row
      digest   the key's SHA-256 (hex): the key itself is not kept, so that the file does not
               give the keys away; `add` prints a new key once
      id       the digest's first ID_CHARS characters, to list and remove a key by
      requests_per_minute   its POSTs a minute at most (0: no limit of its own)
      max_chars             characters in one request's texts at most (0: none of its own)
      chars_per_month       characters in its requests of a month (UTC) at most (0: no quota)
    usage(digest, month, chars)   the characters each key sent to translate each month
                                  ("" the requests without a key, where none is required)
"""

import datetime
import hashlib
import math
import os
import secrets
import threading
import time
from dataclasses import astuple, dataclass
from pathlib import Path

from seq2seq.serving.refusals import Busy, Forbidden, QuotaUsed
from seq2seq.support.database import Database, DatabaseFailed, is_url, open_database, shown
from seq2seq.support.errors import UserError, warn

KEYS = """digest TEXT PRIMARY KEY,
    id TEXT NOT NULL,
    requests_per_minute INTEGER NOT NULL,
    max_chars INTEGER NOT NULL,
    added_at TEXT NOT NULL,
    chars_per_month INTEGER NOT NULL DEFAULT 0"""
USAGE = """digest TEXT NOT NULL,
    month TEXT NOT NULL,
    chars INTEGER NOT NULL,
    PRIMARY KEY (digest, month)"""
ID_CHARS = 8
LIMITS = "requests_per_minute, max_chars, chars_per_month"  # KeyLimits' fields, in order


@dataclass(frozen=True)
class KeyLimits:
    """What one key may do besides the service's own limits (0: nothing more)."""

    requests_per_minute: int = 0
    max_chars: int = 0
    chars_per_month: int = 0


def this_month() -> str:
    """The month a request's characters count in: 2026-11 (UTC)."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m")


def digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


class KeyStore:
    """The keys database (a file's path, or a postgresql:// URL); `create`: a file made (with
    its folder) if it is not there, else a UserError."""

    def __init__(self, where: str | Path, create: bool = False):
        self.where = str(where)
        if not (create or is_url(self.where) or Path(where).is_file()):
            raise UserError(f"{where}: no such API keys file (python -m seq2seq.keys add makes it)")
        self.db = open_database(where, "API keys")
        try:
            self.db.transaction(made)
        except DatabaseFailed as error:
            raise UserError(f"not an API keys file or database: {error}") from None

    def add(self, limits: KeyLimits, key: str | None = None) -> str:
        """Adds a key (a new random one unless given) with its limits; returns it."""
        key = key or secrets.token_urlsafe(24)
        if not (key.isascii() and key.isprintable() and " " not in key):
            raise UserError("an API key is printable ASCII without spaces")
        added = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        per_minute, chars, per_month = astuple(limits)
        row = (digest(key), digest(key)[:ID_CHARS], per_minute, chars, added, per_month)

        def add(db: Database) -> bool:
            if db.execute("SELECT 1 FROM keys WHERE digest = ?", row[:1]).fetchall():
                return False
            db.execute("INSERT INTO keys VALUES (?, ?, ?, ?, ?, ?)", row)
            return True

        if not self.db.run(add):
            raise UserError(f"{shown(self.where)}: that key is there already")
        return key

    def remove(self, key_or_id: str) -> int:
        """Removes the key given, or the one whose id it is; returns how many (0 or 1)."""
        return self.db.run(lambda db: db.execute(
            "DELETE FROM keys WHERE digest = ? OR id = ?", (digest(key_or_id), key_or_id)
        ).rowcount)  # fmt: skip

    def listed(self) -> list[tuple[str, KeyLimits, str, int]]:
        """Each key's id, limits, when it was added and its characters this month, oldest
        first."""
        rows = self.db.run(lambda db: db.execute(
            f"SELECT id, {LIMITS}, added_at, coalesce(chars, 0) FROM keys LEFT JOIN usage "
            "ON usage.digest = keys.digest AND month = ? ORDER BY keys.rowid",
            (this_month(),),
        ).fetchall(), write=False)  # fmt: skip
        return [(id_, KeyLimits(*limits), added, used) for id_, *limits, added, used in rows]

    def limits(self) -> dict[str, KeyLimits]:
        """Each key's limits, by its digest."""
        query = f"SELECT digest, {LIMITS} FROM keys"
        rows = self.db.run(lambda db: db.execute(query).fetchall(), write=False)
        return {key: KeyLimits(*limits) for key, *limits in rows}

    def charge(self, key: str, chars: int, quota: int) -> bool:
        """Adds `chars` to the month's count of the key of digest `key`, unless that passes
        its `quota` (0: none): whether it did. One statement: workers and instances charging
        together never pass a quota."""
        if quota and chars > quota:
            return False
        return bool(self.db.run(lambda db: db.execute(
            "INSERT INTO usage VALUES (?, ?, ?) ON CONFLICT (digest, month) DO UPDATE "
            "SET chars = usage.chars + excluded.chars WHERE ? = 0 OR usage.chars + "
            "excluded.chars <= ? RETURNING chars",
            (key, this_month(), chars, quota, quota),
        ).fetchall()))  # fmt: skip

    def used(self, key: str) -> int:
        """The characters the key of digest `key` sent this month."""
        rows = self.db.run(lambda db: db.execute(
            "SELECT chars FROM usage WHERE digest = ? AND month = ?", (key, this_month())
        ).fetchall(), write=False)  # fmt: skip
        return rows[0][0] if rows else 0

    def close(self) -> None:
        self.db.close()


def changes(path: Path) -> tuple:
    """What tells that an SQLite file changed: its own and its write-ahead log's times and
    sizes (a commit in WAL mode writes the log alone)."""
    log = path.with_name(path.name + "-wal")
    return tuple((f.stat().st_mtime_ns, f.stat().st_size) for f in (path, log) if f.exists())


def made(db: Database) -> None:
    """The tables, made if need be; an SQLite file of an earlier version given its
    chars_per_month."""
    db.create("keys", KEYS)
    db.create("usage", USAGE)
    if db.kind == "sqlite":
        columns = [row[1] for row in db.execute("PRAGMA table_info(keys)")]
        if "chars_per_month" not in columns:
            db.execute("ALTER TABLE keys ADD COLUMN chars_per_month INTEGER NOT NULL DEFAULT 0")


class ApiKeys:
    """The keys a request may present, by their SHA-256, each with its limits; none (and no
    keys database): the service is open to all."""

    clock = staticmethod(time.monotonic)
    look_every_s = 1.0  # how often a keys database's file is looked at for a change

    def __init__(self, keys: list[str], store: str | None = None, required: bool = True,
                 link: str = ""):  # fmt: skip
        self.keys = {digest(key): KeyLimits() for key in keys}
        self.store, self.changed, self.looked = store, None, -math.inf
        self.rereading: threading.Thread | None = None  # PostgreSQL's keys, read again
        self.answering = True  # whether PostgreSQL answered the last reading
        self.ledger: KeyStore | None = None  # the keys database, open to count usage in
        self.lock = threading.Lock()  # the ledger's, shared by the threads of a process
        self.required, self.link = required, link  # serve.keys_required, serve.api_key_link

    @classmethod
    def load(cls, where: str, required: bool = True, link: str = "") -> "ApiKeys":
        """The keys that serve.api_keys names: "" (none), a keys database (.db), a file of keys
        one a line, or env:NAME; `required` and `link`: serve.keys_required, api_key_link."""
        if not where:
            return cls([], None, required, link)
        if where.endswith(".db") or is_url(where):
            keys = cls([], where, required, link)
            keys.ledger = KeyStore(where)  # there, and a keys database: else a UserError now
            keys.reread() if is_url(where) else keys.refresh()
            return keys
        if where.startswith("env:"):
            name = where.removeprefix("env:")
            text, origin = os.environ.get(name, ""), f"the environment variable {name}"
        else:
            try:
                text, origin = Path(where).read_text(encoding="utf-8"), where
            except (OSError, UnicodeDecodeError) as error:
                raise UserError(f"cannot read the API keys (serve.api_keys): {error}") from None
        keys = text.replace(",", " ").split()
        if not keys:
            raise UserError(f"no API keys in {origin} (serve.api_keys)")
        if not all(key.isascii() and key.isprintable() for key in keys):
            raise UserError(f"{origin}: API keys are printable ASCII (serve.api_keys)")
        return cls(keys, None, required, link)

    def refresh(self) -> None:
        """A keys database's keys read again if its file changed, or (PostgreSQL) in a
        thread of their own; at most once every look_every_s seconds."""
        if self.store is None or (now := self.clock()) - self.looked < self.look_every_s:
            return
        self.looked = now
        if is_url(self.store):
            if self.rereading is None or not self.rereading.is_alive():
                self.rereading = threading.Thread(target=self.reread, daemon=True)
                self.rereading.start()
            return
        path = Path(self.store)
        changed = changes(path) if path.exists() else None
        if changed is None:  # removed: no key is valid
            self.keys, self.changed = {}, None
        elif changed != self.changed:
            store = KeyStore(path)
            self.keys, self.changed = store.limits(), changed
            store.close()

    def reread(self) -> None:
        """PostgreSQL's keys read again; it failing, those read last are kept (said once)."""
        try:
            self.keys = self.in_ledger(lambda ledger: ledger.limits())
        except UserError as error:
            if self.answering:
                warn(f"{error}: the API keys read last are used until it answers")
            self.answering = False
            return
        self.answering = True

    def __bool__(self) -> bool:
        return bool(self.keys) or self.store is not None

    def limits(self, presented: str | None) -> tuple[str, KeyLimits]:
        """The digest and limits of the key `presented` (None, "": none): Forbidden unless keys
        are off, it is one of them, or none is given where keys are not required. Looked up by
        its SHA-256, the time taken says nothing of how close a wrong key was."""
        self.refresh()
        if not self or (not presented and not self.required):
            return "", KeyLimits()  # at the client's own limits (access.py's RateLimit)
        if not presented:
            where = f"; get one at {self.link}" if self.link else ""
            raise Forbidden(f"an API key is needed: Authorization: Bearer KEY (or api_key){where}")
        key = digest(presented)
        if key not in self.keys:
            raise Forbidden("Invalid API key")
        return key, self.keys[key]

    def charge(self, key: str, limits: KeyLimits, chars: int) -> None:
        """A request's `chars` counted for the key of digest `key` (with a keys database;
        else not counted), or QuotaUsed past its chars_per_month."""
        quota = limits.chars_per_month
        if self.store is None:
            return
        try:
            if self.in_ledger(lambda ledger: ledger.charge(key, chars, quota)):
                return
        except UserError as error:  # the database failing: no translation it did not count
            warn(f"a request's characters could not be counted: {error}")
            raise Busy("the API keys' database does not answer now: try again later") from None
        raise QuotaUsed(
            f"Quota exceeded: this API key has sent {self.used(key):,} of its {quota:,} "
            f"characters of {this_month()}; this request has {chars:,}"
        )

    def used(self, key: str) -> int:
        """The characters the key of digest `key` sent this month (0 without a keys
        database)."""
        return 0 if self.store is None else self.in_ledger(lambda ledger: ledger.used(key))

    def in_ledger(self, count):
        """count(the keys database), opened the first time, one thread at a time."""
        with self.lock:
            if self.ledger is None:
                self.ledger = KeyStore(self.store)
            return count(self.ledger)
