"""`make bench-profile`: where our server's CPU goes on one-sentence requests, step by step,
under wrk's load, greedy and beam 4, at 1 and 16 clients, for each package given.

    python -m benchmarks.service.profile --package P --sentences S [--package P --sentences S]
        [--seconds 10] [--quick] [--out DIR] [--name profile]

    for each package (with its sentences), our server on it alone (contenders.py: serve.threads=1,
      one worker), greedy and beam 4 (a server each), at 1 and 16 clients, after a warm-up:
        wrk.py's load (wrk on the machine's last core, the server on the others), and during
        it, for --seconds (3: --quick):
          py-spy record --threads --nonblocking (on wrk's core): the Python threads' stacks
            while they run (idle ones are not sampled), by thread
          each thread's CPU seconds (/proc/PID/task/TID/stat) before and after, and the
            requests answered (GET /health's sentences: one a request)
        -> each Python thread's CPU split over the STEPS of its samples (a sample's step: the
           first of its frames, from the innermost out, that a step names); the CPU of the
           threads py-spy does not see, CTranslate2's own (its search releases the GIL and
           runs on threads of its own), as one more step
        -> each step's share of the server's CPU, and its CPU ms per request

Results: benchmarks/results/profile.{json,md} (--out DIR elsewhere, --name another stem).
"""

import shutil
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path

from benchmarks import common
from benchmarks.service.clients import Shape, ask
from benchmarks.service.contenders import codes, contender
from benchmarks.service.matrix import BEAMS
from benchmarks.service.process import get_json, thread_cpu
from benchmarks.service.wrk import cores, run_wrk

CLIENTS = (1, 16)
NATIVE = "CTranslate2's own threads"
# Each step and the frames that are its (the start of a file's path as py-spy writes it, or a
# part of one): the first of a sample's
# frames, from the innermost out, that one of these names gives the sample its step.
STEPS = {
    "JSON": ("(json/",),
    "sentence splitting": ("(sentencex/", "seq2seq/text/sentences.py"),
    "language detection": ("(py3langid/", "(lingua/", "seq2seq/documents/detection.py"),
    "guard and limits (access.py, protocol.py)": (
        "seq2seq/serving/access.py",
        "seq2seq/serving/protocol.py",
    ),
    "sentencepiece": ("(sentencepiece/",),
    "CTranslate2, called from Python": ("(ctranslate2/",),
    "handoff between threads (batcher, futures, locks)": (
        "seq2seq/serving/batcher.py",
        "(concurrent/futures/",
        "(threading.py",
        "(queue.py",
    ),
    "our decoding around the model": ("seq2seq/decoding/",),
    "our routes and answers (seq2seq/service)": ("seq2seq/service/",),
    "our text handling (seq2seq/text)": ("seq2seq/text/",),
    "HTTP: uvicorn, h11": ("(uvicorn/", "(h11/"),
    "HTTP: Starlette": ("(starlette/",),
    "the event loop (asyncio)": ("(asyncio/", "(selectors.py"),
}
OTHER = "other Python"
# Where a thread waits: for a socket (the event loop's select), a lock or a future, or
# CTranslate2's own threads (the engine's translate_batch call, which releases the GIL). py-spy
# counts a thread as running when it is runnable: woken there, and waiting for the core the
# other threads are on. A sample there is left out, its thread's CPU split over the others.
WAITS = ("select (selectors.py", "wait (threading.py", "ArgosEngine.search (")


def step_of(stack: str) -> str | None:
    """The step of one sample (py-spy's raw line: frames from the outermost in, ';'-joined),
    or None where its thread waits."""
    frames = stack.split(";")
    if any(wait in frames[-1] for wait in WAITS):
        return None
    for frame in reversed(frames):
        for step, names in STEPS.items():
            if any(name in frame for name in names):
                return step
    return OTHER


def samples(raw: Path) -> dict[int, Counter]:
    """py-spy's raw output -> each thread's samples by step."""
    by_thread: dict[int, Counter] = {}
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        thread, _, frames = stack.partition(";")
        tid = int(thread.removeprefix("thread (").split(")")[0])
        step = step_of(frames)
        if step is not None:
            by_thread.setdefault(tid, Counter())[step] += int(count)
    return by_thread


def by_step(before: dict[int, float], after: dict[int, float], by_thread: dict) -> Counter:
    """CPU seconds by step: each thread's CPU between `before` and `after` split over its
    samples' steps, and the CPU of the threads without samples as NATIVE."""
    cpu: Counter = Counter()
    for tid, spent in after.items():
        spent -= before.get(tid, 0.0)
        steps = by_thread.get(tid)
        if not steps:
            cpu[NATIVE] += spent
            continue
        total = sum(steps.values())
        for step, count in steps.items():
            cpu[step] += spent * count / total
    return cpu


