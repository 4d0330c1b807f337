"""Hugging Face export: transformers' AutoTokenizer and AutoModelForSeq2SeqLM, loaded from the
exported folder alone, give our source ids, our logits and our greedy outputs token for token
(float32), with separate and joint vocabularies, on the numbers corpus and on Multi30k."""

import json
import os
import sys
from pathlib import Path

import pytest
import torch

from seq2seq import export
from seq2seq.checkpoint import save_checkpoint
from seq2seq.config import load_config
from seq2seq.corpora.corpus_types import build_corpus
from seq2seq.decoding.greedy import strip
from seq2seq.exports.huggingface import export_huggingface
from seq2seq.support.errors import UserError
from seq2seq.text.parallel import load_split
from seq2seq.tokens.batching import pair_tensors
from seq2seq.tokens.special import EOS, non_output_logits

from helpers import ROOT, assert_same_or_tied, briefly_trained, greedy_ids, length_limits

transformers = pytest.importorskip(
    "transformers", reason='transformers is an optional extra: pip install ".[huggingface]"'
)
MULTI30K = ROOT.parent / "shared/corpora/multi30k"
BATCH = 500  # sentences a generate call
SMALL = {"d_model": 64, "n_heads": 4, "enc_layers": 1, "dec_layers": 1, "d_ff": 128}


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """Nothing may be downloaded: huggingface_hub refuses every request in offline mode."""
    import huggingface_hub

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


def load(out_dir: Path):
    tokenizer = transformers.AutoTokenizer.from_pretrained(out_dir)
    return tokenizer, transformers.AutoModelForSeq2SeqLM.from_pretrained(out_dir).eval()


def generate(out_dir: Path, sources: list[str], limits: list[int]) -> list[list[int]]:
    """Greedy output ids of transformers alone, from the exported folder (without the decoder
    start token, cut at EOS). generate takes one length limit a batch: the batch's longest."""
    tokenizer, model = load(out_dir)
    outputs = []
    for start in range(0, len(sources), BATCH):
        batch = tokenizer(sources[start : start + BATCH], return_tensors="pt", padding=True)
        longest = max(limits[start : start + BATCH])  # max_length counts the start token too
        with torch.inference_mode():
            ids = model.generate(**batch, num_beams=1, do_sample=False, max_length=longest + 1)
        outputs += strip(ids[:, 1:])
    return outputs


def assert_same_ids_and_outputs(checkpoint, out_dir: Path, sources: list[str]) -> None:
    """The tokenizer gives our source ids; generate our greedy output ids, up to each
    sentence's length limit (an output that reached ours may go on in generate's, which is
    longer), but where our model hesitates (helpers.TIE); the tokenizer decodes them to our
    text (an undertrained model's runaway outputs reach the limit in numbers)."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(out_dir)
    assert type(tokenizer).__name__ == "MarianTokenizer"
    expected = [ids + [EOS] for ids in checkpoint.src_vocab.encode(sources)]
    assert tokenizer(sources)["input_ids"] == expected
    outputs, limits = greedy_ids(checkpoint, sources), length_limits(checkpoint, sources)
    assert len(set(checkpoint.tgt_vocab.detokenize(outputs))) > 100, "the outputs should vary"
    generated = generate(out_dir, sources, limits)
    theirs = [ids[:limit] for ids, limit in zip(generated, limits, strict=True)]
    assert_same_or_tied(checkpoint, sources, outputs, theirs)
    # MarianTokenizer strips the spaces that pieces of "▁" alone leave at either end
    stripped = [translation.strip() for translation in checkpoint.tgt_vocab.detokenize(theirs)]
    assert tokenizer.batch_decode(theirs, skip_special_tokens=True) == stripped


@pytest.fixture(scope="module")
def exported(trained_numbers_checkpoint, tmp_path_factory):
    """The numbers model (separate vocabularies), exported."""
    out_dir = tmp_path_factory.mktemp("hf") / "numbers"
    export_huggingface(trained_numbers_checkpoint[0], out_dir)
    return out_dir


@pytest.mark.same_outputs
@pytest.mark.slow
def test_separate_vocabularies_give_our_ids_and_outputs(trained_numbers_checkpoint, exported):
    checkpoint, test = trained_numbers_checkpoint
    assert len(checkpoint.src_vocab) != len(checkpoint.tgt_vocab)
    assert_same_ids_and_outputs(checkpoint, exported, [s for s, _ in test])


@pytest.mark.same_outputs
@pytest.mark.slow
def test_joint_vocabulary_with_source_normalisation(trained_joint_numbers_checkpoint, tmp_path):
    """One vocabulary for both sides; "Twenty-one" is read as "twenty one", by
    sentencepiece's own rules in source.spm."""
    checkpoint, test = trained_joint_numbers_checkpoint
    export_huggingface(checkpoint, tmp_path / "joint")
    assert not (tmp_path / "joint/target_vocab.json").exists()
    sources = [s.capitalize().replace("ty ", "ty-") for s, _ in test]
    assert sum("-" in s for s in sources) > 100
    assert_same_ids_and_outputs(checkpoint, tmp_path / "joint", sources)


