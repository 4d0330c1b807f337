"""The vocabulary map (exports/vocab_map.py): built from co-occurrences as its table says,
written into an export where the training pairs are at hand, and with decode.vmap CTranslate2
decodes a model's training sentences as it does without it; made of a user's catalogs
(translate --vmap DIR, serve's decode.vmap_catalogs) for a package and an export, it changes
no output whose pieces it lists, is made once, and what it cannot be made of is one line."""

import dataclasses

import polib
import pytest

from seq2seq import translate
from seq2seq.config import Config, CorpusConfig, decode_overrides
from seq2seq.corpora import numbers
from seq2seq.decoding.argos_engine import ArgosEngine
from seq2seq.decoding.ctranslate2_engine import CTranslate2Engine
from seq2seq.decoding.engine_choice import load_engine
from seq2seq.exports import vocab_map as vocab_maps
from seq2seq.exports.argos import export_argos
from seq2seq.exports.ctranslate2 import export_ctranslate2
from seq2seq.exports.vocab_map import VMAP, catalog_map, vocab_map
from seq2seq.serving.loaders import load_models
from seq2seq.support.errors import UserError

from helpers import assert_same_or_tied
from samples import write_po

SPECIAL = ["<pad>", "<unk>", "<s>", "</s>"]
SOURCE = [*SPECIAL, "▁a", "▁b", "▁c"]  # ids 4, 5, 6
TARGET = [*SPECIAL, "▁x", "▁y", "▁z"]  # ids 4, 5, 6


def test_each_source_piece_lists_the_targets_of_best_dice_and_the_most_frequent_come_first():
    pairs = [([4], [4, 3]), ([4, 5], [4, 5]), ([5], [5]), ([6], [6, 4])]
    # x is in 3 pairs: the one listed for every batch. a: x (Dice 2*2/(2+3)) before y (2*1/4);
    # c: z (2*1/2) before x (2*1/4), though x is more frequent; </s> (3) is never listed
    assert vocab_map(pairs, SOURCE, TARGET, always=1, per_source=1) == (
        "\t▁x\n▁a\t▁x\n▁b\t▁y\n▁c\t▁z\n"
    )
    assert vocab_map(pairs, SOURCE, TARGET, always=2, per_source=2) == (
        "\t▁x ▁y\n▁a\t▁x ▁y\n▁b\t▁y ▁x\n▁c\t▁z ▁x\n"
    )  # b: y (2*2/4), then x (2*1/5)


