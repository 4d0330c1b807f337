"""`make bench-speed-quality`: each model in each of CTranslate2's compute types, its speed
against the quality it keeps -> benchmarks/results/speed_quality.{json,md} (a table for each
CPU it ran on: a run adds its CPU's, or replaces it) and docs/benchmarks/speed_quality.png
(beside --out's files when --out is given).

    python -m benchmarks.speed.speed_quality [--config CONFIG ...] [--sentences N]

    each config's best.pt -> its CTranslate2 export, in a temporary folder
      x each compute type CTranslate2 supports on this CPU
      x greedy and beam 4 (the config's length penalty)
      x without and with the export's vocabulary map (decode.vmap; where the export has one:
        seq2seq/exports/vocab_map.py)
      -> the first N sentences of the config's test split, BATCH a call, on one thread:
         BLEU (sacreBLEU, against the references) and sentences per CPU second (the
         process's CPU time: CTranslate2 decodes in this process)
      -> CTranslate2 alone on the same export, sentences and settings (common.ctranslate2_alone:
         its translate_batch on the tokens made beforehand, with our engine's options, the
         sentences in one call as our engine gives them, cut by CTranslate2 into batches of
         BATCH): its sentences per CPU second, the limit, and ours / it, the share of the
         limit our engine keeps (encoding, detokenizing and a beam search's calls by length
         limit are what it adds)

The figures of a CPU are comparable with each other; across CPUs, each is its own machine's.
"""

import itertools
import json
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from sacrebleu.metrics import BLEU

from benchmarks import common
from seq2seq.checkpoint import load_checkpoint
from seq2seq.config import load_config
from seq2seq.decoding.ctranslate2_engine import CTranslate2Engine
from seq2seq.exports.ctranslate2 import export_ctranslate2, import_ctranslate2
from seq2seq.exports.vocab_map import VMAP
from seq2seq.plot import pyplot
from seq2seq.support.errors import UserError, run_cli
from seq2seq.support.paths import text_files
from seq2seq.text.parallel import iter_parallel

OUT = common.RESULTS / "speed_quality"
PICTURE = common.ROOT / "docs/benchmarks/speed_quality.png"
CONFIGS = ["configs/standin_en_de.yaml", "configs/standin_en_de_student.yaml"]
BEAMS = (1, 4)
BATCH = 16  # sentences a call, as the service batches them


def main(argv: list[str] | None = None) -> None:
    parser = common.arguments(__doc__, out=OUT)
    parser.add_argument("--config", nargs="+", default=CONFIGS, help="each model's config")
    parser.add_argument("--sentences", type=int, default=1000, help="of each test split")
    args = parser.parse_args(argv)
    info = common.machine()
    rows = [row for config in args.config for row in measured(config, args.sentences)]
    if not rows:
        raise UserError(f"no model to measure: none of {', '.join(args.config)} has a best.pt")
    results = earlier(args.out)
    results["machines"][info["device_name"]] = {"machine": info, "rows": rows}
    common.save_results(args.out, results, table(results))
    draw(results, PICTURE if args.out == OUT else args.out.with_suffix(".png"))


def earlier(out: Path) -> dict:
    """The results kept at `out` (every CPU's), or none yet."""
    path = out.with_suffix(".json")
    return json.loads(path.read_text("utf-8")) if path.is_file() else {"machines": {}}


def measured(config_path: str, sentences: int) -> list[dict]:
    """The rows of one model: each compute type, beam and map (none if it is not trained)."""
    config = load_config(config_path)
    path = config.checkpoint_path
    if not path.is_file():
        print(f"{config_path}: no {path}, left out")
        return []
    pairs = list(iter_parallel(*text_files(config.data_dir, "test")))[:sentences]
    with tempfile.TemporaryDirectory() as folder:  # with its map, where its training data is
        export_ctranslate2(load_checkpoint(path), Path(folder))
        return each_setting(Path(folder), config, pairs)


def each_setting(folder: Path, config, pairs: list[tuple[str, str]]) -> list[dict]:
    """The export in `folder` translating the sources of `pairs` in each setting: BLEU and
    sentences per CPU second."""
    sources, references = [s for s, _ in pairs], [[t for _, t in pairs]]
    types = sorted(import_ctranslate2().get_supported_compute_types("cpu"))
    maps = (False, True) if (folder / VMAP).is_file() else (False,)
    rows = []
    for kind, beam, vmap in itertools.product(types, BEAMS, maps):
        engine = CTranslate2Engine.load(folder, "cpu", kind)
        decoding = replace(config.decode, beam_size=beam, batch_size=BATCH, vmap=vmap)
        engine.translate(sources[: common.WARMUP_SENTENCES], decoding)
        start = time.process_time()
        outputs = engine.translate(sources, decoding).outputs
        cpu = time.process_time() - start
        bleu = BLEU().corpus_score(outputs, references).score
        speed = round(len(sources) / cpu, 1)
        alone = round(common.ctranslate2_alone(engine, sources, decoding, len(sources)), 1)
        rows.append({"model": config.experiment, "compute_type": kind, "beam": beam,
                     "vmap": vmap, "bleu": round(bleu, 2), "sentences": len(sources),
                     "sentences_per_cpu_second": speed,
                     "alone_sentences_per_cpu_second": alone})  # fmt: skip
        setting = f"{config.experiment} {kind} beam {beam}{' vmap' * vmap}"
        print(f"{setting}: BLEU {bleu:.2f}, {speed} sentences per CPU second "
              f"(CTranslate2 alone: {alone})", flush=True)  # fmt: skip
    return rows


