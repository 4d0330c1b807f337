"""make gpu-check: one line and exit 0 without a GPU; on the CPU, --quick runs every check."""

import json
import subprocess
import sys

import pytest

from benchmarks.checks import gpu_check
from seq2seq.support.device import cpu_computes_bf16

from helpers import ENV, HANG

SCRIPT = ["-m", "benchmarks.checks.gpu_check"]
MACHINE = {"device_name": "NVIDIA H200", "checked_device": "cuda", "torch": "2.11.0",
           "python": "3.12.3", "date": "2026-11-26T04:43:29+00:00"}  # fmt: skip


@pytest.mark.slow
def test_without_a_gpu_it_says_so_in_one_line_and_exits_0(tmp_path):
    hidden = dict(ENV, CUDA_VISIBLE_DEVICES="")  # whatever this machine has
    done = subprocess.run(
        [sys.executable, *SCRIPT, "--out", "out"],
        cwd=tmp_path, env=hidden, capture_output=True, text=True, timeout=HANG,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == [
        "gpu-check: no CUDA device here (torch.cuda.is_available() is False); nothing to check"
    ]
    assert not (tmp_path / "out").exists() and not (tmp_path / "runs").exists()


@pytest.mark.slow
@pytest.mark.long  # make test-all
def test_quick_mode_on_the_cpu_runs_every_check(tmp_path):
    done = subprocess.run(
        [sys.executable, *SCRIPT, "--device", "cpu", "--quick", "--out", "out", "--work", "work"],
        cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=HANG,
    )  # fmt: skip
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    results = json.loads((tmp_path / "out/gpu.json").read_text())
    checks = results["checks"]
    training = {f"train_{t}_{m}" for t in (300, 600, 1200) for m in ("auto", "fp16", "compile")}
    others = ["nn_transformer", "resume", "attention", "torchrun", "eval", "serve", "ctranslate2"]
    assert set(checks) == training | {*others, "pytest"}
    skipped = {name for name, result in checks.items() if result["status"] == "skip"}
    assert skipped == {"train_300_fp16", "train_600_fp16", "train_1200_fp16", "pytest"}
    assert "fp16 needs CUDA" in checks["train_300_fp16"]["reason"]
    assert all(checks[name]["status"] == "pass" for name in set(checks) - skipped)
    assert results["failed"] == [] and results["mode"] == "quick"

    figures = {name: result.get("figures") for name, result in checks.items()}
    for tokens in (300, 600, 1200):
        auto, compiled = figures[f"train_{tokens}_auto"], figures[f"train_{tokens}_compile"]
        assert auto["tokens_per_s"] > 0 and auto["train_loss_last"] < auto["train_loss_first"]
        assert compiled["graphs_compiled_after_step_10"] == 0  # dynamic shapes: no recompiles
    assert figures["train_300_compile"]["graphs_compiled"] >= 1
    auto = "bf16 autocast" if cpu_computes_bf16() else "fp32"  # train.precision auto, this CPU
    assert figures["nn_transformer"]["train_comparison_mode"] == f"{auto}, eager"
    assert figures["resume"]["stopped_at_step"] == 15
    resume = figures["resume"]  # bit-for-bit on a CPU: no drift, nothing lost by resuming
    assert resume["parameters_relative_difference"] == resume["straight_runs_relative_difference"]
    assert resume["parameters_relative_difference"] == 0.0
    for way in ("eager", "compiled"):  # (TF32 is CUDA's alone: fp32 on a CPU)
        assert figures["attention"][f"{way}_float32_max_error"] < 1e-4
        assert figures["attention"][f"{way}_tf32_max_error"] < 1e-4
    assert figures["torchrun"]["processes"] == 2
    assert figures["eval"]["beam5_sentences_per_s"] > 0
    assert figures["serve"]["serve_failed"] == figures["serve"]["serve_unlike"] == 0
    assert 0 < figures["ctranslate2"]["same_outputs_as_ours"] <= 1
    table = (tmp_path / "out/gpu.md").read_text()
    assert "| `resume` | pass |" in table and "| `pytest` | skip (--quick" in table


@pytest.mark.slow
def test_skip_names_a_check_that_exists(tmp_path):
    done = subprocess.run(
        [sys.executable, *SCRIPT, "--device", "cpu", "--quick", "--skip", "pytest", "tests"],
        cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=HANG,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].endswith("--skip: no check named tests")
    assert not (tmp_path / "runs").exists()  # nothing ran


def test_a_skipped_check_keeps_an_earlier_full_run_on_the_same_gpu(tmp_path):
    earlier = {
        "mode": "full",
        "machine": {"device_name": "NVIDIA H200", "date": "2026-11-26T01:54:47+00:00"},
        "checks": {
            "resume": {"status": "fail", "reason": "differ", "seconds": 3.0},
            "serve": {"status": "skip", "reason": "not run", "seconds": 0.0},
            "eval": {"status": "pass", "figures": {}, "seconds": 9.0, "date": "2026-11-25T10:00"},
        },
    }
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps(earlier))
    kept = gpu_check.earlier_results(path, "NVIDIA H200")
    assert set(kept) == {"resume", "eval"}  # a skip has nothing to keep
    assert kept["resume"]["date"] == "2026-11-26T01:54:47+00:00"  # the run's date
    assert kept["eval"]["date"] == "2026-11-25T10:00"  # kept once already: its own date
    assert gpu_check.earlier_results(path, "NVIDIA A100") == {}  # another GPU's figures
    assert gpu_check.earlier_results(tmp_path / "none.json", "NVIDIA H200") == {}
    row = gpu_check.markdown({**earlier, "machine": MACHINE, "seconds": 1.0, "checks": kept})
    assert "| `resume` | fail (differ) (run of 2026-11-26 01:54) | 3.0 |" in row
