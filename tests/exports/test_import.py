"""python -m seq2seq.import_model: models made elsewhere, read back exactly.

Each model here is written by CTranslate2's own converters from random weights laid out as
the two families of Argos packages are: OpenNMT-py 3's checkpoints (LibreTranslate's
Locomotive; with and without attention and feed-forward biases, pre-norm, an output bias,
shared embeddings, the position table in the file) and Marian's .npz (OPUS-MT; post-norm,
swish, </s> after each source, a decoder that starts from a zero vector, [sin | cos]
positions). No training is needed: the import must give CTranslate2's outputs on the same
model, token for token, greedy and at beam 4.
"""

import io
import json
import zipfile

import numpy as np
import pytest
import sentencepiece as spm
import torch

from benchmarks.adapt.synthetic import marian_npz, opennmt_checkpoint, package, weights
from seq2seq.checkpoint import load_checkpoint, read_config, save_checkpoint
from seq2seq.config import DecodeConfig, load_config
from seq2seq.decoding.batches import search_sources
from seq2seq.exports.importing import import_model
from seq2seq.support.errors import UserError

ct2 = pytest.importorskip("ctranslate2")
from ctranslate2.converters import MarianConverter, OpenNMTPyConverter  # noqa: E402

WORDS = "zero one two three four five six seven eight nine ten eleven twelve hundred thousand"
SENTENCES = [
    " ".join(np.random.default_rng(i).choice(WORDS.split(), size=1 + i % 9)) for i in range(60)
]


@pytest.fixture(scope="module")
def sp_model() -> bytes:
    """A small unigram sentencepiece model, with sentencepiece's own special ids (as Argos
    packages have them: <unk> 0, <s> 1, </s> 2, no <pad>)."""
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(SENTENCES * 5), model_writer=model, vocab_size=60,
        model_type="unigram", hard_vocab_limit=False, minloglevel=2,
    )  # fmt: skip
    return model.getvalue()


def both_outputs(folder, imported, beam):
    """CTranslate2's outputs and ours, as pieces, on SENTENCES (CTranslate2 given the
    package's own sentencepiece pieces, as Argos Translate gives them)."""
    sp = spm.SentencePieceProcessor(model_file=str(folder / "sentencepiece.model"))
    translator = ct2.Translator(str(folder / "model"), device="cpu")
    tokens = [sp.encode(s, out_type=str) for s in SENTENCES]
    vocabulary = json.loads((folder / "model" / "shared_vocabulary.json").read_text())
    never = [[p] for p in ("<blank>", "<s>") if p in vocabulary]
    results = translator.translate_batch(
        tokens, beam_size=beam, length_penalty=0.2, max_decoding_length=30,
        min_decoding_length=0, suppress_sequences=never,  # as ours: PAD, BOS never outputs
    )  # fmt: skip
    theirs = [r.hypotheses[0] for r in results]
    vocab = imported.src_vocab
    decoding = DecodeConfig(beam_size=beam, length_penalty=0.2, max_len_a=0, max_len_b=30,
                            no_repeat_ngram=0, precision="fp32")  # fmt: skip
    ours = search_sources(imported.model, vocab.encode(SENTENCES), decoding)
    return theirs, [imported.tgt_vocab.pieces(output.ids) for output in ours]


@pytest.mark.same_outputs
@pytest.mark.parametrize("biases", [False, True], ids=["onmt3-no-biases", "onmt2-biases"])
@pytest.mark.parametrize("beam", [1, 4])
def test_an_opennmt_py_package_imports_to_ctranslate2s_outputs(tmp_path, sp_model, biases, beam):
    rng = np.random.default_rng(int(biases))
    opennmt_checkpoint(tmp_path / "model.pt", sp_model, biases, rng)
    converter = OpenNMTPyConverter(str(tmp_path / "model.pt"), unsafe_deserialization=True)
    folder = package(tmp_path / "en_de", converter, sp_model)
    imported = import_model(folder).checkpoint
    cfg = imported.model.cfg
    assert (cfg.attention_bias, cfg.ffn_bias, cfg.output_bias) == (biases, biases, True)
    assert (cfg.norm, cfg.source_eos, cfg.positions, cfg.max_positions) == (
        "pre", False, "interleaved", 512)  # fmt: skip
    assert cfg.share_embeddings and cfg.tie_embeddings
    theirs, ours = both_outputs(folder, imported, beam)
    assert len({tuple(t) for t in theirs}) > len(SENTENCES) // 4  # not one output for all
    assert ours == theirs


@pytest.mark.same_outputs
@pytest.mark.parametrize("beam", [1, 4])
def test_a_marian_package_imports_to_ctranslate2s_outputs(tmp_path, sp_model, beam):
    (tmp_path / "marian").mkdir()
    npz, vocab = marian_npz(tmp_path / "marian", sp_model, np.random.default_rng(2))
    folder = package(tmp_path / "en_de", MarianConverter(str(npz), [str(vocab)]), sp_model)
    imported = import_model(folder).checkpoint
    cfg = imported.model.cfg
    assert (cfg.norm, cfg.activation, cfg.positions, cfg.source_eos) == (
        "post", "swish", "halves", True)  # fmt: skip
    theirs, ours = both_outputs(folder, imported, beam)
    assert len({tuple(t) for t in theirs}) > len(SENTENCES) // 4
    assert ours == theirs


