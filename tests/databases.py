"""The real database servers some tests run against, each started for the test session on a
free loopback port, in a folder of its own, nothing kept: PostgreSQL (Debian's package
postgresql; its binaries under /usr/lib/postgresql/<version>/bin) and Redis (redis-server).
Where one is not installed, the tests that need it skip, saying how to install it.

PostgreSQL's server: benchmarks/service/postgres.py's (the benchmarks start it too).
"""

import shutil
import socket
import subprocess

import pytest

from benchmarks.service.postgres import (  # noqa: F401 (the tests' too)
    POSTGRES_BIN,
    new_database,
    run_postgres,
    start_postgres,
    stop_postgres,
)

from helpers import HANG, wait_until

REDIS = shutil.which("redis-server")
needs_redis = pytest.mark.skipif(REDIS is None, reason="no redis-server (apt install redis-server)")
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


def drop_database(url: str) -> None:
    """The database at `url` gone, its connections cut (as when it goes down)."""
    import psycopg

    server, name = url.rsplit("/", 1)
    with psycopg.connect(f"{server}/postgres", autocommit=True) as connection:
        connection.execute(f"DROP DATABASE {name} WITH (FORCE)")
