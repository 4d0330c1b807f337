"""Export a trained model to Hugging Face transformers: a folder that AutoTokenizer and
AutoModelForSeq2SeqLM load, and that the Hub can host.

    python -m seq2seq.export huggingface --checkpoint runs/numbers/best.pt OUT_DIR

    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained(OUT_DIR)
    model = AutoModelForSeq2SeqLM.from_pretrained(OUT_DIR)

transformers' Pegasus is our model exactly: pre-norm layers, a final LayerNorm closing each
stack (eps 1e-5, PyTorch's default, in both), sinusoidal positions from 0 with the same
frequencies, embeddings scaled by sqrt(D), ReLU, and an output projection without a bias,
followed by a fixed bias (final_logits_bias). So the export copies weights:

    ours (D = d_model)                     transformers PegasusForConditionalGeneration
    src_embed.tokens (Vs, D)               model.encoder.embed_tokens, model.shared (V, D)
    src_embed.positions (P, D)             model.encoder.embed_positions (P, D)
    encoder[i].norm1, norm2                model.encoder.layers[i].self_attn_layer_norm,
                                             final_layer_norm
    encoder[i].self_attn.in_proj (3D, D)   ....self_attn.q_proj, k_proj, v_proj (D, D) each:
      (q, k, v rows, in that order)          rows [0, D), [D, 2D), [2D, 3D)
    encoder[i].self_attn.out_proj          ....self_attn.out_proj
    encoder[i].ff.net[0], ff.net[2]        ....fc1, fc2
    tgt_embed.tokens (Vt, D), positions    model.decoder.embed_tokens (V, D), embed_positions
    decoder[i].norm1, norm2, norm3         model.decoder.layers[i].self_attn_layer_norm,
                                             encoder_attn_layer_norm, final_layer_norm
    decoder[i].cross_attn.in_proj          ....encoder_attn.q_proj, k_proj, v_proj
    encoder_norm, decoder_norm             model.encoder.layer_norm, model.decoder.layer_norm
    generator (Vt, D)                      lm_head (V, D)
    special.non_output_logits              final_logits_bias (1, V)

Four things are laid out differently:

* Positions: our table interleaves (dimensions 2i, 2i+1 are the sin and cos of frequency i);
  Pegasus's puts every sin first, then every cos. Permuting the D dimensions of the residual
  stream in every weight that reads or writes it (embeddings' and reading layers' columns,
  writing layers' rows and biases, LayerNorms, our position table) gives the same function in
  Pegasus's layout. Attention's inner dimensions are untouched. transformers loads the stored
  table as it is; the one it would compute (in float64) differs from ours by up to 1.5e-5.
* Vocabularies: Pegasus has one vocabulary size V for both sides. Ours may differ (Vs, Vt):
  each embedding is padded with zero rows to V = max(Vs, Vt), and the padded target ids get
  -inf in final_logits_bias, so that no decoding can produce them.
* Shared matrices: Pegasus has one matrix for both embeddings and lm_head
  (tie_word_embeddings true) or three. Where ours is one matrix too (model.share_embeddings
  and tie_embeddings), the export says tie_word_embeddings and the folder holds it once;
  otherwise the three are separate copies of ours (which fine-tuning trains apart).
* PAD and BOS are never output by our decoder (seq2seq/tokens/special.py): -inf in final_logits_bias
  too, rather than in the generation config, so that the model's log-probabilities are ours
  (our beam search normalises them without PAD and BOS as well), for `generate` and anyone
  reading the logits.

The tokenizer is transformers' MarianTokenizer: our sentencepiece models (source.spm with our
source normalisation compiled in, target.spm) and their pieces' ids (vocab.json, and
target_vocab.json when the vocabularies differ). It appends EOS to the source, as we do.

The model card, README.md, says what the model learnt from, its sizes and test scores (the
eval.json that `make eval` wrote beside the checkpoint), how to load and upload it, and where
transformers' decoding differs from ours.
"""

import json
import textwrap
from pathlib import Path

import torch

from seq2seq.checkpoint import Checkpoint
from seq2seq.config import translation_pair
from seq2seq.corpora.corpus_types import is_language
from seq2seq.exports.ctranslate2 import export_calibration
from seq2seq.exports.layer_names import GENERATOR, Sublayer, stacks
from seq2seq.exports.model_card import facts
from seq2seq.model.transformer import Transformer
from seq2seq.support.errors import UserError
from seq2seq.support.files import replacing_folder
from seq2seq.support.paths import EXPORT_CONFIG
from seq2seq.tokens.bpe import BPEVocab
from seq2seq.tokens.special import BOS, EOS, PAD, UNK, non_output_logits
from seq2seq.tokens.vocab import Vocab, self_normalizing_model


