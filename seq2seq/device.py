"""Where the model runs: CUDA if there is a GPU, then Apple's MPS, then the CPU."""

import torch

from seq2seq.errors import UserError


def pick_device(name: str = "auto") -> torch.device:
    """'auto' picks the best available device; 'cpu', 'cuda', 'cuda:1' or 'mps' force one."""
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
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise UserError(f"device {name!r} requested but Apple MPS is not available here")
    return device
