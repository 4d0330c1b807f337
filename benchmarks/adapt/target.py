"""`make bench-adapt`: the stand-in package (make standin) fine-tuned on a user's programs'
catalogs, on the two tests a localization team knows, against the package as it came and a
model trained from scratch on the same texts for the same time -> benchmarks/results/adapt.
{json,md} (issue 67's table).

    python -m benchmarks.adapt.target [PACKAGE] [--catalogs DIR] [--minutes 60] [--beam 4]
        [--test-strings 1000] [--replay 0] [--settings NAME ...]

    PACKAGE (runs/standin_en_de/en_de.int8.argosmodel) --import_model--> imported/best.pt
    DIR (/usr/share/locale/de/LC_MESSAGES), its programs in three groups (Source.programs):
        user     --seq2seq.data--> train; valid (500) and test (1,000 strings) split off:
                 test (b), "newer strings" of the programs the fine-tune learns from
        held_out --read, the test split's cleaning--> test (a), programs never seen
                 (--test-strings of them, spread over the programs)
        base     the stand-in's own (never read here)
    Multi30k's English training captions --the package, greedy--> replay pairs (German made
        by the start itself, Multi30k's German unused): the replay settings' second source
    for each setting: --seq2seq.train, --minutes, best by valid BLEU--> runs/<setting>/best.pt
        (wall minutes and peak RSS of the process)
    each model (the imported one untrained) decodes as Argos does (beam 4, length penalty 0.2;
    with CTranslate2 where it is installed):
        test (a), test (b)            -> chrF and BLEU; placeholders kept, protected
        their strings with a placeholder, protection off -> placeholders kept by the model alone
        Multi30k test_2016_flickr     -> the original domain's BLEU (the stand-in's own test)

"Placeholders kept": the share of outputs whose source has a placeable (seq2seq/text/
placeholders.py) that hold each of them exactly as many times as the source (share_kept).
The settings (SETTINGS) are what issue 67 asked to compare: learning rates, the teacher
(keep_teacher) at a learning rate that learns, replay of the start's own translations, a pull
toward the start's weights (keep_weights). Every run in the work folder shares one data/ (the
catalogs encoded with the package's pieces: tuning.py); the replay settings a second corpus,
the same splits with the replay pairs added to train.
"""

import dataclasses
import json
from pathlib import Path

import sacrebleu

from benchmarks import common
from benchmarks.adapt.served import LIBRETRANSLATE_PYTHON, compare
from benchmarks.adapt.tuning import (
    IMPORTED,
    MULTI30K,
    chrf_bleu,
    fine_tuning,
    fresh,
    prepare,
    the_start,
    train,
    write_config,
)
from benchmarks.adapt.tuning import python as run_module
from seq2seq.checkpoint import load_checkpoint
from seq2seq.config import Config, DecodeConfig, load_config
from seq2seq.corpora.cleaning import Tally, clean, rules
from seq2seq.decoding.engine_choice import load_engine
from seq2seq.decoding.engines import translate_texts
from seq2seq.localization import catalogs
from seq2seq.support.errors import UserError, run_cli
from seq2seq.text.parallel import SPLITS, read_lines
from seq2seq.text.placeholders import accelerators, bare, find, share_kept, unaccelerated
from seq2seq.text.sentences import Texts

OUT = common.RESULTS / "adapt"
STANDIN = common.ROOT / "runs/standin_en_de/en_de.int8.argosmodel"  # make standin's
USER = "catalogs"  # the user's corpus's name (data/<name>/); a replay's: catalogs_<replay>


@dataclasses.dataclass(frozen=True)
class Setting:
    train: dict  # the train section's overrides
    replay: str | None = None  # trained on this replay corpus (replay_corpus), or on USER's
    model: dict = dataclasses.field(default_factory=dict)  # the model section's overrides


FINE_TUNING = {"lr": 5e-4, "min_lr": 5e-5, "warmup_steps": 100}
SETTINGS = {  # a setting's name -> how it trains (None: not trained)
    "imported": None,
    "from scratch": Setting({"init_from": None, "lr": 1e-3, "min_lr": 1e-4, "warmup_steps": 200}),
    "fine-tuned, lr 1e-4": Setting({**FINE_TUNING, "lr": 1e-4, "min_lr": 1e-5}),
    "fine-tuned, lr 5e-4": Setting(FINE_TUNING),
    "fine-tuned, lr 5e-4, keep_teacher 0.5": Setting({**FINE_TUNING, "keep_teacher": 0.5}),
    "fine-tuned, lr 5e-4, replay": Setting(FINE_TUNING, replay="replay"),
    "fine-tuned, lr 1e-3, replay": Setting({**FINE_TUNING, "lr": 1e-3, "min_lr": 1e-4}, "replay"),
}


