"""The serve command as an operator runs it: its answers those of translate, its options, its
workers (one dead is replaced, one dying as it starts stops the service), its engines, and
SIGTERM's clean stop."""

import contextlib
import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from benchmarks.service.contenders import free_port
from benchmarks.service.process import stop_server
from seq2seq import serve
from seq2seq.checkpoint import load_checkpoint
from seq2seq.config import ServeConfig
from seq2seq.decoding.engines import TorchEngine
from seq2seq.exports.ctranslate2 import export_ctranslate2
from seq2seq.service.server import Server
from seq2seq.serving.protocol import bind
from seq2seq.support.errors import UserError, run_cli

from helpers import (
    ENV,
    HANG,
    call,
    command,
    read_address,
    spawned_workers,
    start_server,
    start_workers,
    wait_until,
)


@pytest.mark.slow
def test_the_command_answers_as_translate_does_and_stops_on_sigterm(seed_run):
    path = str(seed_run / "best.pt")
    process = start_server("--checkpoint", path)
    try:
        sentences = ["three is three", "", "Twenty-one is five", "one is nine"]
        cli = subprocess.run(
            command("seq2seq.translate", "--checkpoint", path, "--nbest", "2", *sentences[::2]),
            capture_output=True, text=True, env=ENV, timeout=HANG,
        )  # fmt: skip
        request = {"text": sentences[::2], "nbest": 2}
        status, answer, _ = call(read_address(process), "POST", "/translate", request)
        assert status == 200
        lines = [
            f"{i} ||| {h['translation']} ||| {h['score']:.4f}"
            for i, best in enumerate(answer["translations"])
            for h in best
        ]
        assert lines == cli.stdout.splitlines()
        said, *warned = cli.stderr.splitlines()
        assert said.startswith("decoding with ")
        assert answer["warnings"] == [line.removeprefix("warning: ") for line in warned]
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=HANG) == 128 + signal.SIGTERM
        assert process.stderr.read() == "stopped serving (SIGTERM)\n"
    finally:
        stop_server(process)


def test_without_a_model_the_error_is_that_of_translate(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        run_cli(serve.main, ["--checkpoint", str(tmp_path / "best.pt")])
    assert stop.value.code == 1
    message = f"error: no trained model at {tmp_path / 'best.pt'}: run `make train` first\n"
    assert capsys.readouterr().err == message


def test_libretranslates_host_and_port_options_set_serve_host_and_port(monkeypatch):
    """`--host` and `--port`, as LibreTranslate's command takes them: serve.host and
    serve.port, over the config's (docs/libretranslate.md)."""
    asked = []

    def load(config, args):
        asked.append(config.serve)
        raise SystemExit(0)  # before any model is loaded

    monkeypatch.setattr(serve, "load", load)
    with pytest.raises(SystemExit):
        serve.main(["--host", "0.0.0.0", "--port", "5000", "serve.port=1"])
    assert (asked[0].host, asked[0].port) == ("0.0.0.0", 5000)
    with pytest.raises(SystemExit):
        serve.main([])
    assert (asked[1].host, asked[1].port) == (ServeConfig.host, ServeConfig.port)


def test_the_environment_sets_serve_settings_by_our_names_and_libretranslates(monkeypatch, capsys):
    """SEQ2SEQ_SERVE_<FIELD> sets serve.<field>, LibreTranslate's LT_ names the settings
    that mean the same, read as LibreTranslate reads them (-1: none; DISABLE_: off); ours over
    LibreTranslate's, the command line's over both; said in one line; a mistake names its
    variable, before any model is loaded (docs/deploy.md)."""
    asked = []

    def load(config, args):
        asked.append(config.serve)
        raise SystemExit(0)  # before any model is loaded

    monkeypatch.setattr(serve, "load", load)
    environment = {
        "LT_PORT": "5000", "LT_REQ_LIMIT": "-1", "LT_HOURLY_REQ_LIMIT": "100",
        "LT_DISABLE_WEB_UI": "true", "LT_DISABLE_FILES_TRANSLATION": "false",
        "LT_SUGGESTIONS": "true", "SEQ2SEQ_SERVE_PORT": "5001",
        "SEQ2SEQ_SERVE_TRUSTED_PROXIES": "[10.0.0.1]",
    }  # fmt: skip
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit):
        serve.main(["serve.requests_per_hour=7"])
    settings = asked[0]
    assert (settings.port, settings.requests_per_minute, settings.requests_per_hour) == (5001, 0, 7)
    assert (settings.page, settings.files, settings.suggestions) == (False, True, True)
    assert settings.trusted_proxies == ["10.0.0.1"]
    said = capsys.readouterr().err
    first = "from the environment: serve.port=5000 (LT_PORT), serve.requests_per_minute=0 ("
    assert first + "LT_REQ_LIMIT)" in said
    monkeypatch.setenv("SEQ2SEQ_SERVE_MAX_CHAR", "5")
    with pytest.raises(
        UserError, match=r"SEQ2SEQ_SERVE_MAX_CHAR=5: .*did you mean 'serve.max_chars'"
    ):
        serve.main([])


