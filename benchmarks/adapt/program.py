"""`make bench-adapt`, the single-program case (issue 80): the stand-in package fine-tuned on
one program's catalog alone, as that program's translator would, then mixed with the package
(WiSE-FT) -> benchmarks/results/adapt_program.{json,md}.

    python -m benchmarks.adapt.program [PACKAGE] [--program postgres-15] [--minutes 8]
        [--settings NAME ... [--keep-rows]]

    PACKAGE (runs/standin_en_de/en_de.int8.argosmodel) --import_model--> imported/best.pt
    the program's catalog, of the `user` group (DIR/<program>.mo) --seq2seq.data-->
        train (80% of its strings; valid, VALID of them, split off it), newer strings (20%)
    what must not be lost, apart from every test: GENERAL strings of the other `user` programs
        (software neither the package nor the fine-tune read) and Multi30k's first GENERAL
        validation captions
    replays (REPLAYS), the package's own greedy translations of as many English lines as
        train has: Multi30k's training captions (docs/adapt.md's), or half of them and half
        the `base` programs' English strings (software the package knew)
    each setting (SETTINGS): seq2seq.train for --minutes (or its train.max_epochs), best.pt by
        valid BLEU on the program's own valid split (a row: the fine-tune alone); where it
        says so, of the validations within train.keep_bleu_drop of the start on the captions
        (train.keep_valid: KEEP, the captions' validation set), stopped by train.patience
      -> mixed with the start (a row), weights (1 - a) and a for each a of MIXES (seq2seq.average
         --weights): the a with the best chrF on the program's valid split of those within
         GENERAL_LOSS chrF of the start on the general strings and MULTI30K_LOSS BLEU on the
         captions (a = 1: the fine-tune as it is)
    each model (target.scores, beam 4): the newer strings, the programs never seen (the
        `held_out` group), Multi30k's test; empty or bare outputs; LABELS short strings of the
        programs never seen with an accelerator and without (labels)
"""

import dataclasses
import itertools
import json
import re
from pathlib import Path

import sacrebleu

from benchmarks import common
from benchmarks.adapt.target import (
    STANDIN,
    USER,
    Setting,
    captions,
    config_for,
    make_replay,
    never_seen,
    replay_corpus,
    scores,
    split_of,
    spread,
    start_facts,
    train_setting,
    write_pair,
)
from benchmarks.adapt.tuning import IMPORTED, MULTI30K, chrf_bleu, fresh, prepare, the_start
from benchmarks.adapt.tuning import python as run_module
from seq2seq.config import DecodeConfig, load_config
from seq2seq.decoding.engine_choice import load_engine
from seq2seq.decoding.engines import translate_texts
from seq2seq.localization import catalogs
from seq2seq.support.errors import UserError, run_cli
from seq2seq.text.parallel import read_lines
from seq2seq.text.sentences import Texts

OUT = common.RESULTS / "adapt_program"
VALID, GENERAL = 300, 300  # strings of the program's valid split; of each general set
LABELS = 300  # labels of the programs never seen, with an accelerator and without
MIXES = (0.25, 0.5, 0.75, 1.0)  # the fine-tune's weight in a mix with the start
GENERAL_LOSS, MULTI30K_LOSS = 0.5, 1.0  # what a mix may lose against the start, at most
FINE_TUNING = {"lr": 5e-4, "min_lr": 5e-5, "warmup_steps": 100}
KEEP = {"src": "keep.src", "tgt": "keep.tgt"}  # the captions' validation set, in the work folder
SETTINGS = {  # a setting's name -> how it trains, and on which replay (None: not trained)
    "imported": None,
    "as docs/adapt.md said: dropout 0, caption replay": Setting(FINE_TUNING, "captions"),
    "the same in 5 epochs, the captions kept (keep_valid, patience 3)": Setting(
        {**FINE_TUNING, "max_epochs": 5, "eval_every": 100, "keep_valid": KEEP, "patience": 3},
        "captions",
    ),
    "the same, keep_weights 10": Setting({**FINE_TUNING, "keep_weights": 10}, "captions"),
    "the same, encoder and embeddings frozen": Setting(
        {**FINE_TUNING, "freeze": ["encoder", "src_embed"]}, "captions"
    ),
    "dropout 0.1, caption replay": Setting(FINE_TUNING, "captions", {"dropout": 0.1}),
    "dropout 0.1, software and caption replay": Setting(FINE_TUNING, "software", {"dropout": 0.1}),
}


