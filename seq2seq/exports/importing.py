"""A model made elsewhere as a checkpoint of ours: an Argos Translate package (.argosmodel or
an installed package's folder) or a CTranslate2 model folder.

    python -m seq2seq.import_model PACKAGE runs/<name>/best.pt

    package/model/model.bin  --ctranslate2_reader--> float32 weights, flags, aliases
             model/config.json                       special tokens, epsilon, source </s>
             model/*_vocabulary.json                 the model's pieces, in its row order
             sentencepiece.model (or bpe.model)      how text becomes those pieces
             metadata.json                           the pair (from_code -> to_code)
        --model_config-->  ModelConfig: read from the file, never assumed (below)
        --vocab_rows-->    the vocabulary in our order: <pad> <unk> <s> </s>, then the
                           model's pieces in its own order; its sentencepiece model rewritten
                           to number its pieces so, or its BPE codes with the tokens in that
                           order (imported_vocab.py)
        --state_dict-->    our Transformer's weights, rows permuted, q/k/v as ours
        --> Checkpoint (config, model, vocabularies) that every command takes

What is read from the file: layers (encoder/layer_N), heads (num_heads), widths (the
matrices' shapes), pre- or post-norm (pre_norm; post-norm has no final LayerNorm), the
activation, which biases exist (attention, feed-forward, output), embeddings scaled or not,
a LayerNorm on the embeddings, shared matrices (CTranslate2 stores a matrix equal to another
once, as an alias: source embedding = target embedding, target embedding = projection), the
position table (its rows and its layout, sin/cos interleaved or in halves), the epsilon
(config.json; null means CTranslate2's 1e-5), whether </s> closes each source
(add_source_eos), and a decoder that starts from a zero vector (Marian's conversions: our
<s> row is then zeros). A variable of the file that none of this takes (relative
positions, rotary, ALiBi, gated feed-forward layers, RMSNorm, multi-query attention, source
features...) is refused, named.
"""

import itertools
import math
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import torch

from seq2seq.checkpoint import Checkpoint
from seq2seq.config import Config, config_from_dict
from seq2seq.exports.argos_package import (
    BEAM_SIZE,
    LENGTH_PENALTY,
    MODEL,
    SENTENCEPIECE,
    is_package,
    package_languages,
    package_metadata,
    tokenizer_file,
    unpacked,
)
from seq2seq.exports.ctranslate2 import ACTIVATIONS, SUBLAYERS
from seq2seq.exports.ctranslate2_reader import (
    StoredModel,
    model_vocabularies,
    read_model_bin,
    read_model_config,
)
from seq2seq.exports.imported_vocab import Rows, permuted, vocab_rows
from seq2seq.exports.layer_names import GENERATOR, Sublayer, stacks
from seq2seq.model.config import ModelConfig
from seq2seq.model.transformer import Transformer, sinusoidal_positions
from seq2seq.support.errors import UserError
from seq2seq.tokens.special import BOS, PAD
from seq2seq.tokens.vocab import read_vocab

NEVER = -1e9  # an output bias of -inf (a checkpoint holds finite numbers only): as unlikely
NOT_OURS = {  # a variable's name -> what our model lacks to run it
    "relative_position": "relative positions",
    "relative_attention_bias": "relative attention biases",
    "linear_0_noact": "gated feed-forward layers (GLU)",
    "layer_norm_use_residual": "RMSNorm",
    "q_norm": "query/key LayerNorms",
    "k_norm": "query/key LayerNorms",
    "embeddings_1": "source features (a second source embedding)",
    "project_in": "projections around the decoder",
    "input_layer_norm": "LayerNorms before and after each sublayer",
    "shared_layer_norm": "parallel residual layers",
    "alibi": "ALiBi",
    "rotary": "rotary position embeddings",
    "sliding_window": "sliding-window attention",
    "scale_outputs": "scaled outputs",
    "layer_scalar": "layer scalars",
    "weight_zero": "AWQ quantization",
}


@dataclass
class Imported:
    """An imported model and what the import found out on the way (its report)."""

    checkpoint: Checkpoint
    report: dict = field(default_factory=dict)


def import_model(path: Path) -> Imported:
    """An Argos package (.argosmodel or its folder) or a CTranslate2 model folder (with
    the sentencepiece model beside or inside it) -> our checkpoint."""
    if not path.exists():
        raise UserError(f"{path}: no such package or CTranslate2 model folder")
    with unpacked(path) as folder:
        return import_folder(folder, str(path))


