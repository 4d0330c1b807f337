"""benchmarks/service/pairs.py without its servers: CTranslate2 alone on a package
(common.ctranslate2_alone: our Argos engine's own call, at each setting and number of
clients), and the table that reads ours against it."""

import json
from dataclasses import replace

import pytest

from benchmarks.common import RESULTS, ctranslate2_alone
from benchmarks.service import pairs
from benchmarks.service.matrix import BEAMS
from seq2seq.decoding.argos_engine import ArgosEngine
from seq2seq.exports.argos import export_argos

from helpers import Recording

pytest.importorskip(
    "ctranslate2", reason='CTranslate2 is an optional extra: pip install ".[export]"'
)


@pytest.fixture(scope="module")
def package(trained_joint_numbers_checkpoint, tmp_path_factory):
    """A numbers model's package, and 40 of its test sentences."""
    checkpoint, test = trained_joint_numbers_checkpoint
    path = tmp_path_factory.mktemp("pairs") / "numbers.argosmodel"
    export_argos(checkpoint, path)
    return path, [source for source, _ in test[:40]]


def test_ctranslate2_alone_gives_a_package_the_argos_engines_own_calls(package):
    """At each beam, a batch of 16 sentences: after the warm-up, the call our Argos engine
    makes of them (its tokens; Argos Translate's options: replace_unknowns, length penalty
    0.2, ...), then the next 16 and the rest."""
    path, sentences = package
    engine = ArgosEngine.load(path, "cpu")
    engine.translator = recording = Recording(engine.translator)
    for beam in BEAMS.values():
        decoding = replace(engine.config.decode, beam_size=beam, batch_size=16)
        engine.translate(sentences[:16], decoding)
        ctranslate2_alone(engine, sentences, decoding, 16)
        own, _, *timed = recording.calls  # the engine's, the warm-up, the timed ones
        assert timed[0] == own and own[1]["beam_size"] == beam
        assert own[1]["replace_unknowns"] and own[1]["length_penalty"] == 0.2
        assert [len(tokens) for tokens, _ in timed] == [16, 16, 8]
        recording.calls.clear()


def test_the_limit_is_measured_at_each_setting_in_each_clients_batches(package):
    path, sentences = package
    figures = pairs.limits(path, sentences)
    assert list(figures) == list(BEAMS)
    assert all(list(by) == ["1", "16"] and min(by.values()) > 0 for by in figures.values())


def test_the_table_reads_ours_against_ctranslate2_alone_on_the_direct_pair():
    """Its columns where the run measured CTranslate2 alone: the limit at the row's clients,
    ours' requests/s over it and CPU ms over its CPU ms a sentence; "-" on the pivoted route
    (the limit is the direct pair's)."""
    results = json.loads((RESULTS / "pairs.json").read_text("utf-8"))
    assert "CTranslate2 alone" not in pairs.markdown(results)  # a run before it: none
    results["alone"] = {"greedy": {"1": 40.0, "16": 250.0}, "beam 4": {"1": 25.0, "16": 80.0}}
    lines = pairs.markdown(results).splitlines()
    header = next(line for line in lines if line.startswith("| setting |")).split(" | ")
    rows = {tuple(line.split(" | ")[:3]): line.split(" | ") for line in lines
            if line.startswith(("| greedy |", "| beam 4 |"))}  # fmt: skip
    limit = header.index("CTranslate2 alone, sentences per CPU second")
    by_cpu = header.index("ours / alone", limit + 2)
    ours = results["figures"]["beam 4"]["direct"]["16"]["ours"]
    direct = rows["| beam 4", "direct", "16"]
    assert direct[limit : limit + 2] == ["80", f"{ours['requests_per_s'] / 80:.2f}"]
    assert direct[by_cpu] == f"{ours['server_cpu_ms_per_request'] * 80 / 1000:.2f}"
    pivoted = rows["| greedy", "pivoted", "1"]
    assert [pivoted[limit], pivoted[limit + 1], pivoted[by_cpu]] == ["-", "-", "-"]
    assert len(header) == len(direct) == len(pivoted) == len(pairs.header(False)) + 3
