"""`make gpu-check`: the whole CUDA path of seq2seq, exercised on this machine's GPU in one
command (planned to take under 10 minutes on one H200, half of it the test suite).

    python benchmarks/gpu_check.py [--device cuda] [--quick] [--out benchmarks] [--work DIR]

Without a CUDA device it says so in one line and exits 0. Otherwise it builds the numbers
corpus in a scratch folder (--work, default runs/gpu-check/) and runs the checks below on
configs/numbers_gpu.yaml, one after the other. Each is recorded as pass, fail or skip (with the
reason) with its figures in <out>/gpu.json and <out>/gpu.md; the exit status is 1 when any
check failed, after both files are written. A check left out with --skip keeps the result
that <out>/gpu.json already holds for it from a full run on the same GPU model, marked with
that run's date (so a short device loan can measure what is missing and keep the rest).

    environment          torch, CUDA and cuDNN versions, the GPU, whether it has real bf16
    train_<tokens>_<mode>
                         300 steps at 6,000, 24,000 and 96,000 tokens a step, each with
                         train.precision auto (bf16 where the GPU has it), fp16 (with the
                         gradient scaler) and auto + train.compile: tokens/s of the last 100
                         steps, train loss of the first and last 100 steps (finite, falling),
                         the CUDA allocator's peak, graphs compiled in all and after step 100
    nn_transformer       ours against torch.nn.Transformer, trained alike (bench.py's
                         compare_training: the recipe's precision and compile)
    resume               stopped after step 150 of 200 and resumed, against a run
                         straight to 200: the parameters' relative difference (not bit-for-bit
                         on a GPU: atomic additions make its sums vary in the last bits)
    attention            self- and cross-attention over odd source lengths (1 .. 127), eager
                         and compiled, fp32 and bf16 autocast, against torch's
                         scaled_dot_product_attention in float64 on the CPU: largest error
    torchrun             `make train-ddp` with one process per GPU (torch.cuda.device_count())
    eval                 `make eval` on the resumed model: greedy and beam 5, sentences/s
    serve                the service under load (benchmarks/serve_load.py's load_check)
    ctranslate2          the model exported (python -m seq2seq.export) and translated on the
                         device by CTranslate2: sentences/s, share of outputs identical to ours
    pytest               the project's suite (python -m pytest -q) on this machine

--quick runs every path with tiny sizes (a small model and corpus, 30 steps), so that
tests/benchmarks/test_gpu_check.py can run it on the CPU (--device cpu --quick); what cannot run
there (fp16, the nested pytest) is skipped with the reason recorded, and off CUDA the quick
mode compiles with torch's aot_eager backend (dynamo and AOTAutograd, without the minutes of
C++ that inductor builds on a CPU).
"""

import argparse
import contextlib
import copy
import json
import math
import os
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from bench import Treatment, compare_training
from common import cpu_name, cuda_peak_mib, machine, reset_cuda_peak, save_results
from serve_load import load_check, timed_command
from torch._dynamo.utils import counters

import seq2seq.train as train_module
from seq2seq import data
from seq2seq.checkpoint import read_state
from seq2seq.config import Config, load_config
from seq2seq.model.attention import MultiHeadAttention
from seq2seq.model.masks import padding_mask
from seq2seq.support.errors import Interrupted
from seq2seq.support.paths import METRICS, text_files
from seq2seq.text.special import PAD

ROOT = Path(__file__).resolve().parent.parent
RECIPE = ROOT / "configs/numbers_gpu.yaml"


@dataclass(frozen=True)
class Sizes:
    budgets: tuple[int, ...]  # train.batch_tokens of the training checks
    steps: int  # of each training check; validations (and meters) every steps / 3
    resume_steps: int  # the resume check's runs (stopped at 3/4 of it)
    ddp_steps: int
    compare_batches: int  # compare_training's batches and rounds
    compare_rounds: int
    attention_lengths: tuple[int, ...]  # odd source lengths
    overrides: tuple[str, ...] = ()  # on top of the recipe