@pytest.mark.same_outputs
@pytest.mark.slow
def test_shared_embeddings_are_one_matrix_in_transformers(
    trained_shared_numbers_checkpoint, tmp_path
):
    """model.share_embeddings with tie_embeddings: Pegasus's tie_word_embeddings, its two
    embeddings and lm_head one parameter, stored once."""
    from safetensors import safe_open  # transformers' own dependency

    checkpoint, test = trained_shared_numbers_checkpoint
    export_huggingface(checkpoint, tmp_path / "shared")
    _, model = load(tmp_path / "shared")
    assert model.config.tie_word_embeddings
    three = model.model.encoder.embed_tokens, model.model.decoder.embed_tokens, model.lm_head
    assert len({layer.weight.data_ptr() for layer in three}) == 1
    with safe_open(tmp_path / "shared/model.safetensors", "pt") as stored:
        names = stored.keys()
    matrices = [
        n for n in names if n.endswith(("embed_tokens.weight", "shared.weight", "lm_head.weight"))
    ]
    assert len(matrices) == 1, matrices
    assert_same_ids_and_outputs(checkpoint, tmp_path / "shared", [s for s, _ in test])


@pytest.mark.same_outputs
def test_logits_are_ours(trained_numbers_checkpoint, exported):
    """On a batch of 64 test pairs (teacher forcing): ours plus the -inf of the ids we never
    output (PAD, BOS), and -inf for the ids beyond the target vocabulary."""
    checkpoint, test = trained_numbers_checkpoint
    src_vocab, tgt_vocab = checkpoint.src_vocab, checkpoint.tgt_vocab
    pairs = test[:64]
    sources = src_vocab.encode([s for s, _ in pairs])
    src, tgt_in, _ = pair_tensors(sources, tgt_vocab.encode([t for _, t in pairs]))
    with torch.inference_mode():
        expected = checkpoint.model(src, tgt_in)
        expected = expected + non_output_logits(expected, len(tgt_vocab))
        _, model = load(exported)
        theirs = model(input_ids=src, attention_mask=src != 0, decoder_input_ids=tgt_in).logits
    real = tgt_in != 0  # (B, T) the target positions that are not padding
    assert torch.isneginf(theirs[..., len(tgt_vocab) :]).all()
    theirs = theirs[..., : len(tgt_vocab)][real]
    assert torch.equal(torch.isneginf(theirs), torch.isneginf(expected[real]))
    finite = torch.isfinite(theirs)
    assert (theirs[finite] - expected[real][finite]).abs().max() < 1e-5


