"""make gpu-check's other paths: attention against float64, and the commands as subprocesses
(torchrun, eval, the service, CTranslate2, the test suite); gpu_check.py says what each
measures."""

import contextlib
import copy
import json
import math
import sys
import tempfile
from pathlib import Path

import torch

from benchmarks.checks.gpu_setup import RECIPE, Setup, Skip
from benchmarks.common import ROOT, run
from benchmarks.service.load import load_check, timed_command
from seq2seq.config import Config
from seq2seq.model.attention import MultiHeadAttention
from seq2seq.model.masks import padding_mask
from seq2seq.support.files import read_log
from seq2seq.support.paths import METRICS, text_files
from seq2seq.tokens.special import PAD

# attention: (autocast dtype, TF32 matrix products, the largest error allowed) of each
# precision; tf32 is what fp32 runs as on CUDA (pick_device), its 10-bit mantissa ~5e-4 here
PRECISIONS = {
    "float32": (torch.float32, False, 1e-4),
    "tf32": (torch.float32, True, 2e-3),
    "bfloat16": (torch.bfloat16, False, 5e-2),
}
SAME_OUTPUTS = 0.9  # CTranslate2: share of outputs identical to ours (full mode)


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


def run_command(command: list[str], cwd: Path | None = None, budget: float | None = None):
    """Run a command to its end in `cwd` (default: the current folder, the checks' scratch
    folder), stopped at `budget` seconds -> (wall seconds, its stdout); a RuntimeError with the
    end of its output when it fails, which gpu_check records as a failed check."""
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder, "stderr")
        ran = run(command, log=log, cwd=cwd, budget=budget, allowed=None)
        if ran.code != 0:
            ended = f"exited {ran.code}"
            if budget is not None and ran.seconds >= budget:
                ended = f"did not finish within {budget:.0f} s"
            output = ran.stdout + log.read_text(errors="replace")
            raise RuntimeError(f"{' '.join(command[:6])} ... {ended}: {output[-1500:]}")
    return ran.seconds, ran.stdout


def python(*args: str) -> list[str]:
    return [sys.executable, "-m", *args]


def check_torchrun(setup: Setup) -> tuple[dict, list[str]]:
    processes = torch.cuda.device_count() if setup.on_cuda else 2  # 2 gloo processes on a CPU
    steps = setup.sizes.ddp_steps
    experiment = "experiment=gpu-check-ddp"
    overrides = [experiment, f"train.max_steps={steps}", f"train.eval_every={steps}"]
    launcher = ["torch.distributed.run", "--standalone", f"--nproc_per_node={processes}"]
    seconds, _ = run_command(python(*launcher, "-m", "seq2seq.train", "--restart",
                                    *setup.command_config(*overrides)))  # fmt: skip
    (last,) = read_log(setup.config(*overrides).run_dir / METRICS)[-1:]
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
    run_command(python("seq2seq.evaluate", "--again", *settings))  # timed afresh
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
    failed = figures["serve_failed"] + figures["serve_unlike"]
    return figures, [f"{failed} requests failed or unlike the command's answer"] if failed else []


def check_ctranslate2(setup: Setup) -> tuple[dict, list[str]]:
    try:
        import ctranslate2
    except ImportError:
        raise Skip("ctranslate2 is not installed (pip install -e '.[export]')") from None
    if setup.on_cuda and ctranslate2.get_cuda_device_count() == 0:
        raise Skip(f"this ctranslate2 {ctranslate2.__version__} build sees no CUDA device")
    config = trained(setup)
    exported = config.run_dir / "ctranslate2"
    run_command(python("seq2seq.export", "ctranslate2", str(exported),
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
        seconds, out = run_command(python("pytest", "-q", "-p", "no:cacheprovider"), ROOT, timeout)
    except RuntimeError as error:  # failed, or stopped at the timeout
        return {}, [str(error)[-1500:]]
    summary = out.strip().splitlines()[-1]  # "201 passed, 3 skipped in 95.2s"
    return {"summary": summary.strip("= "), "seconds": seconds}, []
