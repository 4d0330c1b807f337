"""`make bench-peers`: seq2seq against JoeyNMT 2.3.0 and OpenNMT-py 3.5.1 (the trainer of Argos
Translate's packages), on the same machine, data, vocabulary and model size.

    python -m benchmarks.peers.compare [--budget 360] [--out DIR] [--config config.yaml]
    python -m benchmarks.peers.compare --quick      # 30 s of training each, 100 test sentences
    python -m benchmarks.peers.compare --config configs/multi30k_de_en.yaml --peers opennmt \
        --budget 900
    make bench-peers [PEERS_ARGS=--quick]   # installs both peers first if needed, then the above

Trains each toolkit for the same wall-clock budget, one after the other, then decodes the test
sentences greedily with each one's best checkpoint (by valid exact match on the numbers corpus,
by BLEU on a real one); writes <out>/peers.json and <out>/peers.md (peers_<corpus>.* for
another corpus than numbers; <out>: benchmarks/results/, runs/peers-quick/ with --quick).
What each figure measures, the settings chosen for each peer and the workarounds for them:
benchmarks/README.md; the parts: benchmarks/peers/__init__.py.
"""

import argparse
import os
from pathlib import Path

import torch

from benchmarks.common import RESULTS, ROOT, arguments, machine, machine_speed, save_results
from benchmarks.peers.joeynmt_config import (
    batch_settings,
    joey_config,
    output_limit,
    write_translate_configs,
    write_yaml,
)
from benchmarks.peers.joeynmt_peer import JOEY_PYTHON, decode_joey, train_joey
from benchmarks.peers.measure import Scoring, metric_of
from benchmarks.peers.opennmt_peer import ONMT_PYTHON, opennmt_config, run_opennmt
from benchmarks.peers.ours import decode_ours, train_ours
from benchmarks.peers.pieces import detokenizer, write_pieces
from benchmarks.peers.report import DIFFERENCES, PICTURES, draw_curves, markdown, ratios
from seq2seq.config import Config, load_config
from seq2seq.support.errors import UserError, run_cli
from seq2seq.support.paths import id_files, text_files

PEERS = {"joeynmt": ("JoeyNMT 2.3.0", JOEY_PYTHON), "opennmt": ("OpenNMT-py 3.5.1", ONMT_PYTHON)}


def check_inputs(config: Config, args) -> None:
    for split in ("train", "valid", "test"):
        for path in (*text_files(config.data_dir, split), *id_files(config.data_dir, split, "src")):
            if not path.exists():
                raise UserError(f"{path} is missing: run `make data` first")
    for peer in args.peers:
        python = getattr(args, f"{peer}_python")
        if not Path(python).exists():
            name, default = PEERS[peer]
            raise UserError(
                f"no {name} Python at {python}: `make bench-peers` installs it into "
                f"{default.parent.parent.relative_to(ROOT)}"
            )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = arguments(__doc__, out=None, config="config.yaml", quick="30 s each, 100 sentences")
    parser.add_argument(
        "--budget", type=float, help="training seconds each (default 360; quick 30)"
    )
    parser.add_argument("--sentences", type=int, help="test sentences (default 1000; quick 100)")
    parser.add_argument(
        "--eval-every", type=int, help="steps between validations (default 100; quick 50)"
    )
    parser.add_argument(
        "--peers", default="joeynmt,opennmt", help="which peers, comma-separated (default both)"
    )
    for peer, (name, python) in PEERS.items():
        parser.add_argument(f"--{peer}-python", default=str(python), help=f"{name}'s venv python")
    parser.add_argument("overrides", nargs="*", metavar="key.sub=value")
    args = parser.parse_args(argv)
    quick = args.quick
    args.budget = args.budget or (30.0 if quick else 360.0)
    args.sentences = args.sentences or (100 if quick else 1000)
    args.eval_every = args.eval_every or (50 if quick else 100)
    args.out = args.out or (Path("runs/peers-quick") if quick else RESULTS)
    args.experiment = "peers-quick" if quick else "peers"  # runs/<experiment>/
    args.peers = [peer.strip() for peer in args.peers.split(",") if peer.strip()]
    if unknown := set(args.peers) - set(PEERS):
        parser.error(f"--peers: unknown {', '.join(sorted(unknown))} (known: {', '.join(PEERS)})")
    for peer in PEERS:  # not resolve(): a venv's python is a link
        setattr(args, f"{peer}_python", str(Path(getattr(args, f"{peer}_python")).absolute()))
    return args