ALONE = ["CTranslate2 alone, sentences per CPU second", "ours / CTranslate2 alone"]
ALONE_NOTE = (
    "CTranslate2 alone: CTranslate2's translate_batch on the same export and sentences, given "
    "the tokens made beforehand and the options our engine passes, the sentences in one call "
    f"cut by CTranslate2 into batches of {BATCH}, one thread, timed by CPU time "
    "(benchmarks/common.py's ctranslate2_alone): the limit. Ours / CTranslate2 alone: the "
    "share of it that our engine keeps."
)


def table(results: dict) -> str:
    """One table a CPU: each model, type and beam, with its speed against the first model's
    float32 at that beam, and against CTranslate2 alone (where the run measured it)."""
    parts = []
    for name, measure in results["machines"].items():
        rows = measure["rows"]
        first = rows[0]["model"]
        base = {r["beam"]: r["sentences_per_cpu_second"] for r in rows
                if (r["model"], r["compute_type"], r["vmap"]) == (first, "float32", False)
                }  # fmt: skip
        limit = "alone_sentences_per_cpu_second" in rows[0]  # not measured by older runs
        header = ["model", "compute type", "beam", "vocabulary map", "test BLEU",
                  "sentences per CPU second", "x the first model's float32",
                  *ALONE * limit]  # fmt: skip
        lines = [[r["model"], r["compute_type"], r["beam"], "yes" if r["vmap"] else "no",
                  f"{r['bleu']:.2f}",
                  f"{r['sentences_per_cpu_second']:,.1f}",
                  f"{r['sentences_per_cpu_second'] / base[r['beam']]:.2f}",
                  *against_alone(r)]
                 for r in rows]  # fmt: skip
        command = "make bench-speed-quality"
        about = (f"{rows[0]['sentences']:,} test sentences, {BATCH} a call, one thread; "
                 f"{common.on_machine(measure['machine'], command)}")  # fmt: skip
        notes = [ALONE_NOTE] * limit + [about]
        parts.append(f"## {name}\n\n" + common.markdown_table(header, lines, *notes))
    return common.page("Speed against quality, by compute type", *parts)


def against_alone(row: dict) -> list[str]:
    """A row's cells of CTranslate2 alone: its speed and ours / it (none where not measured)."""
    alone = row.get("alone_sentences_per_cpu_second")
    if alone is None:
        return []
    return [f"{alone:,.1f}", f"{row['sentences_per_cpu_second'] / alone:.2f}"]


def draw(results: dict, path: Path) -> None:
    """Test BLEU against sentences per CPU second, a panel for each CPU: a colour for each
    model, a marker for each compute type, hollow with the vocabulary map; beam 4's points
    lie above greedy's."""
    plt = pyplot()
    machines = results["machines"]
    figure, panels = plt.subplots(1, len(machines), figsize=(8 * len(machines), 5),
                                  squeeze=False)  # fmt: skip
    for axes, (name, measure) in zip(panels[0], machines.items(), strict=True):
        rows = measure["rows"]
        colours = {m: f"C{i}" for i, m in enumerate(dict.fromkeys(r["model"] for r in rows))}
        kinds = dict.fromkeys(r["compute_type"] for r in rows)
        markers = dict(zip(kinds, "osD^v<>", strict=False))
        for r in rows:
            colour, marker = colours[r["model"]], markers[r["compute_type"]]
            label = f"{r['model']}, {r['compute_type']}{', map' * r['vmap']}"
            axes.scatter(r["sentences_per_cpu_second"], r["bleu"], marker=marker, label=label,
                         edgecolors=colour, facecolors="none" if r["vmap"] else colour)  # fmt: skip
        handles, labels = axes.get_legend_handles_labels()
        unique = dict(zip(labels, handles, strict=True))
        axes.legend(unique.values(), unique.keys(), fontsize=7, loc="center left",
                    bbox_to_anchor=(1.01, 0.5))  # fmt: skip
        axes.set_xscale("log")
        axes.set_title(f"{name} (upper points: beam 4; lower: greedy)", fontsize=9)
        axes.set_xlabel("sentences per CPU second (log)")
        axes.set_ylabel("test BLEU")
        axes.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


if __name__ == "__main__":
    run_cli(main)
