"""`make recipes`: the Multi30k recipes' results, read from their runs, as docs/corpora.md's
tables, and for the hour recipes one sentence in the README and docs/package.md ("do I need a
GPU?").

    python -m benchmarks.checks.recipes --collect CONFIG... [--set full]  # runs/ -> JSON, docs
    python -m benchmarks.checks.recipes --write      # benchmarks/results/recipes*.json -> the pages
    python -m benchmarks.checks.recipes              # check that the pages are up to date

Four sets of recipes, each with its results file in benchmarks/results/ and its table: the
hour recipes (recipes.json), the hour recipes for a CPU that trains in fp32 (`--set hour_fp32`:
recipes_hour_fp32.json), the full ones (`--set full`: recipes_full.json) and the first try of
ten minutes (`--set try`: recipes_try.json). For
each recipe (a config whose `make train eval` has finished) it reads runs/<experiment>/:
eval.json (the test scores, greedy and beam, with sacreBLEU's signatures), metrics.jsonl (the
steps, the training time, each validation and the average's) and best.pt (its parameters and
the steps it holds). Each table lies in docs/corpora.md between two marker lines, so that no
figure there is copied by hand; tests/benchmarks/test_recipes.py fails when one is out of date.
The hour sets and the try set also have a sentence, between its own markers in each of its
SUMMARIES pages.
"""

import json
from pathlib import Path

from benchmarks.common import RESULTS, arguments, machine, markdown_table, with_table
from seq2seq.checkpoint import load_checkpoint
from seq2seq.config import load_config, translation_pair
from seq2seq.support.errors import UserError, run_cli
from seq2seq.support.files import atomic_write, read_log, write_json
from seq2seq.support.paths import EVAL, METRICS

DOCS = Path("docs/corpora.md")
SETS = ["hour", "hour_fp32", "full", "try"]  # each its table in DOCS
SUMMARIES = {  # the sets with a sentence: the pages that hold it, between these markers
    "hour": (
        [Path("README.md"), Path("docs/package.md")],
        ("<!-- recipes summary: written by benchmarks/checks/recipes.py -->",
         "<!-- end of recipes summary -->"),
    ),
    "hour_fp32": (
        [Path("docs/package.md")],
        ("<!-- fp32 recipes summary: written by benchmarks/checks/recipes.py -->",
         "<!-- end of fp32 recipes summary -->"),
    ),
    "try": (
        [Path("docs/package.md")],
        ("<!-- first try summary: written by benchmarks/checks/recipes.py -->",
         "<!-- end of first try summary -->"),
    ),
}  # fmt: skip


def results_file(recipe_set: str) -> Path:
    return RESULTS / ("recipes.json" if recipe_set == "hour" else f"recipes_{recipe_set}.json")


def markers(recipe_set: str) -> tuple[str, str]:
    name = "recipes" if recipe_set == "hour" else f"recipes {recipe_set}"
    return f"<!-- {name}: written by benchmarks/checks/recipes.py -->", f"<!-- end of {name} -->"


MARKERS = markers("hour")


def read_run(config_path: str) -> dict:
    """One recipe's figures from its run folder."""
    config = load_config(config_path)
    run = config.run_dir
    for path in (run / EVAL, run / METRICS, config.checkpoint_path):
        if not path.exists():
            raise UserError(f"{path} is missing: run `make train eval CONFIG={config_path}`")
    lines = read_log(run / METRICS)
    validations = [line for line in lines if "averaged_steps" not in line]
    averages = [line for line in lines if "averaged_steps" in line]
    key = f"valid_{config.train.best_metric}"
    single = max(validations, key=lambda line: line[key] * (-1 if key == "valid_loss" else 1))
    checkpoint = load_checkpoint(config.checkpoint_path)
    return {
        "config": config_path,
        "direction": "-".join(side.code for side in translation_pair(config, config.serve)),
        "test_set": config.corpus.test_set,
        "parameters": sum(p.numel() for p in checkpoint.model.parameters()),
        "steps": validations[-1]["step"],
        "train_minutes": validations[-1]["elapsed_s"] / 60,
        "best_metric": config.train.best_metric,
        "best_single": {"step": single["step"], "valid": single[key]},
        "average": {"steps": averages[-1]["averaged_steps"], "valid": averages[-1][key]}
        if averages
        else None,
        "kept": checkpoint.info.get("averaged_steps") or [checkpoint.info["step"]],
        "precision": checkpoint.config.train.precision,  # as trained (ARGS overrides too)
        # the training process's peak (metrics.jsonl has it since issue 54; None before)
        "peak_memory_mib": max((line.get("peak_memory_mib", 0) for line in lines), default=0)
        or None,
        "test": json.loads((run / EVAL).read_text("utf-8")),
    }


def decoding_row(recipe: dict, name: str, scores: dict) -> list:
    kept = recipe["kept"]
    held = f"average of steps {kept[0]}-{kept[-1]}" if len(kept) > 1 else f"step {kept[0]}"
    figures = (scores["bleu"], scores["bleu_lowercase"], scores["chrf"])
    return [recipe["direction"], name, *(f"{x:.1f}" for x in figures),
            f"{scores['sentences_per_s']:.0f}", held]  # fmt: skip