def test_int8_weights_are_dequantized_and_the_import_is_a_checkpoint(tmp_path, sp_model):
    """An int8 package (as Locomotive converts them) imports with its matrices restored to
    within a quantization step, and saves and loads as any checkpoint of ours."""
    rng = np.random.default_rng(3)
    opennmt_checkpoint(tmp_path / "model.pt", sp_model, False, rng)
    converter = OpenNMTPyConverter(str(tmp_path / "model.pt"), unsafe_deserialization=True)
    f32 = import_model(package(tmp_path / "f32", converter, sp_model)).checkpoint
    imported = import_model(package(tmp_path / "int8", converter, sp_model, "int8"))
    assert imported.report["weights"].get("int8", 0) > 0
    for name, tensor in f32.model.state_dict().items():
        other = imported.checkpoint.model.state_dict()[name]
        step = tensor.abs().amax(dim=-1, keepdim=True) / 127 if tensor.dim() == 2 else 0
        assert (other - tensor).abs().le(step + 1e-6).all(), name
    c = imported.checkpoint
    save_checkpoint(tmp_path / "best.pt", c.config, c.model, c.src_vocab, c.tgt_vocab, c.info)
    loaded = load_checkpoint(tmp_path / "best.pt")
    assert loaded.config.corpus.src_lang == "en" and loaded.config.corpus.tgt_lang == "de"
    assert loaded.src_vocab.encode(SENTENCES[:3]) == c.src_vocab.encode(SENTENCES[:3])


def test_a_zipped_package_imports_as_its_folder(tmp_path, sp_model):
    opennmt_checkpoint(tmp_path / "model.pt", sp_model, True, np.random.default_rng(4))
    converter = OpenNMTPyConverter(str(tmp_path / "model.pt"), unsafe_deserialization=True)
    folder = package(tmp_path / "en_de", converter, sp_model)
    with zipfile.ZipFile(tmp_path / "en_de.argosmodel", "w") as archive:
        for path in folder.rglob("*"):
            archive.write(path, path.relative_to(tmp_path))
    zipped = import_model(tmp_path / "en_de.argosmodel").checkpoint
    unzipped = import_model(folder).checkpoint
    for name, tensor in unzipped.model.state_dict().items():
        assert torch.equal(zipped.model.state_dict()[name], tensor)


def test_what_our_model_cannot_run_is_refused_by_name(tmp_path, sp_model):
    """A relative-position model (OpenNMT-py's max_relative_positions) is refused, naming
    what our model lacks; so is a folder with no model."""
    rng = np.random.default_rng(5)
    opennmt_checkpoint(tmp_path / "model.pt", sp_model, False, rng)
    checkpoint = torch.load(tmp_path / "model.pt", weights_only=False)
    checkpoint["opt"].max_relative_positions, checkpoint["opt"].position_encoding = 4, False
    for name in list(checkpoint["model"]):
        if name.endswith(".pe.pe"):
            del checkpoint["model"][name]
        if name.endswith("self_attn.linear_query.weight"):
            scope = name.removesuffix("linear_query.weight")
            checkpoint["model"][f"{scope}relative_positions_embeddings.weight"] = weights(rng, 9, 8)
    torch.save(checkpoint, tmp_path / "relative.pt")
    converter = OpenNMTPyConverter(str(tmp_path / "relative.pt"), unsafe_deserialization=True)
    folder = package(tmp_path / "relative", converter, sp_model)
    with pytest.raises(UserError, match="relative positions"):
        import_model(folder)
    with pytest.raises(UserError, match="no model.bin"):
        import_model(tmp_path)


@pytest.mark.same_outputs
def test_the_command_writes_a_checkpoint_every_command_takes(tmp_path, sp_model, capsys):
    """import_model writes best.pt and its report; translate reads it and says what
    CTranslate2 says; exported back to CTranslate2 it gives the same outputs again."""
    from seq2seq import export, import_model, translate

    rng = np.random.default_rng(6)
    opennmt_checkpoint(tmp_path / "model.pt", sp_model, False, rng)
    converter = OpenNMTPyConverter(str(tmp_path / "model.pt"), unsafe_deserialization=True)
    folder = package(tmp_path / "en_de", converter, sp_model)
    out = tmp_path / "imported" / "best.pt"
    import_model.main([str(folder), str(out)])
    report = json.loads((out.parent / "report.json").read_text())
    assert report["source_pieces"]["sentencepiece_pieces_not_in_model"] == 0
    base = load_config(out.parent / "config.yaml")  # a fine-tuning config's base
    assert base.to_dict() == read_config(out).to_dict()
    capsys.readouterr()
    args = ["--checkpoint", str(out), "--no-split", "--beam-size", "1", *SENTENCES[:8]]
    translate.main(args)
    ours = capsys.readouterr().out.splitlines()
    sp = spm.SentencePieceProcessor(model_file=str(folder / "sentencepiece.model"))
    translator = ct2.Translator(str(folder / "model"))
    results = [  # each up to its own length limit, as ours: 2 x its pieces + 10
        translator.translate_batch(
            [sp.encode(s, out_type=str)], beam_size=1, min_decoding_length=0,
            suppress_sequences=[["<blank>"], ["<s>"]], no_repeat_ngram_size=7,
            max_decoding_length=2 * len(sp.encode(s)) + 10,
        )[0]
        for s in SENTENCES[:8]
    ]  # fmt: skip
    assert ours == [sp.decode(r.hypotheses[0]) for r in results]
    export.main(["ctranslate2", "--checkpoint", str(out), str(tmp_path / "back")])
    capsys.readouterr()
    translate.main(["--engine", "ctranslate2", "--model", str(tmp_path / "back"), "--no-split",
                    "--beam-size", "1", *SENTENCES[:8]])  # fmt: skip
    assert capsys.readouterr().out.splitlines() == ours