def import_transformers():
    try:
        import transformers
    except ImportError:
        raise UserError(
            'transformers is not installed: pip install -e ".[huggingface]" '
            "(or pip install transformers)"
        ) from None
    return transformers


# Pegasus's names of our sublayers (layer_names.py's kinds) in a layer, and of their LayerNorms
PEGASUS_ATTENTION = {"self_attn": "self_attn", "cross_attn": "encoder_attn"}
PEGASUS_NORMS = {"self_attn": "self_attn_layer_norm", "cross_attn": "encoder_attn_layer_norm",
                 "ff": "final_layer_norm"}  # fmt: skip


def hidden_permutation(d_model: int) -> torch.Tensor:
    """(D,) indices: Pegasus's hidden dimension k is our dimension perm[k]. Its position table
    is [sin of frequencies 0..D/2-1, cos of the same]; ours sits at [0, 2, 4, ..., 1, 3, ...]."""
    return torch.cat([torch.arange(0, d_model, 2), torch.arange(1, d_model, 2)])


def padded_rows(matrix: torch.Tensor, rows: int) -> torch.Tensor:
    """(n, D) -> (rows, D), zero rows after the n given."""
    return torch.cat([matrix, matrix.new_zeros(rows - matrix.size(0), matrix.size(1))])


def pegasus_weights(model: Transformer, vocab_size: int) -> dict[str, torch.Tensor]:
    """transformers' PegasusForConditionalGeneration state_dict for our model, in float32,
    every embedding padded to vocab_size rows: each of their weights given ours, in the order
    of layer_names.py's table."""
    ours = {name: t.detach().float().cpu() for name, t in model.state_dict().items()}
    d, perm = model.cfg.d_model, hidden_permutation(model.cfg.d_model)
    theirs: dict[str, torch.Tensor] = {}

    def reads(target: str, name: str, rows: slice = slice(None)) -> None:
        """A linear layer reading the residual stream: its input columns are permuted."""
        theirs[f"{target}.weight"] = ours[f"{name}.weight"][rows][:, perm]
        theirs[f"{target}.bias"] = ours[f"{name}.bias"][rows]

    def writes(target: str, name: str) -> None:
        """A linear layer writing the residual stream: its output rows are permuted."""
        theirs[f"{target}.weight"] = ours[f"{name}.weight"][perm]
        theirs[f"{target}.bias"] = ours[f"{name}.bias"][perm]

    def norm(target: str, name: str) -> None:
        theirs[f"{target}.weight"] = ours[f"{name}.weight"][perm]
        theirs[f"{target}.bias"] = ours[f"{name}.bias"][perm]

    def sublayer(layer: str, part: Sublayer) -> None:
        norm(f"{layer}.{PEGASUS_NORMS[part.kind]}", part.norm)
        if part.kind == "ff":
            reads(f"{layer}.fc1", part.into)
            writes(f"{layer}.fc2", part.out_of)
            return
        target = f"{layer}.{PEGASUS_ATTENTION[part.kind]}"
        for i, projection in enumerate(("q_proj", "k_proj", "v_proj")):
            reads(f"{target}.{projection}", part.into, slice(i * d, (i + 1) * d))
        writes(f"{target}.out_proj", part.out_of)

    def embeddings(stack: str, name: str) -> None:
        tokens = padded_rows(ours[f"{name}.tokens.weight"][:, perm], vocab_size)
        theirs[f"model.{stack}.embed_tokens.weight"] = tokens
        positions = getattr(model, name).positions  # a buffer, not in the state_dict
        theirs[f"model.{stack}.embed_positions.weight"] = positions.float().cpu()[:, perm]

    for stack in stacks(model.cfg):
        embeddings(stack.side, stack.embed)
        for i, layer in enumerate(stack.layers):
            for part in layer:
                sublayer(f"model.{stack.side}.layers.{i}", part)
        norm(f"model.{stack.side}.layer_norm", stack.norm)
    theirs["model.shared.weight"] = theirs["model.encoder.embed_tokens.weight"]  # the input's

    theirs["lm_head.weight"] = padded_rows(ours[f"{GENERATOR}.weight"][:, perm], vocab_size)
    theirs["final_logits_bias"] = never_output(len(ours[f"{GENERATOR}.weight"]), vocab_size)
    return theirs


