"""What every benchmark shares: the machine it ran on and its speed, the two clocks (a
command's, in-process work's), the CUDA allocator's peak, its command line's common options,
and its results written (JSON and a Markdown table, put into a page between two marker lines).

    machine()                     device, its name, cores, threads, torch, Python, the date
    machine_speed(device)         a 2048x2048 matmul's GFLOP/s and `import torch`'s seconds
    run(command, ...) -> Ran      THE way a benchmark times a command run to its end: its wall
                                  seconds, peak resident memory, exit code and output (stopped
                                  at a budget); run_json: a child script's JSON, in and out
    private_home(home)            a child process's home, XDG folders and TMPDIR under `home`
    timed(work, *args)            THE way a benchmark times work in its own process: the
                                  seconds of work(*args) and what it returned
    timed_translation(translate, sentences, decoding)   timed() of one decoding call, after a
                                  warm-up
    ctranslate2_alone(engine, sentences, decoding, per_call)   CTranslate2 alone: an engine's
                                  translator given its tokens and options, the limit its
                                  figures are read against, in sentences per CPU second
    reset_cuda_peak, cuda_peak_mib, synchronize    CUDA's allocator peak; waiting for the GPU
    arguments(doc, out=..., ...)  the parser with the options every script has (--out, ...)
    markdown_table(header, rows, *notes)   a Markdown table, paragraphs under it;
                                  on_machine(info): the machine, for the last of them;
                                  with_speed(info): the machine and its speed
    page(title, *paragraphs)      a results page: its title, its tables and notes;
                                  service_page: its first paragraph after on_machine
    save_results(stem, results, text)              <stem>.json and <stem>.md
    with_table(page, text, markers)                a page with `text` between its markers
    ROOT, RESULTS                 the repository's root; benchmarks/results/, where figures go
"""

import argparse
import datetime
import json
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from types import EllipsisType
from typing import TypeVar

import torch

from seq2seq.config import DecodeConfig
from seq2seq.decoding.argos_engine import ArgosEngine
from seq2seq.decoding.ctranslate2_engine import search_options
from seq2seq.decoding.engines import encoded
from seq2seq.support.device import cpu_name
from seq2seq.support.errors import UserError
from seq2seq.support.files import atomic_write, write_json

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks/results"  # every script's default --out
T = TypeVar("T")


def machine() -> dict:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    name = torch.cuda.get_device_name() if device == "cuda" else cpu_name()
    return {
        "device": device,
        "device_name": name,
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }


def machine_speed(device) -> dict:
    """Two figures anyone can measure in seconds, to relate these results to their machine."""
    return {
        "matmul_2048_gflops": round(matmul_peak_flops(device, seconds=2.0) / 1e9, 1),
        "import_torch_seconds": round(import_torch_seconds(), 2),
    }


def matmul_peak_flops(device, seconds: float) -> float:
    a = torch.randn(2048, 2048, device=device)
    b = torch.randn(2048, 2048, device=device)
    a @ b
    synchronize(device)
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        a @ b
        count += 1
    synchronize(device)
    return count * 2 * 2048**3 / (time.perf_counter() - start)


def import_torch_seconds(runs: int = 3) -> float:
    """Wall seconds of `python -c "import torch"`: the fastest of `runs`, files in the cache."""
    return min(run([sys.executable, "-c", "import torch"]).seconds for _ in range(runs))


POLL_SECONDS = 0.2  # how often run() looks at a command given a budget or on_poll
GRACE_SECONDS = 60  # after the stop signal at the budget, before SIGKILL
WARMUP_SENTENCES = 16  # decoded before a timed translation


@dataclass(frozen=True)
class Ran:
    """A command run to its end."""

    seconds: float  # wall
    peak_mib: float  # its peak resident memory (Linux's ru_maxrss)
    code: int  # exit code
    stdout: str  # what it printed, unless it went to the file `out`


def run(
    command: list[str],
    *,
    stdin: Path | None = None,
    out: Path | None = None,
    log: Path | None = None,
    cwd: Path | None = None,
    env: dict | None = None,
    budget: float | None = None,
    stop: int = signal.SIGTERM,
    on_poll: Callable[[float], None] | None = None,
    allowed: tuple[int, ...] | None = (0,),
) -> Ran:
    """Run `command` in `cwd` (None: this process's), progress bars off and `env` added to the
    environment: stdin from the file `stdin`, stdout to the file `out` (else kept in
    Ran.stdout), stderr to the file `log` (else a temporary one). While it runs, on_poll(seconds
    since the start); at `budget` seconds it gets `stop` (SIGKILL GRACE_SECONDS later). An exit
    code not in `allowed` (None: any) stops the benchmark with the end of its stderr."""
    env = dict(os.environ, TQDM_DISABLE="1", **(env or {}))
    with tempfile.TemporaryDirectory() as folder, ExitStack() as files:
        log, printed = log or Path(folder, "stderr"), out or Path(folder, "stdout")
        err = files.enter_context(open(log, "w"))
        stdout = files.enter_context(open(printed, "w"))
        inp = files.enter_context(open(stdin or os.devnull, "rb"))
        start = time.perf_counter()
        process = subprocess.Popen(command, stdin=inp, stdout=stdout, stderr=err, env=env, cwd=cwd)
        if budget is None and on_poll is None:
            _, status, usage = os.wait4(process.pid, 0)
            seconds = time.perf_counter() - start
        else:
            status, usage, seconds = watch(process, start, budget, stop, on_poll)
        code = process.returncode = os.waitstatus_to_exitcode(status)  # reaped by os.wait4
        files.close()
        if allowed is not None and code not in allowed:
            tail = log.read_text(errors="replace").splitlines()[-15:]
            sys.exit(f"{' '.join(map(str, command[:6]))} ... exited {code}:\n" + "\n".join(tail))
        text = "" if out else printed.read_text(errors="replace")
    return Ran(seconds, usage.ru_maxrss / 1024, code, text)


