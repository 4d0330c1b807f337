"""Our side of `make bench-peers` (benchmarks/README.md): `python -m seq2seq.train` for the
time budget, then greedy decoding with its best checkpoint, by the translate command and in
process."""

import json
import signal
import sys
from dataclasses import replace
from pathlib import Path

from benchmarks.common import run, timed_translation
from benchmarks.peers import measure
from seq2seq.checkpoint import load_checkpoint, save_checkpoint
from seq2seq.config import Config
from seq2seq.decoding.engines import TorchEngine
from seq2seq.support.errors import UserError
from seq2seq.support.paths import METRICS


def train_ours(args, config: Config, metric: str) -> dict:
    """`python -m seq2seq.train` for the budget (SIGTERM: it saves and exits), validations
    timed by when their line appears in metrics.jsonl."""
    log, metrics, curve = config.run_dir / "logs/ours-train.log", config.run_dir / METRICS, []
    command = [sys.executable, "-m", "seq2seq.train", "--restart", "--config", args.config]
    command += [*args.overrides, f"experiment={config.experiment}"]
    command += [f"train.eval_every={args.eval_every}"]

    def poll(elapsed: float) -> None:
        for line in measure.new_lines(metrics, len(curve)):
            entry = json.loads(line)
            keys = ("step", f"valid_{metric}", "valid_loss", "lr", "elapsed_s")
            curve.append({"wall_s": elapsed, **{key: entry[key] for key in keys}})

    metrics.unlink(missing_ok=True)  # and best.pt: nothing of an earlier run
    config.checkpoint_path.unlink(missing_ok=True)
    stopped = (0, 128 + signal.SIGTERM)
    ran = run(command, log=log, budget=args.budget, on_poll=poll, allowed=stopped)
    if not curve:
        raise UserError(f"our training did not validate within {args.budget:.0f} s (see {log})")
    own = {
        f"own_clock_seconds_to_{n}": measure.seconds_to(curve, t, metric, "elapsed_s")
        for n, t in measure.TARGETS[metric].items()
    }
    figures = measure.curve_figures(curve, ran.seconds, ran.peak_mib, metric)
    return {**figures, **own, "decoded_step": figures["best_step"], "curve": curve}


def checkpoint_with_batch_size(best: Path, batch_size: int) -> Path:
    """A copy of best.pt that decodes greedily `batch_size` sentences at a time (translate
    reads both from the checkpoint's config; it takes no overrides)."""
    checkpoint = load_checkpoint(best)
    checkpoint.config.decode.batch_size, checkpoint.config.decode.beam_size = batch_size, 1
    path = best.with_name(f"best.batch{batch_size}.pt")
    parts = (checkpoint.model, checkpoint.src_vocab, checkpoint.tgt_vocab, checkpoint.info)
    save_checkpoint(path, checkpoint.config, *parts)
    return path


def decode_ours(best: Path, scoring: measure.Scoring, logs: Path) -> dict:
    """The translate command on the test source at each batch size (each line whole, --no-split,
    as the peers decode them), then the engine's translate (what the command runs) timed alone
    on the loaded model, after a warm-up."""

    def command(size: int) -> list[str]:
        return [sys.executable, "-m", "seq2seq.translate", "--no-split", "--engine", "torch",
                "--checkpoint", str(checkpoint_with_batch_size(best, size))]  # fmt: skip

    def timed() -> dict:
        checkpoint = load_checkpoint(best)
        engine = TorchEngine(checkpoint)
        sentences = scoring.source.read_text("utf-8").splitlines()
        figures = {"parameters": checkpoint.model.num_parameters(),
                   "src_vocab_size": len(checkpoint.src_vocab),
                   "tgt_vocab_size": len(checkpoint.tgt_vocab)}  # fmt: skip
        for size in measure.BATCH_SIZES:
            decoding = replace(checkpoint.config.decode, batch_size=size, beam_size=1)
            seconds, translated = timed_translation(engine.translate, sentences, decoding)
            figures[str(size)] = {"seconds": seconds, "hypotheses": translated.outputs}
        return figures

    return scoring.decoding(command, logs / "ours", timed)
