"""Data-parallel training: shards, and torchrun with 2 CPU processes (gloo) against one."""

import json
import signal
import subprocess
from pathlib import Path

import pytest
import torch

import seq2seq.train as train_module
from seq2seq.checkpoint import read_state
from seq2seq.text.parallel import read_lines
from seq2seq.tokens.batching import shard_steps

from helpers import ENV, HANG, command, wait_until
from small_run import small_config, small_run, weights

# The small run, smaller, on the CPU: gloo between CPU processes, compared to 1e-6 (the GPU:
# make gpu-check).
SMALL = small_run(
    "corpus.train_size=600", "corpus.valid_size=20", "corpus.test_size=20",
    "train.threads=1", "train.precision=fp32", "train.device=cpu",
)  # fmt: skip


@pytest.mark.parametrize("world, accumulate", [(1, 1), (1, 3), (2, 1), (2, 2), (3, 1), (3, 2)])
def test_shards_are_disjoint_cover_the_epoch_and_give_every_process_data(world, accumulate):
    # 23 micro-batches of 4 pairs: the last step is short, in most cases with fewer
    # micro-batches than processes
    batches = [list(range(4 * i, 4 * i + 4)) for i in range(23)]
    shards = [shard_steps(batches, world * accumulate, rank, world) for rank in range(world)]
    assert len({len(steps) for steps in shards}) == 1, "every process takes the same steps"
    seen = [pair for steps in shards for step in steps for batch in step for pair in batch]
    assert sorted(seen) == list(range(4 * 23))
    for steps in shards:
        assert all(len(step) == accumulate for step in steps), "the last step too"


def test_a_last_step_of_fewer_pairs_than_processes_waits_for_the_next_epoch():
    batches = [[0, 1, 2], [3, 4, 5], [6]]  # 2 processes, 1 micro-batch each: the last is [6]
    assert [shard_steps(batches, 2, rank, 2) for rank in (0, 1)] == [[[[0, 1, 2]]], [[[3, 4, 5]]]]


def run(*args: str, cwd: Path, processes: int = 1) -> subprocess.Popen:
    """`python -m seq2seq.train`, or with several processes the same under torchrun."""
    train = command("seq2seq.train", *SMALL, *args)
    if processes > 1:
        launcher = ["torch.distributed.run", "--standalone", f"--nproc_per_node={processes}"]
        train = command(*launcher, *train[1:])  # python -m torch.distributed.run ... -m ...
    return subprocess.Popen(
        train, cwd=cwd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def finish(process: subprocess.Popen) -> str:
    stdout, stderr = process.communicate(timeout=HANG)
    assert process.returncode == 0, stderr
    return stdout


@pytest.mark.slow
def test_with_a_time_budget_every_process_stops_at_the_same_step(workdir):
    """train.max_minutes under torchrun: the processes share one clock (their mean), so none
    goes on to a step the others never take (that would hang in the gradient exchange)."""
    budget = ["train.max_steps=100000", "train.max_minutes=0.03", "train.eval_every=10"]
    stdout = finish(run(*budget, "experiment=budget", cwd=workdir, processes=2))
    log = [json.loads(line) for line in (workdir / "runs/budget/metrics.jsonl").open()]
    assert log[-1]["elapsed_s"] >= 1.8 and log[-1]["step"] < 100_000
    assert (
        read_state(workdir / "runs/budget/last.pt")["training"]["progress"]["step"]
        == log[-1]["step"]
    )
    assert "or 0.03 minutes" in stdout


@pytest.mark.slow
def test_two_processes_equal_one_with_matching_accumulation(workdir):
    steps = ["train.max_steps=12", "train.eval_every=6"]
    for accumulate in (1, 2):
        two = run(
            *steps,
            f"train.accumulate={accumulate}",
            f"experiment=ddp{accumulate}",
            cwd=workdir,
            processes=2,
        )
        one = run(
            *steps, f"train.accumulate={2 * accumulate}", f"experiment=one{accumulate}", cwd=workdir
        )
        stdout = finish(two)
        finish(one)
        ddp, single = (
            weights(workdir / f"runs/ddp{accumulate}/last.pt"),
            weights(workdir / f"runs/one{accumulate}/last.pt"),
        )
        # With 2 micro-batches a step, both runs add the same two gradients: equal to 1e-6.
        # With 4, one process adds ((g0 + g1) + g2) + g3, two add (g0 + g2) + (g1 + g3): the
        # last bits differ, and Adam, which divides by the gradients' own size, turns that
        # rounding noise into sizeable updates where a gradient is ~0. Attention's key bias
        # has a true gradient of exactly 0 (softmax ignores a constant added to every score)
        # and no effect on any output: it is left out there. The losses agree to 1e-6.
        tolerance = 1e-6 if accumulate == 1 else 1e-4
        for name, tensor in ddp.items():
            expected = single[name]
            if accumulate > 1 and name.endswith("in_proj.bias"):
                d = tensor.numel() // 3  # [queries | keys | values]
                tensor, expected = (
                    tensor[torch.arange(3 * d) // d != 1],
                    expected[torch.arange(3 * d) // d != 1],
                )
            torch.testing.assert_close(tensor, expected, rtol=0, atol=tolerance, msg=name)
        # rank 0 alone logged and wrote: one line per validation, one banner
        log = [
            json.loads(line) for line in read_lines(workdir / f"runs/ddp{accumulate}/metrics.jsonl")
        ]
        reference = [
            json.loads(line) for line in read_lines(workdir / f"runs/one{accumulate}/metrics.jsonl")
        ]
        assert [entry["step"] for entry in log] == [6, 12, 12]  # the last: the average
        for entry, expected in zip(log, reference, strict=True):
            for key in ("train_loss", "valid_loss"):
                assert entry[key] == pytest.approx(expected[key], rel=1e-6, abs=0)
        assert stdout.count("parameters on cpu x 2 processes") == 1
        assert sorted(p.name for p in (workdir / f"runs/ddp{accumulate}").iterdir()) == [
            "best.pt", "last.pt", "metrics.jsonl", "step-12.pt", "step-6.pt"
        ]  # fmt: skip


@pytest.mark.slow
def test_a_stopped_distributed_run_resumes(workdir):
    steps = ["train.max_steps=150", "train.eval_every=5"]
    straight = run(*steps, "experiment=straight", cwd=workdir, processes=2)
    finish(straight)

    stopped = run(*steps, "experiment=resumed", cwd=workdir, processes=2)
    wait_until((workdir / "runs/resumed/last.pt").exists, "first checkpoint", stopped, timeout=HANG)
    stopped.send_signal(signal.SIGTERM)  # torchrun passes it on to both processes
    _, stderr = stopped.communicate(timeout=HANG)
    assert stopped.returncode != 0
    assert stderr.count("run the same command again to resume") == 1  # said once, by rank 0
    step = read_state(workdir / "runs/resumed/last.pt")["info"]["step"]
    assert 5 <= step < 150

    stdout = finish(run(*steps, "experiment=resumed", cwd=workdir, processes=2))
    assert f"resuming runs/resumed/last.pt at step {step:,}" in stdout
    resumed = weights(workdir / "runs/resumed/last.pt")
    reference = weights(workdir / "runs/straight/last.pt")
    for name, tensor in resumed.items():
        torch.testing.assert_close(tensor, reference[name], rtol=0, atol=1e-6, msg=name)


def test_a_plain_run_leaves_torch_distributed_alone(workdir, monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    train_module.train(small_config(SMALL, "train.max_steps=2"))
    assert not torch.distributed.is_initialized()