def import_folder(folder: Path, origin: str) -> Imported:
    """An Argos package's folder (its tokenizer sentencepiece.model or bpe.model), or a
    CTranslate2 model's with its sentencepiece.model."""
    packaged = is_package(folder)
    model_dir = folder / MODEL if packaged else folder
    if not (model_dir / "model.bin").exists():
        raise UserError(f"{folder}: no model.bin (not an Argos package nor a CTranslate2 model)")
    tokenizer = tokenizer_file(folder) if packaged else folder / SENTENCEPIECE
    if not tokenizer.exists():
        raise UserError(f"{folder}: no {SENTENCEPIECE} beside the model")
    stored = read_model_bin(model_dir / "model.bin")
    ct2_config = read_model_config(model_dir)
    src_pieces, tgt_pieces = model_vocabularies(model_dir)
    languages = package_metadata(folder) if packaged else {}
    model_cfg = model_config(stored, ct2_config, model_dir / "model.bin")
    pair = (languages.get("from_code", ""), languages.get("to_code", ""))  # Moses's (BPE)
    rows = partial(vocab_rows, tokenizer, ct2_config=ct2_config, languages=pair)
    src, src_report = rows(src_pieces)
    tgt, tgt_report = (src, src_report) if tgt_pieces == src_pieces else rows(tgt_pieces)
    model_cfg.share_embeddings &= src is tgt
    config = our_config(model_cfg, languages, origin, joint=src is tgt)
    model = Transformer(model_cfg, len(src.pieces), len(tgt.pieces), pad_id=PAD)
    weights = state_dict(stored, model_cfg, src, tgt)
    model.load_state_dict(weights, strict=True)
    src_vocab = read_vocab(src.model_bytes)
    tgt_vocab = src_vocab if tgt is src else read_vocab(tgt.model_bytes)
    info = {"step": 0, "example": "", "origin": origin_of(Path(origin), languages, stored)}
    if "confidence" in languages:  # a package of ours: its calibration (decoding/confidence.py)
        info["confidence"] = languages["confidence"]
    report = {"from": origin, "model": stored.spec, "weights": stored_types(stored),
              "source_pieces": src_report, "target_pieces": tgt_report}  # fmt: skip
    return Imported(Checkpoint(config, model, src_vocab, tgt_vocab, info), report)


def origin_of(path: Path, metadata: dict, stored: StoredModel) -> dict:
    """What a package made of this model (or of its fine-tuned runs) says it came from: the
    package's name and version, and the weights' type, int8 if its matrices were."""
    quantized = torch.int8 in stored.types.values()
    origin = {"name": path.name, "quantization": "int8" if quantized else "float32"}
    return origin | {key: metadata[key] for key in ("package_version",) if key in metadata}


def variable(stored: StoredModel, name: str) -> torch.Tensor:
    if name not in stored.weights:
        raise UserError(f"{stored.spec}: no {name} in the model (not a Transformer we read)")
    return stored.weights[name]


def layer_count(stored: StoredModel, stack: str) -> int:
    return next(i for i in itertools.count() if f"{stack}/layer_{i}/ffn/linear_0/weight"
                not in stored.weights)  # fmt: skip


