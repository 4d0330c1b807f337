"""serve.improve_after N: the service starts `python -m seq2seq.improve` (seq2seq/improve.py)
for a pair every N new suggestions, in the background, and /info says how the last one went.

    POST /suggest accepted (suggest.py) -> Improvements.noticed(source, target), off the loop
      the pair's model served from a config (serve --model CONFIG.yaml, serve's own --config)?
      N more suggestions of the pair in the store than when its last improvement started?
      none of this process's running?
        -> COMMAND --config CONFIG --suggestions serve.suggestions_file (or serve.database's
           URL, then --database URL too: the lock across machines), a child process in a
           session of its own (a Ctrl-C at the service's terminal does not reach it), its
           output appended to runs/<experiment>/versions/improve.log, then a line with how it
           ended: a failure is the log's, never the service's
    GET /info -> Improvements.state(): each such pair's config, whether one runs, the last
                 child's exit code, its versions' last (training/versions.py) and the one served

With serve.workers, each worker counts and starts its own; the command itself lets one run
at a time per experiment (the others end at once, saying so in the log).

None runs on without the service that started it: its stop (Server.close) ends each with a
SIGTERM (training saves and exits; `ended: stopped with the service` in the log), and a
service killed outright is noticed by the child itself (improve.py's end_with_starter: its
parent gone, it stops as on a SIGTERM).
"""

import contextlib
import datetime
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from seq2seq.config import ServeConfig, load_config
from seq2seq.localization.suggestions import Suggestions
from seq2seq.serving.models import Models
from seq2seq.support.paths import IMPROVE_LOG, STARTED_BY, VERSIONS, served_version
from seq2seq.training import versions

COMMAND = [sys.executable, "-m", "seq2seq.improve"]  # then --config, --suggestions
STOP_S = 30  # seconds a child has to end after a SIGTERM (training: its step, then a save)


class Improvements:
    """The improvements of the pairs served from a config: started, watched, described."""

    def __init__(self, models: Models, settings: ServeConfig, suggestions: Suggestions):
        self.every, self.file = settings.improve_after, suggestions.where
        self.database = settings.database  # its lock of each experiment, across machines
        self.suggestions = suggestions
        self.configs = {pair: m.config for pair, m in models.by_pair.items() if m.config}
        self.run_dirs = {pair: load_config(path).run_dir for pair, path in self.configs.items()}
        self.counted = {
            pair: suggestions.count(*pair) for pair in self.configs
        }  # at the last start
        self.running: dict[tuple[str, str], subprocess.Popen] = {}
        self.ended: dict[tuple[str, str], int] = {}  # the last child's exit code
        self.lock = threading.Lock()
        self.stopping = False

    def noticed(self, source: str, target: str) -> None:
        """A suggestion from `source` to `target` was kept: start the pair's improvement if
        it is due and none runs."""
        pair = source, target
        if pair not in self.configs:
            return
        with self.lock:
            count = self.suggestions.count(*pair)
            if count - self.counted[pair] < self.every or pair in self.running or self.stopping:
                return
            self.counted[pair] = count
            self.running[pair] = self.start(pair)

    def start(self, pair: tuple[str, str]) -> subprocess.Popen:
        """The pair's improvement, a child process writing to its log; a thread waits for it."""
        log_path = self.run_dirs[pair] / VERSIONS / IMPROVE_LOG
        log_path.parent.mkdir(parents=True, exist_ok=True)
        arguments = ["--config", self.configs[pair], "--suggestions", self.file]
        arguments += ["--database", self.database] if self.database else []
        with log_path.open("a", encoding="utf-8") as log:
            log.write(f"{now()} starting: {' '.join(COMMAND + arguments)}\n")
            log.flush()
            child = subprocess.Popen(
                COMMAND + arguments, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True,
                env={**os.environ, STARTED_BY: str(os.getpid())},
            )  # fmt: skip
        threading.Thread(target=self.wait, args=(pair, child, log_path), daemon=True).start()
        return child

    def wait(self, pair: tuple[str, str], child: subprocess.Popen, log_path: Path) -> None:
        code = child.wait()
        how = "done" if code == 0 else f"failed, exit code {code}"
        with log_path.open("a", encoding="utf-8") as log:
            log.write(f"{now()} ended: {'stopped with the service' if self.stopping else how}\n")
        with self.lock:
            self.ended[pair] = code
            del self.running[pair]

    def stop(self) -> None:
        """No more started; each running ended by a SIGTERM to its process group, a SIGKILL
        if it is still there STOP_S seconds later."""
        with self.lock:
            self.stopping, children = True, list(self.running.values())
        for child in children:
            with contextlib.suppress(ProcessLookupError):  # ended meanwhile
                os.killpg(child.pid, signal.SIGTERM)
        for child in children:
            try:
                child.wait(STOP_S)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):  # ended meanwhile
                    os.killpg(child.pid, signal.SIGKILL)
                child.wait()

    def state(self) -> dict:
        """/info's "improvement": each pair's (source-target)."""
        described = {}
        for pair, config in self.configs.items():
            run_dir = self.run_dirs[pair]
            kept = versions.versions(run_dir)
            name = next(reversed(kept), None)  # the last
            last = {"version": name, **{key: kept[name][key] for key in LAST}} if name else None
            described["-".join(pair)] = {
                "config": config, "after": self.every, "running": pair in self.running,
                "exit_code": self.ended.get(pair), "last": last,
                "served": served_version(run_dir) or versions.ORIGINAL,
                "log": str(run_dir / VERSIONS / IMPROVE_LOG),
            }  # fmt: skip
        return described


LAST = ("made", "verdict", "reason", "scores")  # of the last version, in /info


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
