"""The documentation: the site builds with `mkdocs build --strict`, a broken link fails that
build, and the README stays a front page whose links all point to files that exist."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def build(config: Path, site: Path) -> subprocess.CompletedProcess:
    """`mkdocs build --strict` of `config` into `site`, run from elsewhere than the project."""
    # Not --quiet: it hides the warnings from the count that --strict fails on (mkdocs 1.6).
    command = [sys.executable, "-m", "mkdocs", "build", "--strict"]
    command += ["--config-file", str(config), "--site-dir", str(site)]
    return subprocess.run(command, cwd=site.parent, capture_output=True, text=True)


def test_site_builds_strict(tmp_path):
    result = build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "site/index.html").is_file()
    assert (tmp_path / "site/walkthrough.py").is_file()  # learn.md links to it


@pytest.fixture
def docs_copy(tmp_path):
    """A copy of what the site is built from: mkdocs.yml, docs/ and the included files."""
    copy = tmp_path / "project"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy)
    shutil.copy(README, copy)
    for included in [*ROOT.glob("benchmarks/**/*.md"), *ROOT.glob("examples/results/*.md")]:
        target = copy / included.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(included, target)
    return copy


BROKEN = {  # a line appended to a file of the copy
    "missing page": ("docs/index.md", "[a page](no-such-page.md)"),
    "missing heading": ("docs/index.md", "[a heading](learn.md#no-such-heading)"),
    "outside docs/": ("docs/index.md", "[a source file](../seq2seq/train.py)"),
    "missing included file": ("docs/index.md", '--8<-- "benchmarks/no-such-table.md"'),
    "page not in the nav": ("docs/no-such-entry.md", "# A page the nav lacks"),
}


@pytest.mark.parametrize(("path", "line"), BROKEN.values(), ids=BROKEN.keys())
def test_broken_link_fails_the_build(docs_copy, path, line):
    assert build(docs_copy / "mkdocs.yml", docs_copy / "site").returncode == 0
    with open(docs_copy / path, "a", encoding="utf-8") as page:
        page.write(f"\n{line}\n")
    assert build(docs_copy / "mkdocs.yml", docs_copy / "site").returncode != 0


def test_readme_is_a_front_page():
    assert README.stat().st_size < 10_000
    lines = README.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "# seq2seq"
    assert lines[2] == "```"
    assert lines[3].startswith("make all") and lines[4].startswith("make test")


def test_readme_links_point_to_files_in_the_repository():
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert links
    for link in links:
        if re.match(r"[a-z]+:", link):  # https:, mailto:
            continue
        path = link.split("#")[0]
        target = (ROOT / path).resolve() if path else README
        assert target.is_relative_to(ROOT), f"{link} points outside the repository"
        assert target.exists(), f"README.md links to {link}, which does not exist"
