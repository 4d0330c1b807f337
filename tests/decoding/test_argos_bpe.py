"""Argos packages whose tokenizer is BPE (bpe.model: subword-nmt's codes, with Moses's
tokenization): our tokenizer (seq2seq/decoding/argos_tokenizers.py, seq2seq/tokens/bpe.py)
splits and joins as Argos Translate's BPETokenizer does, a package whose model's vocabulary
is BPE tokens translates as Argos Translate translates it, and imported (python -m
seq2seq.import_model) it translates with our torch code as CTranslate2 does. The codes are
learnt here, by subword-nmt's learn_bpe, on sentences made here: no files, no network."""

import dataclasses
import io
import json
import random
import shutil
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace

import polib
import pytest
import torch

from benchmarks.speed.exports import run_argos  # Argos Translate in a child process
from seq2seq import import_model
from seq2seq.checkpoint import load_checkpoint
from seq2seq.config import DecodeConfig, Language
from seq2seq.corpora.numbers import number_digits, number_words
from seq2seq.decoding.argos_engine import package_map
from seq2seq.decoding.argos_tokenizers import SentencePieceTokenizer, package_tokenizer
from seq2seq.decoding.batches import search_sources
from seq2seq.decoding.engine_choice import load_engine
from seq2seq.exports.argos import argos_spec, export_argos
from seq2seq.exports.ctranslate2 import save_spec
from seq2seq.exports.huggingface import export_huggingface
from seq2seq.exports.vocab_map import catalog_pairs
from seq2seq.model.config import ModelConfig
from seq2seq.model.transformer import Transformer
from seq2seq.options import VocabConfig
from seq2seq.support.errors import UserError
from seq2seq.tokens.batching import pair_tensors
from seq2seq.tokens.bpe import BPEVocab
from seq2seq.tokens.special import PAD
from seq2seq.tokens.vocab import train_vocab
from seq2seq.training.loss import batch_loss

pytest.importorskip("argostranslate", reason='Argos Translate is an optional extra: ".[argos]"')
pytest.importorskip("subword_nmt", reason='subword-nmt is in the optional extra ".[argos]"')
from argostranslate.tokenizer import BPETokenizer as ArgosBPETokenizer  # noqa: E402
from subword_nmt.learn_bpe import learn_bpe  # noqa: E402

from helpers import greedy_ids, length_limits  # noqa: E402
from samples import write_po  # noqa: E402

ENGLISH = [
    "Don't worry, it's John's car - isn't it?",
    "The children's toys cost $12.50 (about €11).",
    'She said: "I\'ll be there at 10:30 a.m."',
    "We'd've gone, but the U.S. office was closed...",
    "Call +1 (555) 010-2030 or mail info@example.com!",
    "Read https://example.org/a_b?c=1&d=2 first; then rest.",
    "Rock 'n' roll isn't dead, y'all.",
    "It was 3.14159 times 1,000,000 — roughly.",
    "'Quoted' words, \"double quotes\" and `backticks`.",
    "A man in a red shirt is climbing a rock wall.",
    "Two dogs play in the snow near 4 trees.",
    "Is this 50% off, or 25 % off?",
    "Tom & Jerry < Mickey > Donald | Goofy [sic] {ok}",
    "The ninety-nine red balloons flew away.",
    "Mr. Smith met Dr. Jones at 5 p.m. on Jan. 3rd.",
]
GERMAN = [
    "Ein Mann mit einem roten Hemd klettert an einer Felswand.",
    "Zwei Hunde spielen im Schnee bei 4 Bäumen.",
    "Er sagte: „Ich komme um 10:30 Uhr.“",
    "Das kostet 12,50 € – oder etwa $13.",
    "Grüße aus München, Köln und Düsseldorf!",
    "Die Straße ist 1.234,5 m lang, nicht wahr?",
    "Wie geht's dir? Gibt's was Neues?",
    "Sie liest »Faust« und ‚Die Räuber‘ (von Schiller).",
    "Z. B. am 3. Okt. 2020 um 8 Uhr usw.",
    "Größer, schöner, weißer … und übermäßig teuer.",
    "Ein Mädchen im blauen Kleid springt über eine Pfütze.",
    "Die Kinder spielen Fußball; der Ball ist rot-weiß.",
    "Herr Müller's Café hat 24/7 geöffnet.",
    "Wir sind 100 % sicher, dass es 5°C sind.",
    "Ä, Ö, Ü, ä, ö, ü und ß: deutsche Buchstaben.",
]
UNSEEN = "Ωmega ø ñandú 漢字 ☃"  # characters no training sentence has: unknown tokens


