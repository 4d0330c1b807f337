"""Training speed against a baseline, for make bench and make gpu-check: our model against
torch.nn.Transformer of identical size, both trained the way seq2seq/train.py trains on a
device, and the achieved FLOP/s of a training step against a matmul's peak.

    compare_training(config, n_batches, rounds, device)   tokens/s of each, their ratio
    flops_fraction(config, n_batches, device)             training GFLOP/s / matmul GFLOP/s
    Treatment.of(config, device)                          the precision and compile of a step
"""

import dataclasses
import warnings

import numpy as np
import torch
from torch import nn

from benchmarks import common
from seq2seq.config import Config, ModelConfig, config_from_dict
from seq2seq.model.transformer import Embedding, Transformer
from seq2seq.support.device import autocast, autocast_dtype, cpu_computes_bf16
from seq2seq.tokens.batching import token_batches
from seq2seq.tokens.dataset import TokenPairs
from seq2seq.tokens.special import PAD
from seq2seq.tokens.vocab import Vocab, load_vocabs
from seq2seq.training.loss import batch_loss


class TorchTransformer(nn.Module):
    """torch.nn.Transformer between the same embeddings and output layer as our model, so the
    two differ only in the encoder-decoder body."""

    def __init__(self, cfg: ModelConfig, src_vocab_size: int, tgt_vocab_size: int):
        super().__init__()
        self.src_embed = Embedding(src_vocab_size, cfg)
        self.tgt_embed = Embedding(tgt_vocab_size, cfg)
        with warnings.catch_warnings():  # "nested tensors are not used with norm_first"
            warnings.simplefilter("ignore", UserWarning)
            self.body = nn.Transformer(
                cfg.d_model, cfg.n_heads, cfg.enc_layers, cfg.dec_layers, cfg.d_ff, cfg.dropout,
                batch_first=True, norm_first=True,
            )  # fmt: skip
        self.generator = nn.Linear(cfg.d_model, tgt_vocab_size, bias=False)
        self.generator.weight = self.tgt_embed.tokens.weight

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        causal = torch.ones(tgt.size(1), tgt.size(1), dtype=torch.bool, device=tgt.device)
        out = self.body(
            self.src_embed(src), self.tgt_embed(tgt),
            tgt_mask=~causal.tril(), tgt_is_causal=True,  # torch: True = blocked
            src_key_padding_mask=src == PAD, tgt_key_padding_mask=tgt == PAD,
            memory_key_padding_mask=src == PAD,
        )  # fmt: skip
        return self.generator(out)


def training_batches(config: Config, count: int, batch_tokens: int) -> tuple[list, Vocab, Vocab]:
    """The first `count` training batches of the config's corpus as tensors; the vocabularies."""
    src_vocab, tgt_vocab = load_vocabs(config)
    pairs = TokenPairs(config.data_dir, "train")
    rng = np.random.default_rng(0)
    batches = token_batches(pairs.src_lengths, pairs.tgt_lengths, batch_tokens, rng)[:count]
    return [pairs.batch(batch) for batch in batches], src_vocab, tgt_vocab


@dataclasses.dataclass(frozen=True)
class Treatment:
    """How seq2seq/train.py runs a training step on a device: autocast to `dtype` (None: fp32;
    fp16 with a gradient scaler), the model compiled or not."""

    dtype: torch.dtype | None = None
    compiled: bool = False

    @classmethod
    def of(cls, config: Config, device) -> "Treatment":
        precision, on = config.train.precision, torch.device(device)
        dtype = autocast_dtype(precision, on, "train.precision", cpu_computes_bf16())
        return cls(dtype, config.train.compile)

    def __str__(self) -> str:
        precision = {None: "fp32", torch.bfloat16: "bf16 autocast", torch.float16: "fp16 autocast"}
        return f"{precision[self.dtype]}, {'compiled' if self.compiled else 'eager'}"


