"""`make bench-scale`: how the data path behaves as the corpus grows, from 20,000 to 5,000,000
training pairs of the numbers corpus (the default model and config otherwise); each size in its
own folder under runs/bench-scale/: seq2seq.data, seq2seq.train (to its first step, and
resumed), torchrun with 2 processes (benchmarks/README.md lists the figures).

    python -m benchmarks.speed.scale [--sizes 20000 5000000] [--out DIR]
    python -m benchmarks.speed.scale --quick          # 2,000 and 20,000 pairs: a smoke test

-> <out>/scale.json and <out>/scale.md. Not run by CI: many minutes and several GB of disk.
"""

import re
import shutil
import sys
import tempfile
from pathlib import Path

from benchmarks import common
from seq2seq.support.files import read_log
from seq2seq.support.paths import LAST, METRICS

STEPS = 200  # steps of each training run; validations at STEPS / 2 and STEPS
FIRST_STEP = re.compile(r"^step [\d,]+/", re.MULTILINE)  # training's progress line off a terminal


def time_to_first_step(command: list[str], cwd: Path) -> tuple[float, float]:
    """Run a training command to its end -> (seconds until its first progress line, "step
    N/M ...", in its stderr as it grows; peak RSS in MiB)."""
    first: list[float] = []
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder, "stderr")

        def poll(elapsed: float) -> None:
            if not first and FIRST_STEP.search(log.read_text(errors="replace")):
                first.append(elapsed)

        ran = common.run(
            command, log=log, cwd=cwd, env={"PYTHONPATH": str(common.ROOT)}, on_poll=poll
        )
    if not first:
        sys.exit(f"no progress line from {' '.join(command)}")
    return first[0], ran.peak_mib


def measure(size: int, folder: Path) -> dict:
    folder = folder.resolve()
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(common.ROOT / "config.yaml", folder / "config.yaml")
    corpus = [f"corpus.train_size={size}", "corpus.valid_size=500", "corpus.test_size=500"]
    steps = [f"train.max_steps={STEPS}", f"train.eval_every={STEPS // 2}", "--restart"]
    train = [sys.executable, "-m", "seq2seq.train", *corpus]
    data = common.run([sys.executable, "-m", "seq2seq.data", *corpus], cwd=folder)
    first_s, train_rss = time_to_first_step([*train, *steps], folder)
    log = read_log(folder / "runs/numbers" / METRICS)
    last_mib = (folder / "runs/numbers" / LAST).stat().st_size / 2**20
    more = [f"train.max_steps={STEPS + 10}", f"train.eval_every={STEPS // 2}"]
    resume_s, _ = time_to_first_step([*train, *more], folder)
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    ddp = [*torchrun, "-m", "seq2seq.train", *corpus, *steps, "experiment=ddp"]
    _, ddp_rss = time_to_first_step(ddp, folder)
    return {
        "train_pairs": size,
        "data_seconds": data.seconds,
        "data_microseconds_per_pair": 1e6 * data.seconds / size,
        "data_peak_rss_mib": data.peak_mib,
        "train_seconds_to_first_step": first_s,
        "train_peak_rss_mib": train_rss,
        "train_tokens_per_s": log[-1]["tokens_per_s"],
        "last_pt_mib": last_mib,
        "resume_seconds_to_first_step": resume_s,
        "torchrun_2_processes_peak_rss_mib": ddp_rss,
    }


def markdown(results: dict) -> str:
    sizes = results["sizes"]
    about = common.on_machine(results["machine"], "make bench-scale")
    header = ["figure", *(f"{size['train_pairs']:,} pairs" for size in sizes)]
    rows = [
        [f"`{key}`", *(f"{size[key]:,.1f}" for size in sizes)]
        for key in sizes[0]
        if key != "train_pairs"
    ]
    return common.page("Scaling the corpus", about, common.markdown_table(header, rows))


def main() -> None:
    parser = common.arguments(__doc__, out=common.RESULTS, quick="2,000 and 20,000 pairs")
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 5_000_000])
    args = parser.parse_args()
    sizes = [2_000, 20_000] if args.quick else args.sizes
    rows = []
    for size in sizes:
        print(f"{size:,} training pairs ...", flush=True)
        rows.append(measure(size, Path("runs/bench-scale") / str(size)))
    results = {"machine": common.machine(), "sizes": rows}
    common.save_results(args.out / "scale", results, markdown(results))


if __name__ == "__main__":
    main()
