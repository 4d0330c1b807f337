"""What the tests that start other processes share.

No test may assume how fast the machine is (one machine imports torch in 0.5 s, another in
4 s). A test waits for an event instead: a file appears, a checkpoint's step moves on, a process
ends. The one deadline, HANG, is there only so that a hung process fails its test rather than
the whole CI run, and is long enough for the slowest machine.
"""

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from seq2seq.device import pick_device

ROOT = Path(__file__).resolve().parent.parent
HANG = 600  # seconds: a process taking longer than this is hung, not slow

# the project's code, whatever the current directory; a subprocess of a test never needs more
# than one thread, and with one it competes less with the test that waits for it
ENV = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")


def command(module: str, *args: str) -> list[str]:
    """`python -m module args...` with this interpreter."""
    return [sys.executable, "-m", module, *args]


def wait_until(condition: Callable[[], bool], what: str, process=None) -> float:
    """Poll `condition()` every 20 ms until it is true; returns the seconds waited. Fails if
    `process` (a subprocess.Popen) ends first, with its output, or after HANG seconds."""
    start = time.monotonic()
    while not condition():
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the process ended before {what}: {process.communicate()}")
        if time.monotonic() - start > HANG:
            raise AssertionError(f"hung: still no {what} after {HANG} s")
        time.sleep(0.02)
    return time.monotonic() - start


# The device the suite's training runs pick: they keep train.device: auto, unless a test checks
# what only the CPU does and says train.device=cpu.
TRAINING_DEVICE = pick_device("auto").type
# CUDA kernels do not promise the same bits from run to run (atomic additions in another
# order), and Adam turns last-bit noise into updates as large as the learning rate where a
# gradient is about 0: two runs that should be the same agree to this on a GPU.
GPU_TOLERANCE = 5e-2


def assert_same_parameters(actual: dict, expected: dict) -> None:
    """Two training runs that should be the same: bit for bit on the CPU, within
    GPU_TOLERANCE on a GPU."""
    assert actual.keys() == expected.keys()
    for name, tensor in actual.items():
        if TRAINING_DEVICE == "cpu":
            assert torch.equal(tensor, expected[name]), name
        else:
            torch.testing.assert_close(tensor, expected[name], rtol=0, atol=GPU_TOLERANCE, msg=name)


def same_figures(expected: list[float]) -> object:
    """What the figures of a run that should be the same must equal: these on the CPU,
    figures within GPU_TOLERANCE of them on a GPU."""
    return expected if TRAINING_DEVICE == "cpu" else pytest.approx(expected, rel=GPU_TOLERANCE)
