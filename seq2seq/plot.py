"""Pictures: the attention weights of one translation, and the training curves.

    python -m seq2seq.plot attention "three is three"   # -> runs/<experiment>/attention.png
    python -m seq2seq.plot curves                       # -> runs/<experiment>/curves.png

`attention` translates the sentence (greedy), then runs the model once more on the source and
its translation with every attention module recording its weights, and draws one heatmap per
layer and head: encoder self-attention (source x source), decoder self-attention (output x
output, the no-peek triangle), and cross-attention (output x source). Rows are the queries,
columns the keys they attend to; each row sums to 1. As in translate, unknown words are named
on stderr, and a sentence longer than the model's positions is cut to fit, with a warning.

`curves` draws runs/<experiment>/metrics.jsonl: training and validation loss, and the
validation scores, against the step.

Needs matplotlib: pip install -e ".[plot]".
"""

from pathlib import Path

from seq2seq.checkpoint import Checkpoint, load_checkpoint
from seq2seq.config import DEFAULT_CONFIG, load_config
from seq2seq.decoding.attention_maps import attention_maps
from seq2seq.support.errors import UserError, command_parser, run_cli, warn
from seq2seq.support.files import atomic_write, read_log
from seq2seq.support.paths import METRICS, picture


def pyplot():
    try:
        import matplotlib
    except ImportError:
        raise UserError(
            'plotting needs matplotlib: pip install -e ".[plot]" (or pip install matplotlib)'
        ) from None
    matplotlib.use("Agg")  # files only, no window
    import matplotlib.pyplot as plt

    return plt


def plot_attention(checkpoint: Checkpoint, sentence: str, path: Path) -> None:
    plt = pyplot()
    attention = attention_maps(checkpoint, sentence)
    for message in attention.warnings:
        warn(message)
    maps, heads = attention.maps, checkpoint.config.model.n_heads
    longest = max(len(m.keys) for m in maps)
    cell = max(2.2, 0.28 * longest + 1.0)
    figure, axes = plt.subplots(
        len(maps),
        heads,
        figsize=(cell * heads, cell * len(maps) + 0.6),
        squeeze=False,
        layout="constrained",  # room for the title and the token labels
    )
    for row, heatmap in enumerate(maps):
        for head in range(heads):
            ax = axes[row][head]
            ax.imshow(heatmap.weights[head].float().numpy(), cmap="viridis", vmin=0.0, vmax=1.0)
            ax.set_title(f"{heatmap.title}, head {head + 1}", fontsize=9)
            ax.set_xticks(range(len(heatmap.keys)), heatmap.keys, rotation=90, fontsize=7)
            ax.set_yticks(range(len(heatmap.queries)), heatmap.queries, fontsize=7)
    figure.suptitle(f"{sentence}  ->  {attention.translation}\n(rows: queries, columns: keys)")
    save(figure, path)


def plot_curves(metrics_path: Path, path: Path, trained_by: str = "`make train`") -> None:
    plt = pyplot()
    if not metrics_path.exists():
        raise UserError(f"no training log at {metrics_path}: run {trained_by} first")
    log = read_log(metrics_path)
    if not log:
        raise UserError(f"{metrics_path} is empty: no validation has run yet")
    steps = [entry["step"] for entry in log]
    figure, (losses, scores) = plt.subplots(1, 2, figsize=(11, 4))
    losses.plot(
        steps, [e["train_loss"] for e in log], marker=".", label="training (label-smoothed)"
    )
    losses.plot(steps, [e["valid_loss"] for e in log], marker=".", label="validation")
    losses.set(xlabel="step", ylabel="cross-entropy per token", title="loss")
    losses.legend()
    scores.plot(
        steps, [100 * e["valid_exact_match"] for e in log], marker=".", label="exact match %"
    )
    scores.plot(steps, [e["valid_bleu"] for e in log], marker=".", label="BLEU")
    scores.set(xlabel="step", ylabel="score", title="validation", ylim=(0, 100))
    scores.legend()
    figure.suptitle(str(metrics_path.parent))
    figure.tight_layout()
    save(figure, path)


def save(figure, path: Path) -> None:
    with atomic_write(path, "wb") as file:
        figure.savefig(file, format="png", dpi=110)
    print(f"wrote {path}")


def main(argv: list[str] | None = None) -> None:
    parser = command_parser("seq2seq.plot", __doc__.splitlines()[0])
    parser.add_argument("what", choices=["attention", "curves"])
    parser.add_argument("sentence", nargs="?", help="attention: the source sentence")
    parser.add_argument("--config", default=DEFAULT_CONFIG, help="experiment config (YAML)")
    parser.add_argument("--checkpoint", help="attention: model (default: the config's best)")
    parser.add_argument("--out", help="PNG file (default: runs/<experiment>/<what>.png)")
    args = parser.parse_intermixed_args(argv)  # options before or after the sentence
    config = load_config(args.config)
    out = Path(args.out or picture(config.run_dir, args.what))
    if args.what == "curves":
        plot_curves(config.run_dir / METRICS, out, config.make_command("train"))
        return
    if args.sentence is None:
        raise UserError('attention needs a sentence: python -m seq2seq.plot attention "..."')
    path = args.checkpoint or config.checkpoint_path
    plot_attention(
        load_checkpoint(path, trained_by=config.make_command("train")), args.sentence, out
    )


if __name__ == "__main__":
    run_cli(main)
