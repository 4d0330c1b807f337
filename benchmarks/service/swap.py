"""make bench-swap: versions of a model swapped in while the service serves under wrk's load
(serve.watch_versions_s: seq2seq/serving/versions.py): the requests that failed (0 expected),
p50 and p99 while versions are swapped in against without, each version's load seconds, and
the service's resident memory before and after.

    python -m benchmarks.service.swap [--config FILE] [--checkpoint C] [--engine auto]
        [--swaps 4] [--seconds 10] [--rounds 3] [--clients 16] [--workers 1] [--quick]
        [--out DIR]

    C (default: the stand-in's, runs/standin_en_de/best.pt; not there: the test suite's small
      model, the seed preset of configs/seed.yaml, trained here in seconds) copied into a
      folder of its own as an experiment: runs/<experiment>/best.pt, and versions/0001/best.pt,
      0002 ... (copies of it: each a file loaded afresh, and with --engine auto its
      CTranslate2 export made beside it beforehand, as python -m seq2seq.improve's are)
    the service on it: python -m seq2seq.serve --config FILE (its serve settings) --checkpoint
      runs/<experiment>/best.pt --engine (auto, its default), serve.watch_versions_s=0.25,
      --workers processes; warmed up by a turn of wrk; its resident memory (VmRSS, its
      workers included)
    then --rounds times, in turn (a change in the machine's load falls on both):
      a turn of wrk (wrk.py, one sentence of the experiment's test split a request, --clients
        connections, --seconds) with no swap
      a turn of the same during which versions/current names the next version, --swaps times,
        the k-th --seconds / (--swaps + 1) x k seconds into the turn, or once the previous
        was swapped in by every worker if later (the service's log says so, with its load
        seconds)
      -> for each kind of turn, pooled (harness.py's Load): requests/s, p50, p99 (the median
         of the turns'), failed (not 2xx, or a socket error)
      -> each swap's load seconds; how many were swapped in while wrk's load ran; the resident
         memory after each round (back to one model's: it does not grow by one per swap)

Results: benchmarks/results/swap.{json,md} (--out DIR elsewhere).
"""

import os
import re
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

from benchmarks import common
from benchmarks.service.clients import Shape
from benchmarks.service.harness import Load
from benchmarks.service.process import HANG, Service, resident_mib, running_server
from benchmarks.service.wrk import run_wrk
from seq2seq import data, train
from seq2seq.checkpoint import read_header
from seq2seq.config import DEFAULT_CONFIG
from seq2seq.decoding.engine_choice import prepare
from seq2seq.support.paths import CURRENT, VERSIONS, text_files

STANDIN = Path("runs/standin_en_de/best.pt")
SEED = common.ROOT / "configs/seed.yaml"
SWAPPED = re.compile(r"-> (\d+) \(loaded in ([\d.]+) s")  # versions.py's line, of a swap
KINDS = ("without swaps", "while versions swap in")


SEEDED = "; no stand-in here: the seed preset, trained in seconds"  # said where it stood in


def stood_in(checkpoint: Path) -> dict:
    """The results' "checkpoint" (the seed preset's config where `checkpoint` is not there)
    and "seed" (whether it stood in)."""
    seed = not checkpoint.exists()
    return {"checkpoint": str(SEED.relative_to(common.ROOT) if seed else checkpoint), "seed": seed}


def seed_preset(folder: Path) -> Path:
    """The seed preset (configs/seed.yaml) trained in `folder`: its best.pt."""
    (folder / "config.yaml").write_text(SEED.read_text())
    before = Path.cwd()
    os.chdir(folder)
    try:
        data.main([])
        train.main([])
    finally:
        os.chdir(before)
    return folder / "runs/seed/best.pt"


def experiment(
    checkpoint: Path, folder: Path, versions: int, engine: str
) -> tuple[Path, list[str]]:
    """`checkpoint` (missing: the seed preset, trained in `folder`) as an experiment of its
    own under `folder` with `versions` versions, each a copy (for `engine` auto, prepared as
    python -m seq2seq.improve prepares its versions) -> its best.pt, and the test sentences
    of its corpus (up to 1,000: the test split in data/ beside its runs/)."""
    if not checkpoint.exists():
        print(f"no {checkpoint}: the seed preset (configs/seed.yaml), trained here", flush=True)
        checkpoint = seed_preset(folder)
    config, _ = read_header(checkpoint)
    best = folder / "served" / config.run_dir / "best.pt"
    for number in range(versions + 1):
        copy = best.parent / VERSIONS / f"{number:04d}" / best.name if number else best
        copy.parent.mkdir(parents=True)
        shutil.copy(checkpoint, copy)
        if number and engine == "auto":
            prepare(copy)
    workdir = checkpoint.parent.parent.parent  # that of runs/<experiment>/best.pt
    source = text_files(workdir / config.data_dir, "test")[0]
    sentences = source.read_text("utf-8").splitlines()
    return best, sentences[:1000]


def swapped(service: Service) -> list[tuple[str, float]]:
    """Each swap the service's log says so far: (the version, its load seconds)."""
    log = service.log.read_text(errors="replace")
    return [(version, float(seconds)) for version, seconds in SWAPPED.findall(log)]


