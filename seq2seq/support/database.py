"""The service's kept state in a database, the one place that knows both kinds: an SQLite file
(the default: nothing to set up on one machine) or PostgreSQL, which several instances of the
service share (serve.database: a postgresql:// URL; psycopg 3, the extra seq2seq[replicas]).

    answers(url, setting)       a UserError naming the setting unless it answers (at start)
    held_lock(url, name)        a lock across machines, while within: whether it was taken
    open_database(where, name)  -> Database   where: a file's path (SQLite), or a postgresql://
                                   URL; name: what it keeps (its errors' words, its lock's)
      .transaction(work)        work(db) in one transaction, one writer at a time across
                                processes and machines (SQLite: BEGIN IMMEDIATE; PostgreSQL:
                                an advisory lock of `name`'s), rolled back if it raises, so that
                                nothing is half-written; the driver's failures -> DatabaseFailed
      .read(work)               work(db), reads only, no transaction (a look-up: one round trip)
      .run(work, write)         either, for a command: its failure a UserError
      .execute(sql, params)     -> a cursor (fetchone, fetchall): statements written once, in
                                the SQL both accept, with ? for each parameter
      .executemany(sql, rows)   one statement for each row (PostgreSQL: pipelined, one wait)
      .create(table, columns)   CREATE TABLE IF NOT EXISTS; on PostgreSQL with a `rowid`
                                column last (an identity, indexed), so that ORDER BY rowid is
                                the order rows were added in on both, and a row found by it
      .kind                     "sqlite" or "postgresql" (a store's own migrations, say)

One connection a process, shared by its threads (a lock); connected at the first transaction,
and again after one that failed (PostgreSQL restarted, a network cut), so that the service
carries on once the database answers again. A URL's password is never shown.
"""

import contextlib
import re
import sqlite3
import threading
import urllib.parse
import zlib
from collections.abc import Iterator
from pathlib import Path

from seq2seq.support.errors import UserError
from seq2seq.support.files import shared_database

POSTGRESQL = ("postgresql://", "postgres://")
CONNECT_TIMEOUT_S = 5  # PostgreSQL's: a database that does not answer fails the request then


class DatabaseFailed(Exception):
    """The database cannot be reached, read or written: the service's fault, not a request's."""


def is_url(where: str) -> bool:
    return where.startswith(POSTGRESQL)


def shown(where: str) -> str:
    """`where` to show in a message: a URL without its password (USER:PASSWORD@, or
    ?password=, as PostgreSQL's URLs may give it), each put as ***."""
    if not is_url(where):
        return where
    url = urllib.parse.urlsplit(where)
    netloc = url.netloc
    if "@" in netloc and ":" in (userinfo := netloc.rsplit("@", 1)[0]):
        netloc = f"{userinfo.split(':', 1)[0]}:***@{netloc.rsplit('@', 1)[1]}"
    query = re.sub(r"(^|&)(password=)[^&]*", r"\1\2***", url.query)
    return urllib.parse.urlunsplit(url._replace(netloc=netloc, query=query))


def open_database(where: str | Path, name: str) -> "Database":
    """The database at `where` (module docstring), not yet connected."""
    where = str(where)
    if is_url(where):
        try:
            import psycopg
        except ImportError:
            raise UserError(
                f'{shown(where)}: PostgreSQL needs psycopg: pip install -e ".[replicas]"'
            ) from None
        return PostgreSQL(where, name, psycopg)
    return SQLite(where, name)


@contextlib.contextmanager
def held_lock(url: str, name: str) -> Iterator[bool]:
    """A lock `name` in the PostgreSQL database at `url`, for every process and machine that
    uses it (a session's advisory lock: let go when this ends, or when the process dies and its
    connection with it): yields whether it was taken (False: another holds it)."""
    database = open_database(url, f"the lock of {name}")
    take = "SELECT pg_try_advisory_lock(?)"
    try:
        taken = database.connected(lambda: database.execute(take, (database.lock_id,)).fetchone())
    except DatabaseFailed as error:
        raise UserError(str(error)) from None
    try:
        yield taken[0]
    finally:
        database.close()  # the lock with it


