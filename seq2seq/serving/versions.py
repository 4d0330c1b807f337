"""serve.watch_versions_s: a model served from an experiment (a config, or its best.pt:
loaders.py's Versions) follows the version its versions/current names (seq2seq/support/
paths.py; python -m seq2seq.improve writes them), swapped in while the service serves: no
request dropped, none answered by a model half loaded.

    Watcher(models, every_s).start()  a thread (each worker process its own), every every_s
                                      seconds, for each model that follows versions and is
                                      loaded (serve.lazy: once it is):
      stat versions/current -> unchanged since the last turn: nothing more (a stat is all)
      changed: the version it names (gone or empty: the experiment's own best.pt)
        -> the one served: nothing
        -> else its engine loaded here, beside the old one (the model's decoder thread goes
           on answering with the old one meanwhile)
           -> batcher.swap (batcher.py): the next batch is the new engine's; the batch being
              decoded ends on the old one, which is then freed (nothing else holds it)
           -> one line on stderr: the model, the version it had, the new one, the seconds
              it took to load
        -> a version that fails to load: one line saying why, the old one kept; tried again
           once versions/current changes again
      anything else that goes wrong in a turn (a file unreadable): one line, and the next
        turn tries again (the thread never ends but with the service)
      at the end of a turn, once an engine swapped out is gone: the memory the allocator kept
        of it given back to the kernel (glibc's malloc_trim; else the process would keep up to
        a model's worth more than one model)
    watcher.stop()                    no more turns (its thread is a daemon)

Each model's translations cached (translation_cache.py) are keyed by its version: none of the
old one's answers a request after the swap.
"""

import os
import threading
import time
import weakref
from functools import partial
from pathlib import Path

from seq2seq.serving.models import Model
from seq2seq.support.device import release_freed_memory
from seq2seq.support.errors import say
from seq2seq.support.paths import CURRENT, VERSIONS, served_version, version_checkpoint

Stamp = tuple[int, int, int] | None  # versions/current's inode, modified time, size; None: absent


def stamp(path: Path) -> Stamp:
    """What tells that a file changed, from one stat: replaced (a new inode), written, or gone."""
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return None
    return found.st_ino, found.st_mtime_ns, found.st_size


def named(version: str | None) -> str:
    """A version as the log names it: its folder's name, or "original" (the experiment's own
    best.pt)."""
    return version or "original"


class Watcher:
    """Every `every_s` seconds, each model of `models` that follows versions swaps to the one
    its versions/current names, if that changed (the module's docstring)."""

    def __init__(self, models: list[Model], every_s: float):
        self.followed = [model for model in models if model.versions is not None]
        self.every_s = every_s
        self.seen: list[Stamp | bool] = [False] * len(self.followed)  # False: not looked yet
        self.swapped_out: list[weakref.ref] = []  # the engines swapped out, until they are gone
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.run, name="versions", daemon=True)

    def start(self) -> None:
        """The thread, if a model follows versions and serve.watch_versions_s is not 0."""
        if self.followed and self.every_s:
            self.thread.start()

    def stop(self) -> None:
        self.stopped.set()

    def run(self) -> None:
        while not self.stopped.wait(self.every_s):
            try:
                self.turn()
            except Exception as error:  # said, and tried again next turn: the thread lives on
                say(f"warning: the versions' watcher: {type(error).__name__}: {error}")

    def turn(self) -> None:
        for number, model in enumerate(self.followed):
            self.seen[number] = self.follow(model, self.seen[number])
        self.release()

    def release(self) -> None:
        """The memory of the engines swapped out that are gone given back to the kernel."""
        there = [engine for engine in self.swapped_out if engine() is not None]
        if len(there) < len(self.swapped_out):
            release_freed_memory()
        self.swapped_out = there

    def follow(self, model: Model, seen: Stamp | bool) -> Stamp | bool:
        """One turn for `model`: swapped if its versions/current changed since `seen` and
        names another version. -> what was seen now (`seen` again if the model is not
        loaded, or was unloaded while the new one loaded: the next turn tries again)."""
        run_dir = model.versions.run_dir
        now = stamp(run_dir / VERSIONS / CURRENT)
        if now == seen or model.engine is None:
            return seen
        version = served_version(run_dir)
        if version != model.version and not self.swap(model, version):
            return seen
        return now

    def swap(self, model: Model, version: str | None) -> bool:
        """`version`'s engine loaded, then swapped in. -> True once settled: swapped in, or
        failed to load (said, and kept out); False if the model was unloaded meanwhile
        (serve.models_mib: the next turn tries again)."""
        checkpoint = version_checkpoint(model.versions.run_dir, version)
        was, start = model.version, time.monotonic()
        try:
            engine = model.versions.load(checkpoint)
        except Exception as error:  # damaged, missing, not ours: the service goes on as it is
            say(f"warning: {model.name} ({model.pair}): version {named(version)} is not "
                f"served ({error}); {named(was)} still is")  # fmt: skip
            return True
        seconds = time.monotonic() - start
        old = model.batcher.swap(engine, version, partial(model.versions.load, checkpoint))
        if old is None:
            return False
        self.swapped_out.append(weakref.ref(old))  # gone once its last batch is done
        del old  # nothing here holds it
        say(f"{model.name} ({model.pair}): version {named(was)} -> {named(version)} (loaded "
            f"in {seconds:.2f} s beside it, swapped in between two batches)")  # fmt: skip
        return True