def run_json(command: list[str], sent=None, **options):
    """run() of a command that prints JSON (a child script, often in another Python): what it
    printed, parsed; `sent`, unless None, given to it as JSON on its stdin."""
    with tempfile.TemporaryDirectory() as folder:
        stdin = Path(folder, "stdin.json") if sent is not None else None
        if stdin:
            stdin.write_text(json.dumps(sent))
        return json.loads(run(command, stdin=stdin, **options).stdout)


def private_home(home: Path) -> dict[str, str]:
    """The variables that give a child process `home` as its home, and its XDG folders and
    TMPDIR under it (made: <home>/data, config, cache, tmp): nothing of this user's read or
    written."""
    folders = {"XDG_DATA_HOME": "data", "XDG_CONFIG_HOME": "config", "XDG_CACHE_HOME": "cache",
               "TMPDIR": "tmp"}  # fmt: skip
    for folder in folders.values():
        (home / folder).mkdir(parents=True, exist_ok=True)
    return {"HOME": str(home), **{name: str(home / f) for name, f in folders.items()}}


def watch(process, start: float, budget, stop: int, on_poll) -> tuple:
    """Poll a running process until it exits; -> its os.wait4 status, rusage, wall seconds."""
    stopped_at = None
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        elapsed = time.perf_counter() - start
        if on_poll:
            on_poll(elapsed)
        if pid:
            return status, usage, elapsed
        if budget is not None and stopped_at is None and elapsed >= budget:
            process.send_signal(stop)
            stopped_at = elapsed
        elif stopped_at is not None and elapsed - stopped_at > GRACE_SECONDS:
            process.kill()
        time.sleep(POLL_SECONDS)


def timed(work: Callable[..., T], *args) -> tuple[float, T]:
    """The wall seconds of `work(*args)` and what it returned (work on a GPU: ending with
    synchronize)."""
    start = time.perf_counter()
    result = work(*args)
    return time.perf_counter() - start, result


def timed_translation(translate: Callable, sentences: list, decoding) -> tuple[float, object]:
    """`translate(sentences, decoding)` (an engine's translate, or anything called alike),
    after a warm-up on the first WARMUP_SENTENCES: its wall seconds and what it returned."""
    translate(sentences[:WARMUP_SENTENCES], decoding)
    return timed(translate, sentences, decoding)


def ctranslate2_alone(engine, sentences: list[str], decoding: DecodeConfig, per_call: int) -> float:
    """CTranslate2 alone, the physical limit of an engine on CTranslate2 (a CTranslate2Engine
    on an export, an ArgosEngine on a package; bench-speed-quality and bench-pairs read theirs
    against it), in sentences per CPU second:

        the sentences, `per_call` a call in their order, as the engine's tokens (made here,
        before the clock starts) -> its translator's translate_batch (one thread: intra and
        inter, as load_translator loads it) with the options the engine passes at `decoding`'s
        settings (one hypothesis; CTranslate2 sorts a call's sentences by length into
        batches of decoding.batch_size), after a warm-up on the first WARMUP_SENTENCES;
        timed by the process's CPU time (time.process_time: CTranslate2 decodes in it)

    Left out: what the engine adds around it (encoding, warnings, detokenizing; an export's
    beam search, one call per length limit where this makes one at the longest) and what a
    service adds around the engine."""
    calls = [one_call(engine, sentences[i : i + per_call], decoding)
             for i in range(0, len(sentences), per_call)]  # fmt: skip
    tokens, options = one_call(engine, sentences[:WARMUP_SENTENCES], decoding)
    engine.translator.translate_batch(tokens, **options)
    start = time.process_time()
    for tokens, options in calls:
        engine.translator.translate_batch(tokens, **options)
    return len(sentences) / (time.process_time() - start)