def program_corpus(catalog: Path, strings: int) -> dict:
    """The program's catalog: 20% of its strings the newer ones (test), VALID of the rest valid."""
    return {"type": "sources", "name": USER, "valid_size": VALID, "test_size": strings // 5,
            "train_sources": [{"file": str(catalog)}]}  # fmt: skip


def software(paths: list[Path], languages: tuple[str, str], count: int) -> dict:
    """`count` pairs of these catalogs, each once, taken from each program in turn (a large
    one, a list of language names, is not most of them)."""
    each = [list(dict.fromkeys(catalogs.read_catalogs([path], languages, {}))) for path in paths]
    turns = (pair for turn in itertools.zip_longest(*each) for pair in turn if pair)
    chosen = list(itertools.islice(dict.fromkeys(turns), count))
    return {"sources": [s for s, _ in chosen], "references": [t for _, t in chosen]}


def labels(never_seen_all: dict, count: int) -> tuple[dict, dict]:
    """`count` labels of the programs never seen (1 to 4 words, letters only), as they are and
    with a GTK accelerator before the first letter of source and reference: the same strings
    with an accelerator and without (this system's catalogs hold too few with one)."""
    pairs = [(s, t) for s, t in zip(never_seen_all["sources"], never_seen_all["references"],
                                    strict=True)
             if re.fullmatch(r"[A-Za-z]+( [A-Za-z]+){0,3}", s) and t[:1].isalpha()]  # fmt: skip
    chosen = spread(pairs, count)
    plain = {"sources": [s for s, _ in chosen], "references": [t for _, t in chosen]}
    return plain, {key: ["_" + text for text in texts] for key, texts in plain.items()}


def metric(score, engine, decoding: DecodeConfig, test: dict) -> float:
    """sacreBLEU's `score` (corpus_chrf, corpus_bleu) of `engine`'s translations of `test`."""
    outputs = translate_texts(engine, Texts(test["sources"]), decoding).translations
    return score(outputs, [test["references"]]).score


def validation(checkpoint: Path, decoding: DecodeConfig, valid: dict) -> dict:
    """chrF on the program's valid split and the general strings, BLEU on the captions."""
    engine = load_engine(checkpoint=checkpoint, choice="auto", device="cpu")
    chrf, bleu = sacrebleu.corpus_chrf, sacrebleu.corpus_bleu
    return {"program": metric(chrf, engine, decoding, valid["program"]),
            "general": metric(chrf, engine, decoding, valid["general"]),
            "captions": metric(bleu, engine, decoding, valid["captions"])}  # fmt: skip


def mixed(work: Path, name: str, tuned: Path, decoding: DecodeConfig, valid: dict) -> tuple:
    """The mix of `tuned` with the start that the validation sets choose (module docstring)
    -> its checkpoint, its weight a and each mix's validation."""
    start = validation(work / IMPORTED, decoding, valid)
    tried, best = {}, (None, 0.0)
    for share in MIXES:
        out = tuned if share == 1.0 else tuned.with_name(f"mix-{share}.pt")
        if share != 1.0:
            run_module(work, "seq2seq.average", str(out), IMPORTED, str(tuned), "--weights",
                       str(1 - share), str(share))  # fmt: skip
        tried[share] = scores_of = validation(out, decoding, valid)
        keeps = (scores_of["general"] >= start["general"] - GENERAL_LOSS
                 and scores_of["captions"] >= start["captions"] - MULTI30K_LOSS)  # fmt: skip
        if keeps and (best[0] is None or scores_of["program"] > tried[best[1]]["program"]):
            best = (out, share)
    print(name, "start", start, "mixes", tried, "chosen", best[1], flush=True)
    return (best[0] or work / IMPORTED), best[1], {"start": start, **tried}