def user_corpus(folder: Path) -> dict:
    """The user's programs: train, and valid and test split off it by strings."""
    return {"type": "sources", "name": USER, "valid_size": 500, "test_size": 1000,
            "train_sources": [{"file": str(folder), "programs": "user"}]}  # fmt: skip


def replay_corpus(work: Path, replay: str = "replay") -> dict:
    """The user's splits as USER wrote them, the replay pairs (<replay>.{lang}) added to
    train."""
    split = {name: {"file": str(work / f"user_{name}.{{lang}}")} for name in SPLITS}
    pairs = {"file": str(work / f"{replay}.{{lang}}")}
    return {"type": "sources", "name": f"{USER}_{replay}", "valid_source": split["valid"],
            "test_source": split["test"], "train_sources": [split["train"], pairs]}  # fmt: skip


def config_for(corpus: dict, minutes: float, overrides: dict) -> dict:
    train = {"max_minutes": minutes, "max_steps": 100_000, "eval_every": 400,
             "best_metric": "bleu", **overrides}  # fmt: skip
    return fine_tuning(corpus, train)


def write_pair(stem: Path, languages: tuple[str, str], sides: tuple[list[str], list[str]]) -> None:
    """A Moses pair: <stem>.<language> of each side, a line each."""
    for language, lines in zip(languages, sides, strict=True):
        stem.with_name(f"{stem.name}.{language}").write_text(
            "".join(f"{line}\n" for line in lines), "utf-8"
        )


def make_replay(work: Path, config: Config, english: list[str], replay: str = "replay") -> int:
    """The replay corpus `replay` (replay_corpus): the `english` lines translated by the start,
    greedily, beside the user's splits -> how many."""
    languages = (config.corpus.src_lang, config.corpus.tgt_lang)
    for split in SPLITS:
        sides = tuple(read_lines(work / f"data/{USER}/{split}.{side}") for side in ("src", "tgt"))
        write_pair(work / f"user_{split}", languages, sides)
    greedy = dataclasses.replace(config.decode, beam_size=1)
    engine = load_engine(checkpoint=work / IMPORTED, choice="auto", device="cpu")
    german = translate_texts(engine, Texts(english), greedy).translations
    write_pair(work / replay, languages, (english, german))
    corpus = config_for(replay_corpus(work, replay), 0, {})
    run_module(work, "seq2seq.data", "--config", str(write_config(work, f"{replay}_data", corpus)))
    return len(english)


def captions(work: Path, multi30k: Path, count: int) -> list[str]:
    """`count` of Multi30k's English training captions (0: as many as the user's training
    pairs), spread over them."""
    english = read_lines(multi30k / "train.en.gz")
    return spread(english, count or len(read_lines(work / f"data/{USER}/train.src")))


def never_seen(folder: Path, config: Config, count: int) -> dict:
    """Test (a): the held-out programs' pairs, cleaned as a test split is (those no model can
    take dropped), each once, `count` of them spread over the programs."""
    languages = (config.corpus.src_lang, config.corpus.tgt_lang)
    paths = catalogs.catalog_files(folder, "held_out")
    pairs = catalogs.read_catalogs(paths, languages, {})
    kept = list(
        dict.fromkeys(clean(pairs, rules(config, "test", set(), languages), Tally(), "test"))
    )
    programs = sorted({catalogs.program(folder, path) for path in paths})
    return {"sources": spread([s for s, _ in kept], count),
            "references": spread([t for _, t in kept], count), "pairs": len(kept),
            "programs": programs}  # fmt: skip