def model_config(stored: StoredModel, ct2_config: dict, where: Path) -> ModelConfig:
    """Our ModelConfig for the stored model, every setting read from it (module docstring)."""
    if stored.spec not in ("TransformerSpec", "TransformerBase", "TransformerBig"):
        raise UserError(f"{where}: a {stored.spec}, not an encoder-decoder Transformer")
    refuse_what_we_lack(stored, ct2_config, where)
    embedding = variable(stored, "encoder/embeddings_0/weight")
    d_model = embedding.size(1)
    table = variable(stored, "encoder/position_encodings/encodings")
    names = stored.weights
    activations = {number: name for name, number in ACTIVATIONS.items()}
    activation = int(stored.flags.get("encoder/activation", 0))
    if activation not in activations:
        raise UserError(f"{where}: activation {activation} (tanh or sigmoid), which ours lacks")
    return ModelConfig(
        d_model=d_model,
        n_heads=int(stored.flags.get("encoder/num_heads", 8)),
        enc_layers=layer_count(stored, "encoder"),
        dec_layers=layer_count(stored, "decoder"),
        d_ff=variable(stored, "encoder/layer_0/ffn/linear_0/weight").size(0),
        max_positions=table.size(0),
        tie_embeddings=same(stored, "decoder/embeddings/weight", "decoder/projection/weight"),
        share_embeddings=same(stored, "encoder/embeddings_0/weight", "decoder/embeddings/weight"),
        norm="pre" if stored.flags.get("encoder/pre_norm", True) else "post",
        norm_epsilon=ct2_config.get("layer_norm_epsilon") or 1e-5,
        activation=activations[activation],
        attention_bias="encoder/layer_0/self_attention/linear_0/bias" in names,
        ffn_bias="encoder/layer_0/ffn/linear_0/bias" in names,
        output_bias="decoder/projection/bias" in names,
        scale_embeddings=embedding_scale(stored, d_model, where),
        embedding_norm="encoder/layernorm_embedding/gamma" in names,
        positions=table_layout(table, where),
        source_eos=bool(ct2_config.get("add_source_eos", False)),
    )


def refuse_what_we_lack(stored: StoredModel, ct2_config: dict, where: Path) -> None:
    present = [*stored.weights, *(name for name, value in stored.flags.items() if value)]
    for name in present:
        for part, what in NOT_OURS.items():
            if part in name:
                raise UserError(f"{where}: {name}: {what}, which our model does not have")
    if ct2_config.get("multi_query_attention"):
        raise UserError(f"{where}: multi-query attention, which our model does not have")
    if ct2_config.get("add_source_bos"):
        raise UserError(f"{where}: <s> before each source (add_source_bos), which ours lacks")
    if "encoder/position_encodings/encodings" not in stored.weights:
        raise UserError(f"{where}: no stored position table (CTranslate2's own, not ours)")


def same(stored: StoredModel, first: str, second: str) -> bool:
    """Whether two variables are one matrix stored once (an alias of the other)."""
    a, b = stored.shared.get(first, first), stored.shared.get(second, second)
    return a == b


def embedding_scale(stored: StoredModel, d_model: int, where: Path) -> bool:
    """Whether token embeddings are multiplied by sqrt(D): CTranslate2's flag (or the number
    itself) under <stack>/scale_embeddings, the same for both stacks."""
    scales = {stored.flags.get(f"{stack}/scale_embeddings", 1) for stack in ("encoder", "decoder")}
    if len(scales) != 1:
        raise UserError(f"{where}: the encoder's and decoder's embeddings scaled differently")
    (value,) = scales
    if isinstance(value, int):  # a flag: 1 is sqrt(D)
        return bool(value)
    if math.isclose(value, math.sqrt(d_model)) or math.isclose(value, 1.0):  # the scale itself
        return math.isclose(value, math.sqrt(d_model))
    raise UserError(f"{where}: embeddings scaled by {value}, ours by sqrt(d_model) or 1")


def table_layout(table: torch.Tensor, where: Path) -> str:
    """Which of our sinusoidal layouts the stored position table is."""
    rows, d_model = table.shape
    for layout in ("interleaved", "halves"):
        if torch.allclose(table, sinusoidal_positions(rows, d_model, layout), atol=1e-4):
            return layout
    raise UserError(f"{where}: a position table that is not sinusoidal (learned positions)")


