"""Early stopping: train.patience counts the validations in a row without a gain in
train.best_metric, whichever metric that is, and training stops after that many."""

import json

import pytest

from seq2seq import train
from seq2seq.checkpoint import read_state

# Six validations' scores. The metric a script is named after gains at validations 1 and 2,
# not at 3 (an equal score with a higher loss, or an equal loss) nor at 4, and gains again at
# 5 and 6; the other metrics gain at 4 (and the scores keep rising), so that only the metric
# asked for can stop training.
SCRIPTS = {
    "exact_match": {
        "valid_exact_match": [0.2, 0.5, 0.5, 0.4, 0.6, 0.7],
        "valid_bleu": [10, 20, 30, 40, 50, 60],
        "valid_loss": [3.0, 2.0, 2.5, 1.0, 0.9, 0.8],
    },
    "bleu": {
        "valid_exact_match": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
        "valid_bleu": [10, 20, 20, 15, 30, 40],
        "valid_loss": [3.0, 2.0, 2.5, 1.0, 0.9, 0.8],
    },
    "loss": {
        "valid_exact_match": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
        "valid_bleu": [10, 20, 30, 40, 50, 60],
        "valid_loss": [3.0, 2.0, 2.0, 2.5, 1.0, 0.9],
    },
}


def scripted_run(seed_run, monkeypatch, metric: str, patience: int) -> tuple[list, int, bool]:
    """Train the seed preset for 12 steps, validating every 2 (six validations at most), the
    validations scored by SCRIPTS[metric]. -> the steps validated, best.pt's step, and whether
    last.pt says training stopped early."""
    script = SCRIPTS[metric]
    results = [
        dict(zip(script, scores, strict=True)) for scores in zip(*script.values(), strict=True)
    ]
    monkeypatch.setattr(train, "validate", lambda *args: results.pop(0))
    monkeypatch.chdir(seed_run.parent.parent)  # its config.yaml and data/seed/
    experiment = f"patience-{metric}-{patience}"
    train.main([
        f"experiment={experiment}", "train.device=cpu", "train.max_steps=12",
        "train.eval_every=2", f"train.patience={patience}", f"train.best_metric={metric}",
    ])  # fmt: skip
    run_dir = seed_run.parent / experiment
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    best = read_state(run_dir / "best.pt")["info"]["step"]
    stopped = read_state(run_dir / "last.pt")["training"]["progress"]["stopped_early"]
    return [json.loads(line)["step"] for line in lines], best, stopped


@pytest.mark.parametrize("metric", list(SCRIPTS))
def test_patience_stops_training_on_every_best_metric(seed_run, monkeypatch, capsys, metric):
    assert scripted_run(seed_run, monkeypatch, metric, patience=2) == ([2, 4, 6, 8], 4, True)
    assert "no gain in 2 validations: stopping early" in capsys.readouterr().out


def test_without_patience_training_goes_on(seed_run, monkeypatch):
    steps = [2, 4, 6, 8, 10, 12]
    assert scripted_run(seed_run, monkeypatch, "exact_match", patience=0) == (steps, 12, False)
