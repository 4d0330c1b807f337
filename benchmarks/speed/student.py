"""`make bench-student`: a teacher and its student (docs/distill.md) decoded by CTranslate2 on
one thread, a test sentence at a time, in int8 and float32, greedy and beam 4, with and without
the vocabulary map (decode.vmap): test BLEU and sentences per CPU second of each
-> benchmarks/results/student.{json,md}.

    python -m benchmarks.speed.student [--teacher configs/standin_en_de.yaml] \
        [--student configs/standin_en_de_student.yaml] [--sentences 1000]

Each model's best.pt is exported (with its vocabulary map, from its training data) into a
temporary folder; the CPU seconds are the process's (time.process_time) over the decoding of
the sentences, one call each, as a service answers one request.
"""

import dataclasses
import tempfile
import time
from pathlib import Path

from benchmarks import common
from seq2seq.checkpoint import load_checkpoint
from seq2seq.config import load_config
from seq2seq.decoding.ctranslate2_engine import CTranslate2Engine
from seq2seq.exports.ctranslate2 import export_ctranslate2
from seq2seq.support.errors import run_cli
from seq2seq.text.parallel import load_split
from seq2seq.training.metrics import sacrebleu_scores

OUT = common.RESULTS / "student"
TYPES = ("int8", "float32")
BEAMS = (1, 4)
COMMAND = "make bench-student"


def main(argv: list[str] | None = None) -> None:
    parser = common.arguments(__doc__, out=OUT)
    parser.add_argument("--teacher", default="configs/standin_en_de.yaml")
    parser.add_argument("--student", default="configs/standin_en_de_student.yaml")
    parser.add_argument("--sentences", type=int, default=1000, help="of the test split")
    args = parser.parse_args(argv)
    rows = []
    for role, path in (("teacher", args.teacher), ("student", args.student)):
        rows += measured(role, load_config(path), args.sentences)
    results = {"machine": common.machine(), "sentences": args.sentences, "rows": rows}
    common.save_results(args.out, results, table(results))


def measured(role: str, config, sentences: int) -> list[dict]:
    """Each setting's BLEU and speed for the model of `config`."""
    checkpoint = load_checkpoint(config.checkpoint_path, "cpu", config.make_command("train"))
    test = load_split(config, "test")[:sentences]
    sources, references = [s for s, _ in test], [t for _, t in test]
    parameters = sum(p.numel() for p in checkpoint.model.parameters())
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        export_ctranslate2(checkpoint, Path(folder))
        for compute_type in TYPES:
            engine = CTranslate2Engine.load(folder, "cpu", compute_type)
            for beam_size in BEAMS:
                for vmap in (False, True):
                    decoding = dataclasses.replace(
                        config.decode, beam_size=beam_size, vmap=vmap, batch_size=1
                    )
                    seconds, outputs = cpu_seconds(engine, sources, decoding)
                    rows.append({
                        "model": role, "config": config.file, "parameters": parameters,
                        "compute_type": compute_type, "beam_size": beam_size, "vmap": vmap,
                        "bleu": sacrebleu_scores(outputs, references)["bleu"],
                        "sentences_per_cpu_second": len(sources) / seconds,
                    })  # fmt: skip
                    print(rows[-1], flush=True)
    return rows


def cpu_seconds(engine, sources: list[str], decoding) -> tuple[float, list[str]]:
    """The process's CPU seconds to translate `sources` a call each (after one to warm up),
    and the translations."""
    engine.translate(sources[:1], decoding)
    start = time.process_time()
    outputs = [engine.translate([source], decoding).outputs[0] for source in sources]
    return time.process_time() - start, outputs


def table(results: dict) -> str:
    rows = results["rows"]
    base = {
        (r["compute_type"], r["beam_size"]): r["sentences_per_cpu_second"]
        for r in rows
        if r["model"] == "teacher" and not r["vmap"]
    }
    header = ["model", "parameters", "type", "search", "vocabulary map", "test BLEU",
              "sentences / CPU s", "x the teacher's"]  # fmt: skip
    lines = [
        [r["model"], f"{r['parameters'] / 1e6:.1f} M", r["compute_type"],
         "greedy" if r["beam_size"] == 1 else f"beam {r['beam_size']}",
         "yes" if r["vmap"] else "no", f"{r['bleu']:.2f}",
         f"{r['sentences_per_cpu_second']:.1f}",
         f"{r['sentences_per_cpu_second'] / base[r['compute_type'], r['beam_size']]:.2f}"]
        for r in rows
    ]  # fmt: skip
    return (
        common.markdown_table(
            header,
            lines,
            f"The first {results['sentences']:,} sentences of the test split, each alone, "
            "CTranslate2 on one thread; x the teacher's: against the teacher in the same type "
            f"and search, without the map; {common.on_machine(results['machine'], COMMAND)}",
        )
        + "\n"
    )


if __name__ == "__main__":
    run_cli(main)
