"""A trained model as a CTranslate2 model (decoded by seq2seq/decoding/ctranslate2_engine.py).

    python -m seq2seq.export ctranslate2 --checkpoint runs/numbers/best.pt OUT_DIR
    python -m seq2seq.translate --engine ctranslate2 --model OUT_DIR "three is three"
    python -m seq2seq.translate --engine ctranslate2 --model OUT_DIR --compute-type int8 ...

CTranslate2 is the C++ inference engine that production users of OpenNMT, fairseq and Marian
models decode with (optional extra: `pip install -e ".[export]"`). Our model is exactly its
`TransformerSpec` with pre-norm layers, ReLU, embeddings scaled by sqrt(D), our sinusoidal
position table, and a final LayerNorm closing each stack, so the export copies weights and
nothing is approximated:

    ours                                   CTranslate2 TransformerSpec
    src_embed.tokens, .positions           encoder.embeddings[0], encoder.position_encodings
    encoder[i].norm1, self_attn.in_proj    encoder.layer[i].self_attention.layer_norm, linear[0]
      (q, k, v rows fused, in that order)    (the same fused layout)
    encoder[i].self_attn.out_proj          encoder.layer[i].self_attention.linear[1]
    encoder[i].norm2, ff.net[0], ff.net[2] encoder.layer[i].ffn.layer_norm, linear_0, linear_1
    decoder[i].norm2, cross_attn.in_proj   decoder.layer[i].attention.layer_norm, linear[0] (the
                                             q rows), linear[1] (the k, v rows)
    encoder_norm, decoder_norm, generator  encoder.layer_norm, decoder.layer_norm, projection

Shared matrices (model.tie_embeddings, share_embeddings) need no flag: CTranslate2 stores a
weight equal to another once, as an alias of it, so model.bin holds one matrix where ours is one.

OUT_DIR holds CTranslate2's files (model.bin, config.json, the vocabularies as piece lists)
and ours: src.model and tgt.model (the sentencepiece models, which turn text into pieces and
back) and seq2seq.json (the experiment config: source normalisation, length limits, batch
size); and vmap.txt, the vocabulary map that decode.vmap has CTranslate2 use (vocab_map.py),
where the checkpoint's training data is at hand (data/<corpus>/train.src, train.tgt). Weights
are saved in float32; `--compute-type int8` quantizes them when loading.

Decoded by CTranslate2 (seq2seq/decoding/ctranslate2_engine.py, the engine), an export gives our
greedy and beam outputs, the same tokens (tested).
"""

import json
from pathlib import Path

from seq2seq.checkpoint import Checkpoint
from seq2seq.exports.layer_names import GENERATOR, Sublayer, stacks
from seq2seq.exports.vocab_map import VMAP, training_pairs, vocab_map
from seq2seq.support.errors import UserError
from seq2seq.support.files import replacing_folder
from seq2seq.support.paths import CONFIDENCE, EXPORT_CONFIG, EXPORT_SOURCE, vocab_files


def import_ctranslate2():
    try:
        import ctranslate2
    except ImportError:
        raise UserError(
            'CTranslate2 is not installed: pip install -e ".[export]" (or pip install ctranslate2)'
        ) from None
    return ctranslate2


# model.activation -> CTranslate2's number for it (its specs' common_spec.Activation), which
# the export writes and the import reads back
ACTIVATIONS = {"relu": 0, "gelu_tanh": 1, "swish": 2, "gelu": 3, "gelu_sigmoid": 4}
# CTranslate2's name of each of our sublayers (layer_names.py's kinds) in a layer
SUBLAYERS = {"self_attn": "self_attention", "cross_attn": "attention", "ff": "ffn"}


