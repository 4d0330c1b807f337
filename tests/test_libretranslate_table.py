"""docs/libretranslate.md, LibreTranslate 1.9.6 row by row: its options table has a row for
each option of LibreTranslate's command, no more, no fewer (read from `libretranslate --help`
where benchmarks/.venv-libretranslate has it), each row's verdict is same, better or
missing, and each row that is the same or better names tests that exist (read, not run)."""

import re
import subprocess

import pytest

from helpers import ROOT

PAGE = ROOT / "docs/libretranslate.md"
LIBRETRANSLATE = ROOT / "benchmarks/.venv-libretranslate/bin/libretranslate"
OPTIONS = "Options of `libretranslate`"


def tables() -> dict[str, list[list[str]]]:
    """Each `## ` section's table rows (the header and its rule left out), as their cells."""
    found: dict[str, list[list[str]]] = {}
    section = None
    for line in PAGE.read_text("utf-8").splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
        elif line.startswith("|") and section is not None:
            cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
            found.setdefault(section, []).append(cells)
    return {name: rows[2:] for name, rows in found.items()}  # past the header and the rule


def rows() -> list[list[str]]:
    return [row for section in tables().values() for row in section]


def references(cell: str) -> list[str]:
    return re.findall(r"`([^`]+::[^`]+)`", cell)


def help_options() -> list[str]:
    """The options `libretranslate --help` lists, but --help."""
    if not LIBRETRANSLATE.exists():
        pytest.skip(f"no {LIBRETRANSLATE.relative_to(ROOT)} (`make bench-serve` installs it; "
                    "CI has none): LibreTranslate's options are not compared")  # fmt: skip
    shown = subprocess.run(
        [str(LIBRETRANSLATE), "--help"], capture_output=True, text=True, timeout=120
    )
    assert shown.returncode == 0, shown.stderr
    listed = shown.stdout.split("\noptions:\n", 1)[1]
    options = re.findall(r"^  (?:-\w, )?(--[a-z][a-z-]*)", listed, re.MULTILINE)
    return [option for option in options if option != "--help"]


def test_the_page_has_the_three_tables_each_row_four_cells():
    found = tables()
    assert list(found) == ["Endpoints", OPTIONS, "Beyond the endpoints and options"]
    for name, section in found.items():
        assert section, name
        for row in section:
            assert len(row) == 4, row


def test_the_options_rows_are_libretranslates_options():
    ours = [re.match(r"`(--[a-z][a-z-]*)`", row[0]) for row in tables()[OPTIONS]]
    assert all(ours), [row[0] for row in tables()[OPTIONS]]
    ours = [match.group(1) for match in ours]
    assert len(ours) == len(set(ours)), "an option has two rows"
    theirs = help_options()
    assert set(ours) - set(theirs) == set(), "rows for options LibreTranslate 1.9.6 lacks"
    assert set(theirs) - set(ours) == set(), "LibreTranslate's options without a row"
    assert ours == theirs, "the rows are not in --help's order"


def test_each_verdict_is_same_better_or_missing_and_says_why():
    for row in rows():
        verdict = row[2]
        assert re.match(r"(same\b|better: .{10,}|missing: .{10,})", verdict), row
        assert "untested" not in verdict, row
        if verdict.startswith("missing"):
            assert not references(row[3]), f"a missing row names tests: {row}"


def named_tests() -> list[tuple[str, str]]:
    """(row, test reference) for each test that a same or better row names."""
    named = []
    for row in rows():
        if row[2].startswith(("same", "better")):
            named += [(row[0], reference) for reference in references(row[3])]
    return named


def test_each_same_or_better_row_names_a_test():
    for row in rows():
        if row[2].startswith(("same", "better")):
            assert references(row[3]), f"no test named for {row[0]}"
            assert row[3] == ", ".join(f"`{ref}`" for ref in references(row[3])), row[3]


@pytest.mark.parametrize(("row", "reference"), named_tests(), ids=lambda x: x.split("::")[-1])
def test_each_named_test_exists(row, reference):
    path, _, name = reference.partition("::")
    assert re.fullmatch(r"tests/[\w/]+\.py", path) and re.fullmatch(r"test_\w+", name), reference
    assert (ROOT / path).is_file(), f"{row}: no test file {path}"
    text = (ROOT / path).read_text("utf-8")
    assert re.search(rf"^(async )?def {name}\(", text, re.MULTILINE), f"{row}: no {reference}"
