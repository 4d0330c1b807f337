"""The service as a process, for the benchmarks: started on a free port of 127.0.0.1 and
stopped (started(): any server's command, LibreTranslate's too), asked for JSON, its CPU
seconds.

    with running_server(["--engine", "torch"], config, overrides) as service:
        get_json(service.url, "/health")   # (200, {"status": "ok", ...})
        cpu_seconds(service.pid)           # its CPU so far, workers included (Linux)
        thread_cpu(service.pid)            # each of its threads' CPU so far (Linux)
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


class Service(NamedTuple):
    url: str
    pid: int


def family(pid: int) -> dict[int, list[str]]:
    """The /proc stat fields (after the command's name) of a process and of those it started
    that are still running (the service's workers), by pid (Linux; {} elsewhere)."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue  # it ended
        if stat.parent.name == str(pid) or fields[1] == str(pid):
            found[int(stat.parent.name)] = fields
    return found


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds so far of a process and of its children still running
    (family); None where /proc is not."""
    stats = family(pid)
    if not stats:
        return None
    return sum(map(stat_cpu, stats.values()))


def thread_cpu(pid: int) -> dict[int, float]:
    """CPU seconds so far of each thread of the process `pid`, by its id (Linux)."""
    seconds = {}
    for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
        try:
            seconds[int(stat.parent.name)] = stat_cpu(stat.read_text().rpartition(")")[2].split())
        except OSError:
            continue  # it ended
    return seconds


def stat_cpu(fields: list[str]) -> float:
    """User + system CPU seconds of a /proc stat line's fields after the command's name."""
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def running_server(engine_args: list[str], config: str, overrides: list[str]):
    """The service on a free port of 127.0.0.1, once it answers /health."""
    command = [sys.executable, "-m", "seq2seq.serve", "--config", config, *engine_args,
               "--host", "127.0.0.1", "--port", "0", *overrides]  # fmt: skip

    def url(log: str) -> str | None:
        found = re.search(r"serving .* at (http://\S+)", log)
        return found and get_json(found.group(1), "/health")[1]["status"] == "ok" and found[1]

    with started(command, url, "the service") as service:
        yield service


@contextlib.contextmanager
def started(command: list, url_of, what: str, **popen) -> Iterator[Service]:
    """`command` started (Popen's `popen` arguments), its output to a log, until url_of(the log
    so far) gives the URL where it answers; stopped with SIGTERM at the end (SIGKILL after
    STOP_S)."""
    with tempfile.NamedTemporaryFile("w+", suffix=".log") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, **popen)
        try:
            deadline = time.monotonic() + HANG
            while not (url := url_of(Path(log.name).read_text(errors="replace"))):
                if server.poll() is not None or time.monotonic() > deadline:
                    why = "exited" if server.poll() is not None else f"hung for {HANG} s"
                    sys.exit(f"{what} {why}:\n{Path(log.name).read_text()[-3000:]}")
                time.sleep(0.05)
            yield Service(url, server.pid)
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=STOP_S)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def get_json(url: str, path: str) -> tuple[int, dict | list | None]:
    connection = http.client.HTTPConnection(urlsplit(url).netloc, timeout=HANG)
    connection.request("GET", path)
    response = connection.getresponse()
    body = response.read()
    connection.close()
    try:
        return response.status, json.loads(body)
    except ValueError:
        return response.status, None
