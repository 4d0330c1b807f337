"""`make bench-catalog-map`: the stand-in package with a vocabulary map made of a user's
catalogs (translate --vmap DIR: seq2seq/exports/vocab_map.py), against it without: chrF and
BLEU, and speed -> benchmarks/results/catalog_map.{json,md} (a table for each CPU it ran on: a
run adds its CPU's, or replaces it).

    python -m benchmarks.adapt.catalog_map [PACKAGE] [--catalogs DIR] [--strings 500]
        [--sentences 500]

    DIR (/usr/share/locale/de/LC_MESSAGES), its programs in three groups (Source.programs, as
    bench-adapt has them):
        base, user  --linked into a folder of their own--> the map's catalogs (what the
                    package learnt from, and the user's programs): made once, timed
        held_out    --target.never_seen--> test: --strings of their pairs, cleaned as a test
                    split is, spread over the programs (software the map never read)
    data/standin_en_de/test.{src,tgt}, --sentences of them spread over it: Multi30k's test
        captions (the package's own domain, which no catalog speaks of)
    PACKAGE (runs/standin_en_de/en_de.int8.argosmodel, in its own type), greedy and beam 4
    (speed_quality's BEAMS), without and with the map (decode.vmap), BATCH sentences a call
    on one thread -> each test: chrF and BLEU (sacreBLEU), and sentences per CPU second (the
    process's CPU time: CTranslate2 decodes in it), after a warm-up
"""

import dataclasses
import itertools
import os
import tempfile
import time
from pathlib import Path

import sacrebleu

from benchmarks import common
from benchmarks.adapt.target import STANDIN, never_seen, spread
from benchmarks.speed.speed_quality import BATCH, BEAMS, earlier
from seq2seq.config import load_config
from seq2seq.decoding.argos_engine import ArgosEngine
from seq2seq.decoding.engines import translate_texts
from seq2seq.exports.vocab_map import cache_folder
from seq2seq.localization import catalogs
from seq2seq.support.errors import UserError, run_cli
from seq2seq.support.paths import text_files
from seq2seq.text.parallel import read_lines
from seq2seq.text.sentences import Texts

OUT = common.RESULTS / "catalog_map"
CONFIG = common.ROOT / "configs/standin_en_de.yaml"  # the stand-in's: its pair, its test split
MAPPED = ("base", "user")  # the groups of programs the map is made of; held_out: the test
TESTS = {"held_out": "held-out programs' strings", "multi30k": "Multi30k test captions"}


def main(argv: list[str] | None = None) -> None:
    parser = common.arguments(__doc__, out=OUT)
    parser.add_argument("package", nargs="?", type=Path, default=STANDIN)
    parser.add_argument("--catalogs", type=Path, default=Path("/usr/share/locale/de/LC_MESSAGES"))
    parser.add_argument("--strings", type=int, default=500, help="of the held-out programs")
    parser.add_argument("--sentences", type=int, default=500, help="of Multi30k's test")
    args = parser.parse_args(argv)
    if not args.package.exists():
        raise UserError(f"no package at {args.package}: `make standin` makes it")
    config = load_config(CONFIG)
    sources, references = (read_lines(path) for path in text_files(config.data_dir, "test"))
    tests = {"held_out": never_seen(args.catalogs, config, args.strings),
             "multi30k": {"sources": spread(sources, args.sentences),
                          "references": spread(references, args.sentences)}}  # fmt: skip
    with tempfile.TemporaryDirectory() as work:  # the map made afresh, the user's cache unread
        os.environ["XDG_CACHE_HOME"] = str(Path(work) / "cache")
        engine, made = with_map(args.package, linked(args.catalogs, Path(work) / "catalogs"))
    info = common.machine()
    results = earlier(args.out)
    settings = itertools.product(BEAMS, (False, True))
    rows = [measured(engine, beam, vmap, tests) for beam, vmap in settings]
    results["machines"][info["device_name"]] = {
        "machine": info, "package": args.package.name, "map": made, "rows": rows,
        "tests": {name: len(test["sources"]) for name, test in tests.items()},
        "held_out_programs": tests["held_out"]["programs"],
    }  # fmt: skip
    common.save_results(args.out, results, table(results))


