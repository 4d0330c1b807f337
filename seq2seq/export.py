"""`python -m seq2seq.export FORMAT --checkpoint CKPT OUT`: a trained model for other programs.

    ctranslate2   OUT a folder: a CTranslate2 model, for `--engine ctranslate2` (ctranslate2.py)
    argos         OUT.argosmodel: an Argos Translate package, for LibreTranslate (argos.py)
    huggingface   OUT a folder that transformers loads (huggingface.py)

Each format's module says what it holds and what differs from our own decoding.
"""

from pathlib import Path

from seq2seq.checkpoint import load_checkpoint
from seq2seq.exports.argos import export_argos
from seq2seq.exports.ctranslate2 import export_ctranslate2
from seq2seq.exports.huggingface import export_huggingface
from seq2seq.support.errors import command_parser, run_cli


def main(argv: list[str] | None = None) -> None:
    parser = command_parser("seq2seq.export", __doc__.splitlines()[0].split(": ", 1)[1])
    formats = ["ctranslate2", "argos", "huggingface"]
    parser.add_argument("format", choices=formats, help="what to export to")
    parser.add_argument("out", help="where to write it: a file (argos), else a folder")
    parser.add_argument(
        "--checkpoint", required=True, help="the model file, e.g. runs/numbers/best.pt"
    )
    args = parser.parse_args(argv)
    checkpoint, out = load_checkpoint(args.checkpoint), Path(args.out)
    if args.format == "argos":
        export_argos(checkpoint, out, Path(args.checkpoint))
        print(f"exported {args.checkpoint} to {out} (an Argos Translate package)")
    elif args.format == "huggingface":
        export_huggingface(checkpoint, out, Path(args.checkpoint))
        print(f"exported {args.checkpoint} to {out} (Hugging Face transformers, float32)")
    else:
        export_ctranslate2(checkpoint, out)
        print(f"exported {args.checkpoint} to {out} (CTranslate2, float32)")


if __name__ == "__main__":
    run_cli(main)