def with_earlier_rows(out: Path, results: dict) -> list[dict]:
    """The rows just measured, and those of the other settings from out's last results where
    they were measured on the same start, data, minutes and beam (--keep-rows), in SETTINGS'
    order."""
    path, run = out.with_suffix(".json"), {setting_of(row) for row in results["rows"]}
    earlier = json.loads(path.read_text("utf-8")) if path.exists() else {}
    same = all(earlier.get(key) == results[key] for key in ("package", "start", "minutes", "beam",
                                                             "data"))  # fmt: skip
    kept = [row for row in earlier.get("rows", []) if same and setting_of(row) in SETTINGS
            and setting_of(row) not in run]  # fmt: skip
    return sorted(results["rows"] + kept, key=lambda row: list(SETTINGS).index(setting_of(row)))


def setting_of(row: dict) -> str:
    return row["setting"].removesuffix(", mixed with the start")


def table(results: dict) -> str:
    rows = []
    for row in results["rows"]:
        tests = chrf_bleu(row, "newer", "never_seen")
        accelerated = f"{row['chrf_labels_marked']} / {row['chrf_labels']}"
        mix = "-" if row.get("mix") is None else row["mix"]
        rows.append([row["setting"], *tests, row["bleu_original"], row["bare"], accelerated,
                     mix, row.get("steps", "-"), row.get("minutes", "-")])  # fmt: skip
    header = ["model", "the program's newer strings, chrF / BLEU",
              "programs never seen, chrF / BLEU", "Multi30k BLEU", "empty or bare outputs",
              "labels' chrF with an accelerator / without", "fine-tune's weight in the mix",
              "steps", "minutes"]  # fmt: skip
    d = results["data"]
    notes = [f"{the_start(results)} The program: "
             f"{d['program']} ({d['strings']:,} strings: {d['train']:,} train, {d['valid']:,} "
             f"valid, {d['newer']:,} newer); programs never seen: {d['never_seen']:,} strings "
             f"of the {d['never_seen_programs']} held-out programs; labels: {LABELS} of theirs "
             f"(1 to 4 words), as they are and with an accelerator before their first letter "
             f"(source and reference). Replays: {d['replay']:,} lines each. "
             f"Each fine-tune alone (its best.pt), then mixed with the start (WiSE-FT) at the "
             f"weight that the validation sets chose ({VALID} of the program's strings, "
             f"{GENERAL} of the other user programs' and of Multi30k's validation captions; at "
             f"most "
             f"{GENERAL_LOSS} chrF and {MULTI30K_LOSS} BLEU lost there). Beam "
             f"{results['beam']}; {results['minutes']} minutes a run; "
             + common.on_machine(results["machine"], "make bench-adapt")]  # fmt: skip
    return common.markdown_table(header, rows, *notes) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = common.arguments(__doc__, out=OUT)
    parser.add_argument("package", type=Path, nargs="?", default=STANDIN)
    parser.add_argument("--catalogs", type=Path, default=Path("/usr/share/locale/de/LC_MESSAGES"))
    parser.add_argument("--program", default="postgres-15", help="of the user group")
    parser.add_argument("--minutes", type=float, default=8, help="each run's time budget")
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--multi30k", type=Path, default=MULTI30K)
    parser.add_argument("--work", type=Path, default=common.ROOT / "runs/bench-adapt-program")
    parser.add_argument("--test-strings", type=int, default=500, help="of each software test")
    parser.add_argument("--settings", nargs="+", choices=list(SETTINGS), default=list(SETTINGS))
    parser.add_argument(
        "--keep-rows", action="store_true", help="the other settings' last rows, if comparable"
    )
    args = parser.parse_args(argv)
    folder = args.catalogs.resolve()
    catalog = folder / f"{args.program}.mo"
    for needed in (args.package, catalog, args.multi30k / "test_2016_flickr.en.gz"):
        if not needed.exists():
            raise UserError(f"{needed}: not found (make standin makes the package)")
    if catalogs.program_group(args.program) != "user":
        raise UserError(f"{args.program} is not of the user group (localization/catalogs.py)")
    package, work = args.package.resolve(), fresh(args.work.resolve())
    strings = len(list(catalogs.read_catalogs([catalog], ("en", "de"), {})))
    data = load_config(prepare(work, package, config_for(program_corpus(catalog, strings), 0, {})))
    languages = (data.corpus.src_lang, data.corpus.tgt_lang)
    decoding = dataclasses.replace(data.decode, beam_size=args.beam)
    newer = split_of(*(work / f"data/{USER}/test.{side}" for side in ("src", "tgt")))
    plain, marked = labels(never_seen(folder, data, 0), LABELS)
    tests = {"newer": {k: spread(v, args.test_strings) for k, v in newer.items()},
             "never_seen": never_seen(folder, data, args.test_strings),
             "original": split_of(*(args.multi30k / f"test_2016_flickr.{lang}.gz"
                                    for lang in ("en", "de"))),
             "labels": plain, "labels_marked": marked}  # fmt: skip
    others = [path for path in catalogs.catalog_files(folder, "user") if path != catalog]
    base = catalogs.catalog_files(folder, "base")
    captions_valid = split_of(*(args.multi30k / f"val.{lang}.gz" for lang in ("en", "de")))
    valid = {"program": split_of(*(work / f"data/{USER}/valid.{side}" for side in ("src", "tgt"))),
             "general": software(others, languages, GENERAL),
             "captions": {k: v[:GENERAL] for k, v in captions_valid.items()}}  # fmt: skip
    write_pair(work / "keep", ("src", "tgt"), tuple(valid["captions"].values()))  # KEEP
    count = len(read_lines(work / f"data/{USER}/train.src"))
    english = captions(work, args.multi30k, count)
    known = software(base, languages, count - count // 2)["sources"]
    replays = {"captions": english, "software": english[: count // 2] + known}
    for name, lines in replays.items():
        make_replay(work, data, lines, name)
    rows = []
    for name in args.settings:
        setting = SETTINGS[name]
        if setting is None:
            rows.append({"setting": name, **scores(work / IMPORTED, decoding, tests)})
            print(rows[-1], flush=True)
            continue
        corpus = replay_corpus(work, setting.replay)
        config = {**config_for(corpus, args.minutes, setting.train), "model": setting.model}
        tuned, cost = train_setting(work, name, config)
        alone = {"setting": name, "mix": 1.0, **cost, **scores(tuned, decoding, tests)}
        checkpoint, share, tried = mixed(work, name, tuned, decoding, valid)
        measured = alone if checkpoint == tuned else scores(checkpoint, decoding, tests)
        rows += [alone, {**alone, **measured, "setting": f"{name}, mixed with the start",
                         "mix": share, "validation": tried}]  # fmt: skip
        print(rows[-2:], flush=True)
    never = tests["never_seen"]
    facts = {"program": args.program, "strings": strings, "newer": len(newer["sources"]),
             "valid": VALID, "train": count, "never_seen": len(never["sources"]),
             "never_seen_programs": len(never["programs"]), "replay": count}  # fmt: skip
    shown = package.relative_to(common.ROOT) if package.is_relative_to(common.ROOT) else package
    results = {"machine": common.machine(), "package": str(shown),
               "start": start_facts(work / IMPORTED), "minutes": args.minutes, "beam": args.beam,
               "data": facts, "rows": rows}  # fmt: skip
    if args.keep_rows:
        results["rows"] = with_earlier_rows(args.out, results)
    common.save_results(args.out, results, table(results))


if __name__ == "__main__":
    run_cli(main)