FULL = Sizes((6000, 24000, 96000), 300, 200, 100, 40, 3, (1, 3, 5, 7, 13, 31, 63, 127))
QUICK = Sizes(
    (300, 600, 1200), 30, 20, 10, 3, 1, (1, 3, 7, 13),
    ("corpus.train_size=2000", "corpus.valid_size=100", "corpus.test_size=200",
     "model.d_model=32", "model.n_heads=2", "model.enc_layers=1", "model.dec_layers=1",
     "model.d_ff=64", "train.warmup_steps=10"),
)  # fmt: skip
MODES = {  # train_<tokens>_<mode>: the overrides of each mode
    "auto": ["train.precision=auto"],
    "fp16": ["train.precision=fp16"],
    "compile": ["train.precision=auto", "train.compile=true"],
}
# attention: (autocast dtype, TF32 matrix products, the largest error allowed) of each
# precision; tf32 is what fp32 runs as on CUDA (pick_device), its 10-bit mantissa ~5e-4 here
PRECISIONS = {
    "float32": (torch.float32, False, 1e-4),
    "tf32": (torch.float32, True, 2e-3),
    "bfloat16": (torch.bfloat16, False, 5e-2),
}
RESUME_TOLERANCE = 1e-2  # relative L2 difference of the resumed parameters, at least
SAME_OUTPUTS = 0.9  # CTranslate2: share of outputs identical to ours (full mode)


class Skip(Exception):
    """This check cannot run here; the message says why."""


@dataclass
class Setup:
    """What every check shares: the device, the sizes, the recipe and the scratch folder
    (the current directory while the checks run)."""

    device: torch.device
    quick: bool
    sizes: Sizes

    def config(self, *overrides: str) -> Config:
        return load_config(RECIPE, self.overrides(*overrides))

    def overrides(self, *more: str) -> list[str]:
        return [*self.sizes.overrides, f"train.device={self.device}", *more]

    def command_config(self, *more: str) -> list[str]:
        """--config and overrides for a `python -m seq2seq.<command>` subprocess."""
        return ["--config", str(RECIPE), *self.overrides(*more)]

    @property
    def on_cuda(self) -> bool:
        return self.device.type == "cuda"


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


def metrics_log(config: Config) -> list[dict]:
    return [json.loads(line) for line in (config.run_dir / METRICS).read_text().splitlines()]


def train_and_measure(setup: Setup, config: Config) -> dict:
    """Train `config` from scratch in this process -> the figures of the run."""
    warm = config.train.max_steps // 3  # the first meter: compiling, warming up
    snapshot = {}
    reset_cuda_peak(setup.device)
    before = graphs_compiled()
    with at_step(warm, lambda: snapshot.update(graphs=graphs_compiled())):
        train_module.train(config, restart=True)
    log = metrics_log(config)
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
    return figures, [
        message
        for ok, message in [
            (finite, "the loss is not finite"),
            (last < first, f"the train loss did not fall ({first:.3f} -> {last:.3f})"),
        ]
        if not ok
    ]


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
    return figures, [
        message
        for ok, message in [
            (stopped_at == stop, f"training did not stop at step {stop}"),
            (difference <= allowed, f"resumed parameters differ by {difference:.2e}"),
        ]
        if not ok
    ]


# -- attention ---------------------------------------------------------------------------


