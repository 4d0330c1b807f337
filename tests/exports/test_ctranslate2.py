"""CTranslate2 export: the converted model decodes the same tokens as ours (float32), greedy and
beam search, and int8 quantization scores the same within a point."""

import copy
import dataclasses
import json

import pytest
import torch

from seq2seq.decoding.batches import nbest_of_sources, search_sources
from seq2seq.decoding.confidence import Calibration
from seq2seq.decoding.ctranslate2_engine import CTranslate2Engine, ctranslate2_device
from seq2seq.decoding.engines import TorchEngine
from seq2seq.exports.ctranslate2 import export_ctranslate2
from seq2seq.support.errors import UserError
from seq2seq.support.paths import EXPORT_CONFIG
from seq2seq.tokens.special import EOS
from seq2seq.training.metrics import exact_match, sacrebleu_scores

from helpers import assert_same_or_tied, greedy_ids

pytest.importorskip(
    "ctranslate2", reason='CTranslate2 is an optional extra: pip install ".[export]"'
)


@pytest.fixture(scope="module")
def exported(trained_numbers_checkpoint, tmp_path_factory):
    """The export's folder, the test sentences, our greedy outputs of them (ids and text), the
    greedy decoding settings."""
    checkpoint, test = trained_numbers_checkpoint
    out_dir = tmp_path_factory.mktemp("export") / "ct2"
    export_ctranslate2(checkpoint, out_dir)
    sources = [s for s, _ in test]
    ids = greedy_ids(checkpoint, sources)
    greedy = dataclasses.replace(checkpoint.config.decode, beam_size=1)
    return out_dir, sources, ids, checkpoint.tgt_vocab.detokenize(ids), greedy


def greedy_or_beam_ids(model, ids: list[list[int]], decoding) -> list[list[int]]:
    return [output.ids for output in search_sources(model, ids, decoding)]


def ctranslate2_ids(out_dir, sources: list[str], decoding) -> list[list[int]]:
    """The float32 export's output ids (greedy, or beam search's best)."""
    model = CTranslate2Engine.load(out_dir, compute_type="float32")
    piece_id = model.tgt_vocab.sp.piece_to_id
    ids = [ids[: model.longest_source] for ids in model.src_vocab.encode(sources)]
    return [[piece_id(p) for p in r.hypotheses[0]] for r in model.search(ids, decoding, 1)]


@pytest.mark.same_outputs
@pytest.mark.slow
def test_float32_export_decodes_our_greedy_outputs(exported, trained_numbers_checkpoint):
    """Token for token, but where our model hesitates between two tokens (helpers.TIE)."""
    out_dir, sources, ours, texts, greedy = exported
    checkpoint = trained_numbers_checkpoint[0]
    assert len(texts) == 1000 and len(set(texts)) > 100, "the outputs should vary"
    theirs = ctranslate2_ids(out_dir, sources, greedy)
    assert_same_or_tied(checkpoint, sources, ours, theirs)


@pytest.mark.same_outputs
@pytest.mark.slow
@pytest.mark.parametrize("beam_size, alpha", [(2, 1.0), (4, 0.0), (4, 0.2), (5, 1.0)])
def test_float32_export_decodes_our_beam_outputs(
    exported, trained_numbers_checkpoint, beam_size, alpha
):
    """seq2seq/decoding/beam.py is CTranslate2's beam search: the same outputs, but for a
    sentence whose output our own search changes with rounding alone (float64 rather than
    float32, or other batches): a near-tie decides it, and rounding may tip it either way.
    (Our search before this one, with Wu et al.'s length penalty and its own stopping rule,
    gave 91 of these 1,000 outputs otherwise at beam 5, 68 at beam 2.)"""
    out_dir, sources, *_ = exported
    checkpoint = trained_numbers_checkpoint[0]
    decoding = dataclasses.replace(
        checkpoint.config.decode, beam_size=beam_size, length_penalty=alpha, precision="fp32"
    )
    ids = checkpoint.src_vocab.encode(sources)
    ours = greedy_or_beam_ids(checkpoint.model, ids, decoding)
    rounded_otherwise = [
        greedy_or_beam_ids(copy.deepcopy(checkpoint.model).double(), ids, decoding),
        greedy_or_beam_ids(checkpoint.model, ids, dataclasses.replace(decoding, batch_size=7)),
    ]
    near_ties = {i for other in rounded_otherwise for i, o in enumerate(other) if o != ours[i]}
    assert len(near_ties) <= 10
    theirs = ctranslate2_ids(out_dir, sources, decoding)
    differ = {i for i, t in enumerate(theirs) if t != ours[i]} - near_ties
    # or whose two best hypotheses our search scores within rounding (4e-7 apart seen at 1
    # thread: CTranslate2's batch took the second)
    for i in differ:
        (best, second, *_) = nbest_of_sources(checkpoint.model, [ids[i]], decoding)[0]
        assert best[0] - second[0] < 1e-5, f"sentence {i}: not a near-tie"


