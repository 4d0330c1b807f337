"""Crash-safe file writing: a file is either its old complete self or its new complete self.

Everything the pipeline produces (corpus files, vocabularies, checkpoints, metrics) goes
through `atomic_write`: the bytes go to a temporary file in the same directory, are flushed
and fsynced, and only then renamed over the destination. A crash or Ctrl-C at any moment
leaves no truncated file behind. A whole folder (an exported model) is written the same way
by `replacing_folder`: built beside its destination, then renamed into place.
"""

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from seq2seq.support.errors import UserError


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _current_umask()


@contextmanager
def atomic_write(path: str | Path, mode: str = "w") -> Iterator[IO]:
    """`with atomic_write(p) as f: f.write(...)`: p appears only once everything is written.
    If the file system refuses (disk full, permission denied), the OSError names p, and no
    temporary file is left."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as error:
        raise OSError(error.errno, error.strerror, str(path)) from None
    try:
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes the file private; use the usual mode
        encoding = None if "b" in mode else "utf-8"
        with os.fdopen(fd, mode, encoding=encoding) as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except OSError as error:
        Path(tmp).unlink(missing_ok=True)
        if error.filename is None:  # a write or fsync: say which file
            raise OSError(error.errno, error.strerror, str(path)) from None
        raise
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_directory(path.parent)


def _fsync_directory(directory: Path) -> None:
    """Make the rename itself durable (not possible on every platform; best effort)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextmanager
def replacing_folder(out_dir: Path, marker: str) -> Iterator[Path]:
    """`with replacing_folder(out_dir, marker) as staging:` write a whole folder into `staging`,
    a temporary folder beside out_dir; when the block ends, it takes out_dir's place by a
    rename, so out_dir is never half-written (an error leaves it as it was). An existing
    out_dir is replaced only if it is empty or holds the file `marker` (what an earlier export
    of ours writes): anything else is refused before a byte is written."""
    earlier = out_dir.is_dir() and ((out_dir / marker).exists() or not any(out_dir.iterdir()))
    if out_dir.exists() and not earlier:
        raise UserError(f"{out_dir} exists and is not an earlier export: choose another folder")
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    except OSError as error:
        raise OSError(error.errno, error.strerror, str(out_dir)) from None
    try:
        yield staging
        for path in [
            staging,
            *staging.rglob("*"),
        ]:  # mkdtemp's folder (and some writers) are private
            path.chmod((0o777 if path.is_dir() else 0o666) & ~_UMASK)
        if out_dir.exists():  # out_dir is missing only between these two renames
            old = out_dir.with_name(staging.name + ".old")
            out_dir.rename(old)
            staging.rename(out_dir)
            shutil.rmtree(old)
        else:
            staging.rename(out_dir)
    except OSError as error:
        if error.filename is None:  # a write: say which export
            raise OSError(error.errno, error.strerror, str(out_dir)) from None
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def remove_stale_temporaries(directory: str | Path) -> None:
    """Delete the temporary files a killed process left in `directory` (never the real ones)."""
    for leftover in Path(directory).glob(".*.tmp"):
        leftover.unlink(missing_ok=True)


def write_lines(path: str | Path, lines: list[str]) -> None:
    with atomic_write(path) as file:
        file.writelines(line + "\n" for line in lines)


def append_line(path: str | Path, line: str) -> None:
    """Add a line to a log (metrics.jsonl): a refusal of the file system names the file."""
    try:
        with Path(path).open("a", encoding="utf-8") as file:
            file.write(line + "\n")
    except OSError as error:
        raise OSError(error.errno, error.strerror, str(path)) from None


def write_json(path: str | Path, data: dict) -> None:
    with atomic_write(path) as file:
        json.dump(data, file, indent=2, ensure_ascii=False)
        file.write("\n")


def file_hash(path: str | Path) -> str:
    """SHA-256 of a file's bytes, read in blocks of 1 MiB."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as file:
        while block := file.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()
