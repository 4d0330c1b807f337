"""`translate --glossary FILE` and `evaluate --glossary FILE` (seq2seq/localization/glossary.py):
the file's terms followed (a do-not-translate entry verbatim), read for the model's pair; a bad
file one line naming it and its line, a non-zero exit, and nothing translated or written."""

import json
import shutil
import subprocess

import pytest

from seq2seq import evaluate, translate
from seq2seq.localization.glossary import GlossaryError

from helpers import ENV, HANG, command


def test_translate_follows_the_glossary(seed_run, tmp_path, capsys):
    model = str(seed_run / "best.pt")
    glossary = tmp_path / "keep.csv"
    glossary.write_text("three,three,en,digits\n")
    flags = ["--checkpoint", model, "--engine", "torch"]
    translate.main([*flags, "three is three", "nine is nine"])
    assert capsys.readouterr().out == "3 la 3\n9 la 9\n"
    translate.main([*flags, "--glossary", str(glossary), "three is three", "nine is nine"])
    kept, other = capsys.readouterr().out.splitlines()
    assert kept.split().count("three") == 2 and other == "9 la 9"  # each "three" verbatim
    glossary.write_text("three,DREI,en,digits\n")
    for way in ("mask", "annotate"):  # annotate on an untaught model: retried masked
        translate.main([*flags, "--glossary", str(glossary), "--terms", way, "three is three"])
        assert capsys.readouterr().out.split().count("DREI") == 2
    glossary.write_text("three,three,en,digits\n")
    document = tmp_path / "notes.txt"
    document.write_text("three is three\n\nnine is nine\n")
    translate.main([*flags, "--glossary", str(glossary), "--file", str(document)])
    kept, blank, other = (tmp_path / "notes.digits.txt").read_text().splitlines()
    assert kept.split().count("three") == 2 and (blank, other) == ("", "9 la 9")


def test_a_bad_glossary_is_one_line_and_nothing_is_translated(seed_run, tmp_path):
    glossary = tmp_path / "bad.tsv"
    glossary.write_text("three\tthree\nnine\t\n")
    done = subprocess.run(
        command("seq2seq.translate", "--checkpoint", str(seed_run / "best.pt"), "--engine",
                "torch", "--glossary", str(glossary), "three is three"),
        capture_output=True, text=True, env=ENV, timeout=HANG,
    )  # fmt: skip
    assert done.returncode == 1 and done.stdout == ""
    said = done.stderr.splitlines()[-1]
    assert said == f"error: {glossary}, line 2: the target term is empty", done.stderr


def test_evaluate_follows_the_glossary_and_keeps_its_hash(seed_run, tmp_path, monkeypatch, capsys):
    workdir = tmp_path / "work"
    shutil.copytree(seed_run.parent.parent, workdir)  # its config, data/ and runs/
    monkeypatch.chdir(workdir)
    glossary = workdir / "keep.tsv"
    glossary.write_text("seven\tseven\n")
    evaluate.main(["--glossary", str(glossary)])
    hypotheses = (workdir / "runs/seed/test.hyp").read_text().splitlines()
    assert hypotheses[6].split().count("seven") == 2 and hypotheses[2] == "3 la 3"
    inputs = json.loads((workdir / "runs/seed/eval.json").read_text())["inputs"]
    assert len(inputs["glossary_sha256"]) == 64
    glossary.write_text("seven\t\n")  # another glossary: decoded again, and refused
    capsys.readouterr()
    with pytest.raises(GlossaryError, match="^/.*keep.tsv, line 1: the target term is empty$"):
        evaluate.main(["--glossary", str(glossary)])
    assert "decoding" not in capsys.readouterr().out