def test_a_database_that_does_not_answer_stops_the_service_at_start(monkeypatch, postgresql):
    """serve.database (a shared PostgreSQL): checked before any model is loaded; one that does
    not answer (or is no PostgreSQL URL) is one line, its password not shown, and no service."""
    loaded = []

    def load(config, args):
        loaded.append(config.serve.database)
        raise SystemExit(0)  # before any model is loaded

    monkeypatch.setattr(serve, "load", load)
    url = f"postgresql://user:secret@127.0.0.1:{free_port()}/state"  # nothing listens there
    for database, said in [
        (url, r"postgresql://user:\*\*\*@127.0.0.1:\d+/state: cannot keep the service's state "
              r"there: connection failed: .*Connection refused"),
        ("state.db", "state.db: not a PostgreSQL URL"),
    ]:  # fmt: skip
        with pytest.raises(UserError, match=f"^serve.database {said}") as refused:
            serve.main([f"serve.database={database}"])
        assert "secret" not in str(refused.value) and "\n" not in str(refused.value)
    with pytest.raises(SystemExit):
        serve.main([f"serve.database={postgresql}"])  # one that answers: on to the models
    assert loaded == [postgresql]


@pytest.mark.slow
def test_without_starlette_or_uvicorn_the_command_says_what_to_install():
    hide = "import sys; sys.modules['uvicorn'] = None; import runpy; "
    run = "runpy.run_module('seq2seq.serve', run_name='__main__')"
    done = subprocess.run(
        [sys.executable, "-c", hide + run], capture_output=True, text=True, env=ENV, timeout=HANG
    )
    assert done.returncode == 1
    assert done.stderr == 'error: the service needs uvicorn: pip install -e ".[serve]"\n'


@pytest.mark.slow
def test_sigterm_stops_the_server_while_connections_keep_arriving(seed_run):
    """The signal may come while the server accepts a connection: it must stop all the same
    (a signal handler that raised was once caught there by the server, which went on)."""
    process = start_server("--checkpoint", str(seed_run / "best.pt"))
    netloc, answered, stop = urlsplit(read_address(process)).netloc, [], threading.Event()

    def connect_again_and_again() -> None:
        while not stop.is_set():
            try:
                connection = http.client.HTTPConnection(netloc, timeout=HANG)
                connection.request("GET", "/health")
                answered.append(connection.getresponse().status)
                connection.close()
            except OSError:  # refused once the server has stopped
                pass

    clients = [threading.Thread(target=connect_again_and_again) for _ in range(4)]
    try:
        for client in clients:
            client.start()
        wait_until(lambda: len(answered) >= 50, "50 answered connections", process)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=HANG) == 128 + signal.SIGTERM
        assert "stopped serving (SIGTERM)" in process.stderr.read()
    finally:
        stop.set()
        for client in clients:
            client.join()
        stop_server(process)


@pytest.mark.slow
def test_the_ctranslate2_engine_serves_an_export(seed_run, tmp_path):
    """--engine ctranslate2 --model DIR: the export's translations; /attention needs torch."""
    pytest.importorskip("ctranslate2", reason='CTranslate2 is an optional extra: ".[export]"')
    export_ctranslate2(load_checkpoint(seed_run / "best.pt"), tmp_path / "ct2")
    process = start_server("--engine", "ctranslate2", "--model", str(tmp_path / "ct2"))
    try:
        url = read_address(process)
        status, answer, _ = call(url, "POST", "/translate", {"text": ["three is three", ""]})
        assert (status, answer["translations"]) == (200, ["3 la 3", ""])
        status, answer, _ = call(url, "POST", "/attention", {"text": "three is three"})
        assert status == 501 and "needs our torch model" in answer["error"]
        info = call(url, "GET", "/info")[1]
        assert info["attention"] is False  # the page says so instead of drawing it
        assert (info["engine"], info["checkpoint"], info["example"]) == (
            "ctranslate2",
            {},
            "",  # an export keeps no example: the page starts empty
        )
    finally:
        stop_server(process)


