"""Where the model runs (CUDA if there is a GPU, then Apple's MPS, then the CPU), and in which
precision.

Training and decoding run their matrix products in a lower precision where the device has
fast hardware for it (`train.precision`, `decode.precision`):

    auto  ->  bf16 autocast on a GPU with bf16 tensor cores (compute capability 8.0 and up:
              A100, H100, RTX 30xx and later);
              fp16 autocast on an older GPU (T4, V100: their bf16 is emulated, slower than
              fp32), with a gradient scaler in training;
              fp32 on the CPU and on MPS.

Under autocast, matrix products run in the low precision while softmax, LayerNorm and the
loss stay in fp32. On CUDA, the fp32 products that remain use TF32 tensor cores.

On the CPU, `train.precision: auto` is bf16 where the CPU computes bf16 natively (its flags say
avx512_bf16 or amx_bf16: AMD Zen 4 and later, Intel Xeon from Cooper Lake and Sapphire Rapids):
there a training step of a model the size of the Multi30k recipe's is faster than an fp32 one
(docs/training-speed.md; a model as small as config.yaml's is faster in fp32, which it sets).
Elsewhere bf16 is emulated, several times slower than fp32, and auto is fp32.
"""

import contextlib
import ctypes
import ctypes.util
import importlib.metadata
import os
import platform
import sys
from pathlib import Path

import torch

from seq2seq.support.errors import UserError

DTYPES = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}  # None: plain fp32


def pick_device(name: str = "auto") -> torch.device:
    """'auto' picks the best available device; 'cpu', 'cuda', 'cuda:1' or 'mps' force one."""
    device = _device(name)
    if device.type == "cuda":
        # fp32 products on TF32 tensor cores (on CUDA alone: set_float32_matmul_precision
        # would change the CPU's oneDNN products too)
        torch.backends.cuda.matmul.allow_tf32 = True
    return device


def _device(name: str) -> torch.device:
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise UserError(f"unknown device {name!r}: use auto, cpu, cuda, cuda:N or mps") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise UserError(f"device {name!r} requested but CUDA is not available here")
    if device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
        raise UserError(
            f"device {name!r} requested but this machine has {torch.cuda.device_count()} GPU(s)"
        )
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise UserError(f"device {name!r} requested but Apple MPS is not available here")
    return device


def has_fast_bf16(device: torch.device) -> bool:
    """Whether this GPU computes in bf16 natively (not by emulation, as T4 and V100 do)."""
    with torch.cuda.device(device):
        return torch.cuda.is_bf16_supported(including_emulation=False)


CPU_BF16_FLAGS = ("avx512_bf16", "amx_bf16")  # /proc/cpuinfo's names for native bf16


def cpu_flags() -> set[str]:
    """This CPU's feature flags, as Linux lists them (empty elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cpu_name() -> str:
    """This CPU's model, as Linux names it ("AMD EPYC 9R14 96-Core Processor")."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def cpu_computes_bf16(flags: set[str] | None = None) -> bool:
    """Whether the CPU with these feature flags (None: this one) has bf16 instructions."""
    return bool(set(CPU_BF16_FLAGS) & (cpu_flags() if flags is None else flags))


def autocast_dtype(
    precision: str, device: torch.device, key: str, cpu_bf16: bool = False
) -> torch.dtype | None:
    """The autocast dtype of a precision setting (`key`, for errors) on this device; None:
    plain fp32. `cpu_bf16`: auto is bf16 on this CPU (training, where the CPU computes bf16
    natively: cpu_computes_bf16); decoding keeps fp32 there."""
    if precision == "auto":
        if device.type == "cpu" and cpu_bf16:
            return torch.bfloat16
        if device.type != "cuda":
            return None
        precision = "bf16" if has_fast_bf16(device) else "fp16"
    if precision == "fp16" and device.type != "cuda":
        raise UserError(f"{key}: fp16 needs a CUDA device; use bf16 or fp32")
    return DTYPES[precision]


def autocast(device: torch.device, dtype: torch.dtype | None):
    """Autocast to `dtype` on `device`, or nothing at all for None (fp32)."""
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype)


def keep_freed_memory(mib: int) -> None:
    """Let glibc's allocator keep the memory a CPU training step frees, blocks up to `mib`
    MiB, for the next step (train.keep_freed_mib; 0: glibc's defaults).

    By default each allocation above a few MB (a step's activations, its (tokens, vocabulary)
    logits) is a fresh mapping from the kernel, which zeroes every page at first touch, and
    freed memory goes back to the kernel: 15-30% of a CPU step went there (the `sys` time).
    With the thresholds at 1 GiB (the default), a step reuses the last step's memory. What
    the steps leave free between their blocks is given back at each validation
    (release_freed_memory).
    Linux with glibc only; a no-op elsewhere."""
    if mib and (mallopt := glibc("mallopt")):
        m_trim_threshold, m_mmap_threshold = -1, -3  # from glibc's malloc.h
        for option in (m_trim_threshold, m_mmap_threshold):
            mallopt(option, mib << 20)


