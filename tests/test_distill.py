"""seq2seq/distill.py: a teacher's translations of its training sources (and of more files),
line for line, resumed after the last whole line a stopped run wrote, and not redone."""

import shutil
from pathlib import Path

import pytest

from seq2seq import distill
from seq2seq.config import load_config
from seq2seq.decoding.engine_choice import load_engine
from seq2seq.support.errors import UserError
from seq2seq.translate import translate_lines


@pytest.fixture
def teacher(seed_run, tmp_path, monkeypatch):
    """A copy of the seed run's folder as the working directory: its config's paths, the
    distilled pair's (train.<src>, train.<tgt>) and the training sources."""
    shutil.copytree(seed_run.parent.parent, tmp_path / "work")
    monkeypatch.chdir(tmp_path / "work")
    config = load_config("config.yaml")
    out = Path("data/seed_distilled")
    corpus = config.corpus
    sources = (config.data_dir / "train.src").read_text().splitlines()
    return out / f"train.{corpus.src_lang}", out / f"train.{corpus.tgt_lang}", sources


def run(*args: str) -> None:
    distill.main(["--config", "config.yaml", "--engine", "torch", *args])


def teachers(lines: list[str]) -> list[str]:
    """What translate answers for `lines`, each whole, beam 4: the teacher's translations."""
    decode = {"beam_size": 4, "placeholders": "off"}
    engine = load_engine(load_config("config.yaml"), choice="torch", decode=decode)
    return translate_lines(engine, lines)


def test_the_sources_and_more_files_are_translated_line_for_line(teacher, tmp_path):
    src_file, tgt_file, sources = teacher
    more = tmp_path / "more.txt"
    more.write_text("three is three\n\nseven is seven\n")
    run(str(more))
    lines = [*sources, "three is three", "", "seven is seven"]
    assert src_file.read_text().split("\n")[:-1] == lines
    assert tgt_file.read_text().split("\n")[:-1] == teachers(lines)
    assert not list(src_file.parent.glob("*.partial"))


def test_a_stopped_run_resumes_after_its_last_whole_line_and_a_done_one_is_kept(teacher):
    src_file, tgt_file, sources = teacher
    partial = tgt_file.with_name(tgt_file.name + ".partial")
    src_file.parent.mkdir(parents=True)
    src_file.write_text("".join(line + "\n" for line in sources))
    partial.write_text("mine\nmine too\ntorn")  # two lines done, a third cut as it was written
    run()
    assert tgt_file.read_text().split("\n")[:-1] == ["mine", "mine too", *teachers(sources[2:])]
    tgt_file.write_text("kept\n")
    run()  # done: nothing is translated again
    assert tgt_file.read_text() == "kept\n"


def test_other_sources_start_over_and_a_missing_one_is_an_error(teacher, tmp_path):
    src_file, tgt_file, sources = teacher
    src_file.parent.mkdir(parents=True)
    src_file.write_text("another source\n")
    tgt_file.write_text("its translation\n")
    run()
    assert src_file.read_text().split("\n")[:-1] == sources
    assert tgt_file.read_text().split("\n")[:-1] == teachers(sources)
    with pytest.raises(UserError, match="cannot read .*missing.txt: No such file"):
        run(str(tmp_path / "missing.txt"))
