"""`make bench-adapt`: an imported Argos package fine-tuned on software catalogs, against the
package itself and a model trained from scratch on the same texts for the same time, each way
of keeping what the package knew -> benchmarks/results/adapt.{json,md} (issue 53's table).

    python -m benchmarks.adapt.target [PACKAGE] [--catalogs DIR] [--minutes 60] [--beam 4]
        [--test-strings 1000] [--served 200] [--libretranslate-python PYTHON]

    PACKAGE (make bench-adapt-package's en_de.argosmodel) --import_model--> imported/best.pt
    DIR (/usr/share/locale/de/LC_MESSAGES: the German catalogs of the system's programs)
        --seq2seq.data, hold_out 0.2 by program--> train / valid / test (programs it never saw)
    for each setting: --seq2seq.train, --minutes, best by valid BLEU--> runs/<setting>/best.pt
        (wall minutes and peak RSS of the process)
    each model (the imported one untrained) decodes as Argos does (beam 4, length penalty 0.2;
    with CTranslate2 where it is installed: the same outputs, many times faster on a CPU):
        the held-out test (--test-strings 1,000 of it, spread over it)
                                     -> in-domain BLEU, and placeholders kept (protected)
        its strings with placeholders, protection off -> placeholders kept (unprotected)
        those strings masked as Weblate masks them ([X<offset>X]) -> masks kept
        Multi30k test_2016_flickr    -> original-domain BLEU (the package's own test set)

"Placeholders kept": the share of outputs whose source has a placeable (seq2seq/text/
placeholders.py: printf, braces, Qt's %1, tags, accelerators, escapes...) that hold each of
them exactly as many times as the source (share_kept). The settings: from scratch (the same
architecture and pieces, random weights, the toolkit's learning rate 2e-3), fine-tuned
(learning rate 5e-4 warmed up over 100 steps, as suits continued training), and fine-tuned with
keep_teacher 0.5 or keep_weights 100 (train.keep_*: the pull toward the package's weights is
lr x 100 a step, 5% at 5e-4). Every run in the same work folder shares one data/ (the catalogs
encoded with the package's pieces: tuning.py). Last, when LibreTranslate's venv is there, the
fine-tuned setting chosen by both test sets (chosen()) is given back to LibreTranslate
(served.py).
"""

import argparse
import dataclasses
import json
from pathlib import Path

import sacrebleu

from benchmarks.adapt.served import LIBRETRANSLATE_PYTHON, compare
from benchmarks.adapt.tuning import IMPORTED, MULTI30K, fine_tuning, footnote, fresh, prepare, train
from benchmarks.common import RESULTS, ROOT, machine, save_results
from seq2seq.config import DecodeConfig, load_config
from seq2seq.decoding.engine_choice import load_engine
from seq2seq.decoding.engines import translate_texts
from seq2seq.support.errors import UserError, run_cli
from seq2seq.text.parallel import read_lines
from seq2seq.text.placeholders import find, share_kept
from seq2seq.text.sentences import Texts

OUT = RESULTS / "adapt"
FINE_TUNING = {"lr": 5e-4, "min_lr": 5e-5, "warmup_steps": 100}
SETTINGS = {  # a setting's name -> the train section's overrides (None: not trained)
    "imported": None,
    "from scratch": {"init_from": None},
    "fine-tuned": FINE_TUNING,
    "fine-tuned, keep_teacher 0.5": {**FINE_TUNING, "keep_teacher": 0.5},
    "fine-tuned, keep_weights 100": {**FINE_TUNING, "keep_weights": 100.0},
}


def config_for(catalogs: Path, minutes: float, overrides: dict) -> dict:
    corpus = {"type": "sources", "name": "catalogs",
              "train_sources": [{"file": str(catalogs), "hold_out": 0.2}]}  # fmt: skip
    train = {"max_minutes": minutes, "max_steps": 100_000, "eval_every": 1000,
             "best_metric": "bleu", **overrides}  # fmt: skip
    return fine_tuning(corpus, train)