def test_what_no_map_can_be_made_of_is_refused_in_one_line(tmp_path, monkeypatch):
    """A folder that is not there, one without the model's language's catalogs, --vmap taking
    a sentence for its folder, the torch engine, a package without catalogs."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    write_po(tmp_path / "po/fr.po", language="fr")
    with pytest.raises(UserError, match="missing: no such folder"):
        catalog_map(tmp_path / "missing", ("en", "de"), (list, list), tmp_path, tmp_path)
    with pytest.raises(UserError, match=r"holds no gettext catalog \(.po, .mo\) of de"):
        catalog_map(tmp_path / "po", ("en", "de"), (list, list), tmp_path, tmp_path)
    with pytest.raises(UserError, match="'three is three': no such folder of catalogs"):
        translate.parse_arguments(["--vmap", "three is three"])
    catalogs = f"--vmap={tmp_path / 'po'}"
    torch = ["--checkpoint", str(tmp_path / "best.pt"), "--engine", "torch", catalogs, "x"]
    package = ["--model", str(tmp_path / "x.argosmodel"), "x", "--vmap"]
    refused = {"our torch code decodes it": torch, "a package holds no vocabulary map": package}
    for said, argv in refused.items():
        with pytest.raises(UserError, match=f"decode.vmap: not for .*: {said}"):
            translate.main(argv)  # before a model is read: none is there


pytest.importorskip(
    "ctranslate2", reason='CTranslate2 is an optional extra: pip install ".[export]"'
)


@pytest.mark.slow
def test_an_export_decodes_its_training_sentences_as_well_with_its_map(
    trained_joint_numbers_checkpoint, tmp_path, monkeypatch
):
    """The export's map leaves each sentence under half of its vocabulary (one for both
    languages: the digits' pieces and the words') as candidates, yet the greedy outputs on
    training sentences are those without it, but where the model hesitates between two
    pieces (helpers.TIE: the output layer's arithmetic is not the same on fewer rows)."""
    checkpoint = trained_joint_numbers_checkpoint[0]
    pairs = numbers.generate(CorpusConfig())["train"][:3000]  # what the model was trained on
    monkeypatch.chdir(tmp_path)
    data = checkpoint.config.data_dir
    data.mkdir(parents=True)
    for name, side in (("train.src", 0), ("train.tgt", 1)):
        (data / name).write_text("".join(pair[side] + "\n" for pair in pairs))
    export_ctranslate2(checkpoint, tmp_path / "ct2")
    lists = dict(line.split("\t") for line in (tmp_path / "ct2" / VMAP).read_text().splitlines())
    vocab, sources = checkpoint.src_vocab, [source for source, _ in pairs[:200]]
    for own in map(vocab.pieces, vocab.encode(sources)):
        candidates = {c for piece in ["", *own] for c in lists.get(piece, "").split()}
        assert len(candidates) < (len(vocab) - len(SPECIAL)) / 2
    engine = CTranslate2Engine.load(tmp_path / "ct2", "cpu", "float32")
    greedy = dataclasses.replace(checkpoint.config.decode, beam_size=1)
    without = engine.translate(sources, greedy).outputs
    assert len(set(without)) > 50, "the outputs should vary"
    mapped = engine.translate(sources, dataclasses.replace(greedy, vmap=True)).outputs
    assert assert_same_or_tied(checkpoint, sources, without, mapped) < len(sources) / 20


@pytest.fixture(scope="module")
def models(trained_joint_numbers_checkpoint, tmp_path_factory):
    """The small model of one vocabulary as an Argos package and as an export (without a map
    of its own), and its first 200 test pairs."""
    checkpoint, test = trained_joint_numbers_checkpoint
    folder = tmp_path_factory.mktemp("catalog_map")
    export_argos(checkpoint, folder / "numbers.argosmodel")
    export_ctranslate2(checkpoint, folder / "ct2", with_vmap=False)
    return checkpoint, folder, test[:200]


@pytest.mark.parametrize("model, no_repeat", [("numbers.argosmodel", 0), ("ct2", None)])
def test_translate_vmap_dir_lists_every_piece_output_and_changes_no_output(
    models, model, no_repeat, tmp_path, monkeypatch, capsys
):
    """A catalog of the model's own greedy translations: its map lists every piece they hold
    among the candidates of every batch, so with it (translate --vmap DIR) the outputs are
    those without, but where the model hesitates between two pieces (helpers.TIE: the output
    layer's arithmetic is not the same on fewer rows). A package's decode settings have no
    rule against repeats (no_repeat 0), an export's are its checkpoint's. The same catalog
    without "la" in its translations: no output has it (the map is used)."""
    checkpoint, folder, test = models
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    sources = [source for source, _ in test]

    def translated(*options: str) -> list[str]:
        translate.main(["--model", str(folder / model), "--beam-size", "1", *options, *sources])
        return capsys.readouterr().out.splitlines()

    without = translated()
    assert len(set(without)) > 50, "the outputs should vary"
    entries = [polib.POEntry(msgid=s, msgstr=t) for s, t in zip(sources, without, strict=True)]
    write_po(tmp_path / "po/digits.po", [entry for entry in entries if entry.msgstr], "digits")
    mapped = translated(f"--vmap={tmp_path / 'po'}")
    [made] = (tmp_path / "cache/seq2seq/vmap").iterdir()
    every_batch = set(made.read_text("utf-8").split("\n")[0].split())
    vocab = checkpoint.tgt_vocab
    assert {piece for ids in vocab.encode(without) for piece in vocab.pieces(ids)} <= every_batch
    assert assert_same_or_tied(checkpoint, sources, without, mapped, no_repeat) < len(sources) / 20
    for entry in entries:
        entry.msgstr = " ".join(word for word in entry.msgstr.split() if word != "la")
    write_po(tmp_path / "no_la/digits.po", [entry for entry in entries if entry.msgstr], "digits")
    assert sum("la" in output.split() for output in without) > len(sources) / 2
    assert not any("la" in output.split() for output in translated(f"--vmap={tmp_path / 'no_la'}"))


def test_the_map_is_made_once_and_of_the_models_language_alone(models, tmp_path, monkeypatch):
    """The service's decode.vmap_catalogs makes the map (of the package's digits catalog, not
    of the French one beside it), which the next load finds in the cache without reading a
    catalog; another catalog in the folder is another key, the same map."""
    _, folder, test = models
    cache = tmp_path / "cache/seq2seq/vmap"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    po = tmp_path / "po"
    write_po(po / "digits.po", [polib.POEntry(msgid=s, msgstr=t) for s, t in test], "digits")
    package = folder / "numbers.argosmodel"
    settings = decode_overrides(["decode.vmap=true", f"decode.vmap_catalogs={po}"])
    engine = load_models([str(package)], Config(), "auto", "cpu", settings)[0].load()
    assert (engine.config.decode.vmap, engine.config.decode.vmap_catalogs) == (True, str(po))
    [made] = cache.iterdir()

    def unread(*_):
        raise AssertionError("a catalog read")

    read = vocab_maps.read_catalogs
    monkeypatch.setattr(vocab_maps, "read_catalogs", unread)
    ArgosEngine.load(package, "cpu", catalogs=po)  # from the cache
    monkeypatch.setattr(vocab_maps, "read_catalogs", read)
    french = [polib.POEntry(msgid=s, msgstr=s) for s, _ in test]  # pieces the map lacks
    write_po(po / "fr/LC_MESSAGES/numbers.po", french, "")  # French by its path
    load_engine(model=package, device="cpu", decode=settings)
    again = sorted(set(cache.iterdir()) - {made})
    assert len(again) == 1 and again[0].read_text("utf-8") == made.read_text("utf-8")
