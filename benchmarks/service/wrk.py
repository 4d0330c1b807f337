"""wrk (Debian's package: apt-get install wrk), a load generator made for the job, driving a
server with one-sentence requests of a Shape (clients.py): the figures of requests per second,
latency and the server's CPU per request, from a client written in C that costs the machine
little, on a core of its own where the machine has one.

    run_wrk(service, shape, sentences, clients, seconds, batches=False) -> figures:
      requests_per_s, p50_ms, p99_ms, server_cpu_ms_per_request (its process and children),
      failed (not 2xx, or a socket error), sentences_per_batch (batches: our server's, from
      GET /health), the cores each side ran on, and the counts they come from
    pooled([figures, ...]) -> the same figures of several turns: requests/s, CPU per request
      and sentences per batch over all of them, p50 and p99 the median of the turns'
    harness_options(parser, seconds, per): a benchmark's --harness wrk|python, --seconds (of
      wrk's load, `per` row or turn) and --requests (the Python clients')
        a Lua script (request: the next of the sentences' bodies, in turn, from each of wrk's
        threads; done: the summary as one JSON line) -> wrk -t1 -c CLIENTS -d SECONDS
        --latency, on the machine's last core (taskset), the server and its children on the
        others; the answers are not read (clients.py's ask checks them, one at a time)
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from benchmarks.service.clients import Shape, snapshot
from benchmarks.service.process import Service, family

SCRIPT = """
local bodies = {%s}
local i = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "%s"
request = function()
  i = i %% #bodies + 1
  return wrk.format(nil, "/translate", nil, bodies[i])
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRK {"requests": %%d, "us": %%d, "non_2xx": %%d, "socket": %%d, '
    .. '"p50_us": %%d, "p99_us": %%d}\\n', summary.requests, summary.duration, e.status,
    e.connect + e.read + e.write + e.timeout, latency:percentile(50), latency:percentile(99)))
end
"""


def harness_options(parser, seconds: int, per: str) -> None:
    """The options of a benchmark that loads its servers by either harness (see the module)."""
    parser.add_argument(
        "--harness", choices=("wrk", "python"), default="wrk",
        help="the load: wrk (wrk.py, the default) or the Python clients (clients.py)",
    )  # fmt: skip
    parser.add_argument("--seconds", type=int, default=seconds, help=f"wrk's load a {per}")
    parser.add_argument("--requests", type=int, default=1000, help="the Python clients' a row")


def lua_string(text: str) -> str:
    """A Lua long string of `text`, its brackets' level chosen so that nothing inside ends it."""
    level = 0
    while f"]{'=' * level}]" in text:
        level += 1
    return f"[{'=' * level}[{text}]{'=' * level}]"


def script(shape: Shape, sentences: list[str]) -> str:
    bodies = [shape.body(sentence) for sentence in sentences]
    content_type = bodies[0][1]["Content-Type"]
    return SCRIPT % (", ".join(lua_string(body.decode()) for body, _ in bodies), content_type)


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
    """wrk's figures of `seconds` of load by `clients` connections (see the module)."""
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
        before = snapshot(service, batches)
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        after = snapshot(service, batches)
    line = next(line for line in done.stdout.splitlines() if line.startswith("WRK "))
    summary = json.loads(line[4:])
    cpu = before["cpu"], after["cpu"]
    counts = {
        "answered": summary["requests"] - summary["non_2xx"],
        "not_2xx": summary["non_2xx"],
        "socket_errors": summary["socket"],
        "seconds": summary["us"] / 1e6,
        "server_cpu_s": None if None in cpu else cpu[1] - cpu[0],
        **{key: after[key] - before[key] for key in ("batches", "sentences") if key in after},
    }
    figures = {
        "p50_ms": summary["p50_us"] / 1000,
        "p99_ms": summary["p99_us"] / 1000,
        "failed": summary["non_2xx"] + summary["socket"],  # counts: which
        "server_cores": sorted(server_cores),
        "wrk_cores": sorted(wrk_cores),
        "counts": counts,
    }
    return {**figures, **rates(counts)}


def rates(counts: dict) -> dict:
    """Requests/s, the server's CPU ms per request and its sentences per batch, of counts."""
    answered = max(1, counts["answered"])
    figures = {"requests_per_s": counts["answered"] / counts["seconds"]}
    if counts["server_cpu_s"] is not None:
        figures["server_cpu_ms_per_request"] = 1000 * counts["server_cpu_s"] / answered
    if counts.get("batches"):
        figures["sentences_per_batch"] = counts["sentences"] / counts["batches"]
    return figures


def pooled(turns: list[dict]) -> dict:
    """Several turns' figures as one (see the module)."""
    if len(turns) == 1:
        return turns[0]
    counts = {key: sum(turn["counts"][key] for turn in turns) for key in turns[0]["counts"]
              if None not in (turn["counts"][key] for turn in turns)}  # fmt: skip
    counts.setdefault("server_cpu_s", None)
    figures = {
        "p50_ms": statistics.median(turn["p50_ms"] for turn in turns),
        "p99_ms": statistics.median(turn["p99_ms"] for turn in turns),
        "failed": sum(turn["failed"] for turn in turns),
        "server_cores": turns[0]["server_cores"],
        "wrk_cores": turns[0]["wrk_cores"],
        "counts": counts,
    }
    return {**figures, **rates(counts)}