def swap_in(service: Service, run_dir: Path, numbers: range, every_s: float, workers: int):
    """Each version of `numbers` named current in turn, the k-th `every_s` x k seconds from
    now at the soonest, each once the previous was swapped in by every worker; -> a thread
    doing so."""

    def run() -> None:
        start = time.monotonic()
        for k, number in enumerate(numbers, 1):
            time.sleep(max(0.0, start + k * every_s - time.monotonic()))
            current = run_dir / VERSIONS / CURRENT
            current.with_suffix(".new").write_text(f"{number:04d}\n")
            current.with_suffix(".new").replace(current)
            wait_for(service, f"{number:04d}", workers)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def wait_for(service: Service, version: str, workers: int) -> None:
    """Until every worker said it swapped `version` in (HANG at most)."""
    deadline = time.monotonic() + HANG
    while sum(found == version for found, _ in swapped(service)) < workers:
        if time.monotonic() > deadline:
            raise SystemExit(f"hung: version {version} not swapped in after {HANG} s")
        time.sleep(0.05)


def measure(best: Path, sentences: list[str], args) -> dict:
    """The service on `best`'s experiment, its turns with and without swaps (the module)."""
    overrides = ["serve.watch_versions_s=0.25", f"serve.workers={args.workers}"]
    loads = {kind: Load(batches=args.workers == 1) for kind in KINDS}
    shape, run_dir, rounds, memory = Shape.ours(), best.parent, [], {}
    served = ["--checkpoint", str(best), "--engine", args.engine]
    with running_server(served, args.config, overrides) as service:
        run_wrk(service, shape, sentences, args.clients, 1)  # a warm-up
        memory["before_mib"] = resident_mib(service.pid)
        for number in range(args.rounds):
            loads[KINDS[0]].add(run_wrk(service, shape, sentences, args.clients, args.seconds))
            first = 1 + number * args.swaps
            numbers = range(first, first + args.swaps)
            every_s = args.seconds / (args.swaps + 1)
            writer = swap_in(service, run_dir, numbers, every_s, args.workers)
            turn = run_wrk(service, shape, sentences, args.clients, args.seconds)
            done = len(swapped(service)) // args.workers  # a line per worker and swap
            writer.join()
            loads[KINDS[1]].add(turn)
            under_load = done - number * args.swaps
            rounds.append(
                {"resident_mib": resident_mib(service.pid), "swaps_under_load": under_load}
            )
            print(f"round {number + 1}:", rounds[-1], flush=True)
        seconds = [seconds for _, seconds in swapped(service)]
    memory["after_mib"] = rounds[-1]["resident_mib"]
    return {"turns": {kind: load.figures() for kind, load in loads.items()},
            "load_seconds": seconds, "rounds": rounds, "memory": memory}  # fmt: skip


def markdown(results: dict) -> str:
    settings = results["settings"]
    seed = SEEDED if results["seed"] else ""
    about = (
        f"On `{results['checkpoint']}` ({results['checkpoint_mib']:.1f} MiB{seed}), served by "
        f"{settings['workers']} worker(s), --engine {settings['engine']}, "
        f"{settings['clients']} wrk connections, one sentence a request; "
        f"{settings['rounds']} rounds of a {settings['seconds']} s turn without swaps, then "
        f"one during which {settings['swaps']} versions are swapped in."
    )
    turns = results["turns"]
    header = ["turns", "requests/s", "p50, ms", "p99, ms", "failed"]
    rows = [[kind, f"{t['requests_per_s']:.0f}", f"{t['p50_ms']:.1f}", f"{t['p99_ms']:.1f}",
             t["failed"]] for kind, t in turns.items()]  # fmt: skip
    seconds, rounds = results["load_seconds"], results["rounds"]
    memory = results["memory"]
    swaps = common.markdown_table(
        ["swaps", "under load", "load s, median (max), each worker's", "resident MiB before",
         "after each round"],
        [[len(seconds) // settings["workers"], sum(r["swaps_under_load"] for r in rounds),
          f"{statistics.median(seconds):.2f} ({max(seconds):.2f})", f"{memory['before_mib']:.0f}",
          ", ".join(f"{r['resident_mib']:.0f}" for r in rounds)]],
    )  # fmt: skip
    title = "A model swapped while serving: failures, latency and memory"
    return common.service_page(
        title, results, "swap", about, common.markdown_table(header, rows), swaps
    )


def main() -> None:
    parser = common.arguments(
        __doc__, out=common.RESULTS, config=DEFAULT_CONFIG, quick="1 round of 3 s, 2 swaps"
    )
    parser.add_argument("--checkpoint", type=Path, default=STANDIN)
    parser.add_argument("--engine", default="auto", help="serve's --engine")
    parser.add_argument("--swaps", type=int, default=4, help="versions swapped in a turn")
    parser.add_argument("--seconds", type=int, default=10, help="wrk's load a turn")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, default=16, help="wrk's connections")
    parser.add_argument("--workers", type=int, default=1, help="serve.workers")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.seconds, args.swaps = 1, 3, 2
    settings = {
        key: getattr(args, key)
        for key in ("engine", "swaps", "seconds", "rounds", "clients", "workers")
    }
    with tempfile.TemporaryDirectory() as folder:
        best, sentences = experiment(
            args.checkpoint, Path(folder), args.rounds * args.swaps, args.engine
        )
        figures = measure(best, sentences, args)
        size = best.stat().st_size / 2**20
    results = {"machine": common.machine(), **stood_in(args.checkpoint),
               "checkpoint_mib": size,
               "settings": settings, **figures}  # fmt: skip
    common.save_results(args.out / "swap", results, markdown(results))


if __name__ == "__main__":
    main()
