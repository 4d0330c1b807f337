"""The commands of the docs, run as a user types them: offline, in an empty home.

A page's command lines are those of its fenced blocks without a language, in a section; a line
ending in `# with the internet` needs it and is left out (in Python, with its block), and so are
`pip install` lines (tests/test_setup.py installs the extras). Every other line runs with bash,
in a folder that holds what the page's earlier steps made, with HOME an empty folder and every
HTTP request sent to a closed port, so that a command that downloads fails here as it would
offline; a section's Python blocks run after its command lines. A transcript (`$ command` lines,
each followed by what it prints) must print what the page shows."""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from seq2seq.checkpoint import save_checkpoint

from helpers import HANG
from pages import code_blocks, commands, fenced_blocks, fresh_clone, offline, transcript

EXPORTS = [  # export.md's sections: the package each needs, and its command lines
    ("CTranslate2", "ctranslate2", 3),
    ("Argos Translate and LibreTranslate", "argostranslate", 4),
    ("Hugging Face", "transformers", 1),
]


@pytest.mark.slow
@pytest.mark.parametrize("section, package, count", EXPORTS)
def test_the_commands_of_the_export_page_run_offline(
    trained_joint_numbers_checkpoint, tmp_path, section, package, count
):
    pytest.importorskip(package, reason="an optional extra (.[dev] has it)")
    checkpoint = trained_joint_numbers_checkpoint[0]
    parts = (checkpoint.model, checkpoint.src_vocab, checkpoint.tgt_vocab, {"step": 1})
    save_checkpoint(tmp_path / "runs/numbers/best.pt", checkpoint.config, *parts)
    (tmp_path / "input.txt").write_text("three is three\nfive is five\n")  # the user's text
    (tmp_path / "home").mkdir()
    lines = commands("docs/export.md", section)
    assert len(lines) == count
    programs = [["bash", "-c", line] for line in lines]
    programs += [[sys.executable, "-c", code] for code in code_blocks("docs/export.md", section)]
    for program in programs:
        done = subprocess.run(
            program, cwd=tmp_path, env=offline(tmp_path / "home"),
            capture_output=True, text=True, timeout=HANG,
        )  # fmt: skip
        assert done.returncode == 0, (program, done.stderr[-2000:])
        assert "Traceback" not in done.stderr
    assert done.stdout.strip()  # the last one translates


@pytest.mark.slow
def test_the_mistakes_on_the_getting_started_page_end_as_it_shows(tmp_path):
    project = fresh_clone(tmp_path / "project")
    (tmp_path / "home").mkdir()
    shown = transcript("docs/getting-started.md", "Configs and errors")
    assert len(shown) == 3
    for command, printed in shown:
        done = subprocess.run(
            ["bash", "-c", command], cwd=project, env=offline(tmp_path / "home"),
            capture_output=True, text=True, timeout=HANG,
        )  # fmt: skip
        assert done.returncode != 0, command
        assert (done.stdout + done.stderr).splitlines() == printed, command


SHORT = [  # make's ARGS, from the environment: the default experiment, small and short
    "corpus.train_size=2000", "corpus.valid_size=50", "corpus.test_size=50",
    "model.d_model=32", "model.d_ff=64", "train.max_steps=20", "train.eval_every=20",
]  # fmt: skip