@pytest.mark.same_outputs
@pytest.mark.slow
@pytest.mark.skipif(not MULTI30K.is_dir(), reason="no offline Multi30k copy beside")
def test_multi30k_greedy_outputs_are_ours(tmp_path, monkeypatch):
    """A model trained for a few seconds on Multi30k de->en with the recipe's options (one
    unigram vocabulary, shared embeddings, dropout): on the 1,000 sentences of
    test_2016_flickr, transformers' greedy outputs are ours."""
    monkeypatch.chdir(tmp_path)
    small = [f"model.{key}={value}" for key, value in SMALL.items()]
    config = load_config(
        ROOT / "configs/multi30k_de_en.yaml",
        [f"corpus.base_url={MULTI30K.as_uri()}", "vocab.src_size=1000"]
        + [*small, "train.lr=0.003"],
    )
    build_corpus(config)
    checkpoint = briefly_trained(config, load_split(config, "train")[:3000], epochs=3)
    export_huggingface(checkpoint, tmp_path / "hf")
    sources = [s for s, _ in load_split(config, "test")]
    assert len(sources) == 1000
    assert_same_ids_and_outputs(checkpoint, tmp_path / "hf", sources)


def test_the_command_exports_and_replaces_an_earlier_export(trained_numbers_checkpoint, tmp_path):
    checkpoint_path = tmp_path / "best.pt"
    checkpoint = trained_numbers_checkpoint[0]
    save_checkpoint(
        checkpoint_path,
        checkpoint.config,
        checkpoint.model,
        checkpoint.src_vocab,
        checkpoint.tgt_vocab,
        {"step": 7},
    )
    signature = "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.5.1"
    scores = {"exact_match": 0.5, "bleu": 40.0, "chrf": 60.0, "bleu_signature": signature}
    scores |= {"chrf_signature": "chrF2", "n_sentences": 1000, "checkpoint_step": 7}
    (tmp_path / "eval.json").write_text(json.dumps(scores | {"beam": {"beam_size": 4, **scores}}))
    for _ in range(2):  # the second replaces the first
        export.main(["huggingface", "--checkpoint", str(checkpoint_path), str(tmp_path / "hf")])
    written = {path.name for path in (tmp_path / "hf").iterdir()}
    assert {"config.json", "model.safetensors", "generation_config.json", "README.md"} <= written
    assert {"source.spm", "target.spm", "vocab.json", "tokenizer_config.json"} <= written
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    modes = {
        p.name: p.stat().st_mode & 0o777 for p in [tmp_path / "hf", *(tmp_path / "hf").iterdir()]
    }
    umask = os.umask(0o022)
    os.umask(umask)
    assert modes == {"hf": 0o777 & ~umask} | {name: 0o666 & ~umask for name in written}
    card = (tmp_path / "hf/README.md").read_text()
    assert card.startswith("---\nlibrary_name: transformers\npipeline_tag: translation\n")
    assert "| exact match % | 50.00 | 50.00 |" in card and signature in card
    assert "| | greedy | beam 4 |" in card and "for 7 steps" in card


def test_a_model_card_without_scores_says_how_to_get_them(trained_numbers_checkpoint, exported):
    card = (exported / "README.md").read_text()
    assert "Not evaluated: `make eval`" in card
    assert "\nlanguage: [en]\n" in card
    parameters = trained_numbers_checkpoint[0].model.num_parameters()
    assert f"Transformer of {parameters:,} parameters" in card


def test_a_folder_that_is_not_an_export_is_refused(trained_numbers_checkpoint, tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="not an earlier export"):
        export_huggingface(trained_numbers_checkpoint[0], tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_without_transformers_the_export_says_how_to_install_it(
    trained_numbers_checkpoint, tmp_path, monkeypatch
):
    monkeypatch.setitem(sys.modules, "transformers", None)  # import transformers fails
    with pytest.raises(UserError, match=r'pip install -e "\.\[huggingface\]"'):
        export_huggingface(trained_numbers_checkpoint[0], tmp_path / "hf")
    assert not (tmp_path / "hf").exists()