def never_output(target_vocab_size: int, vocab_size: int) -> torch.Tensor:
    """(1, V) final_logits_bias: -inf at PAD, BOS (special.non_output_logits) and the padded
    ids beyond the target vocabulary, 0 elsewhere."""
    bias = non_output_logits(torch.zeros(()), vocab_size)
    bias[target_vocab_size:] = float("-inf")
    return bias[None]


def pegasus_config(checkpoint: Checkpoint, vocab_size: int):
    """transformers' PegasusConfig of our model. Our dropouts are kept, each where Pegasus
    has it too (for fine-tuning; evaluation ignores them)."""
    transformers, cfg = import_transformers(), checkpoint.model.cfg
    return transformers.PegasusConfig(
        vocab_size=vocab_size,
        max_position_embeddings=cfg.max_positions,
        d_model=cfg.d_model,
        encoder_layers=cfg.enc_layers,
        decoder_layers=cfg.dec_layers,
        encoder_attention_heads=cfg.n_heads,
        decoder_attention_heads=cfg.n_heads,
        encoder_ffn_dim=cfg.d_ff,
        decoder_ffn_dim=cfg.d_ff,
        activation_function="relu",
        dropout=cfg.dropout,
        attention_dropout=cfg.attention_dropout,
        activation_dropout=cfg.activation_dropout,
        scale_embedding=True,
        tie_word_embeddings=cfg.share_embeddings and cfg.tie_embeddings,
        pad_token_id=PAD,
        bos_token_id=BOS,
        eos_token_id=EOS,
        decoder_start_token_id=BOS,
        forced_eos_token_id=None,  # ours stops at its length limit without forcing EOS
    )


def generation_config(checkpoint: Checkpoint):
    """What `generate` does by default: our decoder's start, end and padding
    ids, the longest output the positions allow (max_length counts the start token), the
    config's beam size and length penalty exponent (transformers divides by length ** it too,
    but counts no EOS in the length and stops its beams otherwise), and its no_repeat_ngram,
    the same rule."""
    transformers, decoding = import_transformers(), checkpoint.config.decode
    return transformers.GenerationConfig(
        decoder_start_token_id=BOS,
        bos_token_id=BOS,
        eos_token_id=EOS,
        pad_token_id=PAD,
        max_length=checkpoint.model.cfg.max_positions,
        num_beams=decoding.beam_size,
        length_penalty=decoding.length_penalty,
        no_repeat_ngram_size=decoding.no_repeat_ngram,
    )


def piece_ids(vocab: Vocab) -> str:
    """vocab.json: {piece: id} of every piece, as JSON."""
    return json.dumps({piece: i for i, piece in enumerate(vocab.all_pieces())}, ensure_ascii=False)


def write_tokenizer(checkpoint: Checkpoint, directory: Path) -> None:
    """MarianTokenizer's files. source.spm normalises the source as Vocab.encode does
    (lowercase, hyphens as spaces, per the config), so that sentencepiece alone gives our ids;
    the target needs no normalisation."""
    src, tgt = checkpoint.src_vocab, checkpoint.tgt_vocab
    (directory / "source.spm").write_bytes(self_normalizing_model(src))
    (directory / "target.spm").write_bytes(tgt.model_bytes)
    separate = not checkpoint.one_vocabulary
    (directory / "vocab.json").write_text(piece_ids(src))
    if separate:
        (directory / "target_vocab.json").write_text(piece_ids(tgt))
    special = [src.pieces([i])[0] for i in (UNK, EOS, PAD)]
    settings = {
        "tokenizer_class": "MarianTokenizer",
        "separate_vocabs": separate,
        "unk_token": special[0],
        "eos_token": special[1],
        "pad_token": special[2],
        # truncation=True keeps the most the positions take, EOS included, as we do
        "model_max_length": checkpoint.model.cfg.max_positions,
        "clean_up_tokenization_spaces": False,  # ours is sentencepiece's text, untouched
    }
    (directory / "tokenizer_config.json").write_text(json.dumps(settings, indent=2))