@pytest.mark.slow
def test_the_readme_runs_as_written_in_a_fresh_clone(tmp_path):
    """`make all`, then the transcript in the shell it activates; the model is a short run's,
    so its translations are checked for their count, not their digits. (`make test` is the
    suite that runs this.)"""
    venv = Path(sys.executable).parent.parent
    if not (venv / "bin/activate").exists():
        pytest.skip("the tests run outside a virtual environment: nothing to activate")
    project = fresh_clone(tmp_path / "project")
    (project / ".venv").symlink_to(venv)  # the environment `make all` made
    (project / ".installed-core").touch()  # installed: make's PYTHON below is that venv's
    (tmp_path / "home").mkdir()
    env = offline(tmp_path / "home") | {"ARGS": " ".join(SHORT), "PYTHON": sys.executable}
    lines = [line for line in commands("README.md", None) if not line.startswith("$ ")]
    assert lines[0].startswith("make all") and lines[1].startswith("make test")
    done = subprocess.run(
        ["bash", "-c", lines[0]], cwd=project, env=env, capture_output=True, text=True,
        timeout=HANG,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    shown = transcript("README.md", None)
    script = "set -e\n" + "\n".join(f"{command}\necho ---" for command, _ in shown)
    done = subprocess.run(
        ["bash", "-c", script], cwd=project, env=env, capture_output=True, text=True,
        timeout=HANG,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    printed = [part.splitlines() for part in done.stdout.split("---\n")[:-1]]
    assert [len(lines) for lines in printed] == [len(lines) for _, lines in shown]


def small_default_config(project: Path) -> None:
    """The clone's config.yaml made small and short (the numbers experiment still): what the
    page's commands train takes seconds, not minutes."""
    config = yaml.safe_load((project / "config.yaml").read_text())
    config["corpus"].update(train_size=2000, valid_size=50, test_size=50)
    config["model"].update(d_model=32, d_ff=64)
    config["train"].update(max_steps=60, eval_every=60, warmup_steps=20, batch_tokens=500)
    (project / "config.yaml").write_text(yaml.safe_dump(config))


def fine_tuning_corpus(project: Path) -> None:
    """The Fine-tuning section's configs/mine.yaml (its YAML block) and the pairs beside it
    (the user's own: here, lines of the numbers corpus)."""
    [config] = [text for language, text in fenced_blocks(GETTING_STARTED, "Training")
                if language == "yaml"]  # fmt: skip
    (project / "configs/mine.yaml").write_text(config)
    src = (project / "data/numbers/train.src").read_text().splitlines()
    tgt = (project / "data/numbers/train.tgt").read_text().splitlines()
    for split, lines in (("train", range(0, 300)), ("valid", range(300, 330)),
                         ("test", range(330, 360))):  # fmt: skip
        rows = "".join(f"{src[i]}\t{tgt[i]}\n" for i in lines)
        (project / f"configs/mine.{split}.tsv").write_text(rows)


GETTING_STARTED = "docs/getting-started.md"
USAGE_PRINTS = [2, 2, 1, 1, 3, 1, 1, 0, 1, 1]  # output lines of the Usage block's translations


@pytest.mark.slow
def test_the_getting_started_commands_run_as_written_in_a_fresh_clone(tmp_path):
    """The Usage and Training sections' command lines, one after the other in a fresh clone
    whose config.yaml is made small; each ends well, and each translation prints a line per
    sentence (or per n-best entry)."""
    venv = Path(sys.executable).parent.parent
    project = fresh_clone(tmp_path / "project")
    (project / ".venv").symlink_to(venv)
    (project / ".installed-core").touch()
    small_default_config(project)
    (tmp_path / "home").mkdir()
    env = offline(tmp_path / "home") | {"PYTHON": sys.executable}
    usage, training = commands(GETTING_STARTED, "Usage"), commands(GETTING_STARTED, "Training")
    assert len(usage) == 17 and len(training) == 3
    printed = []
    for number, line in enumerate(usage + training):
        if number == len(usage):
            fine_tuning_corpus(project)
        done = subprocess.run(
            ["bash", "-c", line], cwd=project, env=env, stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=HANG,
        )  # fmt: skip
        assert done.returncode == 0, (line, done.stderr[-2000:])
        assert "Traceback" not in done.stderr, line
        if (
            line.startswith("python -m seq2seq.translate")
            or "| python -m seq2seq.translate" in line
        ):
            printed.append(len(done.stdout.splitlines()))
    assert printed == USAGE_PRINTS
    assert (project / "avg.pt").exists() and (project / "runs/mine/eval.json").exists()
    for picture in ("attention.png", "curves.png"):
        assert (project / "runs/numbers" / picture).stat().st_size > 0
