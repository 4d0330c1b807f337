"""wrk (Debian's package: apt-get install wrk), a load generator made for the job: the load
harness's driver for speed (harness.py pools what it measures), driving a server with
one-sentence requests of a Shape (clients.py) from a client written in C that costs the machine
little, on a core of its own where the machine has one.

    run_wrk(service, shape, sentences, clients, seconds, batches=False) -> a turn: its seconds,
      the requests answered (2xx), failed (not 2xx, or a socket error: not_2xx and
      socket_errors say which), p50_ms and p99_ms, the cores each side ran on, and what the
      server spent (process.spending)
        a Lua script (request: the next of the sentences' bodies, in turn, from each of wrk's
        threads, to the shape's path; done: the summary as one JSON line) -> wrk -t1
        -c CLIENTS -d SECONDS --latency, on the machine's last core (taskset), the server and
        its children on the others; the answers are not read (clients.py's ask checks them,
        one at a time)
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

from benchmarks.service.clients import Shape
from benchmarks.service.process import Service, family, spending

SCRIPT = """
local bodies = {%s}
local i = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "%s"
request = function()
  i = i %% #bodies + 1
  return wrk.format(nil, "%s", nil, bodies[i])
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRK {"requests": %%d, "us": %%d, "non_2xx": %%d, "socket": %%d, '
    .. '"p50_us": %%d, "p99_us": %%d}\\n', summary.requests, summary.duration, e.status,
    e.connect + e.read + e.write + e.timeout, latency:percentile(50), latency:percentile(99)))
end
"""


def lua_string(text: str) -> str:
    """A Lua long string of `text`, its brackets' level chosen so that nothing inside ends it."""
    level = 0
    while f"]{'=' * level}]" in text:
        level += 1
    return f"[{'=' * level}[{text}]{'=' * level}]"


def script(shape: Shape, sentences: list[str]) -> str:
    bodies = [shape.body(sentence) for sentence in sentences]
    content_type = bodies[0][1]["Content-Type"]
    listed = ", ".join(lua_string(body.decode()) for body, _ in bodies)
    return SCRIPT % (listed, content_type, shape.path)


def cores() -> tuple[set[int], set[int]]:
    """(the server's cores, wrk's): the last core for wrk, the others for the server; on one
    core, both share it."""
    available = sorted(os.sched_getaffinity(0))
    if len(available) == 1:
        return set(available), set(available)
    return set(available[:-1]), {available[-1]}


def pin(pid: int, on: set[int]) -> None:
    """Every thread of the process `pid` and of its children, to the cores `on`."""
    listed = ",".join(map(str, sorted(on)))
    for process in family(pid):
        subprocess.run(["taskset", "-a", "-p", "-c", listed, str(process)],
                       capture_output=True, check=False)  # fmt: skip


def run_wrk(
    service: Service,
    shape: Shape,
    sentences: list[str],
    clients: int,
    seconds: int,
    batches: bool = False,
) -> dict:
    """wrk's turn of `seconds` of load by `clients` connections (see the module)."""
    if shutil.which("wrk") is None:
        sys.exit("no wrk: apt-get install wrk (Debian's package)")
    server_cores, wrk_cores = cores()
    pin(service.pid, server_cores)
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as lua:
        lua.write(script(shape, sentences))
        lua.flush()
        command = ["taskset", "-c", ",".join(map(str, sorted(wrk_cores))), "wrk", "-t1",
                   f"-c{clients}", f"-d{seconds}s", "--latency", "-s", lua.name,
                   service.url.rstrip("/")]  # fmt: skip
        with spending(service, batches) as spent:
            done = subprocess.run(command, capture_output=True, text=True, check=True)
    line = next(line for line in done.stdout.splitlines() if line.startswith("WRK "))
    summary = json.loads(line[4:])
    return {
        "seconds": summary["us"] / 1e6,
        "answered": summary["requests"] - summary["non_2xx"],
        "failed": summary["non_2xx"] + summary["socket"],
        "not_2xx": summary["non_2xx"],
        "socket_errors": summary["socket"],
        "p50_ms": summary["p50_us"] / 1000,
        "p99_ms": summary["p99_us"] / 1000,
        "server_cores": sorted(server_cores),
        "wrk_cores": sorted(wrk_cores),
        **spent,
    }
