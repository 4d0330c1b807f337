"""A server as a process, for the benchmarks and the tests: started, found at its address,
asked for JSON, its CPU seconds, and stopped, all one way.

    with started(command, url_of, "LibreTranslate", env=...) as service:   any server's command
    with running_server(["--model", P], config, ["serve.threads=1"]) as service:   ours
        get_json(service.url, "/health")   # (200, {"status": "ok", ...})
        cpu_seconds(service.pid)           # its CPU so far, workers included (Linux)
        resident_mib(service.pid)          # its resident memory now, workers included (Linux)
        service.log.read_text()            # what it printed so far
        thread_cpu(service.pid)            # each of its threads' CPU so far (Linux)
        with spending(service, batches=True) as spent: ...   # its CPU (and batches) then
    address(line)         the URL of our server's "serving ... at URL" line (None: not that)
    family(pid)           a process and those it started (our server's workers), from /proc
    stop_server(process)  THE way a server's process is stopped: SIGTERM, SIGKILL after STOP_S
"""

import contextlib
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

HANG = 600  # seconds: a server that has not started by then, or an answer not come, is hung
STOP_S = 30  # seconds for a server to exit after SIGTERM
COUNTS = ("batches", "sentences")  # of our server's work, at GET /health


class Service(NamedTuple):
    url: str
    pid: int
    log: Path | None = None  # its output, stdout and stderr (started's)


def stats(pattern: str) -> dict[int, list[str]]:
    """The /proc stat fields (after the command's name) of each process or thread whose stat
    file matches /proc/`pattern`, by its id (Linux; {} elsewhere); those that ended left out."""
    found = {}
    for stat in Path("/proc").glob(pattern):
        with contextlib.suppress(OSError):  # it ended
            found[int(stat.parent.name)] = stat.read_text().rpartition(")")[2].split()
    return found


def family(pid: int) -> dict[int, list[str]]:
    """The stat fields of a process and of those it started that are still running (the
    service's workers), by pid."""
    return {p: fields for p, fields in stats("[0-9]*/stat").items()
            if p == pid or fields[1] == str(pid)}  # fmt: skip


def resident_mib(pid: int) -> float | None:
    """The resident memory (RSS) of a process and of its children still running (family), in
    MiB; None where /proc is not."""
    pages = sum(int(fields[21]) for fields in family(pid).values())  # stat's 24th field
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20 if pages else None


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds so far of a process and of its children still running
    (family); None where /proc is not."""
    return sum(map(stat_cpu, found.values())) if (found := family(pid)) else None


def thread_cpu(pid: int) -> dict[int, float]:
    """CPU seconds so far of each thread of the process `pid`, by its id (Linux)."""
    return {tid: stat_cpu(fields) for tid, fields in stats(f"{pid}/task/*/stat").items()}


def waited_cpu_seconds(pid: int) -> float | None:
    """CPU seconds of the process's children that ended and were waited for (stat's cutime
    and cstime: a child process the service started, once done); None where /proc is not."""
    fields = stats(f"{pid}/stat").get(pid)
    return stat_cpu(fields, CHILDREN) if fields else None


OWN, CHILDREN = 11, 13  # where a stat line's user and system ticks are: its own, its children's


def stat_cpu(fields: list[str], at: int = OWN) -> float:
    """User + system CPU seconds of a /proc stat line's fields after the command's name (`at`:
    the process's own, or its waited children's)."""
    return (int(fields[at]) + int(fields[at + 1])) / os.sysconf("SC_CLK_TCK")


def address(text: str) -> str | None:
    """The URL our server says it serves at (`serving ... at URL`), if `text` says it."""
    found = re.search(r"serving .* at (http://\S+)", text)
    return found and found.group(1)


@contextlib.contextmanager
def running_server(args: list[str], config: str, overrides: list[str]) -> Iterator[Service]:
    """The service (python -m seq2seq.serve, its `args` and `overrides`) on a free port of
    127.0.0.1, once it answers /health."""
    command = [sys.executable, "-m", "seq2seq.serve", "--config", config, *args,
               "--host", "127.0.0.1", "--port", "0", *overrides]  # fmt: skip

    def url(log: str) -> str | None:
        found = address(log)
        return found and get_json(found, "/health")[1]["status"] == "ok" and found

    with started(command, url, "the service") as service:
        yield service


@contextlib.contextmanager
def started(command: list, url_of, what: str, **popen) -> Iterator[Service]:
    """`command` started (Popen's `popen` arguments), its output to a log, until url_of(the log
    so far) gives the URL where it answers; stopped at the end (stop_server)."""
    with tempfile.NamedTemporaryFile("w+", suffix=".log") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, **popen)
        try:
            deadline = time.monotonic() + HANG
            while not (url := url_of(Path(log.name).read_text(errors="replace"))):
                if server.poll() is not None or time.monotonic() > deadline:
                    why = "exited" if server.poll() is not None else f"hung for {HANG} s"
                    sys.exit(f"{what} {why}:\n{Path(log.name).read_text()[-3000:]}")
                time.sleep(0.05)
            yield Service(url, server.pid, Path(log.name))
        finally:
            stop_server(server)


def stop_server(process: subprocess.Popen) -> None:
    """A server's process stopped, as its users stop it: SIGTERM (nothing if it has ended),
    SIGKILL if it is still there after STOP_S; waited for."""
    process.send_signal(signal.SIGTERM)  # Popen does nothing once it has ended
    try:
        process.wait(timeout=STOP_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def get_json(url: str, path: str) -> tuple[int, dict | list | None]:
    return asked_json(url, "GET", path)


def post_json(url: str, path: str, body: dict) -> tuple[int, dict | list | None]:
    return asked_json(url, "POST", path, body)


def asked_json(url: str, method: str, path: str, body: dict | None = None) -> tuple:
    """(status, the answer's JSON; None if it is not JSON) of one request (`body` as JSON)."""
    connection = http.client.HTTPConnection(urlsplit(url).netloc, timeout=HANG)
    sent = None if body is None else json.dumps(body)
    connection.request(method, path, sent, {"Content-Type": "application/json"} if sent else {})
    response = connection.getresponse()
    answer = response.read()
    connection.close()
    try:
        return response.status, json.loads(answer)
    except ValueError:
        return response.status, None


@contextlib.contextmanager
def spending(service: Service, batches: bool) -> Iterator[dict]:
    """What the server spends during the block, in the dict it gives, filled at the end: "cpu"
    (its CPU seconds, workers included; None where /proc is not) and, with `batches`, the
    "batches" and "sentences" it decoded (GET /health: ours, in one process)."""

    def now() -> dict:
        counts = (get_json(service.url, "/health")[1] if batches else None) or {}
        return {"cpu": cpu_seconds(service.pid), **{k: counts.get(k, 0) for k in COUNTS}}

    before, spent = now(), {}
    yield spent
    after = now()
    spent["cpu"] = None if None in (before["cpu"], after["cpu"]) else after["cpu"] - before["cpu"]
    if batches:
        spent.update({key: after[key] - before[key] for key in COUNTS})
