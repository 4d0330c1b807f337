"""docs/walkthrough.py: it runs top to bottom, computes what it says, and is a notebook."""

import re
import runpy

import jupytext
import pytest
import torch

from seq2seq.corpora import numbers

from helpers import ROOT

WALKTHROUGH = ROOT / "docs/walkthrough.py"


@pytest.mark.slow
def test_the_walkthrough_reproduces_the_z_table_and_translates_the_nine_pairs(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    done = runpy.run_path(str(WALKTHROUGH), run_name="__main__")
    # the causal example of section 1, worked out by hand: z1 = v1, z2 = 0.4568 v1 + 0.5432 v2 ...
    expected = torch.tensor(
        [
            [1.0000, 0.0000, 0.0000],
            [0.4568, 0.5432, 0.0000],
            [0.3219, 0.3332, 0.3449],
            [0.2309, 0.5130, 0.5260],
        ]
    )
    assert torch.equal(done["z"].mul(10_000).round().div(10_000), expected)
    targets = [target for _, target in numbers.SEED_PAIRS]
    assert done["tgt_vocab"].detokenize(done["step_by_step"]) == targets
    assert done["translations"] == targets
    printed = capsys.readouterr().out
    assert "z2 0.4568  0.5432  0.0000" in printed and "nine is nine    -> 9 la 9" in printed
    titles = re.findall(r"^# ## (\d\. .*)$", WALKTHROUGH.read_text("utf-8"), re.MULTILINE)
    headers = re.findall(r"^== (.*) ==$", printed, re.MULTILINE)  # the output reads on its own
    assert headers == [title.replace("`", "") for title in titles] and len(headers) == 8
    assert list(tmp_path.iterdir()) == [], "the walkthrough wrote files"


def cells(text: str) -> list[tuple[str, str]]:
    """Jupytext's percent format: (kind, source) of each cell, a line `# %%` opening a code
    cell and `# %% [markdown]` a text cell (the header before the first is left out)."""
    parts = re.split(r"^# %%( \[markdown\])?\n", text, flags=re.MULTILINE)
    return [
        ("markdown" if marker else "code", source.strip())
        for marker, source in zip(parts[1::2], parts[2::2], strict=True)
    ]


def test_the_walkthrough_is_a_notebook_in_percent_format_whose_links_resolve():
    text = WALKTHROUGH.read_text("utf-8")
    kinds = [kind for kind, _ in cells(text)]
    assert kinds.count("markdown") >= 8 and kinds.count("code") >= 8
    for kind, source in cells(text):
        assert source, "an empty cell"
        if kind == "markdown":  # comment lines only, so that Python skips them
            assert all(line.startswith("#") for line in source.splitlines()), source[:80]
    for section in range(1, 9):
        assert re.search(rf"^# ## {section}\. ", text, re.MULTILINE), f"section {section}"
    links = re.findall(r"\]\((\.\./[^)]+)\)", text)
    assert len(links) >= 10
    for link in links:
        assert (WALKTHROUGH.parent / link).resolve().is_file(), link


def test_jupytext_reads_the_walkthrough_as_a_notebook():
    notebook = jupytext.read(WALKTHROUGH)
    found = [cell.cell_type for cell in notebook.cells]
    assert found == [kind for kind, _ in cells(WALKTHROUGH.read_text("utf-8"))]
    assert notebook.cells[0].source.startswith("# The Transformer, step by step")


def test_the_walkthrough_and_learn_md_say_the_same_about_running_it():
    """What to install to run it (the core) and to open it as a notebook (the docs extra)."""
    header = " ".join(source for _, source in cells(WALKTHROUGH.read_text("utf-8"))[:1])
    header = " ".join(line.lstrip("# ") for line in header.splitlines())
    learn = " ".join((ROOT / "docs/learn.md").read_text("utf-8").split())
    for phrase in (
        "with the core installed (`make install`, then `. .venv/bin/activate`; "
        "or `pip install -e .`)",
        "python docs/walkthrough.py",
        'jupytext is in the `docs` extra (`pip install -e ".[docs]"`, which `make docs` installs)',
    ):
        assert phrase in " ".join(header.split()) and phrase in learn, phrase
