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