def scorings(config: Config, pieces: Path, count: int) -> dict:
    """How each side's translations are scored: ours of the text, the peers' of the pieces;
    the valid split whole, the first `count` test sentences (written to <run>/test.*)."""
    metric, text = metric_of(config), detokenizer(config)
    valid_refs = text_files(config.data_dir, "valid")[1].read_text("utf-8").splitlines()
    test_refs = text_files(config.data_dir, "test")[1].read_text("utf-8").splitlines()[:count]
    sources = {}
    for name, folder in (("text", config.data_dir), ("pieces", pieces)):
        lines = text_files(folder, "test")[0].read_text("utf-8").splitlines()[:count]
        sources[name] = config.run_dir / f"test.{name}"
        sources[name].write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return {
        "ours_test": Scoring(sources["text"], test_refs, metric),
        "peer_valid": Scoring(text_files(pieces, "valid")[0], valid_refs, metric, text),
        "peer_test": Scoring(sources["pieces"], test_refs, metric, text),
    }


def prepare(args, config: Config) -> dict:
    """The settings of every side; writes the pieces and each peer's YAML, and makes the
    folders of each side's logs."""
    run = config.run_dir
    for side in ("", *args.peers):  # <run>/logs, <run>/<peer>/logs
        (run / side / "logs").mkdir(parents=True, exist_ok=True)
    pieces = write_pieces(config, run / "pieces")
    limit = output_limit(config, pieces)
    raw = config.to_dict()
    settings = {
        "metric": metric_of(config),
        "peers": args.peers,
        "budget_s": args.budget,
        "eval_every": args.eval_every,
        "test_sentences": args.sentences,
        "max_output_length": limit,
        **{section: raw[section] for section in ("corpus", "model", "train", "decode")},
        "differences": {peer: DIFFERENCES[peer] for peer in args.peers},
    }
    if "joeynmt" in args.peers:
        batches = batch_settings(config)
        joey_dir = run / "joeynmt"
        size = batches["joeynmt_batch_size_tokens"]
        joey = joey_config(config, pieces, joey_dir / "model", size, limit, args.eval_every)
        write_yaml(joey_dir / "train.yaml", joey)
        settings.update(batches=batches, joeynmt_config=joey)
    if "opennmt" in args.peers:
        onmt = opennmt_config(config, pieces, run / "opennmt/model", args.eval_every)
        write_yaml(run / "opennmt/train.yaml", onmt)
        settings["opennmt_config"] = onmt
    return settings


def run_all(args, config: Config, settings: dict) -> tuple[dict, dict]:
    """Ours, then each peer: trained for the budget, then decoding the test sentences with its
    best checkpoint. -> (ours, {peer: figures})."""
    run, load, theirs = config.run_dir, {}, {}
    scoring = scorings(config, run / "pieces", args.sentences)
    settings.update(valid_sentences=len(scoring["peer_valid"].refs))
    settings["test_sentences"] = len(scoring["ours_test"].refs)
    print(f"training ours for {args.budget:.0f} s ...", flush=True)
    load["ours"] = os.getloadavg()[0]
    ours = train_ours(args, config, settings["metric"])
    ours.update(decode_ours(config.checkpoint_path, scoring["ours_test"], run / "logs"))
    if "joeynmt" in args.peers:
        print(f"training JoeyNMT for {args.budget:.0f} s, then decoding ...", flush=True)
        load["joeynmt"], joey_dir = os.getloadavg()[0], run / "joeynmt"
        joey = train_joey(args, joey_dir / "model", joey_dir / "train.yaml", scoring["peer_valid"])
        write_translate_configs(settings["joeynmt_config"], joey_dir, joey["decoded_step"])
        theirs["joeynmt"] = {**joey, **decode_joey(args, joey_dir, scoring["peer_test"])}
    if "opennmt" in args.peers:
        print(f"training OpenNMT-py for {args.budget:.0f} s, then decoding ...", flush=True)
        load["opennmt"] = os.getloadavg()[0]
        theirs["opennmt"] = run_opennmt(
            args, run / "opennmt/train.yaml", scoring["peer_valid"], scoring["peer_test"],
            settings["max_output_length"],
        )  # fmt: skip
    settings["load_average_1min_before"] = load  # other work on the machine skews the figures
    return ours, theirs


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    config = load_config(args.config, [*args.overrides, f"experiment={args.experiment}"])
    check_inputs(config, args)
    config.run_dir.mkdir(parents=True, exist_ok=True)
    settings = prepare(args, config)
    ours, theirs = run_all(args, config, settings)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    results = {
        "mode": "quick" if args.quick else "full",
        "machine": {**machine(), **machine_speed(device)},
        "settings": settings,
        "ours": ours,
        "peers": theirs,
        "ratios": {peer: ratios(ours, figures) for peer, figures in theirs.items()},
    }
    corpus = config.corpus.name
    stem = "peers" if corpus == "numbers" else f"peers_{corpus}"
    save_results(args.out / stem, results, markdown(results))
    draw_curves(results, PICTURES / f"{stem}.png")


if __name__ == "__main__":
    run_cli(main)
