"""`make bench-peers`: seq2seq against JoeyNMT 2.3.0, on the same machine, data and model size.

    python benchmarks/peers.py [--budget 360] [--out benchmarks] [--config config.yaml]
    python benchmarks/peers.py --quick      # 30 s of training each, 100 test sentences
    make bench-peers [PEERS_ARGS=--quick]   # installs JoeyNMT first if needed, then the above

Trains each toolkit for the same wall-clock budget, one after the other, then decodes the test
sentences with each one's best checkpoint; writes <out>/peers.json and <out>/peers.md. What
each figure measures, the settings chosen for JoeyNMT and the workarounds for it:
benchmarks/README.md. The parts: peers_joeynmt_config.py (JoeyNMT's settings from ours),
peers_joeynmt.py (running it, reading its outputs), peers_ours.py, peers_measure.py (timing,
RSS, figures) and peers_report.py (the Markdown).
"""

import argparse
import os
from pathlib import Path

import torch
from bench import machine, machine_speed, save_results
from peers_joeynmt import JOEY_PYTHON, decode_joey, train_joey
from peers_joeynmt_config import (
    batch_settings,
    joey_config,
    output_limit,
    write_translate_configs,
    write_yaml,
)
from peers_ours import decode_ours, train_ours
from peers_report import DIFFERENCES, markdown, ratios

from seq2seq.config import Config, load_config
from seq2seq.support.errors import UserError, run_cli
from seq2seq.support.paths import id_files, text_files


def check_inputs(config: Config, joeynmt_python: str) -> None:
    for split in ("train", "valid", "test"):
        for path in (*text_files(config.data_dir, split), *id_files(config.data_dir, split, "src")):
            if not path.exists():
                raise UserError(f"{path} is missing: run `make data` first")
    if not Path(joeynmt_python).exists():
        raise UserError(
            f"no JoeyNMT Python at {joeynmt_python}: `make bench-peers` installs JoeyNMT 2.3.0 "
            "into benchmarks/.venv-joeynmt"
        )


def test_subset(config: Config, run: Path, count: int) -> tuple[Path, list[str]]:
    """The first `count` test sentences, written to <run>/test.src; their references."""
    src, tgt = text_files(config.data_dir, "test")
    sources = src.read_text("utf-8").splitlines()[:count]
    source = run / "test.src"
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text("".join(line + "\n" for line in sources), encoding="utf-8")
    return source, tgt.read_text("utf-8").splitlines()[: len(sources)]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="30 s each, 100 test sentences")
    parser.add_argument(
        "--budget", type=float, help="training seconds each (default 360; quick 30)"
    )
    parser.add_argument("--sentences", type=int, help="test sentences (default 1000; quick 100)")
    parser.add_argument(
        "--eval-every", type=int, help="steps between validations (default 100; quick 50)"
    )
    parser.add_argument("--config", default="config.yaml")
    parser.add_argument("--joeynmt-python", default=str(JOEY_PYTHON), help="JoeyNMT's venv python")
    parser.add_argument(
        "--out", help="folder for peers.json and .md (default benchmarks; quick runs/peers-quick)"
    )
    parser.add_argument("overrides", nargs="*", metavar="key.sub=value")
    args = parser.parse_args(argv)
    quick = args.quick
    args.budget = args.budget or (30.0 if quick else 360.0)
    args.sentences = args.sentences or (100 if quick else 1000)
    args.eval_every = args.eval_every or (50 if quick else 100)
    args.out = args.out or ("runs/peers-quick" if quick else "benchmarks")
    args.experiment = "peers-quick" if quick else "peers"  # runs/<experiment>/
    args.joeynmt_python = str(Path(args.joeynmt_python).absolute())  # not resolve(): a venv
    return args


def prepare(args, config: Config) -> dict:
    """The settings of both sides; writes JoeyNMT's train.yaml and the test sentences."""
    batches = batch_settings(config)
    limit = output_limit(config)
    joey_dir = config.run_dir / "joeynmt"
    joey = joey_config(
        config, joey_dir / "model", batches["joeynmt_batch_size_tokens"], limit, args.eval_every
    )
    write_yaml(joey_dir / "train.yaml", joey)
    raw = config.to_dict()
    return {
        "budget_s": args.budget,
        "eval_every": args.eval_every,
        "test_sentences": args.sentences,
        "batches": batches,
        "joeynmt_max_output_length": limit,
        **{section: raw[section] for section in ("model", "train", "decode")},
        "joeynmt_config": joey,
        "differences": DIFFERENCES,
    }


def run_both(args, config: Config, settings: dict) -> tuple[dict, dict]:
    """Train ours, then JoeyNMT; decode with ours, then JoeyNMT. -> (ours, JoeyNMT) figures."""
    run, load = config.run_dir, {}
    joey_dir = run / "joeynmt"
    valid_refs = text_files(config.data_dir, "valid")[1].read_text("utf-8").splitlines()
    source, refs = test_subset(config, run, args.sentences)
    settings.update(valid_sentences=len(valid_refs), test_sentences=len(refs))
    print(f"training ours for {args.budget:.0f} s ...", flush=True)
    load["train_ours"] = os.getloadavg()[0]
    ours = train_ours(args, config, run)
    print(f"training JoeyNMT for {args.budget:.0f} s ...", flush=True)
    load["train_joeynmt"] = os.getloadavg()[0]
    theirs = train_joey(args, joey_dir / "model", joey_dir / "train.yaml", valid_refs)
    write_translate_configs(settings["joeynmt_config"], joey_dir, theirs["decoded_step"])
    print("decoding ...", flush=True)
    load["decode_ours"] = os.getloadavg()[0]
    ours.update(decode_ours(config.checkpoint_path, source, refs, run / "logs"))
    load["decode_joeynmt"] = os.getloadavg()[0]
    theirs.update(decode_joey(args, joey_dir, source, refs))
    settings["load_average_1min_before"] = load  # other work on the machine skews the figures
    return ours, theirs


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    config = load_config(args.config, [*args.overrides, f"experiment={args.experiment}"])
    check_inputs(config, args.joeynmt_python)
    settings = prepare(args, config)
    ours, theirs = run_both(args, config, settings)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    results = {
        "mode": "quick" if args.quick else "full",
        "machine": {**machine(), **machine_speed(device)},
        "settings": settings,
        "ours": ours,
        "joeynmt": theirs,
        "ratios": ratios(ours, theirs),
    }
    save_results(Path(args.out) / "peers", results, markdown(results))


if __name__ == "__main__":
    run_cli(main)
