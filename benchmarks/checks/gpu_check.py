"""`make gpu-check`: the whole CUDA path of seq2seq, exercised on this machine's GPU in one
command (planned to take under 10 minutes on one H200, half of it the test suite).

    python -m benchmarks.checks.gpu_check [--device cuda] [--quick] [--out DIR] [--work DIR]

Without a CUDA device it says so in one line and exits 0. Otherwise it builds the numbers
corpus in a scratch folder (--work, default runs/gpu-check/) and runs each check of checks()
on configs/numbers_gpu.yaml, one after the other (docs/gpu.md says what each measures): the
training ones (gpu_training.py), then attention and the commands (gpu_paths.py). Each is
recorded as pass, fail or skip (with the reason) with its figures in <out>/gpu.json and
<out>/gpu.md; the exit status is 1 when any check failed, after both files are written. A
check left out with --skip keeps the result that <out>/gpu.json already holds for it from a
full run on the same GPU model, marked with that run's date.

--quick runs every path with tiny sizes (tests/benchmarks/test_gpu_check.py runs it on the CPU:
--device cpu --quick); what cannot run there (fp16, the nested pytest) is skipped with the
reason recorded, and off CUDA it compiles with torch's aot_eager backend (dynamo and
AOTAutograd, without the minutes of C++ that inductor builds on a CPU).
"""

import json
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

import torch

from benchmarks import common
from benchmarks.checks.gpu_paths import (
    check_attention,
    check_ctranslate2,
    check_eval,
    check_pytest,
    check_serve,
    check_torchrun,
)
from benchmarks.checks.gpu_setup import FULL, QUICK, RECIPE, Setup, Skip
from benchmarks.checks.gpu_training import MODES, check_nn_transformer, check_resume, check_training
from benchmarks.speed.training import Treatment
from seq2seq import data
from seq2seq.config import load_config

# -- the run -----------------------------------------------------------------------------


def environment(setup: Setup) -> dict:
    info = {**common.machine(), "checked_device": str(setup.device)}
    default_backend = getattr(torch.compiler, "get_default_backend", lambda: "inductor")
    info["compile_backend"] = str(default_backend())  # (torch < 2.12 has no getter)
    if not setup.on_cuda:
        return {**info, "device_name": common.cpu_name()}
    properties = torch.cuda.get_device_properties(setup.device)
    return {
        **info,
        "device_name": properties.name,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "gpus": torch.cuda.device_count(),
        "gpu_memory_gib": round(properties.total_memory / 2**30, 1),
        "compute_capability": f"{properties.major}.{properties.minor}",
        "real_bf16": torch.cuda.is_bf16_supported(including_emulation=False),
        "precision_auto": str(Treatment.of(load_config(RECIPE), setup.device)),
    }


def checks(setup: Setup, pytest_timeout: float) -> list[tuple[str, Callable]]:
    """(name, check) in the order they run; a check returns (figures, problems)."""
    return [
        *[
            (f"train_{tokens}_{mode}", lambda t=tokens, m=mode: check_training(setup, t, m))
            for tokens in setup.sizes.budgets
            for mode in MODES
        ],
        ("nn_transformer", lambda: check_nn_transformer(setup)),
        ("resume", lambda: check_resume(setup)),
        ("attention", lambda: check_attention(setup)),
        ("torchrun", lambda: check_torchrun(setup)),
        ("eval", lambda: check_eval(setup)),
        ("serve", lambda: check_serve(setup)),
        ("ctranslate2", lambda: check_ctranslate2(setup)),
        ("pytest", lambda: check_pytest(setup, pytest_timeout)),
    ]


def skip_it() -> tuple[dict, list[str]]:
    raise Skip("skipped by --skip")


def earlier_results(path: Path, device_name: str) -> dict:
    """The checks that an earlier run on the same kind of GPU recorded in <out>/gpu.json (pass
    or fail, each marked with its run's date): what a check skipped by --skip keeps."""
    if not path.exists():
        return {}
    earlier = json.loads(path.read_text())
    if earlier.get("mode") != "full" or earlier["machine"]["device_name"] != device_name:
        return {}
    return {
        name: {**result, "date": result.get("date", earlier["machine"]["date"])}
        for name, result in earlier["checks"].items()
        if result["status"] != "skip"
    }