def training_row(recipe: dict) -> list:
    single, average = recipe["best_single"], recipe["average"]
    averaged = "no averaging" if average is None else (
        f"{average['valid']:.2f} (steps {average['steps'][0]}-{average['steps'][-1]})"
    )  # fmt: skip
    return [recipe["direction"], f"`{recipe['config']}`", f"{recipe['parameters']:,}",
            f"{recipe['steps']:,}", f"{recipe['train_minutes']:.0f}",
            f"{single['valid']:.2f} (step {single['step']})", averaged]  # fmt: skip


def markdown(results: dict) -> str:
    """The tables, the line above them and the signatures under them."""
    recipes, info = results["recipes"], results["machine"]
    metric = recipes[0]["best_metric"]
    decodings = []
    for recipe in recipes:
        test = recipe["test"]
        decodings.append(decoding_row(recipe, "greedy", test))
        if "beam" in test:
            beam = test["beam"]
            name = f"beam {beam['beam_size']}, length penalty {beam['length_penalty']}"
            decodings.append(decoding_row(recipe, name, beam))
    signatures = (
        "Signatures: BLEU `" + recipes[0]["test"]["bleu_signature"] + "` (`case:lc` for the "
        "lowercased one), chrF `" + recipes[0]["test"]["chrf_signature"] + "`."
    )
    return "\n\n".join([
        f"On {info['device_name']} ({info['cpu_count']} cores, torch {info['torch']}); "
        f"{results['conditions']}. Test set: {recipes[0]['test_set']} (1,000 sentences).",
        markdown_table(["direction", "decoding", "BLEU", "BLEU, lowercased", "chrF",
                        "sentences/s", "checkpoint"], decodings),
        markdown_table(["direction", "config", "parameters", "steps", "training minutes",
                        f"best single checkpoint, valid {metric}", f"average, valid {metric}"],
                       map(training_row, recipes), signatures),
    ])  # fmt: skip


def summary(results: dict) -> str:
    """One sentence: the machine, the training time and each direction's beam (else greedy)
    test BLEU."""
    recipes, info = results["recipes"], results["machine"]
    scores = ", ".join(
        f"{r['direction']} {r['test'].get('beam', r['test'])['bleu']:.1f}" for r in recipes
    )
    minutes = max(round(r["train_minutes"]) for r in recipes)
    if len(recipes) > 1:
        trained = f"these recipes train in {minutes} minutes or less each and score"
    else:
        trained = f"this recipe trains in {minutes} minutes or less and scores"
    peaks = [r["peak_memory_mib"] for r in recipes if r.get("peak_memory_mib")]
    memory = f", in {max(peaks) / 1024:.1f} GiB of memory at most" if peaks else ""
    precision = {"fp32": " in fp32", "bf16": " in bf16"}.get(recipes[0].get("precision"), "")
    return (
        f"On {info['cpu_count']} cores of an {info['device_name']}{precision}, with no GPU, "
        f"{trained} {scores} BLEU (sacreBLEU, {recipes[0]['test_set']}, beam search){memory}."
    )


def pages(results: dict, recipe_set: str, expected: dict[Path, str]) -> None:
    """Put the table (and for a set in SUMMARIES the sentence) of `results` into each page of
    `expected` (path -> text, read from the page the first time)."""

    def put(page: Path, table: str, page_markers: tuple[str, str]) -> None:
        text = expected.get(page) or page.read_text("utf-8")
        expected[page] = with_table(text, table, page_markers, str(page))

    put(DOCS, markdown(results), markers(recipe_set))
    summary_pages, summary_markers = SUMMARIES.get(recipe_set, ([], ()))
    for page in summary_pages:
        put(page, summary(results), summary_markers)


def main(argv: list[str] | None = None) -> None:
    parser = arguments(__doc__)
    parser.add_argument("--collect", nargs="+", metavar="CONFIG", help="recipes to read")
    parser.add_argument("--set", choices=SETS, default="hour", help="which table --collect writes")
    parser.add_argument(
        "--conditions", default="each trained alone with train.threads 0 (both cores)",
        help="how the runs shared the machine, for the line above the tables",
    )  # fmt: skip
    parser.add_argument("--write", action="store_true", help="write docs/corpora.md")
    args = parser.parse_args(argv)
    if args.collect:
        recipes = [read_run(path) for path in args.collect]
        write_json(
            results_file(args.set),
            {"machine": machine(), "conditions": args.conditions, "recipes": recipes},
        )
    expected: dict[Path, str] = {}
    for recipe_set in SETS:
        results = results_file(recipe_set)
        if not results.exists():
            raise UserError(f"{results} is missing: run `make recipes RECIPE_SET={recipe_set}`")
        pages(json.loads(results.read_text("utf-8")), recipe_set, expected)
    for page, expected_text in expected.items():
        if args.write or args.collect:
            with atomic_write(page) as file:
                file.write(expected_text)
        elif expected_text != page.read_text("utf-8"):
            raise UserError(f"{page} is out of date: python -m benchmarks.checks.recipes --write")


if __name__ == "__main__":
    run_cli(main)
