"""The training tests' shared fixture: the working directory of a module's small run."""

from pathlib import Path

import pytest


@pytest.fixture
def workdir(numbers_workdir, request) -> Path:
    """The numbers corpus of the test module's SMALL (small_run.py), in the test's working
    directory."""
    return numbers_workdir(*request.module.SMALL)