def train_setting(work: Path, name: str, config: dict) -> tuple[Path, dict]:
    """One setting trained in its own process -> its best checkpoint, minutes and peak RSS."""
    trained = train(work, name, config)
    return trained.folder / "best.pt", {
        "minutes": round(trained.ran.seconds / 60, 1),
        "peak_rss_mib": round(trained.ran.peak_mib),
        "steps": max(record.get("step", 0) for record in trained.metrics),
    }


def weblate_masked(text: str) -> str:
    """`text` with each placeable replaced by Weblate's mask for it, [X<its offset>X]."""
    out, end = [], 0
    for placeable in find(text):
        out += [text[end : placeable.start], f"[X{placeable.start}X]"]
        end = placeable.end
    return "".join(out) + text[end:]


def scores(checkpoint: Path, decoding: DecodeConfig, test: dict, general: dict) -> dict:
    engine = load_engine(checkpoint=checkpoint, choice="auto", device="cpu")

    def translate(sources: list[str], placeholders: str = "protect") -> list[str]:
        settings = dataclasses.replace(decoding, placeholders=placeholders)
        return translate_texts(engine, Texts(sources), settings).translations

    def bleu(split: dict, outputs: list[str]) -> float:
        return round(sacrebleu.corpus_bleu(outputs, [split["references"]]).score, 2)

    outputs = translate(test["sources"])
    marked = [s for s in test["sources"] if find(s)]
    masked = [weblate_masked(s) for s in marked]
    kept = {
        "protected": share_kept(zip(test["sources"], outputs, strict=True)),
        "unprotected": share_kept(zip(marked, translate(marked, "off"), strict=True)),
        "weblate_masks": share_kept(zip(masked, translate(masked), strict=True), ("mask",)),
    }
    return {
        "bleu_in_domain": bleu(test, outputs),
        "bleu_original": bleu(general, translate(general["sources"])),
        **{f"kept_{k}": [v.kept, v.sources] for k, v in kept.items()},
    }


