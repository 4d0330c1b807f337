"""One exception type for mistakes a user can fix, the wrapper that reports them, and the
argument parser every command starts from.

Every command-line entry point (`python -m seq2seq.data`, `.train`, `.evaluate`,
`.translate`, `.plot`) runs through `run_cli`, so a bad config key, a missing file or an
untrained model ends in one readable line on stderr and a non-zero exit code, never a
traceback. So does a file system that refuses a file (disk full, permission denied, read-only):
the files the pipeline writes appear whole or not at all (seq2seq/support/files.py), so whatever was
written before stays intact.
"""

import argparse
import errno
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


def say(line: str) -> None:
    """One line to stderr in one write (not print's two: the text, then its newline), so that
    the lines of processes sharing the stream (a service's workers, the improvement the
    watcher starts) never interleave; flushed at once."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def warn(message: str) -> None:
    """Something the user may want to change, that does not stop the command."""
    say(f"warning: {message}")


# What to do when the file system refuses a file, by error number.
FILE_SYSTEM_ADVICE = {
    errno.ENOSPC: "free some space on its disk, then run the command again",
    errno.EDQUOT: "free some of your disk quota, then run the command again",
    errno.EFBIG: "the file is too large for its file system: write it to another one",
    errno.EACCES: "check the permissions of the file and of its folder",
    errno.EPERM: "check the permissions of the file and of its folder",
    errno.EROFS: "the file system is read-only: work in a folder you can write to",
}


def run_cli(main: Callable[[list[str] | None], None], argv: list[str] | None = None) -> None:
    """Run `main(argv)`; turn a UserError, a file system's refusal or Ctrl-C into a one-line
    message and an exit code."""
    try:
        main(argv)
    except OSError as error:
        if error.errno not in FILE_SYSTEM_ADVICE:
            raise
        where = f"{error.filename}: " if error.filename else ""
        say(f"error: {where}{error.strerror}: {FILE_SYSTEM_ADVICE[error.errno]}")
        sys.exit(1)
    except UserError as error:
        if not isinstance(error, Interrupted):
            say(f"error: {error}")
        elif os.environ.get("RANK", "0") == "0":  # under torchrun, one process says it
            say(str(error))
        sys.exit(error.exit_code)
    except KeyboardInterrupt:
        say("interrupted")
        sys.exit(130)


def command_parser(module: str, description: str) -> argparse.ArgumentParser:
    """The argument parser of `python -m <module>`: its usage line and --help name the command
    as it is typed, not as `<module>.py`."""
    return argparse.ArgumentParser(prog=f"python -m {module}", description=description)
