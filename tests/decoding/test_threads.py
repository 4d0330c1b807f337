"""serve.threads: a service's engine decodes as many batches at once as it is told, or as was
measured fastest on its checkpoint's validation sentences on the process's share of the cores
(kept in the export, measured once); a command decodes one batch at a time on one thread.
Which split wins on this CPU is not asserted: the choice is tested on given figures."""

import json
import os
import shutil

import pytest

from seq2seq.config import ServeConfig
from seq2seq.decoding import threads
from seq2seq.decoding.engine_choice import load_engine
from seq2seq.decoding.exported import export_folder
from seq2seq.decoding.threads import fastest, service_split, splits
from seq2seq.support.paths import EXPORT_THREADS

pytest.importorskip(
    "ctranslate2", reason='CTranslate2 is an optional extra: pip install ".[export]"'
)


def test_the_splits_of_the_cores_and_the_fastest_with_fewer_decoders_on_a_tie():
    assert splits(1) == [(1, 1)]
    assert splits(4) == [(1, 4), (2, 2), (4, 1)]
    assert splits(6) == [(1, 6), (2, 3), (3, 2), (6, 1)]
    assert fastest({"1x2": 100.0, "2x1": 180.0}) == "2x1"
    assert fastest({"1x4": 90.0, "2x2": 120.0, "4x1": 120.0}) == "2x2"


def test_a_service_split_as_set_or_on_its_share_of_the_cores(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert service_split(ServeConfig(threads=3)) == (3, 1, "serve.threads")
    assert service_split(ServeConfig(workers=4)) == (1, 1, "auto: one core")
    counted = []
    measured = service_split(ServeConfig(workers=2), lambda count: counted.append(count))
    assert counted == [2] and measured == (1, 1, "auto: no validation split to measure on")


@pytest.fixture
def trained_here(seed_run, tmp_path, monkeypatch):
    """A copy of the seed run's best.pt, in the directory where its corpus was made (its
    validation split in data/seed/ relative to it), as the working directory, on 2 cores."""
    monkeypatch.chdir(seed_run.parent.parent)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    return shutil.copy(seed_run / "best.pt", tmp_path / "best.pt")


def test_a_services_engine_measures_the_split_once_keeps_it_and_decodes_with_it(
    trained_here, monkeypatch
):
    engine = load_engine(checkpoint=trained_here, serve=ServeConfig())
    kept = export_folder(trained_here) / EXPORT_THREADS
    record = json.loads(kept.read_text())
    assert set(record["figures"]) == {"1x2", "2x1"} and record["cores"] == 2
    assert record["chosen"] == fastest(record["figures"])
    decoders, each = map(int, record["chosen"].split("x"))
    assert engine.replicas == decoders and engine.fast.translator.num_translators == decoders
    batches = f"{decoders} batches at once" if decoders > 1 else "a batch at a time"
    why = "auto: the fastest on 9 validation sentences"
    said = f"{batches}, {each} thread{'s' * (each > 1)} each ({why})"
    assert engine.facts()["threads"] == said
    assert engine.translate(["one is one"], engine.config.decode).outputs == ["1 la 1"]

    def measured_again(*args):
        raise AssertionError("measured again")

    monkeypatch.setattr(threads, "measured", measured_again)  # read, not measured
    assert load_engine(checkpoint=trained_here, serve=ServeConfig()).facts()["threads"] == said
    command = load_engine(checkpoint=trained_here)  # not a service: one batch, one thread
    assert (command.replicas, command.facts()["threads"]) == (1, "a batch at a time, 1 thread each")
    set_ = load_engine(checkpoint=trained_here, serve=ServeConfig(threads=3))
    assert (
        set_.replicas == 3
        and set_.facts()["threads"] == "3 batches at once, 1 thread each (serve.threads)"
    )
