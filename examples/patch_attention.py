"""Attention beyond text: classify 8x8 digit images as sequences of patches.

    pip install -e ".[examples]"          # scikit-learn (the data) and matplotlib (the picture)
    python examples/patch_attention.py    # -> examples/results/patch_attention.{md,png}

The experiment: cut each digit image into patches, read the patches as a sequence of 16
"tokens", and ask whether one self-attention layer over them classifies digits as well as a
plain MLP on the pixels. It runs on scikit-learn's bundled 8x8 digits (1,797 images, no
download), cut into 16 patches of 2x2 pixels, with three models trained the same way:

    mlp        64 pixels -> 64 hidden (ReLU) -> 10 classes: the baseline without attention
    attention  patches -> linear embedding -> ONE self-attention layer (one head)
               -> all 16 vectors flattened -> 10 classes
    encoder    patches -> embedding + learned positions, and a class token in front
               -> 3 pre-norm encoder layers (3 heads, width 12) -> the class token -> 10 classes

The attention layers are the project's own: seq2seq.model.attention.MultiHeadAttention and
seq2seq.model.transformer.EncoderLayer, imported, not copied. Shapes: B images, P = 16 patches of
K = 4 pixels, D = model width.
"""

import argparse
import time
from pathlib import Path

import torch
from torch import nn

from seq2seq.model.attention import MultiHeadAttention
from seq2seq.model.config import ModelConfig
from seq2seq.model.transformer import EncoderLayer

PATCH = 2  # patch side in pixels: an 8x8 image is 4 x 4 = 16 patches of 2 x 2


def load_digits_split(test_share: float = 0.25):
    """scikit-learn's 8x8 digits, pixels scaled to [0, 1], a fixed stratified split."""
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ImportError:
        raise SystemExit('this example needs scikit-learn: pip install -e ".[examples]"') from None
    digits = load_digits()
    images = torch.tensor(digits.images, dtype=torch.float32) / 16.0  # (N, 8, 8)
    labels = torch.tensor(digits.target)
    train_idx, test_idx = train_test_split(
        range(len(labels)), test_size=test_share, random_state=0, stratify=digits.target
    )
    return images[train_idx], labels[train_idx], images[test_idx], labels[test_idx]


def to_patches(images: torch.Tensor) -> torch.Tensor:
    """(B, 8, 8) -> (B, 16, 4): row-major patches, each flattened row by row."""
    batch, side = images.size(0), images.size(1) // PATCH
    patches = images.unfold(1, PATCH, PATCH).unfold(2, PATCH, PATCH)  # (B, 4, 4, 2, 2)
    return patches.reshape(batch, side * side, PATCH * PATCH)


class MLP(nn.Module):
    def __init__(self, pixels: int = 64, hidden: int = 64):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(pixels, hidden), nn.ReLU(), nn.Linear(hidden, 10))

    def forward(self, patches: torch.Tensor) -> torch.Tensor:
        return self.net(patches.flatten(1))  # the same pixels, in patch order


class OneAttentionLayer(nn.Module):
    """The smallest attention model: embed the patches, one self-attention head, classify the
    flattened sequence."""

    def __init__(self, d_model: int = 16, patches: int = 16):
        super().__init__()
        self.embed = nn.Linear(PATCH * PATCH, d_model)
        self.attention = MultiHeadAttention(d_model, n_heads=1)
        self.classify = nn.Linear(d_model * patches, 10)

    def forward(self, patches: torch.Tensor) -> torch.Tensor:
        x = self.embed(patches)  # (B, P, D)
        x = self.attention(x)  # (B, P, D): each patch a mix of all of them
        return self.classify(x.flatten(1))  # (B, 10)


class PatchEncoder(nn.Module):
    """A small vision Transformer: a learned class token in front of the patch embeddings,
    learned positions, pre-norm encoder layers, and the class token's final vector -> classes."""

    def __init__(self, d_model: int = 12, heads: int = 3, layers: int = 3, d_ff: int = 24):
        super().__init__()
        cfg = ModelConfig(d_model=d_model, n_heads=heads, d_ff=d_ff, enc_layers=layers)
        self.embed = nn.Linear(PATCH * PATCH, d_model)
        self.class_token = nn.Parameter(torch.zeros(1, 1, d_model))
        self.positions = nn.Parameter(torch.randn(1, 17, d_model) * 0.02)
        self.layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(layers))
        self.norm = nn.LayerNorm(d_model)
        self.classify = nn.Linear(d_model, 10)

    def forward(self, patches: torch.Tensor) -> torch.Tensor:
        x = self.embed(patches)  # (B, P, D)
        x = torch.cat([self.class_token.expand(x.size(0), -1, -1), x], dim=1)  # (B, 1 + P, D)
        x = x + self.positions
        for layer in self.layers:
            x = layer(x, None)  # no padding: every patch may attend to every other
        return self.classify(self.norm(x[:, 0]))  # the class token -> (B, 10)


def parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def train_and_test(model: nn.Module, data, epochs: int, seed: int) -> dict:
    """AdamW, batches of 32, a one-cycle learning rate up to 3e-3: the same for every model."""
    train_x, train_y, test_x, test_y = data
    torch.manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    steps = epochs * ((len(train_y) + 31) // 32)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=3e-3, total_steps=steps)
    start = time.perf_counter()
    model.train()
    for _ in range(epochs):
        order = torch.randperm(len(train_y))
        for batch in order.split(32):
            loss = nn.functional.cross_entropy(model(train_x[batch]), train_y[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
    seconds = time.perf_counter() - start
    model.eval()
    with torch.no_grad():
        accuracy = (model(test_x).argmax(-1) == test_y).float().mean().item()
    return {"accuracy": accuracy, "parameters": parameters(model), "seconds": seconds}


MODELS = {"mlp": MLP, "attention": OneAttentionLayer, "encoder": PatchEncoder}


def run(epochs: int, seeds: list[int], subset: int | None = None) -> tuple[dict, dict, tuple]:
    """Train the three models once per seed (initialisation and batch order; the split stays
    fixed); returns each model's figures per seed, the models of the last seed, the data."""
    train_x, train_y, test_x, test_y = load_digits_split()
    if subset:
        train_x, train_y = train_x[:subset], train_y[:subset]
    data = (to_patches(train_x), train_y, to_patches(test_x), test_y)
    results: dict[str, list[dict]] = {name: [] for name in MODELS}
    models = {}
    for seed in seeds:
        for name, cls in MODELS.items():
            torch.manual_seed(seed)
            models[name] = cls()
            results[name].append(train_and_test(models[name], data, epochs, seed))
    return results, models, data


def class_token_attention(model: PatchEncoder, patches: torch.Tensor) -> torch.Tensor:
    """(B, 16, 4) -> (B, 4, 4): how much the class token attends to each patch in the last
    layer, averaged over the heads."""
    attention = model.layers[-1].self_attn
    attention.record = True
    try:
        with torch.no_grad():
            model(patches)
    finally:
        attention.record = False
    weights = attention.weights[:, :, 0, 1:].mean(dim=1)  # class token's row, patches only
    return weights.reshape(-1, 4, 4)


def draw(model: PatchEncoder, data, path: Path, count: int = 6) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    _, _, test_x, test_y = data
    weights = class_token_attention(model, test_x[:count])
    with torch.no_grad():
        predicted = model(test_x[:count]).argmax(-1)
    figure, axes = plt.subplots(2, count, figsize=(2 * count, 4.6), layout="constrained")
    for i in range(count):
        image = test_x[i].reshape(4, 4, PATCH, PATCH).permute(0, 2, 1, 3).reshape(8, 8)
        axes[0][i].imshow(image, cmap="gray_r")
        axes[0][i].set_title(
            f"digit {test_y[i].item()}, predicted {predicted[i].item()}", fontsize=8
        )
        axes[1][i].imshow(weights[i], cmap="viridis")
        axes[1][i].set_title("class token -> patches", fontsize=8)
        for ax in axes[:, i]:
            ax.set_xticks([])
            ax.set_yticks([])
    figure.suptitle("Which 2x2 patches the class token attends to (last layer, mean of heads)")
    figure.savefig(path, dpi=110)


def table(results: dict, epochs: int) -> str:
    rows = []
    for name, runs in results.items():
        accuracies = [100 * r["accuracy"] for r in runs]
        mean = sum(accuracies) / len(accuracies)
        seconds = sum(r["seconds"] for r in runs) / len(runs)
        rows.append(
            f"| {name} | {mean:.1f}% ({min(accuracies):.1f} to {max(accuracies):.1f}) | "
            f"{runs[0]['parameters']:,} | {seconds:.1f} s |"
        )
    header = [
        f"Test accuracy on the 450 held-out 8x8 digits after {epochs} epochs, mean of "
        f"{len(next(iter(results.values())))} seeds (lowest to highest); the same optimizer, "
        "batches, schedule and seeds for all three; training time per run, 1 CPU thread:",
        "",
        "| model | test accuracy | parameters | training time |",
        "| --- | --- | --- | --- |",
    ]
    return "\n".join(header + rows) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--subset", type=int, help="train on the first N training images only")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args()
    torch.set_num_threads(1)  # tiny models: threads cost more than they bring
    results, models, data = run(args.epochs, args.seeds, args.subset)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    text = table(results, args.epochs)
    (out / "patch_attention.md").write_text(text, encoding="utf-8")
    draw(models["encoder"], data, out / "patch_attention.png")
    print(text + f"wrote {out / 'patch_attention.md'} and {out / 'patch_attention.png'}")


if __name__ == "__main__":
    main()
