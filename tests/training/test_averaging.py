"""Checkpoint averaging: the mean of the weights, the kept checkpoints of a run, the average
at the end of training (best.pt only if better), the command, and resuming with it on."""

import copy
import re
from functools import partial
from pathlib import Path

import pytest
import torch

import seq2seq.train as train_module
from seq2seq import average
from seq2seq.checkpoint import load_checkpoint, read_state, save_checkpoint
from seq2seq.model.config import ModelConfig
from seq2seq.model.transformer import Transformer
from seq2seq.support.errors import UserError
from seq2seq.tokens.special import PAD
from seq2seq.tokens.vocab import train_vocab
from seq2seq.train import train
from seq2seq.training.averaging import average_weights

from helpers import assert_same_parameters, same_figures
from small_run import run_log, small_config, small_run, weights

# The small run validated at steps 15, 30 and 40, with dropout so that resuming must put the
# random state back too.
SMALL = small_run("model.dropout=0.1", "train.max_steps=40", "train.eval_every=15")
config = partial(small_config, SMALL)


def kept(experiment: str) -> list[str]:
    return sorted(path.name for path in Path(f"runs/{experiment}").glob("step-*.pt"))


def tiny_weights(seed: int) -> dict[str, torch.Tensor]:
    torch.manual_seed(seed)
    model = Transformer(ModelConfig(d_model=16, n_heads=2, d_ff=32), 20, 20, pad_id=PAD)
    return {**model.state_dict(), "count": torch.tensor(seed), "half": torch.rand(3).bfloat16()}


def test_the_average_of_identical_weights_is_those_weights():
    one = tiny_weights(0)
    assert_same_parameters(average_weights([one, one, one]), one)


def test_the_average_of_two_is_the_mean_of_every_weight_and_the_newest_integers():
    first, second = tiny_weights(0), tiny_weights(1)
    averaged = average_weights([first, second])
    assert averaged.keys() == first.keys()
    for name, weight in averaged.items():
        if name == "count":  # not floating: the newest's
            assert weight.item() == 1
            continue
        assert weight.dtype == first[name].dtype, name  # cast back (bf16 stays bf16)
        mean = ((first[name].double() + second[name].double()) / 2).to(weight.dtype)
        assert torch.equal(weight, mean), name
    assert not torch.equal(averaged["src_embed.tokens.weight"], first["src_embed.tokens.weight"])


@pytest.mark.slow
def test_the_last_n_validations_are_kept_and_the_command_averages_them(workdir, capsys):
    Path("runs/numbers").mkdir(parents=True)
    Path("runs/numbers/step-99.pt").write_bytes(b"an earlier run's")  # a fresh start drops it
    train(config("train.average_last=2", "train.max_steps=20", "train.eval_every=5"))
    assert kept("numbers") == ["step-15.pt", "step-20.pt"]  # of the validations 5, 10, 15, 20
    for step in (15, 20):
        state = read_state(Path(f"runs/numbers/step-{step}.pt"))
        assert state["info"]["step"] == step and "training" not in state  # no optimizer
    capsys.readouterr()

    average.main(["average.pt", *SMALL])  # the run of config.yaml: its kept checkpoints
    assert "averaged 2 checkpoints (steps 15, 20) into average.pt" in capsys.readouterr().out
    expected = average_weights(
        [weights("runs/numbers/step-15.pt"), weights("runs/numbers/step-20.pt")]
    )
    assert_same_parameters(weights("average.pt"), expected)
    assert load_checkpoint("average.pt").info["averaged_steps"] == [15, 20]

    with pytest.raises(UserError, match=r"no kept checkpoints \(step-<N>.pt\) in runs/other/: "):
        average.main(["average.pt", "experiment=other"])


@pytest.mark.slow
@pytest.mark.parametrize("better", [True, False])
def test_the_average_becomes_best_pt_only_when_it_validates_better(
    workdir, monkeypatch, capsys, better
):
    figures = (0.0, 1.0, 100.0) if better else (99.0, 0.0, 0.0)  # loss, exact match, BLEU
    monkeypatch.setattr(
        "seq2seq.training.averaging.validate",
        lambda *args: dict(
            zip(("valid_loss", "valid_exact_match", "valid_bleu"), figures, strict=True)
        ),
    )
    best = train(config("train.average_last=2", "train.max_steps=30"))  # validations 15, 30
    out = capsys.readouterr().out
    assert kept("numbers") == ["step-15.pt", "step-30.pt"]
    average_line = run_log("numbers")[-1]
    assert average_line["averaged_steps"] == [15, 30]
    assert average_line["valid_exact_match"] == figures[1]
    assert run_log("numbers")[-2].keys() <= average_line.keys()  # the plots and benchmarks read it
    saved = load_checkpoint("runs/numbers/best.pt").info
    if better:
        assert "average of steps 15-30 (2 checkpoints): valid exact match 1.0000" in out
        assert "the average is best.pt now" in out
        assert best["averaged_steps"] == saved["averaged_steps"] == [15, 30]
        every = [weights(f"runs/numbers/step-{step}.pt") for step in (15, 30)]
        assert_same_parameters(weights("runs/numbers/best.pt"), average_weights(every))
    else:
        assert "valid exact match 0.0000" in out and "best.pt stays as it was" in out
        assert "averaged_steps" not in best and "averaged_steps" not in saved
        single = weights(f"runs/numbers/step-{best['step']}.pt")
        assert_same_parameters(weights("runs/numbers/best.pt"), single)