@pytest.mark.same_outputs
@pytest.mark.slow
@pytest.mark.parametrize("alpha", [1.0, 0.2])
def test_one_beam_search_at_the_longest_limit_is_each_sentences_at_its_own(exported, alpha):
    """beam_searched's one call, and a call again for the outputs that reach their own
    limit, give what a call a limit gives, to the score, with limits that cut some outputs
    and not others."""
    out_dir, sources, *_ = exported
    model = CTranslate2Engine.load(out_dir, compute_type="float32")
    decoding = dataclasses.replace(
        model.config.decode, beam_size=4, length_penalty=alpha, max_len_a=0.5, max_len_b=2
    )
    tokens, limits = model.pieces_and_limits(model.src_vocab.encode(sources[:300]), decoding)
    one_call = model.beam_searched(tokens, limits, decoding, 4)
    by_limit = model.by_limit(tokens, limits, decoding, 4)
    assert [f.hypotheses for f in one_call] == [f.hypotheses for f in by_limit]
    for a, b in zip(one_call, by_limit, strict=True):
        assert a.scores == pytest.approx(b.scores, abs=1e-5)
    cut = [len(f.hypotheses[0]) == limit for f, limit in zip(by_limit, limits, strict=True)]
    assert 0 < sum(cut) < len(cut), "some outputs should reach their limits, some not"


@pytest.mark.same_outputs
@pytest.mark.slow
def test_an_export_with_a_wrong_position_table_is_caught(exported, trained_numbers_checkpoint):
    """The comparison above fails on a real mismatch: target positions off by one."""
    out_dir, sources, ours, _, greedy = exported
    checkpoint = trained_numbers_checkpoint[0]
    wrong = copy.deepcopy(checkpoint)
    positions = wrong.model.tgt_embed.positions
    positions[:-1] = positions[1:].clone()
    export_ctranslate2(wrong, out_dir.with_name("wrong"))
    theirs = ctranslate2_ids(out_dir.with_name("wrong"), sources, greedy)
    with pytest.raises(AssertionError, match="not a tie"):
        assert_same_or_tied(checkpoint, sources, ours, theirs)


@pytest.mark.same_outputs
@pytest.mark.slow
def test_ctranslate2_forbids_the_repeats_that_ours_forbids(exported, trained_numbers_checkpoint):
    """decode.no_repeat_ngram is CTranslate2's no_repeat_ngram_size: at 3, which changes
    hundreds of this model's outputs, the export's greedy outputs are still ours."""
    out_dir, sources, default, _, greedy = exported  # default: decode.no_repeat_ngram 7
    checkpoint = trained_numbers_checkpoint[0]
    ours = greedy_ids(checkpoint, sources, no_repeat_ngram=3)
    assert sum(a != b for a, b in zip(ours, default, strict=True)) > 100
    theirs = ctranslate2_ids(out_dir, sources, dataclasses.replace(greedy, no_repeat_ngram=3))
    assert_same_or_tied(checkpoint, sources, ours, theirs, no_repeat=3)