def linked(folder: Path, into: Path) -> Path:
    """`into`, holding a link to each catalog of `folder`'s MAPPED programs."""
    into.mkdir()
    for group in MAPPED:
        for path in catalogs.catalog_files(folder, group):
            (into / path.name).symlink_to(path)
    return into


def with_map(package: Path, mapped: Path) -> tuple[ArgosEngine, dict]:
    """The package loaded with the map of `mapped`'s catalogs, made now (an empty cache), and
    what it took: CPU seconds, catalogs, the map's lines."""
    start = time.process_time()
    engine = ArgosEngine.load(package, "cpu", catalogs=mapped)
    seconds = time.process_time() - start
    [text] = [path.read_text("utf-8") for path in cache_folder().iterdir()]
    return engine, {"catalogs": len(list(mapped.iterdir())), "lines": text.count("\n"),
                    "load_cpu_seconds": round(seconds, 1)}  # fmt: skip


def measured(engine: ArgosEngine, beam: int, vmap: bool, tests: dict[str, dict]) -> dict:
    """One setting on each test: chrF, BLEU, sentences per CPU second."""
    settings = {"beam_size": beam, "batch_size": BATCH, "vmap": vmap}
    decoding = dataclasses.replace(engine.config.decode, **settings)
    row = {"beam": beam, "vmap": vmap}
    for name, test in tests.items():
        translate_texts(engine, Texts(test["sources"][: common.WARMUP_SENTENCES]), decoding)
        start = time.process_time()
        outputs = translate_texts(engine, Texts(test["sources"]), decoding).translations
        cpu = time.process_time() - start
        references = [test["references"]]
        row |= {f"chrf_{name}": round(sacrebleu.corpus_chrf(outputs, references).score, 2),
                f"bleu_{name}": round(sacrebleu.corpus_bleu(outputs, references).score, 2),
                f"speed_{name}": round(len(outputs) / cpu, 1)}  # fmt: skip
    print(row, flush=True)
    return row


def table(results: dict) -> str:
    """One table a CPU: each test, beam and map, with chrF, BLEU, speed and the speed against
    the same beam's without the map."""
    parts = []
    for name, measure in results["machines"].items():
        rows, sizes = measure["rows"], measure["tests"]
        base = {r["beam"]: r for r in rows if not r["vmap"]}
        header = ["test", "beam", "vocabulary map", "chrF", "BLEU", "sentences per CPU second",
                  "x without the map"]  # fmt: skip
        lines = [[f"{TESTS[test]} ({sizes[test]:,})", r["beam"], "yes" if r["vmap"] else "no",
                  f"{r[f'chrf_{test}']:.2f}", f"{r[f'bleu_{test}']:.2f}",
                  f"{r[f'speed_{test}']:,.1f}",
                  f"{r[f'speed_{test}'] / base[r['beam']][f'speed_{test}']:.2f}"]
                 for test in TESTS for r in rows]  # fmt: skip
        made = measure["map"]
        about = (
            f"{measure['package']}, {BATCH} sentences a call, one thread; the map made of the "
            f"{made['catalogs']} catalogs of the base and user programs ({made['lines']:,} "
            f"lines; the package loaded and the map made in {made['load_cpu_seconds']} CPU "
            f"seconds, once: the next loads find it), tested on the held-out programs "
            f"({', '.join(measure['held_out_programs'])}); "
            f"{common.on_machine(measure['machine'], 'make bench-catalog-map')}"
        )
        parts.append(f"## {name}\n\n" + common.markdown_table(header, lines, about))
    return common.page("A vocabulary map made of catalogs, on the stand-in package", *parts)


if __name__ == "__main__":
    run_cli(main)