def transformer_spec(checkpoint: Checkpoint):
    """The CTranslate2 TransformerSpec of a checkpoint's model, its weights and vocabularies:
    each of its weights given ours, in the order of layer_names.py's table."""
    import_ctranslate2()
    from ctranslate2.specs.common_spec import Activation
    from ctranslate2.specs.transformer_spec import TransformerSpec

    model, cfg, d = checkpoint.model, checkpoint.model.cfg, checkpoint.model.cfg.d_model
    # copies: CTranslate2's optimize() rewrites a spec's arrays in place (quantizing them), and
    # numpy() of a float32 CPU tensor would be the model's own weights
    weights = {
        name: t.detach().float().cpu().numpy().copy() for name, t in model.state_dict().items()
    }
    spec = TransformerSpec.from_config(
        (cfg.enc_layers, cfg.dec_layers), cfg.n_heads, pre_norm=cfg.norm == "pre",
        activation=Activation(ACTIVATIONS[cfg.activation]), layernorm_embedding=cfg.embedding_norm,
    )  # fmt: skip
    spec.config.layer_norm_epsilon = cfg.norm_epsilon
    spec.config.add_source_eos = False  # decoding adds it where the model takes one

    def linear(target, name: str, rows: slice = slice(None)) -> None:
        target.weight = weights[f"{name}.weight"][rows]
        if f"{name}.bias" in weights:  # model.attention_bias, ffn_bias, output_bias
            target.bias = weights[f"{name}.bias"][rows]

    def norm(target, name: str) -> None:
        target.gamma, target.beta = weights[f"{name}.weight"], weights[f"{name}.bias"]

    def embed(stack, embeddings, name: str) -> None:
        embeddings.weight = weights[f"{name}.tokens.weight"]
        stack.scale_embeddings = cfg.scale_embeddings  # x sqrt(D), as our Embedding does
        positions = getattr(model, name).positions  # a buffer, not in the state_dict
        stack.position_encodings.encodings = positions.float().cpu().numpy().copy()
        if cfg.embedding_norm:
            norm(stack.layernorm_embedding, f"{name}.norm")

    def sublayer(target, ours: Sublayer) -> None:
        norm(target.layer_norm, ours.norm)
        if ours.kind == "ff":
            linear(target.linear_0, ours.into)
            linear(target.linear_1, ours.out_of)
            return
        if ours.kind == "self_attn":  # q, k, v in one matrix, as ours
            linear(target.linear[0], ours.into)
        else:  # cross-attention: q apart, k and v together
            linear(target.linear[0], ours.into, slice(0, d))
            linear(target.linear[1], ours.into, slice(d, 3 * d))
        linear(target.linear[-1], ours.out_of)

    for ours, theirs in zip(stacks(cfg), (spec.encoder, spec.decoder), strict=True):
        embeddings = theirs.embeddings[0] if ours.side == "encoder" else theirs.embeddings
        embed(theirs, embeddings, ours.embed)
        for layer, target in zip(ours.layers, theirs.layer, strict=True):
            for part in layer:
                sublayer(getattr(target, SUBLAYERS[part.kind]), part)
        if cfg.norm == "pre":  # post-norm layers end with their own LayerNorm
            norm(theirs.layer_norm, ours.norm)
    linear(spec.decoder.projection, GENERATOR)

    spec.register_source_vocabulary(checkpoint.src_vocab.all_pieces())
    spec.register_target_vocabulary(checkpoint.tgt_vocab.all_pieces())
    return spec


QUANTIZATIONS = ("float32", "int8")  # the weights' types an export can have


def save_spec(spec, directory: Path, quantization: str = "float32") -> None:
    """CTranslate2's files for a spec (model.bin, config.json, vocabularies), weights of type
    `quantization` (QUANTIZATIONS; int8: the matrices quantized, a quarter of the size)."""
    spec.validate()
    spec.optimize(quantization=quantization)
    directory.mkdir(exist_ok=True)
    spec.save(str(directory))


def export_calibration(info: dict, folder: Path) -> None:
    """A checkpoint's confidence calibration (its `info`'s: decoding/confidence.py), where it
    has one, into an export's folder (CTranslate2 and transformers ignore the file)."""
    if "confidence" in info:
        (folder / CONFIDENCE).write_text(json.dumps(info["confidence"], indent=2))


def export_ctranslate2(
    checkpoint: Checkpoint, out_dir: Path, quantization: str = "float32", with_vmap: bool = True
):
    """Write the CTranslate2 model (weights of type `quantization`) and our vocabularies and
    config into out_dir, and (`with_vmap`) its vocabulary map, where the checkpoint's training
    data is at hand (vocab_map.py). Built in a temporary folder beside it and renamed into
    place: an earlier export there is replaced only by a complete one."""
    with replacing_folder(out_dir, EXPORT_CONFIG) as staging:
        save_spec(transformer_spec(checkpoint), staging, quantization)
        vocabs = (checkpoint.src_vocab, checkpoint.tgt_vocab)
        for path, vocab in zip(vocab_files(staging), vocabs, strict=True):  # src.model, tgt.model
            path.write_bytes(vocab.model_bytes)
        (staging / EXPORT_CONFIG).write_text(json.dumps(checkpoint.config.to_dict(), indent=2))
        (staging / EXPORT_SOURCE).write_text(checkpoint.sha256)
        export_calibration(checkpoint.info, staging)
        if with_vmap and (pairs := training_pairs(checkpoint.config.data_dir, *vocabs)):
            pieces = (vocab.all_pieces() for vocab in vocabs)
            (staging / VMAP).write_text(vocab_map(pairs, *pieces), encoding="utf-8")
