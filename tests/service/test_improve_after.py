"""serve.improve_after: every N new suggestions for a pair served from a config, the service
starts the improvement (here a stand-in command: the real one is tests/training/test_improve.py's)
as a child process, its output and end in the log, its state in /info; a failure is the log's;
none runs on once the service is gone."""

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from seq2seq import serve
from seq2seq.config import add_config_arguments, load_config
from seq2seq.decoding.engine_choice import add_engine_arguments
from seq2seq.serving import improving
from seq2seq.support import files
from seq2seq.support.paths import STARTED_BY

from helpers import HANG, call, running, wait_until

LOG = Path("runs/seed/versions/improve.log")
SAID = "import sys; print('improving with', *sys.argv[1:]); sys.exit({code})"


def suggest(url: str, q: str) -> int:
    fields = {"q": q, "s": "1 la 1", "source": "en", "target": "digits"}
    return call(url, "POST", "/suggest", fields)[0]


def improvement(url: str) -> dict:
    return call(url, "GET", "/info")[1]["improvement"]


def ended(times: int):
    return lambda: LOG.is_file() and LOG.read_text().count(" ended: ") == times


@pytest.fixture
def served(seed_run, tmp_path, monkeypatch):
    """A factory: served(*ARGS) -> the models `python -m seq2seq.serve ARGS` serves, in a copy
    of the seed model's folder (its config.yaml, runs/seed/best.pt): the test's working
    directory."""
    shutil.copytree(seed_run.parent.parent, tmp_path, dirs_exist_ok=True)
    monkeypatch.chdir(tmp_path)
    parser = argparse.ArgumentParser()
    add_config_arguments(parser)
    add_engine_arguments(parser, several=True)

    def load(*argv: str) -> list:
        args = parser.parse_args([*argv, "--engine", "torch", "--device", "cpu"])
        return serve.load(load_config(args.config), args)

    return load


def test_every_n_suggestions_start_an_improvement_of_the_pair(served, monkeypatch):
    monkeypatch.setattr(improving, "COMMAND", [sys.executable, "-c", SAID.format(code=0)])
    settings = {"suggestions": True, "suggestions_file": "s.db", "improve_after": 2}
    with running(served("--config", "config.yaml"), **settings) as server:  # serve's own
        assert suggest(server.url, "one is one") == 200
        assert not LOG.exists()  # one new: not yet
        assert suggest(server.url, "two is two") == 200
        wait_until(ended(1), "the improvement to end", timeout=HANG)
        log = LOG.read_text()
        assert "improving with --config config.yaml --suggestions s.db" in log
        assert "ended: done" in log
        state = improvement(server.url)["en-digits"]
        assert state["config"] == "config.yaml" and state["after"] == 2
        assert not state["running"] and state["exit_code"] == 0
        assert state["last"] is None and state["served"] == "original"  # it made no version
        assert suggest(server.url, "two is two") == 200  # made again: not new
        assert suggest(server.url, "three is three") == 200  # one new since
        assert LOG.read_text().count("starting") == 1
        assert suggest(server.url, "four is four") == 200
        wait_until(ended(2), "the second improvement to end", timeout=HANG)
        assert LOG.read_text().count("starting") == 2


def test_a_failed_improvement_is_logged_and_the_service_goes_on(served, monkeypatch):
    monkeypatch.setattr(improving, "COMMAND", [sys.executable, "-c", SAID.format(code=3)])
    version = Path("runs/seed/versions/0001")
    version.mkdir(parents=True)
    (version / "version.json").write_text(json.dumps(
        {"made": "then", "verdict": "kept aside", "reason": "worse", "scores": {}}
    ))  # fmt: skip
    settings = {"suggestions": True, "suggestions_file": "s.db", "improve_after": 1}
    with running(served("--model", "config.yaml"), **settings) as server:
        assert suggest(server.url, "one is one") == 200
        wait_until(ended(1), "the improvement to end", timeout=HANG)
        assert "ended: failed, exit code 3" in LOG.read_text()
        state = improvement(server.url)["en-digits"]
        assert state["exit_code"] == 3
        assert state["last"] == {"version": "0001", "made": "then", "verdict": "kept aside",
                                 "reason": "worse", "scores": {}}  # fmt: skip
        assert call(server.url, "POST", "/translate", {"text": ["one is one"]})[0] == 200


def test_a_model_not_served_from_a_config_is_not_improved(served, tmp_path, monkeypatch):
    monkeypatch.setattr(improving, "COMMAND", [sys.executable, "-c", "raise SystemExit(9)"])
    settings = {"suggestions": True, "suggestions_file": "s.db", "improve_after": 1}
    for argv in (["--checkpoint", "runs/seed/best.pt"], ["--model", "runs/seed/best.pt"]):
        with running(served(*argv), **settings) as server:
            assert suggest(server.url, "one is one") == 200
            assert improvement(server.url) == {}
    assert not list(tmp_path.rglob("improve.log"))


def test_an_improvement_ends_with_the_service_that_started_it(served, monkeypatch):
    """The service stops while its improvement runs: the improvement is stopped too (a
    SIGTERM), and the log says so."""
    waiting = "import os, time; print('pid', os.getpid(), flush=True); time.sleep(600)"
    monkeypatch.setattr(improving, "COMMAND", [sys.executable, "-c", waiting])
    settings = {"suggestions": True, "suggestions_file": "s.db", "improve_after": 1}
    with running(served("--config", "config.yaml"), **settings) as server:
        assert suggest(server.url, "one is one") == 200
        wait_until(lambda: LOG.is_file() and "pid " in LOG.read_text(), "the improvement")
        assert improvement(server.url)["en-digits"]["running"]
    pid = int(LOG.read_text().split("pid ")[1].split()[0])
    assert not files.running(pid)
    wait_until(ended(1), "the log's last line")
    assert "ended: stopped with the service" in LOG.read_text()


def test_an_improvement_whose_service_was_killed_stops_itself(tmp_path):
    """The service that started an improvement killed outright (SIGKILL: nothing of it runs
    to stop its children): the improvement sees it gone and stops, as on a SIGTERM."""
    said = tmp_path / "improvement.err"
    improvement = (
        "from seq2seq.improve import end_with_starter; end_with_starter(); "
        "import time; time.sleep(600)"
    )
    service = (
        "import os, subprocess, sys, time; "
        f"child = subprocess.Popen([sys.executable, '-c', {improvement!r}], "
        f"stderr=open({str(said)!r}, 'w'), "
        f"env={{**os.environ, {STARTED_BY!r}: str(os.getpid())}}); "
        "print(child.pid, flush=True); time.sleep(600)"
    )
    parent = subprocess.Popen([sys.executable, "-c", service], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    time.sleep(1)  # (the child under way: its watch started, or about to)
    parent.kill()
    parent.wait()
    wait_until(lambda: not alive(child), "the improvement to stop", timeout=HANG)
    assert (
        f"the service that started this (process {parent.pid}) is gone: stopping"
        in said.read_text()
    )


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, ended but not yet reaped by its new parent, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"
