"""The pure parts of `make bench-peers` (benchmarks/peers/), without
JoeyNMT or OpenNMT-py installed: the pieces every peer reads, the simulation of JoeyNMT's token
batches, the peers' configs written from ours, reading the validations, scoring, and the
report's rows and ratios."""

import json

import numpy as np
import pytest
import yaml

from benchmarks.peers.joeynmt_config import joey_batch_sizes, joey_budget_for_steps, joey_config
from benchmarks.peers.joeynmt_peer import joey_validation
from benchmarks.peers.measure import Scoring, curve_figures, new_lines, score, seconds_to
from benchmarks.peers.opennmt_peer import opennmt_config
from benchmarks.peers.pieces import detokenizer, write_pieces
from benchmarks.peers.report import draw_curves, markdown, ratios, rows, shown
from seq2seq.config import load_config
from seq2seq.tokens.vocab import load_vocabs

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
    joey = joey_config(config, tmp_path / "pieces", tmp_path / "model", 1234, 50, 100)
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
    assert joey["data"]["train"] == str(tmp_path / "pieces/train")
    assert joey["data"]["trg"]["voc_file"] == str(tmp_path / "pieces/vocab.tgt")


def test_opennmt_config_mirrors_ours(tmp_path):
    config = load_config(ROOT / "configs/multi30k_de_en.yaml")
    onmt = opennmt_config(config, tmp_path / "pieces", tmp_path / "model", 250)
    onmt = yaml.safe_load(yaml.safe_dump(onmt))
    m, t = config.model, config.train
    assert (onmt["hidden_size"], onmt["word_vec_size"], onmt["transformer_ff"]) == (256, 256, 1024)
    assert (onmt["enc_layers"], onmt["dec_layers"], onmt["heads"]) == (3, 3, 4)
    assert onmt["dropout"] == [m.dropout] and onmt["attention_dropout"] == [m.attention_dropout]
    assert onmt["share_vocab"] and onmt["share_embeddings"] and onmt["share_decoder_embeddings"]
    # noam's rate at the end of the warmup is our peak
    peak = onmt["learning_rate"] * 256**-0.5 * min(500**-0.5, 500 * 500**-1.5)
    assert abs(peak - t.lr) < 1e-12 and onmt["warmup_steps"] == t.warmup_steps
    assert (onmt["valid_steps"], onmt["save_checkpoint_steps"]) == (250, 250)
    assert onmt["batch_size"] * 2 == t.batch_tokens and onmt["batch_type"] == "tokens"
    assert onmt["data"]["corpus_1"]["path_tgt"] == str(tmp_path / "pieces/train.tgt")
    assert onmt["gpu_ranks"] == [] if t.device != "cuda" else [0]


def test_every_peer_reads_our_pieces_and_is_scored_on_their_text(numbers_workdir):
    """Each split in our pieces (normalised as we encode), the vocabulary files every piece
    but the specials, and a peer's output pieces made text again by the same model."""
    corpus = ["corpus.train_size=300", "corpus.valid_size=20", "corpus.test_size=20"]
    config = load_config(numbers_workdir(*corpus) / "config.yaml")
    pieces = write_pieces(config, config.run_dir / "pieces")
    src_vocab, tgt_vocab = load_vocabs(config)
    text = (config.data_dir / "test.src").read_text().splitlines()
    lines = (pieces / "test.src").read_text().splitlines()
    assert [line.split() for line in lines] == [src_vocab.pieces(i) for i in src_vocab.encode(text)]
    assert (pieces / "vocab.tgt").read_text().splitlines() == tgt_vocab.all_pieces()[4:]
    targets = (config.data_dir / "test.tgt").read_text().splitlines()
    assert detokenizer(config)((pieces / "test.tgt").read_text().splitlines()) == targets
    assert score(targets[:2] + ["x"], targets[:3], "exact_match") == 2 / 3
    assert score(targets, targets, "bleu") == pytest.approx(100.0)