def time_training(
    model: nn.Module, batches: list[tuple], device, treatment: Treatment = Treatment()
) -> tuple[float, float | None]:
    """Seconds for one pass of AdamW steps over `batches` (after one warm-up step, which
    also compiles a compiled model), and the CUDA allocator's peak meanwhile (MiB; None off
    CUDA)."""
    device = torch.device(device)
    common.reset_cuda_peak(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler(device.type, enabled=treatment.dtype == torch.float16)
    step_model = torch.compile(model, dynamic=True) if treatment.compiled else model
    model.train()

    def step(batch):
        with autocast(device, treatment.dtype):
            loss = batch_loss(step_model, tuple(t.to(device) for t in batch), label_smoothing=0.0)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    def steps(some: list[tuple]) -> None:
        for batch in some:
            step(batch)
        common.synchronize(device)

    steps(batches[:1])
    return common.timed(steps, batches)[0], common.cuda_peak_mib(device)


def real_tokens(batches) -> int:
    return sum(int((src != PAD).sum() + (tgt_out != PAD).sum()) for src, _, tgt_out in batches)


def compare_training(config: Config, n_batches: int, rounds: int, device) -> dict:
    """Our model against nn.Transformer: same sizes, same initial embeddings, same batches,
    both trained as seq2seq/train.py would on `device` (precision, compile)."""
    batches, src_vocab, tgt_vocab = training_batches(config, n_batches, config.train.batch_tokens)
    treatment = Treatment.of(config, device)
    torch.manual_seed(0)
    models = {
        "ours": Transformer(config.model, len(src_vocab), len(tgt_vocab), pad_id=PAD).to(device),
        "nn_transformer": TorchTransformer(config.model, len(src_vocab), len(tgt_vocab)).to(device),
    }
    seconds: dict = {name: [] for name in models}
    peaks: dict = {name: [] for name in models}
    for _ in range(rounds):  # alternate, so that both see the same machine load
        for name, model in models.items():
            taken, peak = time_training(model, batches, device, treatment)
            seconds[name].append(taken)
            peaks[name].append(peak)
    tokens = real_tokens(batches)
    ours_tps = tokens / min(seconds["ours"])
    theirs_tps = tokens / min(seconds["nn_transformer"])
    result = {
        "train_comparison_mode": str(treatment),
        "train_tokens_per_s": ours_tps,
        "nn_transformer_train_tokens_per_s": theirs_tps,
        "train_speed_vs_nn_transformer": ours_tps / theirs_tps,
        "train_parameters": models["ours"].num_parameters(),
        "nn_transformer_parameters": sum(p.numel() for p in models["nn_transformer"].parameters()),
    }
    if torch.device(device).type == "cuda":
        result["train_cuda_peak_memory_mib"] = max(peaks["ours"])
        result["nn_transformer_train_cuda_peak_memory_mib"] = max(peaks["nn_transformer"])
    return result


def training_flops(cfg: ModelConfig, batch: tuple, tgt_vocab_size: int) -> float:
    """Multiply-add FLOPs of one training step (forward x 3: backward costs about twice the
    forward), counted on the padded tensors the step really computes on."""
    src, tgt_in, _ = batch
    b, s, t, d, f = src.size(0), src.size(1), tgt_in.size(1), cfg.d_model, cfg.d_ff
    layer = 2 * 4 * d * d + 2 * 2 * d * f  # a position: self-attention's projections, feed-forward
    encoder = cfg.enc_layers * b * s * (layer + 2 * 2 * s * d)
    cross = t * 2 * 2 * d * d + s * 2 * 2 * d * d + t * 2 * 2 * s * d  # projections, scores, sums
    decoder = cfg.dec_layers * b * (t * (layer + 2 * 2 * t * d) + cross)
    output = b * t * 2 * d * tgt_vocab_size
    return 3.0 * (encoder + decoder + output)


def flops_fraction(config: Config, n_batches: int, device) -> dict:
    cfg = config_from_dict(
        {"model": {**config.to_dict()["model"], "d_model": 256, "n_heads": 4, "d_ff": 1024}}
    ).model
    batches, src_vocab, tgt_vocab = training_batches(
        config, n_batches, 4 * config.train.batch_tokens
    )
    torch.manual_seed(0)
    model = Transformer(cfg, len(src_vocab), len(tgt_vocab), pad_id=PAD).to(device)
    seconds, _ = time_training(model, batches, device)
    achieved = sum(training_flops(cfg, b, len(tgt_vocab)) for b in batches) / seconds
    peak = common.matmul_peak_flops(device, seconds=max(1.0, seconds / 3))
    return {
        "train_gflops_d256": achieved / 1e9,
        "matmul_2048_gflops": peak / 1e9,
        "train_flops_fraction_of_matmul_peak": achieved / peak,
    }