def numbers(count: int, rng: random.Random) -> list[str]:
    """Sentences of the project's numbers corpus (seq2seq/corpora/numbers.py): words and digits."""
    drawn = [rng.randrange(1_000_000) for _ in range(count)]
    return [f"{number_words(n)} is {number_digits(n)}, i.e. {n:,}." for n in drawn]


def varied(sentences: list[str], count: int, rng: random.Random) -> list[str]:
    """`count` sentences made of `sentences`: pairs joined, cases changed, spaces doubled."""
    made = []
    for _ in range(count):
        one = " ".join(rng.sample(sentences, rng.choice((1, 1, 2))))
        form = rng.randrange(4)
        one = [one, one.upper(), one.lower(), one.replace(" ", "  ")][form]
        made.append(one)
    return made


def corpus() -> dict[str, list[str]]:
    """Training sentences of each language, and the test sentences (unseen ones among them)."""
    rng = random.Random(0)
    train = {"en": ENGLISH + numbers(150, rng), "de": GERMAN * 4}
    test = (
        varied(ENGLISH, 120, rng) + varied(GERMAN, 120, rng) + numbers(60, rng)
        + [UNSEEN, "", "   ", "a", "@@", "&amp; &lt;", "x@@ y", "don't@@ stop"]
    )  # fmt: skip
    return {"train": train, "test": test}


def moses_lines(sentences: dict[str, list[str]]) -> list[str]:
    """The sentences of each language as Argos's tokenizer gives them to BPE: Moses's
    normalised tokens, joined by spaces."""
    from sacremoses import MosesPunctNormalizer, MosesTokenizer

    return [
        " ".join(MosesTokenizer(code).tokenize(MosesPunctNormalizer(code).normalize(sentence)))
        for code, language in sentences.items()
        for sentence in language
    ]


@pytest.fixture(scope="module")
def bpe_folder(tmp_path_factory):
    """A de -> en package's folder without its weights: metadata.json, a bpe.model learnt by
    subword-nmt's learn_bpe (400 merges) on the training sentences' Moses tokens, and as the
    model's vocabulary (model/shared_vocabulary.json) <pad> <unk> <s> </s> and the BPE tokens
    of those sentences. Returns it, the training sentences' tokens, the test sentences."""
    folder = tmp_path_factory.mktemp("bpe") / "translate-de_en-1_0"
    (folder / "model").mkdir(parents=True)
    sentences = corpus()
    lines = moses_lines(sentences["train"])
    with open(folder / "bpe.model", "w", encoding="utf-8") as codes:
        learn_bpe(io.StringIO("\n".join(lines) + "\n"), codes, 400, min_frequency=2)
    bpe = ArgosBPETokenizer(folder / "bpe.model", "de", "en")
    bpe.lazy_load()
    segmented = [bpe.bpe_source.segment_tokens(line.split()) for line in lines]
    vocabulary = ["<pad>", "<unk>", "<s>", "</s>", *sorted({t for ts in segmented for t in ts})]
    (folder / "model/shared_vocabulary.json").write_text(json.dumps(vocabulary))
    metadata = {"package_version": "1.0", "argos_version": "1.11", "from_code": "de",
                "from_name": "German", "to_code": "en", "to_name": "English"}  # fmt: skip
    (folder / "metadata.json").write_text(json.dumps(metadata))
    return folder, segmented, sentences["test"]


