"""benchmarks/checks/recipes.py: a recipe's figures read from its run folder, and the table between
docs/corpora.md's markers. The recipe here is the seed preset (nine pairs, seconds), trained
with checkpoint averaging and evaluated with beam search, as the Multi30k recipes are."""

import json
import shutil
from pathlib import Path

import pytest
import yaml

from benchmarks.checks import recipes
from benchmarks.common import with_table
from seq2seq import data, evaluate, train
from seq2seq.support.errors import UserError

from helpers import ROOT


@pytest.fixture(scope="module")
def seed_recipe(tmp_path_factory):
    """A finished seed run with train.average_last 3 and beam 2: the folder, and the config's
    name there."""
    folder = tmp_path_factory.mktemp("recipe")
    config = yaml.safe_load((ROOT / "configs/seed.yaml").read_text())
    config["train"]["average_last"] = 3
    config["decode"]["beam_size"] = 2
    (folder / "seed.yaml").write_text(yaml.safe_dump(config))
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        for command in (data, train, evaluate):
            command.main(["--config", "seed.yaml"])
    return folder


def test_a_recipe_is_read_from_its_run(seed_recipe, monkeypatch):
    monkeypatch.chdir(seed_recipe)
    recipe = recipes.read_run("seed.yaml")
    lines = [json.loads(line) for line in Path("runs/seed/metrics.jsonl").read_text().splitlines()]
    assert recipe["steps"] == 150 and recipe["direction"] == "en-digits"
    assert recipe["average"]["steps"] == [100, 125, 150] == lines[-1]["averaged_steps"]
    assert recipe["best_single"]["valid"] == max(line["valid_exact_match"] for line in lines[:-1])
    assert recipe["test"] == json.loads(Path("runs/seed/eval.json").read_text())
    assert recipe["peak_memory_mib"] == max(line["peak_memory_mib"] for line in lines) > 0
    assert recipe["precision"] == "auto"


def test_the_table_holds_each_decodings_scores(seed_recipe, monkeypatch):
    monkeypatch.chdir(seed_recipe)
    recipe = recipes.read_run("seed.yaml")
    results = {"machine": {"device_name": "a CPU", "cpu_count": 2, "torch": "2.13.0"},
               "conditions": "alone", "recipes": [recipe]}  # fmt: skip
    table = recipes.markdown(results)
    greedy, beam = recipe["test"], recipe["test"]["beam"]
    assert (
        f"| en-digits | greedy | {greedy['bleu']:.1f} | {greedy['bleu_lowercase']:.1f} |" in table
    )
    assert (
        f"| en-digits | beam 2, length penalty {beam['length_penalty']} | {beam['bleu']:.1f}"
        in table
    )
    assert greedy["bleu_signature"] in table


def test_a_recipe_not_yet_run_is_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(ROOT / "configs/seed.yaml", tmp_path / "seed.yaml")
    with pytest.raises(
        UserError, match=r"runs/seed/eval.json is missing: run `make train eval CONFIG=seed.yaml`"
    ):
        recipes.read_run("seed.yaml")


def test_a_page_without_the_markers_is_named():
    with pytest.raises(UserError, match=r"docs/corpora.md: no lines <!-- recipes: .*"):
        with_table("no markers\n", "the table", recipes.MARKERS, "docs/corpora.md")


def test_the_summary_gives_the_machine_the_minutes_and_each_directions_beam_bleu(
    seed_recipe, monkeypatch
):
    monkeypatch.chdir(seed_recipe)
    recipe = recipes.read_run("seed.yaml")
    results = {"machine": {"device_name": "AMD EPYC", "cpu_count": 2, "torch": "2.13.0"},
               "conditions": "alone", "recipes": [recipe]}  # fmt: skip
    sentence = recipes.summary(results)
    assert sentence.startswith("On 2 cores of an AMD EPYC, with no GPU")
    assert f"en-digits {recipe['test']['beam']['bleu']:.1f} BLEU" in sentence
    assert f"this recipe trains in {round(recipe['train_minutes'])} minutes" in sentence
    two = recipes.summary({**results, "recipes": [recipe, recipe]})
    assert "these recipes train in" in two and "minutes or less each and score" in two
    assert sentence.endswith(f"in {recipe['peak_memory_mib'] / 1024:.1f} GiB of memory at most.")
    fp32 = recipes.summary({**results, "recipes": [{**recipe, "precision": "fp32"}]})
    assert fp32.startswith("On 2 cores of an AMD EPYC in fp32, with no GPU")


def test_the_pages_hold_the_committed_results(monkeypatch):
    """docs/corpora.md's table and the README's and docs/package.md's sentence are those of
    benchmarks/results/recipes.json (`python -m benchmarks.checks.recipes --write` after editing
    a page)."""
    monkeypatch.chdir(ROOT)
    recipes.main([])  # a UserError naming the page that is out of date


def seed_pages(seed_recipe: Path, monkeypatch, recipe_set: str) -> tuple[dict, dict]:
    """The seed recipe's run as the results of `recipe_set`, and the pages they would write."""
    monkeypatch.chdir(seed_recipe)
    results = {"machine": {"device_name": "a CPU", "cpu_count": 2, "torch": "2.13.0"},
               "conditions": "alone", "recipes": [recipes.read_run("seed.yaml")]}  # fmt: skip
    monkeypatch.chdir(ROOT)
    expected = {}
    recipes.pages(results, recipe_set, expected)
    return results, expected


def test_the_full_recipes_have_a_table_of_their_own_and_no_sentence(seed_recipe, monkeypatch):
    results, expected = seed_pages(seed_recipe, monkeypatch, "full")
    assert list(expected) == [recipes.DOCS]  # the README's sentence is the hour recipes'
    start, end = recipes.markers("full")
    assert f"{start}\n{recipes.markdown(results)}\n{end}" in expected[recipes.DOCS]
    hour = expected[recipes.DOCS].split(recipes.MARKERS[0])[1]  # the hour table: untouched
    assert hour == recipes.DOCS.read_text("utf-8").split(recipes.MARKERS[0])[1]


def test_the_first_try_has_its_table_and_its_sentence_in_the_package_page(seed_recipe, monkeypatch):
    results, expected = seed_pages(seed_recipe, monkeypatch, "try")
    package = Path("docs/package.md")
    assert list(expected) == [recipes.DOCS, package]  # not the README: its is the hour's
    start, end = recipes.SUMMARIES["try"][1]
    assert f"{start}\n{recipes.summary(results)}\n{end}" in expected[package]


def test_the_fp32_hour_recipe_has_its_table_and_its_sentence_in_the_package_page(
    seed_recipe, monkeypatch
):
    results, expected = seed_pages(seed_recipe, monkeypatch, "hour_fp32")
    package = Path("docs/package.md")
    assert list(expected) == [recipes.DOCS, package]
    start, end = recipes.markers("hour_fp32")
    assert f"{start}\n{recipes.markdown(results)}\n{end}" in expected[recipes.DOCS]
    start, end = recipes.SUMMARIES["hour_fp32"][1]
    assert f"{start}\n{recipes.summary(results)}\n{end}" in expected[package]