def bound_onednn_kernels(count: int) -> None:
    """Keep at most `count` of the kernels oneDNN compiles, one per matrix shape
    (train.onednn_kernels), unless the environment says otherwise: oneDNN reads this once,
    when it makes its first kernel."""
    os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", str(count))


# The allocators train.allocator can name, in the order auto tries them: where each comes from
# (a system library's name, or the Python package that carries it) and how to install it.
# tcmalloc and jemalloc come with the system's packages; mimalloc with seq2seq itself (the
# cmeel-mimalloc wheel, on Linux), so a new machine has an allocator that stays flat.
ALLOCATORS = {
    "tcmalloc": ("tcmalloc_minimal", "apt install libtcmalloc-minimal4"),
    "mimalloc": ("cmeel-mimalloc", "pip install cmeel-mimalloc"),
    "jemalloc": ("jemalloc", "apt install libjemalloc2"),
}
WHEEL_LIBRARIES = {"cmeel-mimalloc": "cmeel.prefix/lib/libmimalloc.so"}  # in site-packages
# Each one's settings, unless the environment has its own: mimalloc gives memory back to the
# kernel after it has lain unused for a second, and where a step takes longer than that (a
# busy machine) each step takes its activations' memory again, zeroed by the kernel: a third of
# the process's time went there. Ten seconds keep it between steps, and still give back what
# the steps leave (never giving it back grew the peak by 100 MiB in 200 steps).
ALLOCATOR_SETTINGS = {"mimalloc": {"MIMALLOC_PURGE_DELAY": "10000"}}  # in ms


def find_allocator(name: str) -> str | None:
    """The shared library of allocator `name` on this system, or None."""
    where = ALLOCATORS[name][0]
    if where not in WHEEL_LIBRARIES:
        return ctypes.util.find_library(where)
    try:
        library = importlib.metadata.distribution(where).locate_file(WHEEL_LIBRARIES[where])
    except importlib.metadata.PackageNotFoundError:
        return None
    return str(library) if Path(library).is_file() else None


def allocator_library(choice: str) -> tuple[str, str | None]:
    """train.allocator `choice` -> (the allocator's name, its shared library on this system):
    auto takes the first of ALLOCATORS installed; (glibc's, None) for `system`, for auto with
    none installed, and off Linux."""
    if choice == "system" or sys.platform != "linux":
        return "glibc's", None
    for name in ALLOCATORS if choice == "auto" else [choice]:
        if library := find_allocator(name):
            return name, library
    if choice != "auto":
        raise UserError(f"train.allocator {choice}: not installed ({ALLOCATORS[choice][1]})")
    return "glibc's", None


def allocator_line(choice: str) -> str:
    """What allocates this process's memory, and why, for a training's first lines."""
    name, library = allocator_library(choice)
    if library is None:
        return f"memory allocator: glibc's (train.allocator {choice})"
    if library not in os.environ.get("LD_PRELOAD", "").split():
        return f"memory allocator: glibc's ({name} is loaded only by python -m seq2seq.train)"
    passed = list(ALLOCATORS)[: list(ALLOCATORS).index(name)] if choice == "auto" else []
    missing = "".join(f"; {other} not installed ({ALLOCATORS[other][1]})" for other in passed)
    return f"memory allocator: {name} (train.allocator {choice}{missing}), {library}"


def with_allocator(choice: str, environment: dict) -> dict | None:
    """`environment` with train.allocator's library preloaded (LD_PRELOAD), for a process to
    start; None if it has it already, or the choice is glibc's own."""
    name, library = allocator_library(choice)
    preloaded = environment.get("LD_PRELOAD", "")
    if library is None or library in preloaded.split():
        return None
    settings = ALLOCATOR_SETTINGS.get(name, {})
    return {**settings, **environment, "LD_PRELOAD": f"{library} {preloaded}".strip()}


def start_with_allocator(choice: str) -> None:
    """Start this command (`python -m ...` with its arguments) again with train.allocator's
    library preloaded, unless it has it: an allocator is chosen before a process starts."""
    if environment := with_allocator(choice, dict(os.environ)):
        command = [sys.executable, *sys.orig_argv[1:]]
        sys.stdout.flush()
        os.execve(sys.executable, command, environment)


def release_freed_memory() -> None:
    """Give the memory glibc holds free back to the kernel (after keep_freed_memory)."""
    if malloc_trim := glibc("malloc_trim"):
        malloc_trim(0)


def glibc(name: str):
    """glibc's function `name`, or None (not Linux, or another C library)."""
    if sys.platform != "linux":
        return None
    return getattr(ctypes.CDLL(None), name, None)