@pytest.mark.parametrize("pair", [("de", "en"), ("en", "de")])
def test_bpe_tokens_and_texts_are_argos_translates(bpe_folder, pair):
    """Each test sentence's tokens are those Argos Translate's BPETokenizer gives CTranslate2,
    and any tokens' text is its decode: each sentence's own, the token lists cut anywhere (a
    word's non-final part "x@@" last, as a model may end), all of them at once."""
    folder, _, sentences = bpe_folder
    ours = package_tokenizer(folder, *pair)
    theirs = ArgosBPETokenizer(folder / "bpe.model", *pair)
    assert isinstance(ours, BPEVocab)
    tokenized = [ours.tokens(sentence) for sentence in sentences]
    assert tokenized == [theirs.encode(sentence) for sentence in sentences]
    assert sum(token.endswith("@@") for tokens in tokenized for token in tokens) > 1000
    outputs = tokenized + [t[: len(t) // 2 + 1] for t in tokenized] + [sum(tokenized, [])]
    assert [ours.text(tokens) for tokens in outputs] == [theirs.decode(t) for t in outputs]


def test_a_codes_file_without_its_version_line_segments_as_argos_translate(bpe_folder, tmp_path):
    """Without "#version: 0.2", both read codes as subword-nmt's version 0.1 (another way of
    ending a word): the same tokens still."""
    folder, _, sentences = bpe_folder
    shutil.copytree(folder / "model", tmp_path / "model")
    lines = (folder / "bpe.model").read_text("utf-8").splitlines(keepends=True)
    assert lines[0].startswith("#version:")
    (tmp_path / "bpe.model").write_text("".join(lines[1:]), "utf-8")
    ours = package_tokenizer(tmp_path, "de", "en")
    theirs = ArgosBPETokenizer(tmp_path / "bpe.model", "de", "en")
    assert [ours.tokens(s) for s in sentences] == [theirs.encode(s) for s in sentences]


def test_the_vocabulary_is_the_models_source_tokens(bpe_folder):
    """What the service lists and the warnings read: the model's tokens; a word with a token
    the model lacks is unknown (CTranslate2 reads that token as <unk>)."""
    folder, segmented, _ = bpe_folder
    tokenizer = package_tokenizer(folder, "de", "en")
    vocabulary = json.loads((folder / "model/shared_vocabulary.json").read_text())
    assert tokenizer.all_pieces() == vocabulary and len(tokenizer) == len(vocabulary)
    assert tokenizer.unk == 1 and tokenizer.ids(segmented[0]) == [
        vocabulary.index(token) for token in segmented[0]
    ]
    assert tokenizer.unknown(f"Zwei Hunde {UNSEEN}") == UNSEEN.split()


def test_a_vocabulary_map_of_catalogs_keys_the_packages_bpe_tokens(
    bpe_folder, tmp_path, monkeypatch
):
    """A map made of a catalog for a BPE package (package_map: translate --vmap DIR) splits
    its strings as the package does: its lines are the model's BPE tokens of the sources."""
    folder = bpe_folder[0]
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    entries = [polib.POEntry(msgid=de, msgstr=en) for de, en in zip(GERMAN, ENGLISH, strict=True)]
    write_po(tmp_path / "po/en.po", entries, "en")
    tokenizer = package_tokenizer(folder, "de", "en")
    text = package_map(tmp_path / "po", folder, ("de", "en"), tokenizer, "")
    keys = {line.split("\t")[0] for line in text.splitlines()[1:]}
    sources = [source for source, _ in catalog_pairs(tmp_path / "po", ("de", "en"))]
    vocabulary = set(json.loads((folder / "model/shared_vocabulary.json").read_text()))
    assert keys == {t for s in sources for t in tokenizer.tokens(s)} & vocabulary
    assert {"Felswand", "."} <= keys and "Felswand." not in keys  # Moses's tokens, as Argos's


def test_the_sentencepiece_model_comes_first_and_what_is_neither_is_refused(bpe_folder, tmp_path):
    """Argos's order: a package with both files is read with its sentencepiece.model; one with
    neither, or whose bpe.model is no codes file, is refused in one line."""
    folder, _, sentences = bpe_folder
    with pytest.raises(UserError, match=r"no sentencepiece.model nor bpe.model"):
        package_tokenizer(tmp_path, "de", "en")
    shutil.copytree(folder / "model", tmp_path / "model")
    for not_codes in (b"\xff\xfe not text", b"one two three\n"):
        (tmp_path / "bpe.model").write_bytes(not_codes)
        with pytest.raises(UserError, match=r"bpe.model: not a BPE codes file"):
            package_tokenizer(tmp_path, "de", "en")
    sp = train_vocab(sentences, 200, VocabConfig(model_type="unigram", character_coverage=1.0))
    (tmp_path / "sentencepiece.model").write_bytes(sp.model_bytes)
    assert isinstance(package_tokenizer(tmp_path, "de", "en"), SentencePieceTokenizer)


@pytest.mark.parametrize("missing", ["sacremoses", "subword_nmt"])
def test_without_its_libraries_a_bpe_package_names_the_extra(bpe_folder, monkeypatch, missing):
    monkeypatch.setitem(sys.modules, missing, None)  # its import fails
    with pytest.raises(UserError, match=r"needs sacremoses and subword-nmt: pip install .*argos"):
        package_tokenizer(bpe_folder[0], "de", "en")


# End to end: the package with weights, as the service and `python -m seq2seq.translate` load it


def copying_model(vocabulary: list[str], lines: list[list[str]], out: Path) -> None:
    """A small Transformer with `vocabulary` on both sides, trained for a few seconds to copy
    `lines` (far from right: its outputs vary in content and length), saved by the Argos
    export's CTranslate2 spec (argos_spec: PAD and BOS never output, </s> ends sources)."""
    torch.manual_seed(0)
    cfg = ModelConfig(d_model=64, n_heads=2, enc_layers=1, dec_layers=1, d_ff=128)
    model = Transformer(cfg, len(vocabulary), len(vocabulary), pad_id=PAD)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    index = {token: i for i, token in enumerate(vocabulary)}
    ids = [[index[token] for token in line] for line in lines]
    for epoch in range(20):
        random.Random(epoch).shuffle(ids)
        for batch in (ids[start : start + 32] for start in range(0, len(ids), 32)):
            loss = batch_loss(model, pair_tensors(batch, batch), 0.0)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    pieces = Pieces(vocabulary)
    stand_in = SimpleNamespace(model=model.eval(), src_vocab=pieces, tgt_vocab=pieces)
    save_spec(argos_spec(stand_in), out)


class Pieces(list):
    """A vocabulary as argos_spec reads one: its length and all_pieces."""

    def all_pieces(self) -> list[str]:
        return list(self)


@pytest.fixture(scope="module")
def bpe_package(bpe_folder, tmp_path_factory) -> tuple[Path, Path]:
    """The package with weights (copying_model's), zipped (de_en.argosmodel) and its folder."""
    folder, segmented, _ = bpe_folder
    tmp_path = tmp_path_factory.mktemp("package")
    package_folder = tmp_path / folder.name
    shutil.copytree(folder, package_folder)
    copying_model(json.loads((folder / "model/shared_vocabulary.json").read_text()), segmented,
                  package_folder / "model")  # fmt: skip
    package = tmp_path / "de_en.argosmodel"
    with zipfile.ZipFile(package, "w") as archive:
        for path in sorted(package_folder.rglob("*")):
            archive.write(path, path.relative_to(tmp_path))
    return package, package_folder


@pytest.mark.same_outputs
@pytest.mark.slow
def test_a_bpe_package_translates_as_argos_translate(bpe_folder, bpe_package, tmp_path):
    """The package (.argosmodel) installed and run by Argos Translate, and loaded by our engine
    (load_engine: the service's and translate's): its outputs at beam 1 and 4, every one; an
    unknown word is warned of. CTranslate2 on one thread in both: the same bits."""
    sentences, package = bpe_folder[2], bpe_package[0]
    theirs = run_argos(package, ("de", "en"), sentences, tmp_path / "home", (1, 4), 1)
    engine = load_engine(model=package, decode={"compute_type": "float32"})
    assert engine.languages == (Language("de", "German"), Language("en", "English"))
    assert engine.facts()["compute_type"] == "float32 (as set)"
    own = load_engine(model=package).facts()["compute_type"]  # auto: the package's, as saved
    assert own == "float32 (auto: a model given with --model keeps its own, as saved)"
    for beam in (1, 4):
        decoding = dataclasses.replace(engine.config.decode, beam_size=beam)
        ours = [engine.translate([sentence], decoding).outputs[0] for sentence in sentences]
        assert ours == theirs[str(beam)], beam
        assert len(set(ours)) > 100, "the outputs should vary"
    warnings = engine.translate([UNSEEN], engine.config.decode).warnings
    listed = ", ".join(map(repr, UNSEEN.split()))
    assert warnings == [[f"not in the vocabulary, translated as unknown: {listed}"]]


@pytest.mark.same_outputs
@pytest.mark.slow
def test_an_imported_bpe_package_translates_as_ctranslate2(bpe_folder, bpe_package, tmp_path):
    """python -m seq2seq.import_model on the package: a checkpoint whose vocabulary is the
    package's BPE (tokens/bpe.py's), which our torch code decodes to CTranslate2's tokens on the
    package, and to the package tokenizer's texts of them, at beam 1 and 4; exported back to
    CTranslate2 (the engine translate picks by default), the same texts again; exported as an
    Argos package (bpe.model its codes), translating as the package it came from."""
    import ctranslate2

    package, folder = bpe_package
    out = tmp_path / "imported" / "best.pt"
    import_model.main([str(package), str(out)])
    imported = load_checkpoint(out)
    assert isinstance(imported.src_vocab, BPEVocab) and imported.one_vocabulary
    sentences = [sentence for sentence in bpe_folder[2] if sentence.strip()]
    tokenizer = package_tokenizer(folder, "de", "en")
    tokens = [tokenizer.tokens(sentence) for sentence in sentences]
    assert imported.src_vocab.encode(sentences) == [imported.src_vocab.ids(t) for t in tokens]
    translator = ctranslate2.Translator(str(folder / "model"), "cpu", intra_threads=1)
    for beam in (1, 4):
        results = translator.translate_batch(
            tokens, beam_size=beam, length_penalty=0.2, max_decoding_length=40,
            min_decoding_length=0,
        )  # fmt: skip
        theirs = [r.hypotheses[0] for r in results]
        decoding = DecodeConfig(beam_size=beam, length_penalty=0.2, max_len_a=0, max_len_b=40,
                                no_repeat_ngram=0, precision="fp32")  # fmt: skip
        found = search_sources(imported.model, imported.src_vocab.encode(sentences), decoding)
        ours = [output.ids for output in found]
        assert [imported.tgt_vocab.pieces(ids) for ids in ours] == theirs, beam
        texts = [tokenizer.text(t) for t in theirs]
        assert imported.tgt_vocab.detokenize(ours) == [t[1:] if t[:1] == " " else t for t in texts]
        assert len(set(texts)) > 100, "the outputs should vary"
    torch_engine = load_engine(checkpoint=out, choice="torch")
    exported = load_engine(checkpoint=out, choice="ctranslate2", decode={"compute_type": "float32"})
    greedy = dataclasses.replace(torch_engine.config.decode, beam_size=1)
    fast, ours = exported.translate(sentences, greedy), torch_engine.translate(sentences, greedy)
    assert fast[:2] == ours[:2]
    limits = length_limits(torch_engine.checkpoint, sentences)  # cut there: CT2 scored more
    ended = [i for i, ids in enumerate(greedy_ids(torch_engine.checkpoint, sentences))
             if len(ids) < limits[i]]  # fmt: skip
    assert len(ended) > 250
    for i in ended:
        assert fast.signals[i] == pytest.approx(ours.signals[i], abs=1e-3)
    back = tmp_path / "back.argosmodel"
    export_argos(imported, back)
    original, again = (
        load_engine(model=p, decode={"compute_type": "float32"}) for p in (package, back)
    )
    assert again.translate(sentences, greedy) == original.translate(sentences, greedy)
    with pytest.raises(UserError, match="MarianTokenizer needs sentencepiece models"):
        export_huggingface(imported, tmp_path / "hf")