def run_check(name: str, check: Callable) -> dict:
    """pass (no problems), fail (problems, or an exception: its message) or skip, with the
    check's figures and seconds."""
    print(f"gpu-check: {name} ...", flush=True)
    seconds, result = common.timed(outcome, check)
    result["seconds"] = seconds
    print(f"gpu-check: {name}: {result['status']} {result.get('reason', '')}", flush=True)
    return result


def outcome(check: Callable) -> dict:
    """What run_check records of a check, but its seconds."""
    try:
        figures, problems = check()
        result = {"status": "fail" if problems else "pass", "figures": figures}
        if problems:
            result["reason"] = "; ".join(problems)
    except Skip as reason:
        result = {"status": "skip", "reason": str(reason)}
    except Exception as error:  # a check that breaks is a failed check; the others still run
        traceback.print_exc()
        result = {"status": "fail", "reason": f"{type(error).__name__}: {error}"[-1500:]}
    return result


def markdown(results: dict) -> str:
    info = results["machine"]
    about = (
        f"{info['device_name']} ({info['checked_device']}), torch {info['torch']}, "
        f"CUDA {info.get('cuda')}, Python {info['python']}, {info['date']}, mode: "
        f"{results['mode']}, {results['seconds']:.0f} s this run. Produced by `make gpu-check` "
        "(`python -m benchmarks.checks.gpu_check`); docs/gpu.md says what each figure means."
    )
    rows = []
    for name, result in results["checks"].items():
        figures = result.get("figures", {})
        shown = ", ".join(
            f"{key} {value:,.4g}" if isinstance(value, float) else f"{key} {value}"
            for key, value in figures.items()
        )
        note = f" ({result['reason']})" if "reason" in result else ""
        if "date" in result:  # kept from an earlier run (--skip)
            note += f" (run of {result['date'][:16].replace('T', ' ')})"
        rows.append([f"`{name}`", result["status"] + note, f"{result['seconds']:.1f}", shown])
    table = common.markdown_table(["check", "status", "seconds", "figures"], rows)
    return "\n\n".join(["# GPU check", about, table]) + "\n"


def main() -> None:
    parser = common.arguments(__doc__, out=common.RESULTS, quick="tiny sizes: every path, briefly")
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N, or cpu (with --quick)")
    parser.add_argument("--work", default="runs/gpu-check", help="scratch folder of the runs")
    parser.add_argument("--pytest-timeout", type=float, default=360.0, help="seconds")
    parser.add_argument("--skip", nargs="*", default=[], metavar="CHECK",
                        help="checks to skip, by name (e.g. pytest ctranslate2)")  # fmt: skip
    args = parser.parse_args()
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("gpu-check: no CUDA device here (torch.cuda.is_available() is False); "
              "nothing to check")  # fmt: skip
        return
    setup = Setup(device, args.quick, QUICK if args.quick else FULL)
    planned = checks(setup, args.pytest_timeout)
    unknown = sorted(set(args.skip) - {name for name, _ in planned})
    if unknown:
        parser.error(f"--skip: no check named {', '.join(unknown)}")
    if args.quick and not setup.on_cuda:
        torch.compiler.set_default_backend("aot_eager")
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic(): before cuBLAS
    out, work = args.out.resolve(), Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    os.chdir(work)  # data/ and runs/ of the checks go here
    seconds, _ = common.timed(data.main, ["--config", str(RECIPE), *setup.overrides()])
    results = {"mode": "quick" if args.quick else "full", "machine": environment(setup)}
    results["checks"] = {}
    device_name = results["machine"]["device_name"]
    earlier = {} if args.quick else earlier_results(out / "gpu.json", device_name)
    for name, check in planned:
        if name in args.skip and name in earlier:
            print(f"gpu-check: {name}: skipped, keeps its result of {earlier[name]['date']}")
            results["checks"][name] = earlier[name]
        else:
            results["checks"][name] = run_check(name, skip_it if name in args.skip else check)
            seconds += results["checks"][name]["seconds"]
        results["seconds"] = seconds
        results["failed"] = [n for n, r in results["checks"].items() if r["status"] == "fail"]
        common.save_results(out / "gpu", results, markdown(results))  # after each: none lost if cut
    if results["failed"]:
        sys.exit(f"gpu-check: failed: {', '.join(results['failed'])}")


if __name__ == "__main__":
    main()
