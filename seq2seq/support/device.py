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
"""

import contextlib

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


def autocast_dtype(precision: str, device: torch.device, key: str) -> torch.dtype | None:
    """The autocast dtype of a precision setting (`key`, for errors) on this device; None:
    plain fp32."""
    if precision == "auto":
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
