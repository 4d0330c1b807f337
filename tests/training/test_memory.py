"""train.max_memory_mib (seq2seq/training/memory.py): a measured trial, train.accumulate
raised until the step fits, a one-line error when not even one pair fits; the trial leaves
the weights, their gradients and the random numbers as they were."""

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from seq2seq import train
from seq2seq.support.errors import UserError
from seq2seq.training import memory
from seq2seq.training.memory import MIB, trial_peak, within_memory

from helpers import seed_preset_run

CPU = torch.device("cpu")
pytestmark = pytest.mark.skipif(not memory.STATUS.exists(), reason="measured from Linux's /proc")


def test_the_trial_measures_a_step_and_leaves_the_model_as_it_was(seed_run, monkeypatch):
    run = seed_preset_run(seed_run, monkeypatch)
    weights = {k: v.clone() for k, v in run.model.state_dict().items()}
    random_state = torch.get_rng_state()
    peak = trial_peak(run.config, run.model, run.data, 1000, None, CPU)
    assert sum(p.numel() * 4 for p in run.model.parameters()) < peak < 64 << 30  # weights in
    assert all(p.grad is None for p in run.model.parameters())
    assert all(torch.equal(weights[k], v) for k, v in run.model.state_dict().items())
    assert torch.equal(torch.get_rng_state(), random_state)


def test_more_micro_batches_until_the_step_fits(seed_run, monkeypatch):
    """With a peak that grows with the micro-batch's tokens: the smallest accumulate that fits."""
    run = seed_preset_run(seed_run, monkeypatch, "train.batch_tokens=800")
    peaks = []

    def measured(config, model, data, micro_tokens, dtype, device):
        peaks.append(micro_tokens)
        return micro_tokens * MIB  # 800 MiB at 800 tokens

    monkeypatch.setattr(memory, "trial_peak", measured)
    state_mib = 2 * sum(p.numel() * 4 for p in run.model.parameters()) / MIB
    budget = int((200 + state_mib) * (1 + memory.MARGIN)) + 1  # 200 tokens fit, 400 do not
    config = budgeted(run.config, budget)
    fitted, need = within_memory(config, run.model, run.data, None, CPU, run.world)
    assert peaks == [800, 400, 200]
    assert fitted.train.accumulate == 4 and 0 < need <= budget
    assert within_memory(run.config, run.model, run.data, None, CPU, run.world) == (run.config, 0)


def test_a_budget_too_small_for_one_pair_is_an_error_at_the_start(seed_run, monkeypatch):
    run = seed_preset_run(seed_run, monkeypatch)
    config = budgeted(run.config, 10)  # python alone takes more
    with pytest.raises(UserError, match=r"train.max_memory_mib=10: this model needs about \d+ MiB"):
        within_memory(config, run.model, run.data, None, CPU, run.world)


def budgeted(config, mib: int):
    return replace(config, train=replace(config.train, max_memory_mib=mib))


def test_a_budgeted_run_says_what_it_measured_and_logs_its_peak(seed_run, monkeypatch, capsys):
    """The run's metrics.jsonl holds the process's peak at each validation, under the budget."""
    monkeypatch.chdir(seed_run.parent.parent)
    resident = int(memory.STATUS.read_text().split("VmRSS:")[1].split()[0]) // 1024  # MiB
    budget = resident + 1500  # this test process's size (a whole suite's, maybe), and room
    overrides = [f"train.max_memory_mib={budget}", "train.max_steps=20", "train.eval_every=10"]
    train.main(["experiment=budgeted", "--restart", *overrides])
    assert f"train.max_memory_mib {budget:,}: about " in capsys.readouterr().out
    log = [
        json.loads(line) for line in Path("runs/budgeted/metrics.jsonl").read_text().splitlines()
    ]
    assert all(0 < line["peak_memory_mib"] <= budget for line in log)
