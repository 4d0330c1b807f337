"""One exception type for mistakes a user can fix, the wrapper that reports them, and the
argument parser every command starts from.

Every command-line entry point (`python -m seq2seq.data`, `.train`, `.evaluate`,
`.translate`, `.plot`) runs through `run_cli`, so a bad config key, a missing file or an
untrained model ends in one readable line on stderr and a non-zero exit code, never a
traceback.
"""

import argparse
import os
import sys
from collections.abc import Callable


class UserError(Exception):
    """Something the user can fix: the message says what is wrong, where, and what to do."""

    exit_code = 1


class Interrupted(UserError):
    """Stopped by a signal (Ctrl-C, SIGTERM) after saving what can be resumed."""

    def __init__(self, message: str, signal_number: int):
        super().__init__(message)
        self.exit_code = 128 + signal_number  # the shell's convention: 130 for Ctrl-C


def warn(message: str) -> None:
    """Something the user may want to change, that does not stop the command."""
    print(f"warning: {message}", file=sys.stderr)


def run_cli(main: Callable[[list[str] | None], None], argv: list[str] | None = None) -> None:
    """Run `main(argv)`; turn a UserError or Ctrl-C into a one-line message and an exit code."""
    try:
        main(argv)
    except UserError as error:
        if not isinstance(error, Interrupted):
            print(f"error: {error}", file=sys.stderr)
        elif os.environ.get("RANK", "0") == "0":  # under torchrun, one process says it
            print(error, file=sys.stderr)
        sys.exit(error.exit_code)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)


def command_parser(module: str, description: str) -> argparse.ArgumentParser:
    """The argument parser of `python -m <module>`: its usage line and --help name the command
    as it is typed, not as `<module>.py`."""
    return argparse.ArgumentParser(prog=f"python -m {module}", description=description)
