"""make gpu-check's training checks: each batch size in each precision mode, ours against
torch.nn.Transformer, and a run stopped and resumed against a straight one (gpu_check.py says
what each measures)."""

import contextlib
import math
from collections.abc import Callable

import torch
from torch._dynamo.utils import counters

import seq2seq.train as train_module
from benchmarks.checks.gpu_setup import Setup, Skip, problems
from benchmarks.common import cuda_peak_mib, reset_cuda_peak
from benchmarks.speed.training import compare_training
from seq2seq.checkpoint import read_state
from seq2seq.config import Config
from seq2seq.support.errors import Interrupted
from seq2seq.support.files import read_log
from seq2seq.support.paths import METRICS

MODES = {  # train_<tokens>_<mode>: the overrides of each mode
    "auto": ["train.precision=auto"],
    "fp16": ["train.precision=fp16"],
    "compile": ["train.precision=auto", "train.compile=true"],
}
RESUME_TOLERANCE = 1e-2  # relative L2 difference of the resumed parameters, at least


# -- training ----------------------------------------------------------------------------


@contextlib.contextmanager
def at_step(step: int, action: Callable[[], None]):
    """Call `action()` as training begins step `step` (counted from 0): seq2seq/train.py asks
    learning_rate() for the rate of each step before anything else, so wrapping it is a hook."""
    original = train_module.learning_rate

    def rate(current: int, cfg, elapsed_s: float = 0.0) -> float:
        if current == step:
            action()
        return original(current, cfg, elapsed_s)

    train_module.learning_rate = rate
    try:
        yield
    finally:
        train_module.learning_rate = original


def graphs_compiled() -> int:
    """Graphs torch.compile (dynamo) has compiled in this process so far."""
    return counters["stats"]["unique_graphs"]


def train_and_measure(setup: Setup, config: Config) -> dict:
    """Train `config` from scratch in this process -> the figures of the run."""
    warm = config.train.max_steps // 3  # the first meter: compiling, warming up
    snapshot = {}
    reset_cuda_peak(setup.device)
    before = graphs_compiled()
    with at_step(warm, lambda: snapshot.update(graphs=graphs_compiled())):
        train_module.train(config, restart=True)
    log = read_log(config.run_dir / METRICS)
    figures = {
        "tokens_per_s": log[-1]["tokens_per_s"],  # the last meter: steady steps
        "train_loss_first": log[0]["train_loss"],
        "train_loss_last": log[-1]["train_loss"],
        "valid_loss": log[-1]["valid_loss"],
        "valid_exact_match": log[-1]["valid_exact_match"],
        "cuda_peak_memory_mib": cuda_peak_mib(setup.device),
    }
    if config.train.compile:
        figures["graphs_compiled"] = graphs_compiled() - before
        figures[f"graphs_compiled_after_step_{warm}"] = graphs_compiled() - snapshot["graphs"]
    return figures


def check_training(setup: Setup, tokens: int, mode: str) -> tuple[dict, list[str]]:
    if mode == "fp16" and not setup.on_cuda:
        raise Skip("fp16 needs CUDA (seq2seq.train refuses it elsewhere)")
    steps = setup.sizes.steps
    config = setup.config(
        f"experiment=gpu-check-{tokens}-{mode}", f"train.batch_tokens={tokens}",
        f"train.max_steps={steps}", f"train.eval_every={steps // 3}", *MODES[mode],
    )  # fmt: skip
    figures = train_and_measure(setup, config)
    first, last = figures["train_loss_first"], figures["train_loss_last"]
    finite = all(math.isfinite(figures[k]) for k in ("train_loss_last", "valid_loss"))
    return figures, problems(
        (finite, "the loss is not finite"),
        (last < first, f"the train loss did not fall ({first:.3f} -> {last:.3f})"),
    )


def check_nn_transformer(setup: Setup) -> tuple[dict, list[str]]:
    sizes = setup.sizes
    figures = compare_training(
        setup.config(), sizes.compare_batches, sizes.compare_rounds, setup.device
    )
    return figures, [] if figures["train_tokens_per_s"] > 0 else ["no tokens trained"]


def parameters(config: Config) -> torch.Tensor:
    """The parameters in the run's last.pt, flattened into one float64 vector."""
    state = read_state(config.run_dir / train_module.LAST)["model"]
    return torch.cat([tensor.double().flatten() for tensor in state.values()])


@contextlib.contextmanager
def deterministic():
    """torch's deterministic kernels where it has them (a warning where it has none), so that
    two runs can be compared: atomic additions on a GPU make sums differ in their last bits,
    and 200 steps amplify that. (cuBLAS also needs CUBLAS_WORKSPACE_CONFIG, set by main.)"""
    before = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before, warn_only=warn_only)


def check_resume(setup: Setup) -> tuple[dict, list[str]]:
    """Stopped at 3/4 and resumed, against a run straight to the end; a second straight run
    says how far two runs drift apart with nothing stopped (0 where every kernel is
    deterministic), and the resumed one may differ by no more than twice that."""
    steps = setup.sizes.resume_steps
    stop = steps * 3 // 4
    tokens = setup.sizes.budgets[1]
    common = [f"train.max_steps={steps}", f"train.eval_every={steps // 2}"]
    common.append(f"train.batch_tokens={tokens}")
    straight = setup.config("experiment=gpu-check-straight", *common)
    again = setup.config("experiment=gpu-check-straight-again", *common)
    resumed = setup.config("experiment=gpu-check-resumed", *common)
    stopped_at = None
    with deterministic():
        train_module.train(straight, restart=True)
        train_module.train(again, restart=True)
        try:
            train_module.train(resumed, restart=True, stop_after=stop)
        except Interrupted:
            stopped_at = read_state(resumed.run_dir / train_module.LAST)["info"]["step"]
        train_module.train(resumed)
    a, b, c = parameters(straight), parameters(resumed), parameters(again)
    difference = float((a - b).norm() / a.norm())
    drift = float((a - c).norm() / a.norm())
    allowed = max(RESUME_TOLERANCE, 2 * drift)
    figures = {
        "stopped_at_step": stopped_at,
        "steps": steps,
        "parameters_relative_difference": difference,
        "straight_runs_relative_difference": drift,
        "tolerance": allowed,
    }
    return figures, problems(
        (stopped_at == stop, f"training did not stop at step {stop}"),
        (difference <= allowed, f"resumed parameters differ by {difference:.2e}"),
    )
