"""Crash-safe file writing: a file is either its old complete self or its new complete self.

Everything the pipeline produces (corpus files, vocabularies, checkpoints, eval.json) goes
through `atomic_write`: the bytes go to a temporary file in the same directory, are flushed
and fsynced, and only then renamed over the destination. A crash or Ctrl-C at any moment
leaves no truncated file behind. A whole folder (an exported model) is written the same way
by `replacing_folder`: built beside its destination, then renamed into place. A process killed
meanwhile leaves its stand-in (.<name>.<its id>.<random>[.tmp]): the next write of the same
file or folder removes it (`remove_leftovers`). A log (metrics.jsonl) is appended to, a line
at a time (`append_line`): a crash can tear its last line only, which `read_log` forgives.
"""

import hashlib
import json
import os
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from seq2seq.support.errors import UserError, warn


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
        remove_leftovers(path.parent, path.name)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=stand_in(path), suffix=".tmp")
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
        remove_leftovers(out_dir.parent, out_dir.name)
        staging = Path(tempfile.mkdtemp(prefix=stand_in(out_dir), dir=out_dir.parent))
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


def stand_in(target: Path) -> str:
    """The name's beginning of a temporary file or folder that stands in for `target` while
    it is written (tempfile adds 8 random characters): .<its name>.<this process's id>."""
    return f".{target.name}.{os.getpid()}."


# A stand-in, and an earlier folder set aside (.old) while replacing_folder renames
STAND_IN = re.compile(r"\.(?P<name>.+)\.(?P<pid>\d+)\.[a-z0-9_]{8}(?P<end>\.tmp|\.old)?")


def remove_leftovers(directory: str | Path, name: str | None = None) -> None:
    """Delete the stand-ins that processes killed while writing left in `directory` (of the
    file or folder `name` alone, if given): those named by stand_in whose process no longer
    runs, never anything else. An earlier folder set aside (.old) for a new one that never
    took its place is put back."""
    directory = Path(directory)
    for path in directory.glob(".*"):
        found = STAND_IN.fullmatch(path.name)
        if not found or (name and found["name"] != name) or running(int(found["pid"])):
            continue
        target = directory / found["name"]
        if found["end"] == ".old" and not target.exists():
            path.rename(target)
        elif path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def running(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # no signal: whether there is such a process
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    return True


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


def read_log(path: str | Path) -> list[dict]:
    """The records of a log that append_line wrote (metrics.jsonl), one JSON object a line.
    A line that is not one (a write cut short by a kill, a full disk or a power cut) is left
    out with a warning that names it: the records before it are good."""
    path, records = Path(path), []
    lines = path.read_text("utf-8", errors="replace").splitlines() if path.exists() else []
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if isinstance(record, dict) and isinstance(record.get("step"), int):
            records.append(record)
        else:
            warn(f"{path}, line {number}: not a whole record (a write cut short?); left out")
    return records


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


SHARED_DB_BUSY_S = 30  # seconds a writer waits for another (serve.workers share the file)


def shared_database(path: Path, schema: str = "") -> sqlite3.Connection:
    """A connection to the SQLite file at `path` that the service's workers share (its folder
    and `schema`, if any, made if need be): WAL (readers never block the writer), each commit
    synced to disk (synchronous=FULL: a crash loses nothing acknowledged), usable from any
    thread."""
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path, timeout=SHARED_DB_BUSY_S, check_same_thread=False)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=FULL")
    if schema:
        connection.execute(schema)
    return connection