def attention_error(module, reference, setup: Setup, length: int, dtype) -> float:
    """Largest difference to the float64 reference of self-attention over `length` source
    positions and of 5 queries attending to them, in a batch of 4 with padding."""
    generator = torch.Generator().manual_seed(length)
    d = reference.d_model
    src = torch.ones(4, length, dtype=torch.long)  # token ids: only padding or not matters
    for row, keep in enumerate([length, max(1, length - 2), max(1, length // 2), 1]):
        src[row, keep:] = 0
    mask = padding_mask(src, PAD)  # (4, 1, 1, S)
    x = torch.randn(4, length, d, generator=generator, dtype=torch.float64)
    queries = torch.randn(4, 5, d, generator=generator, dtype=torch.float64)
    worst = 0.0
    for queries_in, memory in ((x, None), (queries, x)):  # self-attention; cross-attention
        with torch.no_grad():
            expected = reference(queries_in, memory, mask=mask)
            with torch.autocast(setup.device.type, dtype, enabled=dtype != torch.float32):
                out = module(
                    queries_in.float().to(setup.device),
                    None if memory is None else memory.float().to(setup.device),
                    mask=mask.to(setup.device),
                )
        worst = max(worst, float((out.double().cpu() - expected).abs().max()))
    return worst


@contextlib.contextmanager
def matmul_tf32(allowed: bool):
    """CUDA's float32 matrix products on TF32 tensor cores, or not, inside the block."""
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = allowed
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before


def check_attention(setup: Setup) -> tuple[dict, list[str]]:
    torch.manual_seed(0)
    layer = MultiHeadAttention(128, 4).to(setup.device).eval()
    reference = copy.deepcopy(layer).double().cpu()  # F.scaled_dot_product_attention, float64
    modules = {"eager": layer, "compiled": torch.compile(layer, dynamic=True)}
    figures, problems = {}, []
    for precision, (dtype, tf32, tolerance) in PRECISIONS.items():
        for name, module in modules.items():
            key = f"{name}_{precision}_max_error"
            with matmul_tf32(tf32):
                figures[key] = max(
                    attention_error(module, reference, setup, length, dtype)
                    for length in setup.sizes.attention_lengths
                )
            if not figures[key] <= tolerance:
                problems.append(f"{key} {figures[key]:.2e} > {tolerance:.0e}")
    figures["source_lengths"] = list(setup.sizes.attention_lengths)
    return figures, problems


# -- the other commands, as subprocesses -------------------------------------------------


def run(command: list[str], timeout: float | None = None, **kwargs) -> tuple[float, str]:
    """Run a command to its end -> (wall seconds, its stdout); an error with the end of its
    output if it fails."""
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, **kwargs)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:6])} ... exited {done.returncode}: "
                           f"{(done.stdout + done.stderr)[-1500:]}")  # fmt: skip
    return time.perf_counter() - start, done.stdout


def python(*args: str) -> list[str]:
    return [sys.executable, "-m", *args]


def check_torchrun(setup: Setup) -> tuple[dict, list[str]]:
    processes = torch.cuda.device_count() if setup.on_cuda else 2  # 2 gloo processes on a CPU
    steps = setup.sizes.ddp_steps
    experiment = "experiment=gpu-check-ddp"
    overrides = [experiment, f"train.max_steps={steps}", f"train.eval_every={steps}"]
    launcher = ["torch.distributed.run", "--standalone", f"--nproc_per_node={processes}"]
    seconds, _ = run(python(*launcher, "-m", "seq2seq.train", "--restart",
                            *setup.command_config(*overrides)))  # fmt: skip
    (last,) = metrics_log(setup.config(*overrides))[-1:]
    figures = {"processes": processes, "steps": last["step"], "seconds": seconds,
               "tokens_per_s": last["tokens_per_s"], "valid_loss": last["valid_loss"]}  # fmt: skip
    return figures, [] if math.isfinite(last["valid_loss"]) else ["the loss is not finite"]


def trained(setup: Setup) -> Config:
    """The resume check's model: what eval, serve and ctranslate2 decode."""
    config = setup.config("experiment=gpu-check-resumed")
    if not config.checkpoint_path.exists():
        raise RuntimeError(f"no trained model in {config.run_dir} (the resume check failed)")
    return config


def check_eval(setup: Setup) -> tuple[dict, list[str]]:
    config = trained(setup)
    settings = setup.command_config(f"experiment={config.experiment}", "decode.beam_size=5")
    run(python("seq2seq.evaluate", "--again", *settings))  # timed afresh, whatever eval.json has
    scores = json.loads((config.run_dir / "eval.json").read_text())
    figures = {
        "greedy_sentences_per_s": scores["sentences_per_s"],
        "greedy_exact_match": scores["exact_match"],
        "beam5_sentences_per_s": scores["beam"]["sentences_per_s"],
        "beam5_exact_match": scores["beam"]["exact_match"],
    }
    return figures, []


def check_serve(setup: Setup) -> tuple[dict, list[str]]:
    config = trained(setup)
    source = text_files(config.data_dir, "test")[0]
    figures = load_check(config.checkpoint_path, source, setup.quick, str(RECIPE))
    failed = figures["serve_failed"] + figures["serve_mismatched"]
    return figures, [f"{failed} requests failed or mismatched"] if failed else []


