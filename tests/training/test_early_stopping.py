"""Early stopping: train.patience counts the validations in a row without a gain in
train.best_metric, whichever metric that is, and training stops after that many."""

import json
from pathlib import Path

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


def test_a_validation_that_loses_what_must_be_kept_is_never_best_and_counts_for_patience(
    seed_run, monkeypatch, capsys
):
    """train.keep_valid: the start (train.init_from) is validated at step 0, its keep BLEU the
    bound; a validation more than train.keep_bleu_drop below it is not best.pt, though its
    exact match is the highest, and counts as one without gain: two in a row stop training
    (train.patience 2)."""
    keep = [50.0, 50.5, 49.2, 48.9, 48.5, 60.0]  # steps 0, 2, 4, 6 and 8 (lost), never 10
    results = [
        {"valid_exact_match": match, "valid_bleu": 10.0, "valid_loss": 1.0, "keep_bleu": kept}
        for match, kept in zip([0.1, 0.2, 0.3, 0.9, 1.0, 1.0], keep, strict=True)
    ]
    monkeypatch.setattr(train, "validate", lambda *args: results.pop(0))
    monkeypatch.chdir(seed_run.parent.parent)
    Path("keep.tsv").write_text("one is one\t1 la 1\n")
    train.main([
        "experiment=keeping", "train.device=cpu", "train.max_steps=12", "train.eval_every=2",
        f"train.init_from={seed_run / 'best.pt'}", "train.keep_valid.tsv=keep.tsv",
        "train.patience=2",
    ])  # fmt: skip
    lines = [json.loads(line) for line in (seed_run.parent / "keeping/metrics.jsonl").open()]
    assert [(line["step"], line["train_loss"] is None) for line in lines] == [
        (0, True), (2, False), (4, False), (6, False), (8, False)
    ]  # fmt: skip
    assert read_state(seed_run.parent / "keeping/best.pt")["info"]["step"] == 4
    out = capsys.readouterr().out
    assert "keep BLEU 1.10 below the start's (50.00; train.keep_bleu_drop: 1): not best.pt" in out
    assert "no gain in 2 validations: stopping early" in out
