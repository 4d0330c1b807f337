"""What every benchmark shares: the machine it ran on and its speed, a command's time and
memory, the CUDA allocator's peak, and its results written (JSON and a markdown table, put into a
page between two marker lines).

    machine()                     device, its name, cores, threads, torch, Python, the date
    machine_speed(device)         a 2048x2048 matmul's GFLOP/s and `import torch`'s seconds
    run_and_measure(command)      a command's wall seconds and peak resident memory
    reset_cuda_peak, cuda_peak_mib, synchronize    CUDA's allocator peak; waiting for the GPU
    save_results(stem, results, text)              <stem>.json and <stem>.md
    with_table(page, text, markers)                a page with `text` between its markers
    ROOT, RESULTS                 the repository's root; benchmarks/results/, where figures go
"""

import datetime
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

from seq2seq.support.errors import UserError
from seq2seq.support.files import atomic_write, write_json

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks/results"  # every script's default --out


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


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


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
    return min(run_and_measure([sys.executable, "-c", "import torch"])[0] for _ in range(runs))


def run_and_measure(command: list[str]) -> tuple[float, float]:
    """Run a command; return its wall seconds and its peak resident memory in MiB."""
    start = time.perf_counter()
    quiet = dict(os.environ, TQDM_DISABLE="1")  # no progress bars in the benchmark's output
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, env=quiet)
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"benchmark step failed: {' '.join(command)}")
    return time.perf_counter() - start, usage.ru_maxrss / 1024  # Linux reports KiB


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