def state_dict(stored: StoredModel, cfg: ModelConfig, src: Rows, tgt: Rows) -> dict:
    """Our Transformer's state_dict from the stored variables: each of ours (layer_names.py's
    table) from CTranslate2's, as seq2seq/exports/ctranslate2.py names them."""
    out, used = {}, set()

    def take(name: str) -> torch.Tensor:
        used.add(name)
        return variable(stored, name)

    def linear(ours: str, theirs: str) -> None:
        out[f"{ours}.weight"] = take(f"{theirs}/weight")
        if f"{theirs}/bias" in stored.weights:
            out[f"{ours}.bias"] = take(f"{theirs}/bias")

    def norm(ours: str, theirs: str) -> None:
        out[f"{ours}.weight"] = take(f"{theirs}/gamma")
        out[f"{ours}.bias"] = take(f"{theirs}/beta")

    def sublayer(ours: Sublayer, theirs: str) -> None:
        norm(ours.norm, f"{theirs}/layer_norm")
        if ours.kind != "cross_attn":  # self-attention's q, k, v in one matrix, as ours
            linear(ours.into, f"{theirs}/linear_0")
            linear(ours.out_of, f"{theirs}/linear_1")
            return
        for part in ("weight", "bias"):  # q apart, k and v together: ours is one (3D, D)
            q, kv = f"{theirs}/linear_0/{part}", f"{theirs}/linear_1/{part}"
            if q in stored.weights:
                out[f"{ours.into}.{part}"] = torch.cat([take(q), take(kv)])
        linear(ours.out_of, f"{theirs}/linear_2")

    for stack, rows in zip(stacks(cfg), (src, tgt), strict=True):
        side = stack.side
        embeddings = take(f"{side}/{'embeddings_0' if side == 'encoder' else 'embeddings'}/weight")
        out[f"{stack.embed}.tokens.weight"] = permuted(embeddings, rows)
        take(f"{side}/position_encodings/encodings")
        if cfg.embedding_norm:
            norm(f"{stack.embed}.norm", f"{side}/layernorm_embedding")
        for i, layer in enumerate(stack.layers):
            for part in layer:
                sublayer(part, f"{side}/layer_{i}/{SUBLAYERS[part.kind]}")
        if cfg.norm == "pre":
            norm(stack.norm, f"{side}/layer_norm")
    out[f"{GENERATOR}.weight"] = permuted(take("decoder/projection/weight"), tgt)
    if cfg.output_bias:  # -inf (a token never output, as ours make PAD and BOS) as -1e9
        bias = take("decoder/projection/bias").clamp(min=NEVER)
        out[f"{GENERATOR}.bias"] = permuted(bias[:, None], tgt)[:, 0]
    left = sorted(set(stored.weights) - used - set(stored.shared))
    if left:
        raise UserError(f"{left[0]}: a variable our model has no place for ({len(left)} such)")
    out = shared_as_one(out, cfg)
    if stored.flags.get("decoder/start_from_zero_embedding", False):
        out["tgt_embed.tokens.weight"][BOS] = 0.0  # the first step's input is a zero vector
    return out


def shared_as_one(weights: dict, cfg: ModelConfig) -> dict:
    """Where the matrices are one (share_embeddings, tie_embeddings), the state_dict holds
    the same values under each name, as torch writes a shared parameter."""
    if cfg.share_embeddings:
        weights["tgt_embed.tokens.weight"] = weights["src_embed.tokens.weight"]
    if cfg.tie_embeddings:
        weights["generator.weight"] = weights["tgt_embed.tokens.weight"]
    return weights


def stored_types(stored: StoredModel) -> dict[str, int]:
    """How many matrices were stored in each type (int8, float16...)."""
    counts: dict[str, int] = {}
    for dtype in stored.types.values():
        name = str(dtype).removeprefix("torch.")
        counts[name] = counts.get(name, 0) + 1
    return counts


# A fine-tune's schedule from an imported package (train.init_from): what measured best on the
# stand-in package's fine-tunes (make bench-adapt, docs/adapt.md), not the toolkit's 2e-3 of a
# model trained from nothing, which wipes out what the package knew.
FINE_TUNING = {"lr": 5e-4, "min_lr": 5e-5, "warmup_steps": 100, "best_metric": "bleu"}


def our_config(model_cfg: ModelConfig, metadata: dict, origin: str, joint: bool) -> Config:
    """The experiment config of an imported model: its languages (the package's pair), its
    model settings, a fine-tune's schedule (FINE_TUNING), and Argos Translate's decoding (beam
    4, length penalty 0.2)."""
    src_lang, tgt_lang = metadata.get("from_code", "src"), metadata.get("to_code", "tgt")
    name = f"{src_lang}_{tgt_lang}_imported"
    raw = {
        "experiment": name,
        "corpus": {"type": "imported", "name": name, "src_lang": src_lang, "tgt_lang": tgt_lang},
        "vocab": {"joint": joint},
        "model": dict(vars(model_cfg)),
        "train": FINE_TUNING,
        "decode": {"beam_size": BEAM_SIZE, "length_penalty": LENGTH_PENALTY},
    }
    if metadata:
        source, target = package_languages(metadata)
        raw["serve"] = {"source_language": vars(source), "target_language": vars(target)}
    return config_from_dict(raw, source=origin)
