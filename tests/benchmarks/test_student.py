"""benchmarks/speed/student.py on the seed preset's run, as both teacher and student: every
type, search and map measured, one float32 BLEU with and without the map, the
table against the teacher."""

import json

import pytest

from benchmarks.speed import student

pytest.importorskip(
    "ctranslate2", reason='CTranslate2 is an optional extra: pip install ".[export]"'
)


def test_each_setting_of_both_models_is_measured(seed_run, monkeypatch, tmp_path):
    monkeypatch.chdir(seed_run.parent.parent)
    out = tmp_path / "s"
    student.main(["--teacher", "config.yaml", "--student", "config.yaml", "--out", str(out)])
    rows = json.loads(out.with_suffix(".json").read_text())["rows"]
    settings = {(r["compute_type"], r["beam_size"], r["vmap"]) for r in rows}
    assert len(rows) == 16 and len(settings) == 8
    assert all(r["sentences_per_cpu_second"] > 0 for r in rows)
    assert len({r["bleu"] for r in rows if r["compute_type"] == "float32"}) == 1
    table = out.with_suffix(".md").read_text()
    assert "| student | " in table and "make bench-student" in table
