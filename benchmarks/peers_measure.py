"""How `make bench-peers` measures both toolkits alike (benchmarks/README.md): a command's wall
time and peak RSS, validations read from a file as it grows, and the figures of a training run
and of a decoding."""

import os
import signal
import subprocess
import time
from contextlib import ExitStack
from pathlib import Path

from seq2seq.support.errors import UserError
from seq2seq.training.metrics import exact_match

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {"99": 0.99, "99_5": 0.995}  # valid exact match: seconds_to_99, seconds_to_99_5
BATCH_SIZES = (64, 1)  # decoding
WARMUP_SENTENCES = 16  # decoded before the in-process timing
POLL_SECONDS = 0.2
GRACE_SECONDS = 60  # after the stop signal, before SIGKILL


# ---------------------------------------------------------------- running and watching


def run_watched(
    command: list[str],
    log: Path,
    out: Path | None = None,
    stdin: Path | None = None,
    budget: float | None = None,
    stop: int = signal.SIGTERM,
    on_poll=None,
) -> tuple[float, float, int]:
    """Run `command` in the repository root: stdin from the file `stdin`, stdout to `out` (or
    with stderr to `log`). While it runs, call on_poll(seconds since the start); at `budget`
    seconds send it `stop`. -> (wall seconds, peak RSS in MiB, exit code)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TQDM_DISABLE="1")
    with ExitStack() as files:
        err = files.enter_context(open(log, "w"))
        stdout = files.enter_context(open(out, "w")) if out else err
        inp = files.enter_context(open(stdin or os.devnull, "rb"))
        start = time.perf_counter()
        process = subprocess.Popen(
            command, stdin=inp, stdout=stdout, stderr=err, env=env, cwd=ROOT
        )  # fmt: skip
        if budget is None and on_poll is None:
            _, status, usage = os.wait4(process.pid, 0)
            elapsed = time.perf_counter() - start
        else:
            status, usage, elapsed = watch(process, start, budget, stop, on_poll)
    process.returncode = os.waitstatus_to_exitcode(status)  # reaped by os.wait4
    return elapsed, usage.ru_maxrss / 1024, process.returncode


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


def check_exit(code: int, allowed: tuple, what: str, log: Path) -> None:
    if code not in allowed:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        raise UserError(f"{what} failed (exit code {code}); the end of {log}:\n{tail}")


def new_lines(path: Path, seen: int) -> list[str]:
    """The complete lines of a growing file after its first `seen` lines."""
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return []
    return text[: text.rfind("\n") + 1].splitlines()[seen:]


# ---------------------------------------------------------------- training figures


def seconds_to(curve: list[dict], target: float, clock: str = "wall_s") -> float | None:
    """Seconds (by `clock`) of the first validation whose exact match reaches `target`."""
    return next((v[clock] for v in curve if v["valid_exact_match"] >= target), None)


def curve_figures(curve: list[dict], wall: float, peak: float) -> dict:
    """Figures of a training run from its validations (each with wall_s, step, exact match)."""
    best = max(curve, key=lambda v: v["valid_exact_match"], default=None)
    last = curve[-1] if curve else None
    return {
        **{f"seconds_to_{name}": seconds_to(curve, t) for name, t in TARGETS.items()},
        "best_valid_exact_match": best and best["valid_exact_match"],
        "best_step": best and best["step"],
        "validated_steps": last and last["step"],
        "validated_steps_per_s": last and last["step"] / last["wall_s"],
        "train_run_seconds": wall,
        "train_peak_memory_mib": peak,
    }


# ---------------------------------------------------------------- decoding figures


def command_figures(command: list[str], source: Path, refs: list[str], stem: Path) -> dict:
    """A translation command reading `source` on stdin: wall time, peak RSS, exact match."""
    log, out = stem.with_suffix(".log"), stem.with_suffix(".out")
    wall, peak, code = run_watched(command, log, out=out, stdin=source)
    check_exit(code, (0,), f"translation ({' '.join(command[1:4])} ...)", log)
    hyps = out.read_text("utf-8").splitlines()
    if len(hyps) != len(refs):
        raise UserError(f"{out}: {len(hyps)} lines for {len(refs)} inputs (see {log})")
    return {
        "command_sentences_per_s": len(refs) / wall,
        "command_seconds": wall,
        "command_peak_memory_mib": peak,
        "command_exact_match": exact_match(hyps, refs),
    }


def inprocess_figures(seconds: float, hyps: list[str], refs: list[str]) -> dict:
    return {
        "decode_sentences_per_s": len(refs) / seconds,
        "decode_seconds": seconds,
        "decode_exact_match": exact_match(hyps, refs),
    }


def flatten_batches(figures: dict) -> dict:
    """{64: {key: value}, 1: ...} -> {key_batch64: value, key_batch1: ...}"""
    return {f"{key}_batch{size}": value for size, f in figures.items() for key, value in f.items()}
