"""Models as the two families of Argos packages are made, with random weights: an OpenNMT-py 3
checkpoint (LibreTranslate's Locomotive: pre-norm, ReLU, one vocabulary, shared embeddings and
generator, an output bias, the position table in the file; attention and feed-forward biases
only with `biases`, as OpenNMT-py 2 had them) and a Marian .npz (OPUS-MT: post-norm, swish, one
tied matrix, an output bias), each converted by CTranslate2's own converter into an Argos
package's folder. No training: what the import must read back is the layout.

    Shape(d_model, heads, d_ff, layers) + a sentencepiece model
        --opennmt_checkpoint--> model.pt --OpenNMTPyConverter--> package(folder)
        --marian_npz-->         model.npz + vocab.yml --MarianConverter--> package(folder)
"""

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import sentencepiece as spm
import torch

from seq2seq.model.transformer import sinusoidal_positions


@dataclass(frozen=True)
class Shape:
    d_model: int = 32
    heads: int = 4
    d_ff: int = 64
    layers: int = 2
    positions: int = 512
    extra_pieces: int = 0  # vocabulary entries sentencepiece never makes, to reach a size


BASE = Shape(512, 8, 2048, 6, 5000)  # Transformer base, as Locomotive trains it
METADATA = {"package_version": "1.0", "argos_version": "1.9.0", "from_code": "en",  # Locomotive's
            "from_name": "English", "to_code": "de", "to_name": "German"}  # fmt: skip


def pieces_of(sp_bytes: bytes) -> list[str]:
    sp = spm.SentencePieceProcessor(model_proto=sp_bytes)
    return [sp.id_to_piece(i) for i in range(sp.get_piece_size()) if not sp.is_control(i)]


def weights(rng, *shape, scale: float = 1.0) -> torch.Tensor:
    """Random weights: N(0, 1) x scale, as float32."""
    return torch.from_numpy((scale * rng.standard_normal(shape)).astype(np.float32))


def opennmt_checkpoint(path: Path, sp_bytes: bytes, biases: bool, rng, shape=Shape()) -> None:
    """An OpenNMT-py 3 checkpoint, as its names and options are (see the module's docstring)."""
    vocab = ["<unk>", "<blank>", "<s>", "</s>"] + [p for p in pieces_of(sp_bytes) if p != "<unk>"]
    vocab += [f"<extra_{i}>" for i in range(shape.extra_pieces)]
    d, v, model = shape.d_model, len(vocab), {}
    init = d**-0.5 if shape.extra_pieces else 1.0  # a large model: weights of a usual size
    embedding = weights(rng, v, d, scale=init)
    pe = sinusoidal_positions(shape.positions, d)[:, None, :]  # OpenNMT-py's (max_len, 1, D)

    def linear(name, rows, cols, bias=biases):
        model[f"{name}.weight"] = weights(rng, rows, cols, scale=init)
        if bias:
            model[f"{name}.bias"] = weights(rng, rows)

    def norm(name):
        model[f"{name}.weight"] = 1 + weights(rng, d, scale=0.1)
        model[f"{name}.bias"] = weights(rng, d, scale=0.1)

    def attention(name):
        for part in ("linear_query", "linear_keys", "linear_values", "final_linear"):
            linear(f"{name}.{part}", d, d)

    def feed_forward(name):
        norm(f"{name}.layer_norm")
        linear(f"{name}.w_1", shape.d_ff, d)
        linear(f"{name}.w_2", d, shape.d_ff)

    for stack in ("encoder", "decoder"):
        model[f"{stack}.embeddings.make_embedding.emb_luts.0.weight"] = embedding
        model[f"{stack}.embeddings.make_embedding.pe.pe"] = pe
        norm(f"{stack}.layer_norm")
    for i in range(shape.layers):
        norm(f"encoder.transformer.{i}.layer_norm")
        attention(f"encoder.transformer.{i}.self_attn")
        feed_forward(f"encoder.transformer.{i}.feed_forward")
        layer = f"decoder.transformer_layers.{i}"
        norm(f"{layer}.layer_norm_1")
        attention(f"{layer}.self_attn")
        norm(f"{layer}.layer_norm_2")
        attention(f"{layer}.context_attn")
        feed_forward(f"{layer}.feed_forward")
    opt = argparse.Namespace(
        encoder_type="transformer", decoder_type="transformer", enc_layers=shape.layers,
        dec_layers=shape.layers, heads=shape.heads, position_encoding=True,
        max_relative_positions=0, pos_ffn_activation_fn="relu", self_attn_type="scaled-dot",
    )  # fmt: skip
    generator = {"weight": embedding, "bias": weights(rng, v)}
    torch.save({"model": model, "generator": generator, "opt": opt,
                "vocab": {"src": vocab, "tgt": vocab}}, path)  # fmt: skip