def profiled(service, asked: Shape, sentences: list[str], clients: int, seconds: int) -> dict:
    """The server's CPU by step during `seconds` of wrk's load (see the module)."""
    _, spare = cores()
    load = threading.Thread(
        target=run_wrk, args=(service, asked, sentences, clients, seconds + 3)
    )  # py-spy starts a second in, and stops before wrk
    load.start()
    threading.Event().wait(1)
    with tempfile.TemporaryDirectory() as folder:
        raw = Path(folder) / "profile.txt"
        before, asked_before = thread_cpu(service.pid), answered(service)
        spy = ["py-spy", "record", "--pid", str(service.pid), "--threads", "--nonblocking",
               "--rate", "250", "--duration", str(seconds), "--format", "raw",
               "--output", str(raw)]  # fmt: skip
        common.run(["taskset", "-c", ",".join(map(str, sorted(spare))), *spy])
        after, asked_after = thread_cpu(service.pid), answered(service)
        by_thread = samples(raw)
    load.join()
    cpu = by_step(before, after, by_thread)
    requests = asked_after - asked_before
    return {
        "requests": requests,
        "server_cpu_ms_per_request": 1000 * sum(cpu.values()) / max(1, requests),
        "cpu_ms_per_request": {step: 1000 * s / max(1, requests) for step, s in cpu.items()},
        "samples": sum(sum(steps.values()) for steps in by_thread.values()),
    }


def answered(service) -> int:
    return get_json(service.url, "/health")[1]["sentences"]


def measure(package: Path, sentences: list[str], seconds: int) -> dict:
    source, target = codes(package)
    asked = Shape.ours(source=source, target=target)
    figures: dict = {}
    for setting, beam in BEAMS.items():
        with contender("ours", [package], beam) as service:
            for sentence in sentences[:50]:  # warm-up
                ask(service.url, asked, sentence)
            for clients in CLIENTS:
                point = profiled(service, asked, sentences, clients, seconds)
                figures.setdefault(setting, {})[str(clients)] = point
                print(package.name, setting, clients, point, flush=True)
    return figures


def markdown(results: dict) -> str:
    about = ("Our server (serve.threads=1, one worker) under wrk's one-sentence requests, "
             f"{results['seconds']} s a column, profiled by py-spy; each step's share of the "
             "server's CPU.")  # fmt: skip
    columns = [(s, c) for s in BEAMS for c in map(str, CLIENTS)]
    header = ["step", *(f"{s}, {c} client{'s' * (c != '1')}" for s, c in columns)]
    sections = []
    for package, figures in results["packages"].items():
        points = [figures[s][c] for s, c in columns]
        steps = sorted(
            {step for point in points for step in point["cpu_ms_per_request"]},
            key=lambda step: -sum(p["cpu_ms_per_request"].get(step, 0) for p in points),
        )
        rows = [["server CPU ms per request",
                 *(f"{p['server_cpu_ms_per_request']:.2f}" for p in points)]]  # fmt: skip
        for step in steps:
            shares = (p["cpu_ms_per_request"].get(step, 0) / p["server_cpu_ms_per_request"]
                      for p in points)  # fmt: skip
            rows.append([step, *(f"{100 * x:.0f}%" for x in shares)])
        sections += [f"## {package}", common.markdown_table(header, rows, right=True)]
    title = "Where our server's CPU goes"
    return common.service_page(title, results, "profile", about, *sections)


def main() -> None:
    parser = common.arguments(__doc__, out=common.RESULTS, quick="3 s a column", name="profile")
    parser.add_argument("--package", type=Path, action="append", required=True)
    parser.add_argument(
        "--sentences", type=Path, action="append", required=True,
        help="a file of source sentences, one a line, for each --package in turn",
    )  # fmt: skip
    parser.add_argument("--seconds", type=int, default=10, help="py-spy's a column")
    args = parser.parse_args()
    if len(args.package) != len(args.sentences):
        parser.error("one --sentences for each --package")
    if shutil.which("py-spy") is None:
        sys.exit("no py-spy: pip install py-spy (the dev extra has it)")
    seconds = 3 if args.quick else args.seconds
    results = {"machine": common.machine(), "seconds": seconds, "packages": {}}
    for package, source in zip(args.package, args.sentences, strict=True):
        sentences = source.read_text("utf-8").splitlines()[:200]
        results["packages"][package.name] = measure(package, sentences, seconds)
    common.save_results(args.out / args.name, results, markdown(results))


if __name__ == "__main__":
    sys.exit(main())