def check_ctranslate2(setup: Setup) -> tuple[dict, list[str]]:
    try:
        import ctranslate2
    except ImportError:
        raise Skip("ctranslate2 is not installed (pip install -e '.[export]')") from None
    if setup.on_cuda and ctranslate2.get_cuda_device_count() == 0:
        raise Skip(f"this ctranslate2 {ctranslate2.__version__} build sees no CUDA device")
    config = trained(setup)
    exported = config.run_dir / "ctranslate2"
    run(python("seq2seq.export", "ctranslate2", str(exported),
               "--checkpoint", str(config.checkpoint_path)))  # fmt: skip
    source = text_files(config.data_dir, "test")[0]
    device = ["--device", str(setup.device)]
    ours_s, ours = timed_command(
        source, "--engine", "torch", "--checkpoint", str(config.checkpoint_path), *device
    )
    theirs_s, theirs = timed_command(source, "--engine", "ctranslate2", "--model", str(exported),
                                     *device)  # fmt: skip
    same = sum(a == b for a, b in zip(ours, theirs, strict=True)) / len(ours)
    figures = {
        "ctranslate2": ctranslate2.__version__,
        "sentences": len(ours),
        "translate_command_sentences_per_s_ours": len(ours) / ours_s,
        "translate_command_sentences_per_s_ctranslate2": len(theirs) / theirs_s,
        "same_outputs_as_ours": same,
    }
    needed = SAME_OUTPUTS if not setup.quick else 1 / len(ours)  # a quick model hits the limits
    return figures, [] if same >= needed else [f"only {same:.0%} of outputs are identical"]


def check_pytest(setup: Setup, timeout: float) -> tuple[dict, list[str]]:
    if setup.quick:
        raise Skip("--quick: the nested test suite is skipped (it is the one that runs this)")
    try:
        seconds, out = run(python("pytest", "-q", "-p", "no:cacheprovider"), timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"timeout_s": timeout}, [f"the suite did not finish within {timeout:.0f} s"]
    except RuntimeError as error:
        return {}, [str(error)[-1500:]]
    summary = out.strip().splitlines()[-1]  # "201 passed, 3 skipped in 95.2s"
    return {"summary": summary.strip("= "), "seconds": seconds}, []


# -- the run -----------------------------------------------------------------------------


def environment(setup: Setup) -> dict:
    info = {**machine(), "checked_device": str(setup.device)}
    default_backend = getattr(torch.compiler, "get_default_backend", lambda: "inductor")
    info["compile_backend"] = str(default_backend())  # (torch < 2.12 has no getter)
    if not setup.on_cuda:
        return {**info, "device_name": cpu_name()}
    properties = torch.cuda.get_device_properties(setup.device)
    return {
        **info,
        "device_name": properties.name,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "gpus": torch.cuda.device_count(),
        "gpu_memory_gib": round(properties.total_memory / 2**30, 1),
        "compute_capability": f"{properties.major}.{properties.minor}",
        "real_bf16": torch.cuda.is_bf16_supported(including_emulation=False),
        "precision_auto": str(Treatment.of(load_config(RECIPE), setup.device)),
    }


def checks(setup: Setup, pytest_timeout: float) -> list[tuple[str, Callable]]:
    """(name, check) in the order they run; a check returns (figures, problems)."""
    return [
        *[
            (f"train_{tokens}_{mode}", lambda t=tokens, m=mode: check_training(setup, t, m))
            for tokens in setup.sizes.budgets
            for mode in MODES
        ],
        ("nn_transformer", lambda: check_nn_transformer(setup)),
        ("resume", lambda: check_resume(setup)),
        ("attention", lambda: check_attention(setup)),
        ("torchrun", lambda: check_torchrun(setup)),
        ("eval", lambda: check_eval(setup)),
        ("serve", lambda: check_serve(setup)),
        ("ctranslate2", lambda: check_ctranslate2(setup)),
        ("pytest", lambda: check_pytest(setup, pytest_timeout)),
    ]


def skip_it() -> tuple[dict, list[str]]:
    raise Skip("skipped by --skip")


def earlier_results(path: Path, device_name: str) -> dict:
    """The checks that an earlier run on the same kind of GPU recorded in <out>/gpu.json (pass
    or fail, each marked with its run's date): what a check skipped by --skip keeps."""
    if not path.exists():
        return {}
    earlier = json.loads(path.read_text())
    if earlier.get("mode") != "full" or earlier["machine"]["device_name"] != device_name:
        return {}
    return {
        name: {**result, "date": result.get("date", earlier["machine"]["date"])}
        for name, result in earlier["checks"].items()
        if result["status"] != "skip"
    }


