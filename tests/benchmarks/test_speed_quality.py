"""benchmarks/speed/speed_quality.py on the seed preset's run: every compute type at each
beam, without and with the vocabulary map, each against CTranslate2 alone on the same
export (common.ctranslate2_alone: the engine's own call), a table for each CPU (a second
CPU's run added beside the first), the plot."""

import itertools
import json
from dataclasses import replace

import pytest

from benchmarks.common import ctranslate2_alone
from benchmarks.speed import speed_quality
from seq2seq.checkpoint import load_checkpoint
from seq2seq.decoding.ctranslate2_engine import CTranslate2Engine
from seq2seq.exports.ctranslate2 import export_ctranslate2

from helpers import Recording

ctranslate2 = pytest.importorskip(
    "ctranslate2", reason='CTranslate2 is an optional extra: pip install ".[export]"'
)
pytest.importorskip("matplotlib", reason='the plot needs matplotlib: pip install ".[plot]"')


def test_each_type_and_beam_is_measured_and_each_cpu_keeps_its_table(
    seed_run, monkeypatch, tmp_path
):
    monkeypatch.chdir(seed_run.parent.parent)
    out = tmp_path / "sq"
    speed_quality.main(["--config", "config.yaml", "--out", str(out)])
    [(cpu, measure)] = json.loads(out.with_suffix(".json").read_text())["machines"].items()
    types = ctranslate2.get_supported_compute_types("cpu")
    rows = measure["rows"]
    settings = {(r["compute_type"], r["beam"], r["vmap"]) for r in rows}
    assert settings == set(itertools.product(types, (1, 4), (False, True)))  # it has a map
    assert all(r["sentences"] == 9 and r["sentences_per_cpu_second"] > 0 for r in rows)
    assert all(r["alone_sentences_per_cpu_second"] > 0 for r in rows)
    first = out.with_suffix(".md").read_text().split("\n| --- |")[1].splitlines()[1]
    share = rows[0]["sentences_per_cpu_second"] / rows[0]["alone_sentences_per_cpu_second"]
    assert first.endswith(f" | {rows[0]['alone_sentences_per_cpu_second']:,.1f} | {share:.2f} |")
    monkeypatch.setattr(speed_quality.common, "machine", lambda: {**measure["machine"],
                        "device_name": "another CPU"})  # fmt: skip
    speed_quality.main(["--config", "config.yaml", "--out", str(out), "--sentences", "3"])
    machines = json.loads(out.with_suffix(".json").read_text())["machines"]
    assert list(machines) == [cpu, "another CPU"]  # the first CPU's figures kept
    assert machines[cpu]["rows"] == rows
    table = out.with_suffix(".md").read_text()
    assert table.count("\n## ") == 2 and f"## {cpu}\n" in table
    assert out.with_suffix(".png").stat().st_size > 0


def test_ctranslate2_alone_gives_an_export_the_engines_own_call(seed_run, tmp_path):
    """CTranslate2 alone on an export: after its warm-up, the very call our engine makes
    (greedy: every sentence in one call, at the longest limit), the empty sentence left out
    as the engine leaves it; `per_call` at a time, the same sentences in order."""
    export_ctranslate2(load_checkpoint(seed_run / "best.pt"), tmp_path)
    engine = CTranslate2Engine.load(tmp_path, "cpu", "float32")
    engine.translator = recording = Recording(engine.translator)
    sentences = ["one is one", "", "two is two", "three is three", "seven is seven",
                 "nine is nine", "four is four"]  # fmt: skip
    decoding = replace(engine.config.decode, beam_size=1, batch_size=4)
    engine.translate(sentences, decoding)
    assert ctranslate2_alone(engine, sentences, decoding, len(sentences)) > 0
    own, _, *timed = recording.calls  # the engine's, the warm-up, the timed ones
    assert timed == [own] and len(own[0]) == 6
    recording.calls.clear()
    ctranslate2_alone(engine, sentences, decoding, 4)
    _, *timed = recording.calls
    assert [tokens for tokens, _ in timed] == [own[0][:3], own[0][3:]]
    assert all(options["max_batch_size"] == 4 for _, options in timed)