def spread(lines: list[str], count: int) -> list[str]:
    """`count` of the lines at an even stride (every program of the test has its share)."""
    if not count or count >= len(lines):
        return lines
    return [lines[i * len(lines) // count] for i in range(count)]


def split_of(sources: Path, references: Path) -> dict:
    return {"sources": read_lines(sources), "references": read_lines(references)}


def scores(checkpoint: Path, decoding: DecodeConfig, tests: dict[str, dict]) -> dict:
    """chrF and BLEU on each test, empty or bare outputs (placeholders.bare) on all, chrF of
    the software tests' strings with an accelerator and of the others, and placeholders kept
    on the two software tests."""
    engine = load_engine(checkpoint=checkpoint, choice="auto", device="cpu")

    def translate(sources: list[str], placeholders: str = "protect") -> list[str]:
        settings = dataclasses.replace(decoding, placeholders=placeholders)
        return translate_texts(engine, Texts(sources), settings).translations

    row, pairs, references, bare_outputs = {}, [], [], 0
    for name, test in tests.items():
        outputs = translate(test["sources"])
        refs = [test["references"]]
        row[f"chrf_{name}"] = round(sacrebleu.corpus_chrf(outputs, refs).score, 1)
        row[f"bleu_{name}"] = round(sacrebleu.corpus_bleu(outputs, refs).score, 2)
        bare_outputs += sum(map(bare, test["sources"], outputs))
        if name != "original":
            pairs += zip(test["sources"], outputs, strict=True)
            references += test["references"]
    marked = [source for source, _ in pairs if find(source) or accelerators(source)]
    protected = share_kept(pairs)
    alone = share_kept(zip(marked, translate(marked, "off"), strict=True))
    return {**row, "bare": bare_outputs, **accelerated_chrf(pairs, references),
            "kept_protected": [protected.kept, protected.sources],
            "kept_unprotected": [alone.kept, alone.sources]}  # fmt: skip


def accelerated_chrf(pairs: list[tuple[str, str]], references: list[str]) -> dict:
    """chrF of the outputs whose source has an accelerator, and of the others, with how many."""
    row = {}
    for name, wanted in (("accelerated", True), ("plain", False)):
        chosen = [(output, ref) for (source, output), ref in zip(pairs, references, strict=True)
                  if bool(unaccelerated(source).accelerator) == wanted]  # fmt: skip
        outputs, refs = [o for o, _ in chosen], [r for _, r in chosen]
        row[f"chrf_{name}"] = (
            round(sacrebleu.corpus_chrf(outputs, [refs]).score, 1) if chosen else None
        )
        row[f"strings_{name}"] = len(chosen)
    return row


def train_setting(work: Path, name: str, config: dict) -> tuple[Path, dict]:
    """One setting trained in its own process -> its best checkpoint, minutes and peak RSS."""
    trained = train(work, name, config)
    return trained.folder / "best.pt", {
        "minutes": round(trained.ran.seconds / 60, 1),
        "peak_rss_mib": round(trained.ran.peak_mib),
        "steps": max(record.get("step", 0) for record in trained.metrics),
    }


def table(results: dict) -> str:
    rows = []
    for row in results["rows"]:
        tests = chrf_bleu(row, "never_seen", "newer")
        share = [f"{k / n:.1%} of {n:,}" for k, n in (row[f"kept_{w}"] for w in
                 ("protected", "unprotected"))]  # fmt: skip
        rss = f"{row['peak_rss_mib'] / 1024:.2f} GiB" if row.get("peak_rss_mib") else "-"
        cost = [row.get("steps", "-"), row.get("minutes", "-"), rss]
        rows.append([row["setting"], *tests, row["bleu_original"], *share, *cost])
    header = ["model", "programs never seen, chrF / BLEU", "newer strings, chrF / BLEU",
              "Multi30k BLEU", "placeholders kept (protected)", "the model alone", "steps",
              "minutes", "peak RSS"]  # fmt: skip
    d = results["data"]
    notes = [f"{the_start(results)} Programs never "
              f"seen: {d['never_seen']:,} of the {d['never_seen_pairs']:,} strings of the "
              f"{len(d['never_seen_programs'])} held-out programs; newer strings: the "
              f"{d['newer']:,} strings split off the {d['user_programs']} user programs' "
              f"{d['train'] + d['newer'] + d['valid']:,} (English -> German catalogs of "
              f"{d['catalogs']}; {d['train']:,} train, {d['valid']:,} valid); replay: "
              f"{d['replay']:,} of Multi30k's English training captions, translated by the start "
              f"(greedy). Multi30k: test_2016_flickr. Beam {results['beam']}, length penalty "
              f"{results['length_penalty']}; {results['minutes']} minutes a run; "
              + common.on_machine(results["machine"], "make bench-adapt")]  # fmt: skip
    if served := results.get("libretranslate"):
        notes += [f"{results['chosen']}, packaged (package_version "
                  f"{served['package_version']}) and served by LibreTranslate 1.9.6 and by ours "
                  f"(LibreTranslate's API, beam 4, placeholders not protected): "
                  f"{served['differ']} of {served['strings']} strings of programs never seen "
                  f"answered differently, {served['differ_several']} of them among the "
                  f"{served['several_sentences']} that our splitter cuts into several sentences "
                  "(LibreTranslate's splitter here: spaCy's sentencizer)."]  # fmt: skip
    return common.markdown_table(header, rows, *notes) + "\n"


def data_facts(work: Path, folder: Path) -> dict:
    report = json.loads((work / f"data/{USER}/report.json").read_text("utf-8"))
    return {"catalogs": str(folder), "user_programs": len(catalogs.catalog_files(folder, "user")),
            **{split: report[split]["kept"] for split in ("train", "valid")},
            "newer": report["test"]["kept"]}  # fmt: skip


def start_facts(checkpoint: Path) -> str:
    """What the start is: its size and shape (docs/adapt.md says what the stand-in learnt from)."""
    loaded = load_checkpoint(checkpoint, "cpu")
    model, shape = loaded.model, loaded.config.model
    return (
        f"{model.num_parameters():,} parameters, {shape.enc_layers} + {shape.dec_layers} "
        f"layers of width {shape.d_model}, {shape.n_heads} heads, FFN {shape.d_ff}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = common.arguments(__doc__, out=OUT)
    parser.add_argument("package", type=Path, nargs="?", default=STANDIN)
    parser.add_argument("--catalogs", type=Path, default=Path("/usr/share/locale/de/LC_MESSAGES"))
    parser.add_argument("--minutes", type=float, default=60, help="each run's time budget")
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--multi30k", type=Path, default=MULTI30K)
    parser.add_argument("--work", type=Path, default=common.ROOT / "runs/bench-adapt")
    parser.add_argument("--test-strings", type=int, default=1000,
                        help="of the programs never seen, spread over them (0: all)")  # fmt: skip
    parser.add_argument("--replay", type=int, default=0,
                        help="captions the start translates (0: as many as train)")  # fmt: skip
    parser.add_argument("--libretranslate-python", type=Path, default=LIBRETRANSLATE_PYTHON,
                        help="its venv's (make benchmarks/.venv-libretranslate/.installed); "
                        "without it, the chosen model is not served by LibreTranslate")  # fmt: skip
    parser.add_argument("--served", type=int, default=200, help="test strings asked of both")
    parser.add_argument("--settings", nargs="+", choices=list(SETTINGS), default=list(SETTINGS))
    args = parser.parse_args(argv)
    for needed in (args.package, args.catalogs, args.multi30k / "test_2016_flickr.en.gz"):
        if not needed.exists():
            raise UserError(f"{needed}: not found (make standin makes the package)")
    package, folder = args.package.resolve(), args.catalogs.resolve()
    work = fresh(args.work.resolve())
    data_config = load_config(prepare(work, package, config_for(user_corpus(folder), 0, {})))
    decoding = dataclasses.replace(data_config.decode, beam_size=args.beam)
    tests = {"never_seen": never_seen(folder, data_config, args.test_strings),
             "newer": split_of(*(work / f"data/{USER}/test.{side}" for side in ("src", "tgt"))),
             "original": split_of(*(args.multi30k / f"test_2016_flickr.{lang}.gz"
                                    for lang in ("en", "de")))}  # fmt: skip
    settings = {name: SETTINGS[name] for name in args.settings}
    replayed = 0
    if any(setting and setting.replay for setting in settings.values()):
        english = captions(work, args.multi30k, args.replay)
        replayed = make_replay(work, data_config, english)
    rows, checkpoints = [], {}
    for name, setting in settings.items():
        row, checkpoints[name] = {"setting": name}, work / IMPORTED
        if setting is not None:
            corpus = replay_corpus(work, setting.replay) if setting.replay else user_corpus(folder)
            config = {**config_for(corpus, args.minutes, setting.train), "model": setting.model}
            checkpoints[name], cost = train_setting(work, name, config)
            row.update(cost)
        row.update(scores(checkpoints[name], decoding, tests))
        rows.append(row)
        print(row, flush=True)
    never = tests["never_seen"]
    facts = {**data_facts(work, folder), "never_seen": len(never["sources"]),
             "never_seen_pairs": never["pairs"], "never_seen_programs": never["programs"],
             "replay": replayed}  # fmt: skip
    shown = package.relative_to(common.ROOT) if package.is_relative_to(common.ROOT) else package
    results = {"machine": common.machine(), "package": str(shown),
               "start": start_facts(work / IMPORTED), "minutes": args.minutes, "beam": args.beam,
               "length_penalty": decoding.length_penalty, "data": facts, "rows": rows}  # fmt: skip
    results["chosen"] = chosen(rows)
    if args.libretranslate_python.exists():
        strings = tests["never_seen"]["sources"][: args.served]
        results["libretranslate"] = compare(checkpoints[results["chosen"]], strings,
                                            args.libretranslate_python)  # fmt: skip
    common.save_results(args.out, results, table(results))


def chosen(rows: list[dict]) -> str:
    """The fine-tuned setting chosen by the tests: the best mean chrF on the two software tests
    of those that lose at most 1.0 BLEU on the original domain (if none does: at most 1.0 more
    than the one that loses least)."""
    original = rows[0]["bleu_original"]  # the imported model's
    tuned = [row for row in rows if row["setting"].startswith("fine-tuned")] or rows
    least = original - max(row["bleu_original"] for row in tuned)
    keeping = [row for row in tuned if row["bleu_original"] >= original - max(1.0, least + 1.0)]
    return max(keeping, key=lambda row: row["chrf_never_seen"] + row["chrf_newer"])["setting"]


if __name__ == "__main__":
    run_cli(main)
