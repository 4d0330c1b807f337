"""`python -m seq2seq.average`: the mean of several checkpoints' weights, as one checkpoint.

    python -m seq2seq.average OUT.pt IN1.pt IN2.pt ...   these checkpoints
    python -m seq2seq.average OUT.pt [--config config.yaml] [key.sub=value ...]
                                                         the run's kept ones: step-<N>.pt
    python -m seq2seq.average OUT.pt START.pt TUNED.pt --weights 0.4 0.6
                                                         a weighted mean: a fine-tune mixed
                                                         with the model it started from

    IN1.pt IN2.pt ... -> the same model and vocabularies? -> the mean of each weight
      -> OUT.pt: the last one's config, vocabularies and example, the averaged weights

The checkpoints of one run at several late steps (seq2seq/training/averaging.py says why
their mean is often better). OUT.pt loads wherever best.pt does (translate, evaluate, serve,
export); its info names the steps averaged. Training does this itself, and keeps the average
only if it validates better, with train.average_last: N, which also keeps the checkpoints
of the last N validations as runs/<experiment>/step-<N>.pt, the inputs of the second form.

The third form is WiSE-FT (Wortsman et al., 2022): a fine-tuned model's weights interpolated
with those of the model it started from (train.init_from) keep more of what the start knew
than the fine-tune alone, for part of what it learnt (docs/adapt.md measures the mix).
"""

from pathlib import Path

from seq2seq.checkpoint import load_checkpoint, save_checkpoint
from seq2seq.config import DEFAULT_CONFIG, load_config
from seq2seq.support.errors import UserError, command_parser, run_cli
from seq2seq.support.paths import kept_checkpoints
from seq2seq.training.averaging import average_checkpoints


def average(out: Path, inputs: list[Path], shares: list[float] | None = None) -> list[int | None]:
    """Write the average of the checkpoints `inputs` (with `shares`, weighted) to `out`;
    returns their steps."""
    last = load_checkpoint(inputs[-1])
    vocabs = (last.src_vocab, last.tgt_vocab)
    like = str(inputs[-1])
    weights, steps = average_checkpoints(inputs, last.config, vocabs, like, shares)
    last.model.load_state_dict(weights)
    info = {"step": steps[-1], "averaged_steps": steps, "example": last.info.get("example", "")}
    if shares:
        info["averaged_shares"] = shares
    save_checkpoint(out, last.config, last.model, *vocabs, info)
    return steps


def kept_inputs(config_file: str, overrides: list[str]) -> list[Path]:
    """The run's kept checkpoints, oldest first."""
    config = load_config(config_file, overrides)
    found = list(kept_checkpoints(config.run_dir).values())
    if not found:
        raise UserError(
            f"no kept checkpoints (step-<N>.pt) in {config.run_dir}/: train with "
            "train.average_last above 0, or name the checkpoints to average"
        )
    return found


def main(argv: list[str] | None = None) -> None:
    parser = command_parser("seq2seq.average", __doc__.splitlines()[0])
    parser.add_argument("out", type=Path, metavar="OUT.pt", help="the average, to write")
    parser.add_argument(
        "inputs", nargs="*", metavar="IN.pt | key.sub=value",
        help="the checkpoints to average; none: the run's kept ones (step-<N>.pt), the run "
        "of --config with these overrides",
    )  # fmt: skip
    parser.add_argument("--config", default=DEFAULT_CONFIG, help="experiment config (YAML)")
    parser.add_argument(
        "--weights", nargs="+", type=float, metavar="W",
        help="one per checkpoint, summing to 1: their weighted mean (default: equal)",
    )  # fmt: skip
    args = parser.parse_intermixed_args(argv)
    named = [Path(word) for word in args.inputs if "=" not in word]
    overrides = [word for word in args.inputs if "=" in word]
    if named and overrides:
        parser.error("name the checkpoints to average, or override the config: not both")
    inputs = named or kept_inputs(args.config, overrides)
    if args.weights and (len(args.weights) != len(inputs) or abs(sum(args.weights) - 1) > 1e-6):
        parser.error(f"--weights: one per checkpoint ({len(inputs)}), summing to 1")
    steps = average(args.out, inputs, args.weights)
    shown = ", ".join("?" if step is None else f"{step:,}" for step in steps)
    print(f"averaged {len(inputs)} checkpoints (steps {shown}) into {args.out}")


if __name__ == "__main__":
    run_cli(main)