def answers(url: str, setting: str) -> None:
    """A UserError naming `setting` unless `url` is a PostgreSQL URL whose database answers:
    checked at start, so that a service that could not keep its state does not start."""
    if not is_url(url):
        raise UserError(f"{setting} {url}: not a PostgreSQL URL (postgresql://HOST/DATABASE)")
    database = open_database(url, "the service's state")
    try:
        database.transaction(lambda db: db.execute("SELECT 1"))
    except DatabaseFailed as error:
        raise UserError(f"{setting} {error}") from None
    finally:
        database.close()


class Database:
    kind = ""
    failures: tuple[type[BaseException], ...] = ()  # the driver's errors

    def __init__(self, where: str, name: str):
        self.where, self.name = where, name
        self.connection = None
        self.lock = threading.Lock()

    def transaction(self, work):
        """work(self) in one transaction, one writer at a time: what it returns."""
        return self.connected(lambda: self.within_transaction(work))

    def read(self, work):
        """work(self), reads only, each statement on its own (no transaction, no lock: one
        round trip to PostgreSQL for a look-up): what it returns."""
        return self.connected(lambda: work(self))

    def run(self, work, write: bool = True):
        """transaction(work) (or, not `write`, read(work)) for a command: the database failing,
        a UserError that names it (one line)."""
        try:
            return self.transaction(work) if write else self.read(work)
        except DatabaseFailed as error:
            raise UserError(str(error)) from None

    def connected(self, run):
        """run(), connected (again, after a failure); the driver's failures: DatabaseFailed."""
        with self.lock:
            try:
                if self.connection is None:
                    self.connection = self.connect()
                return run()
            except (OSError, *self.failures) as error:
                self.close()  # connected afresh next time
                said = " ".join(str(error).split())  # psycopg's: several lines
                raise DatabaseFailed(
                    f"{shown(self.where)}: cannot keep {self.name} there: {said}"
                ) from None

    def execute(self, sql: str, params: tuple = ()):
        return self.connection.execute(sql, params)

    def executemany(self, sql: str, rows: list[tuple]) -> None:
        self.connection.executemany(sql, rows)

    def create(self, table: str, columns: str) -> None:
        self.execute(f"CREATE TABLE IF NOT EXISTS {table} ({columns})")

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None


class SQLite(Database):
    kind, failures = "sqlite", (sqlite3.Error,)

    def connect(self) -> sqlite3.Connection:
        connection = shared_database(Path(self.where))
        connection.isolation_level = None  # transactions: BEGIN IMMEDIATE, below
        return connection

    def within_transaction(self, work):
        self.connection.execute("BEGIN IMMEDIATE")
        try:
            done = work(self)
        except BaseException:
            self.connection.rollback()
            raise
        self.connection.commit()
        return done


class PostgreSQL(Database):
    kind = "postgresql"

    def __init__(self, where: str, name: str, psycopg):
        super().__init__(where, name)
        self.psycopg, self.failures = psycopg, (psycopg.Error,)
        self.lock_id = zlib.crc32(name.encode())  # the advisory lock of this kind of state

    def connect(self):
        return self.psycopg.connect(self.where, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)

    def within_transaction(self, work):
        with self.connection.transaction():
            self.connection.execute("SELECT pg_advisory_xact_lock(%s)", (self.lock_id,))
            return work(self)

    def execute(self, sql: str, params: tuple = ()):
        return self.connection.execute(sql.replace("?", "%s"), params)

    def executemany(self, sql: str, rows: list[tuple]) -> None:
        self.connection.cursor().executemany(sql.replace("?", "%s"), rows)  # pipelined

    def create(self, table: str, columns: str) -> None:
        identity = "rowid BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE"  # indexed, as SQLite's
        self.execute(f"CREATE TABLE IF NOT EXISTS {table} ({columns}, {identity})")