@pytest.mark.same_outputs
@pytest.mark.slow
def test_shared_embeddings_are_one_matrix_in_the_export_and_decode_our_outputs(
    trained_shared_numbers_checkpoint, trained_joint_numbers_checkpoint, tmp_path
):
    """model.bin holds the one matrix once: one (V, D) float32 matrix less than the same
    model's with the source embedding apart (the same vocabulary)."""
    checkpoint, test = trained_shared_numbers_checkpoint
    joint = trained_joint_numbers_checkpoint[0]
    assert checkpoint.src_vocab.model_bytes == joint.src_vocab.model_bytes
    for name, exported in (("shared", checkpoint), ("apart", joint)):
        export_ctranslate2(exported, tmp_path / name)
    sizes = {name: (tmp_path / name / "model.bin").stat().st_size for name in ("shared", "apart")}
    matrix = len(checkpoint.src_vocab) * checkpoint.model.cfg.d_model * 4
    assert sizes["apart"] - sizes["shared"] == pytest.approx(matrix, abs=500)
    sources = [s for s, _ in test]
    greedy = dataclasses.replace(checkpoint.config.decode, beam_size=1)
    theirs = ctranslate2_ids(tmp_path / "shared", sources, greedy)
    assert_same_or_tied(checkpoint, sources, greedy_ids(checkpoint, sources), theirs)


@pytest.mark.slow
def test_int8_loses_at_most_one_point_of_exact_match_and_bleu(exported, trained_numbers_checkpoint):
    """This barely trained model is unsure of many tokens, so int8 changes about a third of its
    outputs, but scores them the same within a point. (On the default experiment's trained
    model, int8 changed none of the 1,000 test outputs.)"""
    out_dir, sources, _, ours, greedy = exported
    references = [t for _, t in trained_numbers_checkpoint[1]]
    int8 = CTranslate2Engine.load(out_dir, compute_type="int8").translate(sources, greedy).outputs
    assert int8 != ours, "int8 rounds the weights: some outputs differ"
    assert abs(exact_match(int8, references) - exact_match(ours, references)) <= 0.01
    bleu = [sacrebleu_scores(out, references)["bleu"] for out in (int8, ours)]
    assert abs(bleu[0] - bleu[1]) <= 1.0


def test_empty_lines_give_empty_lines_and_export_replaces_an_earlier_one(
    exported, trained_numbers_checkpoint
):
    out_dir, *_, greedy = exported
    export_ctranslate2(trained_numbers_checkpoint[0], out_dir)  # again, over the first
    model = CTranslate2Engine.load(out_dir)
    assert model.translate(["", "three is three", ""], greedy).outputs[::2] == ["", ""]
    assert json.loads((out_dir / EXPORT_CONFIG).read_text())["model"]["d_model"] == 64


