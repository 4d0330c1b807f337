"""`python -m seq2seq.import_model`: a model you already run, as a checkpoint of ours.

    python -m seq2seq.import_model PACKAGE [OUT.pt]
        PACKAGE  an Argos Translate package (.argosmodel, or an installed package's folder,
                 e.g. ~/.local/share/argos-translate/packages/translate-en_de-1_0) or a
                 CTranslate2 model folder with its sentencepiece.model
        OUT.pt   default: runs/<from>_<to>_imported/best.pt; report.json and config.yaml
                 beside it

    PACKAGE --seq2seq/exports/importing.py--> Checkpoint --> OUT.pt (+ report.json, config.yaml)

OUT.pt is a checkpoint like the ones `make train` writes: translate, evaluate, serve,
export and train.init_from take it. config.yaml is its config (its model and vocabulary
settings, its languages, Argos's decoding): a fine-tuning config names it as its `base:` and
adds its own corpus and train.init_from: OUT.pt (docs/adapt.md). How the architecture is
read, and what is refused: seq2seq/exports/importing.py.
Needs protobuf (the sentencepiece model is rewritten): pip install -e ".[export]".
"""

import json
from pathlib import Path

import yaml

from seq2seq.checkpoint import save_checkpoint
from seq2seq.exports.importing import import_model
from seq2seq.support.errors import command_parser, run_cli
from seq2seq.support.files import atomic_write, write_json


def main(argv: list[str] | None = None) -> None:
    parser = command_parser("seq2seq.import_model", __doc__.splitlines()[0])
    parser.add_argument("package", type=Path, help="an Argos package or a CTranslate2 model")
    parser.add_argument("out", type=Path, nargs="?", metavar="OUT.pt", help="where to write it")
    args = parser.parse_args(argv)
    imported = import_model(args.package)
    c = imported.checkpoint
    out = args.out or c.config.run_dir / "best.pt"
    out.parent.mkdir(parents=True, exist_ok=True)
    save_checkpoint(out, c.config, c.model, c.src_vocab, c.tgt_vocab, c.info)
    write_json(out.parent / "report.json", imported.report)
    with atomic_write(out.parent / "config.yaml", "w") as file:
        yaml.safe_dump(c.config.to_dict(), file, sort_keys=False, allow_unicode=True)
    cfg = c.model.cfg
    print(
        f"imported {args.package} into {out}: {cfg.enc_layers}+{cfg.dec_layers} layers, width "
        f"{cfg.d_model}, {cfg.norm}-norm, {cfg.activation}, {len(c.tgt_vocab):,} pieces, "
        f"{c.model.num_parameters():,} parameters"
    )
    print(json.dumps(imported.report, indent=2))


if __name__ == "__main__":
    run_cli(main)
