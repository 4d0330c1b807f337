"""Running JoeyNMT 2.3.0 in its own Python and reading its outputs (benchmarks/README.md has
the workarounds): `python -m joeynmt train` for the time budget, its validations scored from the
<step>.hyps files they write, then `python -m joeynmt translate` and joeynmt_driver.py
with the best checkpoint."""

import shutil
import signal
from pathlib import Path

from benchmarks.common import ROOT, WARMUP_SENTENCES, run, run_json
from benchmarks.peers import measure
from seq2seq.support.errors import UserError

JOEY_PYTHON = ROOT / "benchmarks/.venv-joeynmt/bin/python"  # installed by make bench-peers
DRIVER = Path(__file__).with_name("joeynmt_driver.py")  # run by JoeyNMT's Python


# ---------------------------------------------------------------- training


def train_joey(args, model_dir: Path, config_path: Path, scoring) -> dict:
    """`python -m joeynmt train` for the budget (SIGINT: it saves and exits), validations
    timed by when their <step>.hyps file appears. `scoring`: peers.Scoring of the valid split."""
    log = config_path.parent / "logs/joeynmt-train.log"
    command = [args.joeynmt_python, "-m", "joeynmt", "train", str(config_path), "--skip-test"]
    poll, appeared = measure.appearing(model_dir, "*.hyps", lambda path: int(path.stem))
    shutil.rmtree(model_dir, ignore_errors=True)  # no <step>.hyps of an earlier run
    stopped = (0, 128 + signal.SIGINT)
    ran = run(
        command, log=log, budget=args.budget, stop=signal.SIGINT, on_poll=poll, allowed=stopped
    )
    curve = [joey_validation(model_dir, step, appeared[step], scoring) for step in sorted(appeared)]
    curve = [v for v in curve if v is not None]
    figures = measure.curve_figures(curve, ran.seconds, ran.peak_mib, scoring.metric)
    step = figures["best_step"] if curve else last_joey_step(model_dir, log)
    keep_only_checkpoint(model_dir, step)
    return {**figures, "decoded_step": step, "curve": curve}


def last_joey_step(model_dir: Path, log: Path) -> int:
    """The step of the checkpoint JoeyNMT saved when stopped (for a run too short to validate;
    its outputs are then decoded only to time them)."""
    latest = model_dir / "latest.ckpt"
    if not latest.is_symlink():
        raise UserError(f"JoeyNMT saved no checkpoint (see {log})")
    print(f"warning: JoeyNMT did not validate in time; decoding its {latest.resolve().name}")
    return int(latest.resolve().stem)


def joey_validation(model_dir: Path, step: int, wall: float, scoring) -> dict | None:
    """One validation of JoeyNMT: our score of its <step>.hyps (None if cut short), with its
    own sequence_accuracy, loss and learning rate from validations.txt."""
    hyps = (model_dir / f"{step}.hyps").read_text("utf-8").splitlines()
    if len(hyps) != len(scoring.refs):
        return None
    result = {"wall_s": wall, "step": step, f"valid_{scoring.metric}": scoring.score(hyps)}
    for line in (model_dir / "validations.txt").read_text("utf-8").splitlines():
        fields = dict(field.split(": ", 1) for field in line.split("\t") if ": " in field)
        if int(fields["Steps"]) == step:
            result["joeynmt_sequence_accuracy"] = float(fields["sequence_accuracy"]) / 100
            result["valid_loss"], result["lr"] = float(fields["loss"]), float(fields["LR"])
    return result


def keep_only_checkpoint(model_dir: Path, step: int) -> None:
    """Delete every <N>.ckpt but <step>.ckpt (about 11 MB each)."""
    for path in model_dir.glob("*.ckpt"):
        if path.stem.isdigit() and int(path.stem) != step:
            path.unlink()


# ---------------------------------------------------------------- decoding


def decode_joey(args, joey_dir: Path, scoring) -> dict:
    """`joeynmt translate` on the test pieces at each batch size (a translate-batch<N>.yaml each),
    then joeynmt_driver.py, which times JoeyNMT's predict() alone after a warm-up."""
    logs = joey_dir / "logs"

    def command(size: int) -> list[str]:
        yaml = joey_dir / f"translate-batch{size}.yaml"
        return [args.joeynmt_python, "-m", "joeynmt", "translate", str(yaml)]

    def timed() -> dict:
        sizes = ",".join(str(size) for size in measure.BATCH_SIZES)
        driver = [args.joeynmt_python, str(DRIVER), str(joey_dir / "translate-batch64.yaml")]
        driver += [str(scoring.source), str(WARMUP_SENTENCES), sizes]
        return run_json(driver, log=logs / "joeynmt-driver.log")

    return scoring.decoding(command, logs / "joeynmt", timed)
