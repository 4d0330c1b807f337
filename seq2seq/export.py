"""`python -m seq2seq.export FORMAT [--checkpoint CKPT] [OUT]`: a trained model for other programs.

    ctranslate2   OUT a folder: a CTranslate2 model, for `--engine ctranslate2` (ctranslate2.py)
    argos         OUT.argosmodel: an Argos Translate package, for LibreTranslate (argos.py)
    huggingface   OUT a folder that transformers loads (huggingface.py)

Without --checkpoint, the best.pt of the run of --config (with its overrides); without OUT,
beside that checkpoint: <from>_<to>.argosmodel (<from>_<to>.int8.argosmodel with int8),
ctranslate2/ or huggingface/. The CTranslate2 weights (ctranslate2, argos) are int8 or float32:
int8's matrices are a quarter of the size, several times faster on a CPU, the outputs slightly
different. --quantization auto (the default) measures both on this CPU, on the checkpoint's
validation split (decoding/compute_types.py, kept in the export beside the checkpoint), and
saves int8 where it loses at most decode.compute_type_bleu_loss BLEU; float32 where it loses
more or there is no validation split to measure on. A model imported from an int8 package (or
fine-tuned from one) is exported int8 unless --quantization says otherwise. Each format's
module says what it holds and what differs from our own decoding.
"""

from pathlib import Path

from seq2seq.checkpoint import Checkpoint, load_checkpoint
from seq2seq.config import DEFAULT_CONFIG, Config, load_config, translation_pair
from seq2seq.decoding.compute_types import AS_SET, ComputeType, weights_type
from seq2seq.decoding.exported import export_beside
from seq2seq.exports.argos import export_argos
from seq2seq.exports.argos_package import SUFFIX
from seq2seq.exports.ctranslate2 import QUANTIZATIONS, export_ctranslate2
from seq2seq.exports.huggingface import export_huggingface
from seq2seq.support.errors import command_parser, run_cli

FORMATS = ["ctranslate2", "argos", "huggingface"]


def parse_arguments(argv: list[str] | None):
    parser = command_parser("seq2seq.export", __doc__.splitlines()[0].split(": ", 1)[1])
    parser.add_argument("format", choices=FORMATS, help="what to export to")
    parser.add_argument(
        "words", nargs="*", metavar="OUT | key.sub=value",
        help="where to write it (a file for argos, else a folder; default: beside the "
        "checkpoint), and overrides of --config",
    )  # fmt: skip
    parser.add_argument("--checkpoint", help="the model file (default: best.pt of --config's run)")
    parser.add_argument("--config", default=DEFAULT_CONFIG, help="experiment config (YAML)")
    parser.add_argument(
        "--quantization", choices=("auto", *QUANTIZATIONS),
        help="the CTranslate2 weights' type (ctranslate2, argos; default: an imported "
        "package's, else auto: int8 where it loses at most decode.compute_type_bleu_loss BLEU)",
    )  # fmt: skip
    args = parser.parse_intermixed_args(argv)
    outs = [word for word in args.words if "=" not in word]
    args.overrides = [word for word in args.words if "=" in word]
    if len(outs) > 1:
        parser.error(f"one OUT at most, not {len(outs)}: {' '.join(outs)}")
    if args.checkpoint and args.overrides:
        parser.error("config overrides choose a run's checkpoint: not with --checkpoint")
    if args.format == "huggingface" and args.quantization not in (None, "auto", "float32"):
        parser.error("--quantization: the huggingface export is float32")
    args.out = Path(outs[0]) if outs else None
    return args


def default_out(checkpoint: Checkpoint, path: Path, format: str, quantization: str) -> Path:
    """Beside the checkpoint: <from>_<to>.argosmodel (<from>_<to>.int8.argosmodel: never the
    float32 package's name), ctranslate2/ or huggingface/."""
    if format != "argos":
        return path.parent / format
    source, target = translation_pair(checkpoint.config, checkpoint.config.serve)
    kind = "" if quantization == "float32" else f".{quantization}"
    return path.parent / f"{source.code}_{target.code}{kind}{SUFFIX}"


def main(argv: list[str] | None = None) -> None:
    args = parse_arguments(argv)
    config = None if args.checkpoint else load_config(args.config, args.overrides)
    path = Path(args.checkpoint or config.checkpoint_path)
    checkpoint = load_checkpoint(path)
    weights = saved_type(args, checkpoint, path, config or checkpoint.config)
    out = args.out or default_out(checkpoint, path, args.format, weights.name)
    if args.format == "argos":
        if not export_argos(checkpoint, out, path, weights.name):
            print(f"{out} is up to date (made from {path}, with the same card)")
            return
        what = f"an Argos Translate package, {weights.name}"
    elif args.format == "huggingface":
        export_huggingface(checkpoint, out, path)
        what = "Hugging Face transformers, float32"
    else:
        export_ctranslate2(checkpoint, out, weights.name)
        what = f"CTranslate2, {weights.name}"
    print(f"exported {path} to {out} ({what}{'' if weights.why == AS_SET else ': ' + weights.why})")


def saved_type(args, checkpoint: Checkpoint, path: Path, config: Config) -> ComputeType:
    """The type of the weights the export saves: --quantization's, an imported package's, or
    auto's measured choice (float32 for the huggingface export)."""
    given = args.quantization or checkpoint.info.get("origin", {}).get("quantization", "auto")
    if args.format == "huggingface":
        return ComputeType("float32", AS_SET)
    if given != "auto":
        return ComputeType(given, AS_SET)
    return weights_type(export_beside(checkpoint, path), config)


if __name__ == "__main__":
    run_cli(main)