def marian_npz(folder: Path, sp_bytes: bytes, rng, shape=Shape()) -> tuple[Path, Path]:
    """A Marian model and its vocabulary (model.npz, vocab.yml in `folder`)."""
    vocab = ["</s>", "<unk>"] + [p for p in pieces_of(sp_bytes) if p != "<unk>"]
    d, v, w = shape.d_model, len(vocab), {}
    yml = ("type: transformer\ntransformer-decoder-autoreg: self-attention\n"
           "transformer-no-projection: false\ntransformer-ffn-activation: swish\n"
           "transformer-preprocess: ''\ntransformer-postprocess: dan\n"
           "transformer-postprocess-emb: d\ntransformer-guided-alignment-layer: last\n"
           f"enc-depth: {shape.layers}\ndec-depth: {shape.layers}\n"
           f"transformer-heads: {shape.heads}\n")  # fmt: skip
    w["special:model.yml"] = np.frombuffer(yml.encode() + b"\0", dtype=np.int8)
    w["Wemb"] = weights(rng, v, d).numpy()

    def linear(scope, suffix, rows, cols):  # Marian stores (in, out)
        w[f"{scope}_W{suffix}"] = weights(rng, cols, rows).numpy()
        w[f"{scope}_b{suffix}"] = weights(rng, 1, rows).numpy()

    def norm(scope):
        w[f"{scope}_ln_scale"] = 1 + weights(rng, 1, d, scale=0.1).numpy()
        w[f"{scope}_ln_bias"] = weights(rng, 1, d, scale=0.1).numpy()

    def attention(scope):
        for part in "qkvo":
            linear(scope, part, d, d)
        norm(f"{scope}_Wo")

    def feed_forward(scope):
        linear(scope, "1", shape.d_ff, d)
        linear(scope, "2", d, shape.d_ff)
        norm(f"{scope}_ffn")

    for i in range(1, shape.layers + 1):
        attention(f"encoder_l{i}_self")
        feed_forward(f"encoder_l{i}_ffn")
        attention(f"decoder_l{i}_self")
        attention(f"decoder_l{i}_context")
        feed_forward(f"decoder_l{i}_ffn")
    w["decoder_ff_logit_out_b"] = weights(rng, 1, v, scale=0.1).numpy()
    np.savez(folder / "model.npz", **w)
    lines = [f"{json.dumps(piece, ensure_ascii=False)}: {i}" for i, piece in enumerate(vocab)]
    (folder / "vocab.yml").write_text("\n".join(lines) + "\n", "utf-8")
    return folder / "model.npz", folder / "vocab.yml"


def package(folder: Path, converter, sp_bytes: bytes, quantization=None) -> Path:
    """An Argos package's folder: metadata.json (METADATA), sentencepiece.model, model/."""
    folder.mkdir()
    converter.convert(str(folder / "model"), quantization=quantization)
    (folder / "sentencepiece.model").write_bytes(sp_bytes)
    (folder / "metadata.json").write_text(json.dumps(METADATA))
    return folder