def test_joey_validation_is_scored_from_its_hypotheses(tmp_path):
    (tmp_path / "100.hyps").write_text("▁1 ▁la ▁1\n▁2 ▁la ▁3\n")
    (tmp_path / "200.hyps").write_text("▁1 ▁la ▁1\n")  # cut short by the stop signal
    (tmp_path / "validations.txt").write_text(
        "Steps: 100\tloss: 0.50000\tacc: 0.90000\tppl: 1.60000\tsequence_accuracy: 50.00000\t"
        "LR: 0.00100000\t*\n"
    )

    def text(lines: list[str]) -> list[str]:  # sentencepiece's joining, for these pieces
        return [line.replace(" ", "").replace("▁", " ").strip() for line in lines]

    scoring = Scoring(tmp_path / "valid.src", ["1 la 1", "2 la 2"], "exact_match", text)
    result = joey_validation(tmp_path, 100, 12.5, scoring)
    assert result["valid_exact_match"] == result["joeynmt_sequence_accuracy"] == 0.5
    assert (result["wall_s"], result["step"], result["lr"]) == (12.5, 100, 0.001)
    assert joey_validation(tmp_path, 200, 20.0, scoring) is None


def test_times_to_target_and_growing_files(tmp_path):
    curve = [
        {"wall_s": 10.0, "step": 100, "valid_exact_match": 0.5, "elapsed_s": 8.0},
        {"wall_s": 20.0, "step": 200, "valid_exact_match": 0.992, "elapsed_s": 16.0},
        {"wall_s": 30.0, "step": 300, "valid_exact_match": 0.991, "elapsed_s": 24.0},
    ]
    figures = curve_figures(curve, wall=31.0, peak=400.0, metric="exact_match")
    assert (figures["seconds_to_99"], figures["seconds_to_99_5"]) == (20.0, None)
    assert (figures["best_step"], figures["validated_steps_per_s"]) == (200, 10.0)
    assert figures["seconds_to_best"] == 20.0
    assert seconds_to(curve, 0.99, "exact_match", "elapsed_s") == 16.0
    bleu = [{"wall_s": 5.0 * i, "step": i, "valid_bleu": b} for i, b in enumerate((3, 9, 7), 1)]
    figures = curve_figures(bleu, wall=16.0, peak=1.0, metric="bleu")
    assert (figures["seconds_to_best"], figures["best_valid_bleu"]) == (10.0, 9)
    assert "seconds_to_99" not in figures
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
    committed = sorted((ROOT / "benchmarks/results").glob("peers*.json"))  # the committed runs
    assert ROOT / "benchmarks/results/peers.json" in committed
    for path in committed:
        results, stem = json.loads(path.read_text()), path.stem
        expected = rows(results["settings"]["metric"])
        table = [line for line in markdown(results).splitlines() if line.startswith("| ")][2:]
        assert [row.split(" | ")[0][2:] for row in table] == [label for _, label, _ in expected]
        assert len(expected) == len({key for key, _, _ in expected})
        assert markdown(results) == (ROOT / f"benchmarks/results/{stem}.md").read_text()


def test_the_curves_are_drawn_from_the_results(tmp_path):
    """The picture of `make bench-peers`: a PNG of each toolkit's curve, from the JSON alone."""
    curve = [{"wall_s": 60.0 * m, "valid_bleu": b} for m, b in ((1, 3.0), (2, 15.0), (3, 25.0))]
    results = {
        "settings": {"metric": "bleu"},
        "machine": {"device_name": "AMD EPYC", "cpu_count": 2, "torch": "2.13.0"},
        "ours": {"curve": curve},
        "peers": {"opennmt": {"curve": curve[:2]}},
    }
    draw_curves(results, tmp_path / "curves.png")
    picture = (tmp_path / "curves.png").read_bytes()
    assert picture.startswith(b"\x89PNG\r\n\x1a\n") and len(picture) > 10_000
