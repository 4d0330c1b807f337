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

import json
from pathlib import Path

import torch

from seq2seq.attention import MultiHeadAttention
from seq2seq.batching import source_tensor
from seq2seq.checkpoint import Checkpoint, load_checkpoint
from seq2seq.config import DEFAULT_CONFIG, load_config
from seq2seq.decode import decode_batch, longest_source
from seq2seq.errors import UserError, command_parser, run_cli
from seq2seq.files import atomic_write
from seq2seq.paths import METRICS, picture
from seq2seq.special import BOS
from seq2seq.translate import TorchModel, check_input


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


@torch.no_grad()
def attention_maps(checkpoint: Checkpoint, sentence: str) -> tuple[list, str]:
    """-> [(title, weights (H, Tq, Tk), query labels, key labels)] and the translation."""
    model, src_vocab, tgt_vocab = checkpoint.model, checkpoint.src_vocab, checkpoint.tgt_vocab
    # warnings: unknown words, an input too long for the model
    check_input(TorchModel(checkpoint), [sentence])
    src_ids = src_vocab.encode([sentence])[0][: longest_source(model)]
    if not src_ids:
        raise UserError("nothing to draw: the sentence is empty")
    src = source_tensor([src_ids])  # (1, S)
    out_ids = decode_batch(model, src, checkpoint.config.decode)[0]
    src_pieces = src_vocab.pieces(src_ids) + ["</s>"]
    tgt_pieces = ["<s>"] + tgt_vocab.pieces(out_ids)

    modules = [m for m in model.modules() if isinstance(m, MultiHeadAttention)]
    for module in modules:
        module.record = True
    try:
        model(src, torch.tensor([[BOS, *out_ids]]))
    finally:
        for module in modules:
            module.record = False
    maps = []
    for i, layer in enumerate(model.encoder, 1):
        maps.append((f"encoder {i} self", layer.self_attn.weights[0], src_pieces, src_pieces))
    for i, layer in enumerate(model.decoder, 1):
        maps.append((f"decoder {i} self", layer.self_attn.weights[0], tgt_pieces, tgt_pieces))
        maps.append((f"decoder {i} cross", layer.cross_attn.weights[0], tgt_pieces, src_pieces))
    return maps, tgt_vocab.decode([out_ids])[0]


def plot_attention(checkpoint: Checkpoint, sentence: str, path: Path) -> None:
    plt = pyplot()
    maps, translation = attention_maps(checkpoint, sentence)
    heads = checkpoint.config.model.n_heads
    longest = max(len(keys) for _, _, _, keys in maps)
    cell = max(2.2, 0.28 * longest + 1.0)
    figure, axes = plt.subplots(
        len(maps),
        heads,
        figsize=(cell * heads, cell * len(maps) + 0.6),
        squeeze=False,
        layout="constrained",  # room for the title and the token labels
    )
    for row, (title, weights, queries, keys) in enumerate(maps):
        for head in range(heads):
            ax = axes[row][head]
            ax.imshow(weights[head].float().numpy(), cmap="viridis", vmin=0.0, vmax=1.0)
            ax.set_title(f"{title}, head {head + 1}", fontsize=9)
            ax.set_xticks(range(len(keys)), keys, rotation=90, fontsize=7)
            ax.set_yticks(range(len(queries)), queries, fontsize=7)
    figure.suptitle(f"{sentence}  ->  {translation}\n(rows: queries, columns: keys)")
    save(figure, path)


def plot_curves(metrics_path: Path, path: Path) -> None:
    plt = pyplot()
    if not metrics_path.exists():
        raise UserError(f"no training log at {metrics_path}: run `make train` first")
    log = [json.loads(line) for line in metrics_path.read_text(encoding="utf-8").splitlines()]
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
        plot_curves(config.run_dir / METRICS, out)
        return
    if args.sentence is None:
        raise UserError('attention needs a sentence: python -m seq2seq.plot attention "..."')
    plot_attention(load_checkpoint(args.checkpoint or config.checkpoint_path), args.sentence, out)


if __name__ == "__main__":
    run_cli(main)