def test_a_folder_that_is_not_an_export_is_refused(trained_numbers_checkpoint, tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="not an earlier export"):
        export_ctranslate2(trained_numbers_checkpoint[0], tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"
    with pytest.raises(UserError, match="not an exported model"):
        CTranslate2Engine.load(tmp_path)


def test_loading_leaves_torch_its_threads(exported):
    """CTranslate2 sets the OpenMP thread count it shares with torch; once it did so for the
    rest of the process, and `make bench` then measured torch on one thread."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        CTranslate2Engine.load(exported[0])
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_our_device_names_in_ctranslate2s_terms():
    assert ctranslate2_device("auto", cuda_devices=0) == ("cpu", 0)
    assert ctranslate2_device("auto", cuda_devices=2) == ("cuda", 0)
    assert ctranslate2_device("cpu", cuda_devices=2) == ("cpu", 0)
    assert ctranslate2_device("cuda", cuda_devices=2) == ("cuda", 0)
    assert ctranslate2_device("cuda:1", cuda_devices=2) == ("cuda", 1)
    with pytest.raises(UserError, match="'cuda:2' requested but CTranslate2 sees 2 GPU"):
        ctranslate2_device("cuda:2", cuda_devices=2)
    for name in ("mps", "gpu"):
        with pytest.raises(UserError, match="CTranslate2 runs on auto, cpu, cuda or cuda:N"):
            ctranslate2_device(name, cuda_devices=2)


def test_an_int8_export_leaves_the_models_weights_as_they_were(
    trained_numbers_checkpoint, tmp_path
):
    """CTranslate2 quantizes a spec's arrays in place: the export hands it copies, so the
    model in memory is the same after an int8 export (a later export or decoding uses it)."""
    checkpoint = trained_numbers_checkpoint[0]
    before = {name: t.clone() for name, t in checkpoint.model.state_dict().items()}
    export_ctranslate2(checkpoint, tmp_path / "int8", "int8")
    after = checkpoint.model.state_dict()
    assert all(torch.equal(before[name], after[name]) for name in before)


@pytest.mark.same_outputs
@pytest.mark.slow
def test_no_engine_answers_an_empty_output_and_both_score_it_alike(
    trained_numbers_checkpoint, tmp_path
):
    """A model that puts EOS first at every step (its last norm gives one output, EOS's row
    of the generator): no output is empty, greedy or beam, ours and CTranslate2's
    (min_decoding_length), and their scores agree: EOS is forbidden before the softmax."""
    checkpoint = copy.deepcopy(trained_numbers_checkpoint[0])
    norm, generator = checkpoint.model.decoder_norm, checkpoint.model.generator
    with torch.no_grad():
        norm.weight.zero_()
        norm.bias.copy_(generator.weight[EOS] * 10 / generator.weight[EOS].norm())
    export_ctranslate2(checkpoint, tmp_path / "eos")
    sources = ["one is one", "three hundred and five is seven"]
    theirs = CTranslate2Engine.load(tmp_path / "eos", compute_type="float32")
    decoding = dataclasses.replace(checkpoint.config.decode, beam_size=1, precision="fp32")
    greedy = TorchEngine(checkpoint).translate(sources, decoding).outputs
    assert all(greedy) and greedy == theirs.translate(sources, decoding).outputs
    beam = dataclasses.replace(decoding, beam_size=4)
    ours = TorchEngine(checkpoint).translate_nbest(sources, beam).outputs
    for our, their in zip(ours, theirs.translate_nbest(sources, beam).outputs, strict=True):
        assert our[0][1] and our[0][1] == their[0][1]
        assert our[0][0] == pytest.approx(their[0][0], abs=1e-3)


@pytest.mark.parametrize("beam_size, alpha", [(1, 0.0), (4, 0.2), (4, 1.0)])
def test_both_engines_give_each_translation_the_same_confidence_signal(
    exported, trained_numbers_checkpoint, beam_size, alpha
):
    """The signal (the mean log-probability a piece, EOS counted) of CTranslate2's scores is
    ours, greedy and beam, whatever the length penalty the search ranks by; an empty line's
    is 0."""
    out_dir, sources, *_ = exported
    checkpoint = trained_numbers_checkpoint[0]
    decoding = dataclasses.replace(
        checkpoint.config.decode, beam_size=beam_size, length_penalty=alpha, precision="fp32"
    )
    sentences = [*sources[:40], ""]
    ours = TorchEngine(checkpoint).translate(sentences, decoding)
    theirs = CTranslate2Engine.load(out_dir, compute_type="float32").translate(sentences, decoding)
    same = [i for i, (a, b) in enumerate(zip(ours.outputs, theirs.outputs, strict=True)) if a == b]
    assert len(same) >= 35 and ours.signals[-1] == theirs.signals[-1] == 0.0
    assert all(ours.signals[i] < 0 for i in same[:-1])
    for i in same:
        assert ours.signals[i] == pytest.approx(theirs.signals[i], abs=1e-3)
    assert CTranslate2Engine.load(out_dir).calibration is None  # trained with none


def test_a_calibrated_checkpoints_export_keeps_its_calibration(
    trained_numbers_checkpoint, tmp_path
):
    checkpoint = trained_numbers_checkpoint[0]
    calibration = Calibration(1.5, 2.0, sentences=40, acceptable=0.7)
    info = {**checkpoint.info, "confidence": calibration.to_dict()}
    export_ctranslate2(dataclasses.replace(checkpoint, info=info), tmp_path / "calibrated")
    assert CTranslate2Engine.load(tmp_path / "calibrated").calibration == calibration
