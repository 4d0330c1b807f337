"""The commands of the docs, run as a user types them: offline, in an empty home.

A page's command lines are those of its fenced blocks without a language, in a section; a
line ending in `# with the internet` needs it and is left out, and so are `pip install` lines
(tests/test_setup.py installs the extras). Every other line runs with bash, in a folder that
holds what the page's earlier steps made, with HOME an empty folder and every HTTP request sent
to a closed port, so that a command that downloads fails here as it would offline."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from seq2seq.checkpoint import save_checkpoint

from helpers import HANG, ROOT

ONLINE = "# with the internet"


def commands(page: str, section: str) -> list[str]:
    """The command lines of the fenced blocks of `section` (a `## ` heading) in `page`."""
    text = (ROOT / page).read_text("utf-8")
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```\n(.*?)^```", body, re.MULTILINE | re.DOTALL)
    lines = [line for block in blocks for line in block.splitlines() if line.strip()]
    return [line for line in lines if not line.endswith(ONLINE) and not line.startswith("pip ")]


def offline(home: Path) -> dict[str, str]:
    """The environment of a user without the internet and with an empty home: this Python's
    folder first on PATH (its python, its argos-translate), no XDG folders set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    closed = "http://127.0.0.1:9"  # the discard port: nothing listens
    return {
        **env, "HOME": str(home), "PATH": f"{Path(sys.executable).parent}:{env['PATH']}",
        "http_proxy": closed, "https_proxy": closed, "HTTP_PROXY": closed,
        "HTTPS_PROXY": closed, "no_proxy": "", "PYTHONPATH": str(ROOT),
    }  # fmt: skip


@pytest.mark.slow
def test_the_argos_commands_of_the_export_page_run_offline(
    trained_joint_numbers_checkpoint, tmp_path
):
    pytest.importorskip("argostranslate", reason="Argos Translate is an optional extra")
    checkpoint = trained_joint_numbers_checkpoint[0]
    parts = (checkpoint.model, checkpoint.src_vocab, checkpoint.tgt_vocab, {"step": 1})
    save_checkpoint(tmp_path / "runs/numbers/best.pt", checkpoint.config, *parts)
    (tmp_path / "home").mkdir()
    lines = commands("docs/export.md", "Argos Translate and LibreTranslate")
    assert len(lines) == 4 and lines[-1].startswith("ARGOS_CHUNK_TYPE=SPACY argos-translate")
    for line in lines:
        done = subprocess.run(
            ["bash", "-c", line], cwd=tmp_path, env=offline(tmp_path / "home"),
            capture_output=True, text=True, timeout=HANG,
        )  # fmt: skip
        assert done.returncode == 0, (line, done.stderr[-2000:])
    assert done.stdout.strip() and "Traceback" not in done.stderr