def sending(url: str, outcomes: list, until: threading.Event) -> None:
    """One client's requests, one after another until `until`: each outcome, 200 or the
    exception it met."""
    while not until.is_set():
        try:
            status, answer, _ = call(url, "POST", "/translate", {"text": ["nine is nine"]})
            outcomes.append(status if answer.get("translations") == ["9 la 9"] else answer)
        except OSError as error:
            outcomes.append(error)


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_a_dead_worker_is_replaced_while_the_other_serves_and_sigterm_stops_all(seed_run):
    """serve.workers=2 under one client's load: `kill -9` of a worker fails at most the one
    request it was answering; another worker takes its place (said in one line), the service
    answering all along; SIGTERM then stops every worker, and the command says so once."""
    process, url = start_workers(seed_run)
    try:
        for sentence, expected in [("one is one", "1 la 1"), ("nine is nine", "9 la 9")] * 4:
            status, answer, _ = call(url, "POST", "/translate", {"text": [sentence]})
            assert (status, answer["translations"]) == (200, [expected])
        first = spawned_workers(process.pid)
        assert len(first) == 2
        outcomes, done = [], threading.Event()
        client = threading.Thread(target=sending, args=(url, outcomes, done))
        client.start()
        wait_until(lambda: len(outcomes) >= 20, "answers before the kill")
        killed = min(first)
        os.kill(killed, signal.SIGKILL)
        line = process.stderr.readline()
        assert re.fullmatch(r"warning: worker \d stopped \(killed by SIGKILL\): starting "
                            r"another in its place\n", line), line  # fmt: skip
        wait_until(lambda: len(spawned_workers(process.pid) - first) == 1, "a new worker")
        at_kill = len(outcomes)
        wait_until(lambda: len(outcomes) >= at_kill + 20, "answers after the kill")
        done.set()
        client.join()
        failed = [outcome for outcome in outcomes if outcome != 200]
        assert len(failed) <= 1, failed  # the one request in flight, if the dead one had it
        workers = spawned_workers(process.pid)
        assert len(workers) == 2 and killed not in workers
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=HANG) == 128 + signal.SIGTERM
        assert process.stderr.read() == "stopped serving (SIGTERM)\n"
        assert not any(Path(f"/proc/{p}").exists() for p in workers)
    finally:
        stop_server(process)


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_a_worker_dying_as_it_starts_again_and_again_stops_the_service(seed_run):
    """Every worker killed as soon as it appears, before it has loaded its model (as a worker
    failing at start-up ends): replaced each time until one of them has died START_TRIES
    times in a row; then the service stops with one line, the other worker too."""
    process, _ = start_workers(seed_run)
    try:
        killed: set[int] = set()
        started = time.monotonic()
        while process.poll() is None:
            assert time.monotonic() - started < HANG, "hung: the service never stopped"
            for new in spawned_workers(process.pid) - killed:
                with contextlib.suppress(ProcessLookupError):  # it ended on its own
                    os.kill(new, signal.SIGKILL)  # a spawned Python, still importing
                killed.add(new)
            time.sleep(0.01)
        assert process.returncode == 1
        # at least START_TRIES; more where the machine is so busy that a worker served before
        # this loop saw it (its death then starts its count again, as it should)
        assert len(killed) >= serve.START_TRIES
        last = process.stderr.read().splitlines()[-1]
        assert re.fullmatch(
            rf"error: worker \d stopped {serve.START_TRIES} times while starting \(last: killed "
            r"by SIGKILL\)", last
        ), last  # fmt: skip
    finally:
        stop_server(process)


@pytest.mark.slow
def test_the_default_engine_translates_with_ctranslate2_and_draws_attention(seed_run, tmp_path):
    """serve without --engine: CTranslate2 on the export cached beside the checkpoint for
    /translate, our torch model for /attention."""
    pytest.importorskip("ctranslate2", reason='CTranslate2 is an optional extra: ".[export]"')
    checkpoint = Path(shutil.copy(seed_run / "best.pt", tmp_path / "best.pt"))
    process = start_server("--checkpoint", str(checkpoint))
    try:
        url = read_address(process)
        assert (tmp_path / "best.ct2/model.bin").exists()
        status, answer, _ = call(url, "POST", "/translate", {"text": ["three is three"]})
        assert (status, answer["translations"]) == (200, ["3 la 3"])
        status, answer, _ = call(url, "POST", "/attention", {"text": "three is three"})
        assert (status, answer["translation"]) == (200, "3 la 3") and answer["maps"]
        info = call(url, "GET", "/info")[1]
        assert info["attention"] is True and info["engine"].startswith("ctranslate2")
    finally:
        stop_server(process)


def test_a_connection_is_refused_until_the_service_listens_not_kept_waiting(
    trained_numbers_checkpoint,
):
    """The socket is bound before the model loads (a port in use: one line, at once), but
    listens only once the server serves: a connection meanwhile is refused at once, not kept
    waiting (a proxy tries another replica; a probe fails), and on_listening (the command's
    `serving ... at URL` line) comes once it listens."""
    sock = bind("127.0.0.1", 0)
    address = sock.getsockname()[:2]
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(address, timeout=HANG)
    server = Server([TorchEngine(trained_numbers_checkpoint[0])], ServeConfig(), sock)
    listening = threading.Event()
    server.on_listening = listening.set
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    try:
        assert listening.wait(HANG)
        status, answer, _ = call(server.url, "POST", "/translate", {"text": ["one is one"]})
        assert (status, answer["translations"]) == (200, ["1 la 1"])
    finally:
        server.should_exit = True
        thread.join()
        server.close()
