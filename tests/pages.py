"""The docs' pages read as a user reads them, and run as a user runs them: a section's command
lines, code blocks and transcripts; a fresh clone of the repository; an offline, empty home."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from helpers import HANG, ROOT

ONLINE = "# with the internet"


def section_text(page: str, section: str | None) -> str:
    """The text of `section` (a `## ` heading) in `page`; None: the text above the first."""
    text = (ROOT / page).read_text("utf-8")
    if section is not None:
        text = text.split(f"\n## {section}\n", 1)[1]
    return text.split("\n## ", 1)[0]


def fenced_blocks(page: str, section: str | None) -> list[tuple[str, str]]:
    """The fenced blocks of `section` (a `## ` heading) in `page`: (language, text)."""
    blocks, language, lines = [], None, []
    for line in section_text(page, section).splitlines():
        if not line.startswith("```"):
            lines.append(line)
        elif language is None:  # a block opens
            language, lines = line[3:].strip(), []
        else:
            blocks.append((language, "\n".join(lines)))
            language = None
    return blocks


def commands(page: str, section: str | None) -> list[str]:
    """The command lines of the blocks without a language of `section` in `page`."""
    blocks = [text for language, text in fenced_blocks(page, section) if not language]
    lines = [line for block in blocks for line in block.splitlines() if line.strip()]
    return [line for line in lines if not is_online(line) and not line.startswith("pip ")]


def code_blocks(page: str, section: str) -> list[str]:
    """The Python blocks (```python) of `section` in `page` but those that need the internet
    (a line ending in `# with the internet`)."""
    blocks = [text for language, text in fenced_blocks(page, section) if language == "python"]
    return [text for text in blocks if not any(map(is_online, text.splitlines()))]


def is_online(line: str) -> bool:
    return line.endswith(ONLINE)


def transcript(page: str, section: str | None) -> list[tuple[str, list[str]]]:
    """The `$ command` lines of the transcripts (blocks without a language whose lines begin
    with one) of `section` in `page`, each with the lines the page shows it printing."""
    shown: list[tuple[str, list[str]]] = []
    for language, text in fenced_blocks(page, section):
        if language or not text.startswith("$ "):
            continue
        for line in filter(str.strip, text.splitlines()):
            if line.startswith("$ "):
                shown.append((line[2:], []))
            else:
                shown[-1][1].append(line)
    return shown


def fresh_clone(folder: Path) -> Path:
    """The project's files as a fresh clone has them (git's tracked files), in `folder`."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    for name in filter(None, listed.stdout.decode().split("\0")):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, folder / name)
    return folder


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


def run_each(lines: list[str], project: Path, env: dict[str, str]) -> None:
    """Each command line with bash in `project`: each ends with 0, without a traceback."""
    for line in lines:
        done = subprocess.run(
            ["bash", "-c", line], cwd=project, env=env, capture_output=True, text=True,
            timeout=HANG,
        )  # fmt: skip
        assert done.returncode == 0, (line, (done.stdout + done.stderr)[-3000:])
        assert "Traceback" not in done.stderr, line