def export_huggingface(
    checkpoint: Checkpoint, out_dir: Path, checkpoint_path: Path | None = None
) -> None:
    """Write the transformers model, its tokenizer and our config into out_dir, built beside
    it and renamed into place (an earlier export there is replaced only by a complete one).
    `checkpoint_path`: where the checkpoint was read from, for the test scores beside it."""
    if isinstance(checkpoint.src_vocab, BPEVocab):
        raise UserError(
            "transformers' MarianTokenizer needs sentencepiece models, and this model's "
            "vocabulary is BPE (an imported BPE package's)"
        )
    transformers = import_transformers()
    vocab_size = max(len(checkpoint.src_vocab), len(checkpoint.tgt_vocab))
    with replacing_folder(out_dir, EXPORT_CONFIG) as staging:
        hf_model = transformers.PegasusForConditionalGeneration(
            pegasus_config(checkpoint, vocab_size)
        )
        hf_model.load_state_dict(pegasus_weights(checkpoint.model, vocab_size), strict=True)
        hf_model.generation_config = generation_config(checkpoint)
        hf_model.save_pretrained(staging)
        write_tokenizer(checkpoint, staging)
        (staging / "README.md").write_text(model_card(checkpoint, out_dir, checkpoint_path))
        (staging / EXPORT_CONFIG).write_text(json.dumps(checkpoint.config.to_dict(), indent=2))
        export_calibration(checkpoint.info, staging)


def hub_languages(checkpoint: Checkpoint) -> list[str]:
    """The model's languages as the Hub tags them (ISO 639 codes): those the service names
    (seq2seq.config.translation_pair), but the stand-ins for a side that is no language (the numbers
    corpus's digits, a parallel corpus's src and tgt)."""
    config = checkpoint.config
    return [
        language.code
        for language in translation_pair(config, config.serve)
        if is_language(language)
    ]


def model_card(checkpoint: Checkpoint, out_dir: Path, checkpoint_path: Path | None) -> str:
    """README.md of the folder: the Hub's front matter, the facts, and how to use it. Long as
    the card is: its Markdown, written out as it will read."""
    codes = ", ".join(hub_languages(checkpoint))
    decoding = checkpoint.config.decode
    card = f"""\
        ---
        library_name: transformers
        pipeline_tag: translation
        language: [{codes}]
        tags:
        - translation
        - seq2seq
        - pegasus
        ---

        # {checkpoint.config.experiment}

        A translation model trained with seq2seq (a small PyTorch Transformer toolkit) and
        exported to transformers' Pegasus architecture: the same weights, the same greedy
        outputs, token for token (`python -m seq2seq.export huggingface`).
        """
    usage = f"""\
        ## Use

        ```python
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        model_id = "{out_dir}"  # this folder, or its Hub repository once uploaded
        tokenizer = AutoTokenizer.from_pretrained(model_id)
        model = AutoModelForSeq2SeqLM.from_pretrained(model_id)
        batch = tokenizer(["..."], return_tensors="pt", padding=True, truncation=True)
        print(tokenizer.batch_decode(model.generate(**batch), skip_special_tokens=True))
        ```

        transformers 5 has no `pipeline("translation")` any more: call `generate` as above.
        The tokenizer applies the source normalisation the model was trained with.

        ## Upload

        ```python
        from huggingface_hub import upload_folder  # after `hf auth login`

        upload_folder(folder_path="{out_dir}", repo_id="you/{checkpoint.config.experiment}")
        ```

        (`model.push_to_hub(...)` and `tokenizer.push_to_hub(...)` upload the loaded model and
        tokenizer, without this card and seq2seq.json.)

        ## Decoding: where transformers differs from seq2seq

        - Length: `generate` stops at `max_length` ({checkpoint.model.cfg.max_positions}
          pieces with the start token) or `max_new_tokens`, one limit for the batch; seq2seq
          stops each sentence at {decoding.max_len_a} x its source length + {decoding.max_len_b}
          pieces. Outputs that end before either limit are the same.
        - Beam search (`num_beams` {decoding.beam_size} in generation_config.json):
          transformers divides a hypothesis's log-probability by length ** length_penalty
          with its EOS left out of the length, seq2seq (as CTranslate2) with it counted, and
          their beams stop on other rules: beam outputs may differ.
        - The logits of PAD, BOS and the ids a vocabulary was padded with are -inf, so that
          they are never output; a label-smoothed fine-tuning loss needs them finite
          (`model.final_logits_bias.clamp_(min=-1e4)`).
        - The tokenizer strips spaces at either end of a translation.
        """
    return "\n".join(
        [textwrap.dedent(card), facts(checkpoint, checkpoint_path), "", textwrap.dedent(usage)]
    )
