"""The real database servers some tests run against, each started for the test session on a
free loopback port, in a folder of its own, nothing kept: PostgreSQL (Debian's package
postgresql; its binaries under /usr/lib/postgresql/<version>/bin) and Redis (redis-server).
Where one is not installed, the tests that need it skip, saying how to install it.

PostgreSQL will not run as root: as root, its server runs as the user `postgres` (runuser).
"""

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

from helpers import HANG, wait_until

REDIS = shutil.which("redis-server")
needs_redis = pytest.mark.skipif(REDIS is None, reason="no redis-server (apt install redis-server)")
POSTGRES_BIN = next(iter(sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True)), None)
needs_postgres = pytest.mark.skipif(
    POSTGRES_BIN is None, reason="no PostgreSQL server (apt install postgresql)"
)


def listens(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def start_redis(port: int) -> subprocess.Popen:
    """redis-server on 127.0.0.1:port, nothing written to disk, answering."""
    process = subprocess.Popen(
        [REDIS, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    wait_until(lambda: listens(port), "redis-server to answer", process, timeout=HANG)
    return process


def as_postgres(*args: str) -> list[str]:
    """A PostgreSQL program's command line, run as the user postgres when we are root."""
    program = [str(Path(POSTGRES_BIN).parent / args[0]), *args[1:]]
    return ["runuser", "-u", "postgres", "--", *program] if os.geteuid() == 0 else program


def start_postgres(port: int) -> tuple[subprocess.Popen, Path]:
    """A PostgreSQL server on 127.0.0.1:port (user postgres, no password: trust), its data in a
    new folder under the system's temporary one (the user postgres must reach it), answering;
    fsync off: nothing of it outlives the tests."""
    folder = Path(tempfile.mkdtemp(prefix="seq2seq-postgres-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    subprocess.run(
        as_postgres("initdb", "-D", str(folder / "data"), "-U", "postgres", "--auth=trust",
                    "-E", "UTF8", "--no-sync"),
        check=True, capture_output=True,
    )  # fmt: skip
    return run_postgres(folder, port), folder


def run_postgres(folder: Path, port: int) -> subprocess.Popen:
    """The server of start_postgres's `folder` started (again) on `port`, answering; in a
    process group of its own, for stop_postgres."""
    process = subprocess.Popen(
        as_postgres("postgres", "-D", str(folder / "data"), "-p", str(port), "-k", str(folder),
                    "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    wait_until(lambda: accepts(port), "PostgreSQL to answer", process, timeout=HANG)
    return process


def stop_postgres(process: subprocess.Popen) -> None:
    """PostgreSQL's fast shutdown (SIGINT): its clients disconnected, as when it goes down."""
    with contextlib.suppress(ProcessLookupError):  # stopped already
        os.killpg(process.pid, signal.SIGINT)
    process.wait(timeout=HANG)


def accepts(port: int) -> bool:
    """Whether the server on `port` takes a connection (not only the socket: it is ready)."""
    import psycopg

    try:
        url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        psycopg.connect(url, connect_timeout=2).close()
    except psycopg.OperationalError:
        return False
    return True


def new_database(server: str) -> str:
    """A new, empty database on the server at URL `server`: its URL."""
    import psycopg

    name = f"test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")
    return f"{server}/{name}"


def drop_database(url: str) -> None:
    """The database at `url` gone, its connections cut (as when it goes down)."""
    import psycopg

    server, name = url.rsplit("/", 1)
    with psycopg.connect(f"{server}/postgres", autocommit=True) as connection:
        connection.execute(f"DROP DATABASE {name} WITH (FORCE)")
