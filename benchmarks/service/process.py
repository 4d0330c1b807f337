"""The service as a process, for the benchmarks: started on a free port of 127.0.0.1 and
stopped, asked for JSON, its CPU seconds.

    with running_server(["--engine", "torch"], config, overrides) as service:
        get_json(service.url, "/health")   # (200, {"status": "ok", ...})
        cpu_seconds(service.pid)           # its CPU so far, workers included (Linux)
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
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

HANG = 600  # seconds: a server that has not started by then, or an answer not come, is hung


class Service(NamedTuple):
    url: str
    pid: int


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds so far of a process and of those it started that are still
    running (the service's workers) (Linux's /proc; None elsewhere)."""
    total = None
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue  # it ended
        if stat.parent.name == str(pid) or fields[1] == str(pid):
            total = (total or 0) + (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


@contextlib.contextmanager
def running_server(engine_args: list[str], config: str, overrides: list[str]):
    """The service on a free port of 127.0.0.1, once it answers /health; stopped with
    SIGTERM at the end."""
    with tempfile.NamedTemporaryFile("w+", suffix=".log") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "seq2seq.serve", "--config", config, *engine_args,
             "--host", "127.0.0.1", "--port", "0", *overrides],
            stderr=log,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + HANG
            while not (found := re.search(r"serving .* at (http://\S+)", read(log))):
                if server.poll() is not None or time.monotonic() > deadline:
                    sys.exit(f"the service did not start: {read(log)}")
                time.sleep(0.05)
            url = found.group(1)
            assert get_json(url, "/health")[1]["status"] == "ok"
            yield Service(url, server.pid)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=HANG)


def read(log) -> str:
    return Path(log.name).read_text()


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
