"""benchmarks/speed/validation.py on the seed preset's run: each engine timed in every round,
the same translations, the table."""

import json

import pytest

from benchmarks.speed import validation

pytest.importorskip(
    "ctranslate2", reason='CTranslate2 is an optional extra: pip install ".[export]"'
)


def test_each_engine_validates_the_checkpoint_alike(seed_run, monkeypatch, tmp_path):
    monkeypatch.chdir(seed_run.parent.parent)
    validation.main(["--config", "config.yaml", "--rounds", "2", "--out", str(tmp_path / "v")])
    results = json.loads((tmp_path / "v.json").read_text())
    assert [e["engine"] for e in results["engines"]] == ["torch", "ctranslate2"]
    assert all(len(e["seconds"]) == 2 and min(e["seconds"]) > 0 for e in results["engines"])
    assert results["differ"] == 0 and results["sentences"] == 9  # then the same BLEU
    assert len({e["valid_bleu"] for e in results["engines"]}) == 1
    assert "| ctranslate2 |" in (tmp_path / "v.md").read_text()