@pytest.mark.slow
def test_resuming_with_averaging_matches_a_run_that_never_stopped(workdir, monkeypatch):
    """Killed at step 30 between its two writes: step-30.pt written, last.pt still at step
    15. The resumed run trains steps 16-30 again and rewrites step-30.pt; the kept
    checkpoints, best.pt and the log end as those of a run that never stopped."""
    straight = train(config("experiment=straight", "train.average_last=2"))

    save_last = train_module.save_last

    def killed_at_30(run):
        if run.progress.step == 30:
            raise RuntimeError("killed")
        save_last(run)

    monkeypatch.setattr(train_module, "save_last", killed_at_30)
    with pytest.raises(RuntimeError, match="killed"):
        train(config("experiment=resumed", "train.average_last=2"))
    assert kept("resumed") == ["step-15.pt", "step-30.pt"]
    assert read_state(Path("runs/resumed/last.pt"))["info"]["step"] == 15
    monkeypatch.setattr(train_module, "save_last", save_last)
    resumed = train(config("experiment=resumed", "train.average_last=2"))

    assert kept("resumed") == kept("straight") == ["step-30.pt", "step-40.pt"]
    for name in ["step-30.pt", "step-40.pt", "best.pt", "last.pt"]:
        assert_same_parameters(weights(f"runs/resumed/{name}"), weights(f"runs/straight/{name}"))
    keys = ("step", "valid_loss", "valid_exact_match", "valid_bleu")
    assert [resumed[k] for k in keys] == same_figures([straight[k] for k in keys])
    assert [e["step"] for e in run_log("resumed")] == [15, 30, 40, 40]  # the last: the average
    assert [e[k] for e in run_log("resumed") for k in keys] == same_figures(
        [e[k] for e in run_log("straight") for k in keys]
    )


@pytest.fixture
def other_checkpoints(seed_run, tmp_path):
    """The seed run's best.pt, and the same saved with another model or vocabulary."""
    best = seed_run / "best.pt"
    checkpoint = load_checkpoint(best)
    vocabs = checkpoint.src_vocab, checkpoint.tgt_vocab
    wider = copy.deepcopy(checkpoint.config)
    wider.model.d_model = 48
    model = Transformer(wider.model, *map(len, vocabs), pad_id=PAD)
    save_checkpoint(tmp_path / "wider.pt", wider, model, *vocabs, {"step": 1})
    other = train_vocab(["ten la 1 0", "eleven la 1 1"] * 20, 16, checkpoint.config.vocab)
    save_checkpoint(
        tmp_path / "other.pt", checkpoint.config, checkpoint.model, vocabs[0], other, {"step": 2}
    )
    return best, tmp_path / "wider.pt", tmp_path / "other.pt"


def test_the_command_refuses_checkpoints_of_other_models_or_vocabularies(
    other_checkpoints, tmp_path
):
    best, wider, other = other_checkpoints
    out = str(tmp_path / "average.pt")
    wider_model = f"{wider} holds another model than {best} (model.d_model: 48, there 32): "
    with pytest.raises(UserError, match="^" + re.escape(wider_model + "only checkpoints of one")):
        average.main([out, str(wider), str(best)])
    other_vocabularies = f"{other} has other vocabularies than {best}: "
    with pytest.raises(UserError, match="^" + re.escape(other_vocabularies)):
        average.main([out, str(other), str(best)])
    assert not Path(out).exists()


def test_the_command_averages_the_checkpoints_it_is_given(seed_run, tmp_path, capsys):
    best, last, out = seed_run / "best.pt", seed_run / "last.pt", tmp_path / "average.pt"
    average.main([str(out), str(best), str(best)])
    assert_same_parameters(weights(out), weights(best))  # identical checkpoints: that one
    average.main([str(out), str(best), str(last)])
    steps = [read_state(path)["info"]["step"] for path in (best, last)]
    assert f"averaged 2 checkpoints (steps {steps[0]}, {steps[1]})" in capsys.readouterr().out
    assert_same_parameters(weights(out), average_weights([weights(best), weights(last)]))
    assert load_checkpoint(out).info["averaged_steps"] == steps


def test_a_weighted_mean_mixes_a_fine_tune_with_its_start(seed_run, tmp_path, capsys):
    """WiSE-FT: --weights (1 - a) a, a weighted mean of each weight; one per checkpoint,
    summing to 1, or a usage error."""
    best, last, out = seed_run / "best.pt", seed_run / "last.pt", tmp_path / "mixed.pt"
    average.main([str(out), str(best), str(last), "--weights", "0.25", "0.75"])
    start, tuned, mixed = weights(best), weights(last), weights(out)
    for name, weight in mixed.items():
        if weight.is_floating_point():
            expected = (start[name].double() * 0.25 + tuned[name].double() * 0.75).float()
            assert torch.allclose(weight, expected, atol=1e-6), name
    assert load_checkpoint(out).info["averaged_shares"] == [0.25, 0.75]
    for wrong in (["0.5"], ["0.5", "0.6"]):
        with pytest.raises(SystemExit):
            average.main([str(out), str(best), str(last), "--weights", *wrong])
    assert "--weights: one per checkpoint (2), summing to 1" in capsys.readouterr().err


def test_help_names_the_command_as_it_is_typed(capsys):
    with pytest.raises(SystemExit) as exit_:
        average.main(["--help"])
    assert exit_.value.code == 0
    usage = capsys.readouterr().out
    assert usage.startswith("usage: python -m seq2seq.average ") and "OUT.pt" in usage