def one_call(engine, sentences: list[str], decoding: DecodeConfig) -> tuple[list, dict]:
    """The tokens of the non-empty `sentences` and translate_batch's options for them, as the
    engine makes them: an Argos package's tokenizer and its options (Argos Translate's), or an
    export's pieces and its options, up to the longest of their length limits."""
    if isinstance(engine, ArgosEngine):
        tokens = [one for one in engine.encoded(sentences)[0] if one]
        return tokens, engine.search_options(decoding, 1, len(tokens))
    tokens, limits = engine.pieces_and_limits(encoded(engine, sentences)[0], decoding)
    return tokens, search_options(decoding, 1, max(limits, default=1))


def synchronize(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def reset_cuda_peak(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def cuda_peak_mib(device) -> float | None:
    """The CUDA allocator's peak memory since reset_cuda_peak(device), in MiB (None off CUDA)."""
    if torch.device(device).type != "cuda":
        return None
    return torch.cuda.max_memory_allocated(device) / 2**20


def median_and_rounds(values: list[float], form: str) -> tuple[float, str]:
    """A figure measured in rounds: its median, and the table's cells "median | each round"
    (`form`: the format of each number, e.g. ",.0f")."""
    median = statistics.median(values)
    return median, f"{median:{form}} | " + ", ".join(f"{v:{form}}" for v in values)


def arguments(
    doc: str,
    *,
    out: Path | None | EllipsisType = ...,
    config: str | None = None,
    quick: str | None = None,
    name: str | None = None,
) -> argparse.ArgumentParser:
    """A script's command line with the options they share, each where given: its description
    (the first paragraph of `doc`, its docstring), --out (default `out`; None: the script picks one;
    the docstring says whether it names a folder or PATH of PATH.json and PATH.md), --config
    (default `config`), --quick (`quick`: what it does) and --name (default `name`: the
    results' stem under --out)."""
    parser = argparse.ArgumentParser(description=" ".join(doc.split("\n\n")[0].split()))
    if out is not ...:
        shown = "by mode, as the module's docstring says" if out is None else "%(default)s"
        parser.add_argument("--out", type=Path, default=out, help=f"default: {shown}")
    if config is not None:
        parser.add_argument("--config", default=config)
    if quick is not None:
        parser.add_argument("--quick", action="store_true", help=quick)
    if name is not None:
        parser.add_argument("--name", default=name, help="the results' stem: <out>/<name>.json")
    return parser


def markdown_table(header: list[str], rows: Iterable[list], *notes: str, right=False) -> str:
    """A Markdown table: `header`, the rule under it (`right`: every column but the first
    aligned right), each row (its cells str()ed), then each of `notes` as a paragraph under it
    (no newline at the end)."""
    rule = "| --- |" + (" ---: |" if right else " --- |") * (len(header) - 1)
    lines = [cells(header), rule, *map(cells, rows)]
    return "\n\n".join(["\n".join(lines), *notes])


def page(title: str, *paragraphs: str) -> str:
    """A results page: `# title`, then each paragraph (a table, a note), ending with a newline."""
    return "\n\n".join([f"# {title}", *paragraphs]) + "\n"


def service_page(title: str, results: dict, module: str, about: str, *paragraphs: str) -> str:
    """page() whose first paragraph, `about`, follows the machine and the command
    (on_machine of `python -m benchmarks.service.<module>`)."""
    command = f"python -m benchmarks.service.{module}"
    return page(title, f"{on_machine(results['machine'], command)} {about}", *paragraphs)


def cells(row: list) -> str:
    return "| " + " | ".join(map(str, row)) + " |"


def on_machine(info: dict, command: str = "") -> str:
    """The line under a table: the machine (machine()'s `info`), the date, the command."""
    where = f"{info['device_name']}, {info['cpu_count']} cores, torch {info['torch']}"
    return f"{where}, {info['date'][:10]}" + (f" (`{command}`)." if command else ".")


def with_speed(info: dict) -> str:
    """The machine and its speed (machine() with machine_speed()), for a line under a table:
    its name (device, cores, torch threads; the matmul's GFLOP/s, `import torch`'s seconds)."""
    return (
        f"{info['device_name']} ({info['device']}, {info['cpu_count']} cores, "
        f"{info['torch_threads']} torch threads; 2048x2048 fp32 matmul "
        f"{info['matmul_2048_gflops']} GFLOP/s, `import torch` {info['import_torch_seconds']} s)"
    )


def save_results(stem: Path, results: dict, text: str) -> None:
    """<stem>.json and <stem>.md (the table, printed too)."""
    write_json(stem.with_suffix(".json"), results)
    with atomic_write(stem.with_suffix(".md")) as file:
        file.write(text)
    print(text)


def with_table(page: str, text: str, markers: tuple[str, str], name: str = "the page") -> str:
    """`page` (the text of the file `name`) with `text` in place of what stands between its
    two marker lines; a UserError when it lacks them."""
    start, end = map(re.escape, markers)
    pattern = re.compile(f"{start}\n.*?{end}", re.DOTALL)
    if not pattern.search(page):
        raise UserError(f"{name}: no lines {markers[0]} ... {markers[1]}")
    return pattern.sub(lambda _: f"{markers[0]}\n{text}\n{markers[1]}", page)
