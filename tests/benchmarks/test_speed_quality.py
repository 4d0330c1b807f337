"""benchmarks/speed/speed_quality.py on the seed preset's run: every compute type at each
beam, without and with the vocabulary map, a table for each CPU (a second CPU's run added
beside the first), the plot."""

import itertools
import json

import pytest

from benchmarks.speed import speed_quality

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
    monkeypatch.setattr(speed_quality.common, "machine", lambda: {**measure["machine"],
                        "device_name": "another CPU"})  # fmt: skip
    speed_quality.main(["--config", "config.yaml", "--out", str(out), "--sentences", "3"])
    machines = json.loads(out.with_suffix(".json").read_text())["machines"]
    assert list(machines) == [cpu, "another CPU"]  # the first CPU's figures kept
    assert machines[cpu]["rows"] == rows
    table = out.with_suffix(".md").read_text()
    assert table.count("\n## ") == 2 and f"## {cpu}\n" in table
    assert out.with_suffix(".png").stat().st_size > 0
