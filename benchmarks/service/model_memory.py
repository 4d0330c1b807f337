"""`make bench-models`: what one model costs the service, in each form it can be served in: its
weights on disk, the memory its process gains by loading it, and the seconds the load takes
(serve.lazy and serve.models_mib are about these).

    python -m benchmarks.service.model_memory [--checkpoint runs/multi30k_de_en/best.pt]
        [--out DIR]

The forms: the checkpoint (our torch engine), its CTranslate2 export (float32; int8, quantized
as it loads) and its Argos package (float32; int8). Each is loaded in a fresh process, after
its imports, which reports its resident memory (VmRSS) before the load, after it and after a
first translation, and the load's seconds -> <out>/model_memory.{json,md}.
"""

import sys
import tempfile
from pathlib import Path

from benchmarks import common
from seq2seq.checkpoint import load_checkpoint
from seq2seq.exports.argos import export_argos
from seq2seq.exports.ctranslate2 import export_ctranslate2

CHILD = """
import json, sys, time
import ctranslate2, torch
from seq2seq.checkpoint import load_checkpoint
from seq2seq.decoding.argos_engine import ArgosEngine
from seq2seq.decoding.ctranslate2_engine import CTranslate2Engine
from seq2seq.decoding.engines import TorchEngine

def rss():
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmRSS"))
    return int(line.split()[1]) / 1024

form, path, compute_type = sys.argv[1:4]
torch.set_num_threads(1)
before, start = rss(), time.perf_counter()
if form == "torch":
    engine = TorchEngine(load_checkpoint(path))
elif form == "ctranslate2":
    engine = CTranslate2Engine.load(path, "cpu", compute_type)
else:
    engine = ArgosEngine.load(path, "cpu", compute_type)
seconds, loaded = time.perf_counter() - start, rss()
engine.translate(["Ein Hund rennt durch den Schnee."], engine.config.decode)
json.dump({"before_mib": before, "loaded_mib": loaded, "translated_mib": rss(),
           "load_seconds": seconds}, sys.stdout)
"""


def measure(form: str, path: Path, compute_type: str) -> dict:
    command = [sys.executable, "-c", CHILD, form, str(path.resolve()), compute_type]
    figures = common.run_json(command, cwd=common.ROOT)  # seq2seq importable from there
    figures["load_mib"] = figures["translated_mib"] - figures["before_mib"]
    return figures


def disk_mib(path: Path) -> float:
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files) / 2**20


def markdown(results: dict) -> str:
    about = (f"On `{results['checkpoint']}`: each form loaded in a fresh process after its "
             "imports, on the CPU.")  # fmt: skip
    header = ["form", "on disk, MiB", "memory gained, MiB (load and a first translation)",
              "load, s"]  # fmt: skip
    rows = [[name, f"{row['disk_mib']:.1f}", f"{row['load_mib']:.0f}", f"{row['load_seconds']:.2f}"]
            for name, row in results["forms"].items()]  # fmt: skip
    title = "One model's memory and load time, by the form it is served in"
    return common.service_page(
        title, results, "model_memory", about, common.markdown_table(header, rows)
    )


def main() -> None:
    parser = common.arguments(__doc__, out=common.RESULTS)
    parser.add_argument("--checkpoint", type=Path, default=Path("runs/multi30k_de_en/best.pt"))
    args = parser.parse_args()
    checkpoint = load_checkpoint(args.checkpoint)
    forms = {}
    with tempfile.TemporaryDirectory() as tmp:
        exported = Path(tmp) / "ct2"
        export_ctranslate2(checkpoint, exported)
        paths = {
            "checkpoint, torch": ("torch", args.checkpoint, "default"),
            "CTranslate2 export, float32": ("ctranslate2", exported, "float32"),
            "CTranslate2 export, int8": ("ctranslate2", exported, "int8"),
        }
        for quantization in ("float32", "int8"):
            package = Path(tmp) / f"{quantization}.argosmodel"
            export_argos(checkpoint, package, quantization=quantization)
            paths[f"Argos package, {quantization}"] = ("argos", package, "default")
        for name, (form, path, compute_type) in paths.items():
            forms[name] = {**measure(form, path, compute_type), "disk_mib": disk_mib(path)}
            print(name, forms[name], flush=True)
    results = {"machine": common.machine(), "checkpoint": str(args.checkpoint), "forms": forms}
    common.save_results(args.out / "model_memory", results, markdown(results))


if __name__ == "__main__":
    main()