def run_check(name: str, check: Callable) -> dict:
    """pass (no problems), fail (problems, or an exception: its message) or skip, with the
    check's figures and seconds."""
    print(f"gpu-check: {name} ...", flush=True)
    start = time.perf_counter()
    try:
        figures, problems = check()
        result = {"status": "fail" if problems else "pass", "figures": figures}
        if problems:
            result["reason"] = "; ".join(problems)
    except Skip as reason:
        result = {"status": "skip", "reason": str(reason)}
    except Exception as error:  # a check that breaks is a failed check; the others still run
        traceback.print_exc()
        result = {"status": "fail", "reason": f"{type(error).__name__}: {error}"[-1500:]}
    result["seconds"] = time.perf_counter() - start
    print(f"gpu-check: {name}: {result['status']} {result.get('reason', '')}", flush=True)
    return result


def markdown(results: dict) -> str:
    info = results["machine"]
    lines = [
        "# GPU check",
        "",
        f"{info['device_name']} ({info['checked_device']}), torch {info['torch']}, "
        f"CUDA {info.get('cuda')}, Python {info['python']}, {info['date']}, mode: "
        f"{results['mode']}, {results['seconds']:.0f} s this run. Produced by `make gpu-check` "
        "(`python benchmarks/gpu_check.py`); docs/gpu.md says what each figure means.",
        "",
        "| check | status | seconds | figures |",
        "| --- | --- | --- | --- |",
    ]
    for name, result in results["checks"].items():
        figures = result.get("figures", {})
        shown = ", ".join(
            f"{key} {value:,.4g}" if isinstance(value, float) else f"{key} {value}"
            for key, value in figures.items()
        )
        note = f" ({result['reason']})" if "reason" in result else ""
        if "date" in result:  # kept from an earlier run (--skip)
            note += f" (run of {result['date'][:16].replace('T', ' ')})"
        lines.append(f"| `{name}` | {result['status']}{note} | {result['seconds']:.1f} | {shown} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N, or cpu (with --quick)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: every path, briefly")
    parser.add_argument("--out", default="benchmarks", help="folder for gpu.json and gpu.md")
    parser.add_argument("--work", default="runs/gpu-check", help="scratch folder of the runs")
    parser.add_argument("--pytest-timeout", type=float, default=360.0, help="seconds")
    parser.add_argument("--skip", nargs="*", default=[], metavar="CHECK",
                        help="checks to skip, by name (e.g. pytest ctranslate2)")  # fmt: skip
    args = parser.parse_args()
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("gpu-check: no CUDA device here (torch.cuda.is_available() is False); "
              "nothing to check")  # fmt: skip
        return
    setup = Setup(device, args.quick, QUICK if args.quick else FULL)
    planned = checks(setup, args.pytest_timeout)
    unknown = sorted(set(args.skip) - {name for name, _ in planned})
    if unknown:
        parser.error(f"--skip: no check named {', '.join(unknown)}")
    if args.quick and not setup.on_cuda:
        torch.compiler.set_default_backend("aot_eager")
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic(): before cuBLAS
    out, work = Path(args.out).resolve(), Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    os.chdir(work)  # data/ and runs/ of the checks go here
    start = time.perf_counter()
    data.main(["--config", str(RECIPE), *setup.overrides()])
    results = {"mode": "quick" if args.quick else "full", "machine": environment(setup)}
    results["checks"] = {}
    device_name = results["machine"]["device_name"]
    earlier = {} if args.quick else earlier_results(out / "gpu.json", device_name)
    for name, check in planned:
        if name in args.skip and name in earlier:
            print(f"gpu-check: {name}: skipped, keeps its result of {earlier[name]['date']}")
            results["checks"][name] = earlier[name]
        else:
            results["checks"][name] = run_check(name, skip_it if name in args.skip else check)
        results["seconds"] = time.perf_counter() - start
        results["failed"] = [n for n, r in results["checks"].items() if r["status"] == "fail"]
        save_results(out / "gpu", results, markdown(results))  # after each: none lost if cut
    if results["failed"]:
        sys.exit(f"gpu-check: failed: {', '.join(results['failed'])}")


if __name__ == "__main__":
    main()
