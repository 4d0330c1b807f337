"""The pure parts of `make bench-peers` (benchmarks/peers.py and its peers_*.py modules), without
JoeyNMT installed: the simulation of JoeyNMT's token batches, the JoeyNMT config written from
ours, reading the validations of both toolkits, and the report's ratios."""

import json

import numpy as np
import yaml
from peers_joeynmt import joey_validation
from peers_joeynmt_config import joey_batch_sizes, joey_budget_for_steps, joey_config
from peers_measure import curve_figures, new_lines, seconds_to
from peers_report import ROWS, markdown, ratios, shown

from seq2seq.config import load_config

from helpers import ROOT


def test_joey_batches_close_when_count_times_longest_reaches_the_budget():
    # cost of each pair: max(source + EOS, target + BOS) = 4, 3, 2, 6
    src, tgt, order = np.array([3, 1, 1, 5]), np.array([2, 2, 0, 1]), np.arange(4)
    assert joey_batch_sizes(src, tgt, 8, order) == [2, 2]  # 2 x 4 = 8, then 2 x 6
    assert joey_batch_sizes(src, tgt, 9, order) == [3, 1]  # 3 x 4 = 12; the rest
    assert joey_batch_sizes(src, tgt, 9, order[::-1]) == [2, 2]  # 2 x 6, then 2 x 4


def test_budget_for_steps_is_the_smallest_with_at_most_that_many_batches():
    rng = np.random.default_rng(0)
    src, tgt = rng.integers(1, 20, 200), rng.integers(1, 15, 200)
    order = rng.permutation(200)
    for steps in (1, 3, 10, 50):
        budget = joey_budget_for_steps(src, tgt, steps, order)
        brute = next(
            b for b in range(1, 5000) if len(joey_batch_sizes(src, tgt, b, order)) <= steps
        )
        assert budget == brute


def test_joey_config_mirrors_ours(tmp_path):
    config = load_config(ROOT / "config.yaml", ["train.lr=0.003", "model.d_ff=256"])
    joey = joey_config(config, tmp_path / "model", 1234, 50, 100)
    joey = yaml.safe_load(yaml.safe_dump(joey))  # what write_yaml writes reads back the same
    m = config.model
    for stack, layers in (("encoder", m.enc_layers), ("decoder", m.dec_layers)):
        side = joey["model"][stack]
        assert side["layer_norm"] == "pre" and side["num_layers"] == layers
        assert side["hidden_size"] == side["embeddings"]["embedding_dim"] == m.d_model
        assert (side["ff_size"], side["num_heads"], side["dropout"]) == (256, m.n_heads, m.dropout)
        assert side["embeddings"]["scale"] is True
    assert joey["model"]["tied_softmax"] is m.tie_embeddings
    training = joey["training"]
    assert (training["batch_type"], training["batch_size"]) == ("token", 1234)
    assert (training["learning_rate"], training["learning_rate_warmup"]) == (0.003, 200)
    assert (training["validation_freq"], training["normalization"]) == (100, "tokens")
    assert joey["testing"]["max_output_length"] == 50
    assert joey["data"]["src"]["level"] == joey["data"]["trg"]["level"] == "word"
    assert joey["data"]["train"].endswith("data/numbers/train")


def test_joey_validation_is_scored_from_its_hypotheses(tmp_path):
    (tmp_path / "100.hyps").write_text("1 la 1\n2 la 3\n")
    (tmp_path / "200.hyps").write_text("1 la 1\n")  # cut short by the stop signal
    (tmp_path / "validations.txt").write_text(
        "Steps: 100\tloss: 0.50000\tacc: 0.90000\tppl: 1.60000\tsequence_accuracy: 50.00000\t"
        "LR: 0.00100000\t*\n"
    )
    refs = ["1 la 1", "2 la 2"]
    result = joey_validation(tmp_path, 100, 12.5, refs)
    assert result["valid_exact_match"] == result["joeynmt_sequence_accuracy"] == 0.5
    assert (result["wall_s"], result["step"], result["lr"]) == (12.5, 100, 0.001)
    assert joey_validation(tmp_path, 200, 20.0, refs) is None


def test_times_to_target_and_growing_files(tmp_path):
    curve = [
        {"wall_s": 10.0, "step": 100, "valid_exact_match": 0.5, "elapsed_s": 8.0},
        {"wall_s": 20.0, "step": 200, "valid_exact_match": 0.992, "elapsed_s": 16.0},
        {"wall_s": 30.0, "step": 300, "valid_exact_match": 0.991, "elapsed_s": 24.0},
    ]
    figures = curve_figures(curve, wall=31.0, peak=400.0)
    assert (figures["seconds_to_99"], figures["seconds_to_99_5"]) == (20.0, None)
    assert (figures["best_step"], figures["validated_steps_per_s"]) == (200, 10.0)
    assert seconds_to(curve, 0.99, "elapsed_s") == 16.0
    log = tmp_path / "metrics.jsonl"
    log.write_text('{"step": 1}\n{"step": 2}\n{"ste')  # a line still being written
    assert new_lines(log, 1) == ['{"step": 2}']
    assert new_lines(tmp_path / "missing", 0) == []


def test_report_rows_and_ratios():
    ours = {"seconds_to_99": 20.0, "seconds_to_99_5": None, "best_step": 300, "parameters": 10}
    theirs = {"seconds_to_99": 40.0, "seconds_to_99_5": 50.0, "best_step": 0, "parameters": 4}
    assert ratios(ours, theirs) == {"seconds_to_99": 0.5, "parameters": 2.5}  # numbers, not 0
    shown_values = [shown(v) for v in (None, 1234, 0.5, 12.34, 12345.6)]
    assert shown_values == ["not reached", "1,234", "0.500", "12.3", "12,346"]
    results = json.loads((ROOT / "benchmarks/peers.json").read_text())  # the committed run
    rows = [line for line in markdown(results).splitlines() if line.startswith("| ")][2:]
    assert [row.split(" | ")[0][2:] for row in rows] == [label for _, label, _ in ROWS]
    assert len(ROWS) == len({key for key, _, _ in ROWS})