def spread(lines: list[str], count: int) -> list[str]:
    """`count` of the lines at an even stride (every program of the test has its share)."""
    if not count or count >= len(lines):
        return lines
    return [lines[i * len(lines) // count] for i in range(count)]


def split_of(sources: Path, references: Path, count: int = 0) -> dict:
    """A test set: `count` of its pairs spread over it (0: all)."""
    return {"sources": spread(read_lines(sources), count),
            "references": spread(read_lines(references), count)}  # fmt: skip


def table(results: dict) -> str:
    lines = [
        "| model | in-domain BLEU | Multi30k BLEU | placeholders kept (protected) | "
        "unprotected | Weblate masks kept | steps | minutes | peak RSS |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in results["rows"]:
        share = [f"{k / n:.1%} of {n:,}" for k, n in (row[f"kept_{w}"] for w in
                 ("protected", "unprotected", "weblate_masks"))]  # fmt: skip
        cost = [row.get("steps", "-"), row.get("minutes", "-"), row.get("peak_rss_mib", "-")]
        rss = f"{cost[2] / 1024:.2f} GiB" if row.get("peak_rss_mib") else "-"
        lines.append(f"| {row['setting']} | {row['bleu_in_domain']} | {row['bleu_original']} | "
                     f"{' | '.join(share)} | {cost[0]} | {cost[1]} | {rss} |")  # fmt: skip
    if served := results.get("libretranslate"):
        lines += ["", f"{results['chosen']}, packaged (package_version "
                  f"{served['package_version']}) and served by LibreTranslate 1.9.6 and by ours "
                  f"(LibreTranslate's API, beam 4, placeholders not protected): "
                  f"{served['differ']} of {served['strings']} test strings answered "
                  f"differently, {served['differ_several']} of them among the "
                  f"{served['several_sentences']} that our splitter cuts into several sentences "
                  "(LibreTranslate's splitter here: spaCy's sentencizer)."]  # fmt: skip
    d = results["data"]
    programs = len(d["test_programs"])
    lines += ["", f"In-domain: {d['test']:,} of the {d['test_split']:,} strings of the "
              f"{programs} programs held out "
              f"(English -> German catalogs of {d['catalogs']}; {d['train']:,} training pairs); "
              f"Multi30k: test_2016_flickr. Beam {results['beam']}, length penalty "
              f"{results['length_penalty']}; {results['minutes']} minutes a run; "
              + footnote(results["machine"], "make bench-adapt")]  # fmt: skip
    return "\n".join(lines) + "\n"


def data_facts(work: Path, catalogs: Path) -> dict:
    """The splits' sizes and the held-out test programs (data/catalogs/report.json's)."""
    report = json.loads((work / "data/catalogs/report.json").read_text("utf-8"))
    [source] = report["test"]["sources"]  # "train_sources[0] (DIR, 9 held out: a.mo, b.mo)"
    programs = source.rsplit("held out: ", 1)[1].rstrip(")").split(", ")
    return {"catalogs": str(catalogs), "train": report["train"]["kept"],
            "test_split": report["test"]["kept"], "test_programs": programs}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="benchmarks.adapt.target", description=__doc__)
    default_package = ROOT / "runs/bench-adapt-package/en_de.argosmodel"
    parser.add_argument("package", type=Path, nargs="?", default=default_package)
    parser.add_argument("--catalogs", type=Path, default=Path("/usr/share/locale/de/LC_MESSAGES"))
    parser.add_argument("--minutes", type=float, default=60, help="each run's time budget")
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--multi30k", type=Path, default=MULTI30K)
    parser.add_argument("--work", type=Path, default=ROOT / "runs/bench-adapt")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--libretranslate-python", type=Path, default=LIBRETRANSLATE_PYTHON,
                        help="its venv's (make benchmarks/.venv-libretranslate/.installed); "
                        "without it, the chosen model is not served by LibreTranslate")  # fmt: skip
    parser.add_argument("--served", type=int, default=200, help="test strings asked of both")
    parser.add_argument("--test-strings", type=int, default=1000,
                        help="of the held-out test, spread over it (0: all)")  # fmt: skip
    args = parser.parse_args(argv)
    for needed in (args.package, args.catalogs, args.multi30k / "test_2016_flickr.en.gz"):
        if not needed.exists():
            raise UserError(f"{needed}: not found (make bench-adapt-package makes the package)")
    package, catalogs = args.package.resolve(), args.catalogs.resolve()
    work = fresh(args.work.resolve())
    data_config = prepare(work, package, config_for(catalogs, args.minutes, {}))
    decoding = dataclasses.replace(load_config(data_config).decode, beam_size=args.beam)
    test = split_of(*(work / f"data/catalogs/test.{side}" for side in ("src", "tgt")),
                    args.test_strings)  # fmt: skip
    general = split_of(*(args.multi30k / f"test_2016_flickr.{lang}.gz" for lang in ("en", "de")))
    rows, checkpoints = [], {}
    for name, overrides in SETTINGS.items():
        row, checkpoints[name] = {"setting": name}, work / IMPORTED
        if overrides is not None:
            config = config_for(catalogs, args.minutes, overrides)
            checkpoints[name], cost = train_setting(work, name, config)
            row.update(cost)
        row.update(scores(checkpoints[name], decoding, test, general))
        rows.append(row)
        print(row, flush=True)
    facts = {**data_facts(work, catalogs), "test": len(test["sources"])}
    results = {"machine": machine(), "package": str(package), "minutes": args.minutes,
               "beam": args.beam, "length_penalty": decoding.length_penalty,
               "data": facts, "rows": rows,
               "chosen": chosen(rows)}  # fmt: skip
    if args.libretranslate_python.exists():
        strings = test["sources"][: args.served]
        served = compare(checkpoints[results["chosen"]], strings, args.libretranslate_python)
        results["libretranslate"] = served
    save_results(args.out, results, table(results))


def chosen(rows: list[dict]) -> str:
    """The fine-tuned setting chosen by both test sets: the best in-domain BLEU of those that
    lose at most 1.0 BLEU on the original's test set (of all, if none does)."""
    original = rows[0]["bleu_original"]  # the imported model's
    tuned = [row for row in rows if row["setting"].startswith("fine-tuned")]
    keeping = [row for row in tuned if row["bleu_original"] >= original - 1.0] or tuned
    return max(keeping, key=lambda row: row["bleu_in_domain"])["setting"]


if __name__ == "__main__":
    run_cli(main)
