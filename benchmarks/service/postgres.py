"""A throwaway PostgreSQL server on loopback, for the benchmarks and the tests: Debian's
package postgresql (its binaries under /usr/lib/postgresql/<version>/bin), a new folder, a
free port, nothing kept. PostgreSQL will not run as root: as root, it runs as the user
`postgres` (runuser).

    POSTGRES_BIN                      initdb's path, or None (not installed)
    start_postgres(port)  -> (process, folder)   a new server, answering
    run_postgres(folder, port)        the same server started again (after stop_postgres)
    stop_postgres(process)            its fast shutdown: clients cut, as when it goes down
    new_database(server)  -> URL      a new, empty database on the server at URL `server`
"""

import contextlib
import glob
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from benchmarks.service.process import HANG

POSTGRES_BIN = next(iter(sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True)), None)


def as_postgres(*args: str) -> list[str]:
    """A PostgreSQL program's command line, run as the user postgres when we are root."""
    program = [str(Path(POSTGRES_BIN).parent / args[0]), *args[1:]]
    return ["runuser", "-u", "postgres", "--", *program] if os.geteuid() == 0 else program


def start_postgres(port: int) -> tuple[subprocess.Popen, Path]:
    """A PostgreSQL server on 127.0.0.1:port (user postgres, no password: trust), its data in a
    new folder under the system's temporary one (the user postgres must reach it), answering;
    fsync off: nothing of it outlives its use."""
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
    deadline = time.monotonic() + HANG
    while not accepts(port):
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"PostgreSQL of {folder} did not answer on port {port}")
        time.sleep(0.05)
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

    name = f"db_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")
    return f"{server}/{name}"
