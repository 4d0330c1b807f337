"""The service as an attacker or a sloppy client uses it: each test is a row of the table of
the issue that replaced the hand-made HTTP server by uvicorn and Starlette, and failed on
that server. The seed model knows its nine sentences by heart: "three is three" -> "3 la 3"."""

import http.client
import json
import resource
import select
import signal
import socket
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from benchmarks.service.process import cpu_seconds, stop_server
from seq2seq.decoding.engines import TorchEngine

from helpers import (
    HANG,
    JSON,
    answer_of,
    call,
    host_port,
    post,
    raw,
    read_address,
    running,
    start_server,
    wait_until,
)

WORDS = "one two three four five six seven eight nine".split()
LIMITS = {"max_body_bytes": 20_000}


def expected(word: str) -> str:
    digit = WORDS.index(word) + 1
    return f"{digit} la {digit}"


@pytest.fixture(scope="module")
def url(seed_model):
    with running(seed_model, **LIMITS) as server:
        yield server.url


def closed_by_the_server(connection: socket.socket, trickle: bytes = b"") -> None:
    """Wait until the server closes the connection, sending `trickle` every 0.1 s meanwhile."""
    connection.settimeout(0.1)
    start = time.monotonic()
    while time.monotonic() - start < HANG:
        try:
            connection.sendall(trickle)
            if connection.recv(1) == b"":
                return
        except TimeoutError:
            continue
        except (BrokenPipeError, ConnectionResetError):
            return
    raise AssertionError(f"the server kept the connection for {HANG} s")


def test_a_sentence_that_cannot_be_encoded_fails_only_its_own_request(seed_model):
    """A lone surrogate once failed every request of its batch, with a 500 and a traceback."""
    with running(seed_model, batch_window_ms=20.0) as server:
        stop, refused = threading.Event(), []

        def attacker() -> None:
            while not stop.is_set():
                refused.append(call(server.url, "POST", "/translate", {"text": ["\ud800"]})[:2])

        thread = threading.Thread(target=attacker)
        thread.start()
        words = WORDS * 6
        with ThreadPoolExecutor(8) as pool:
            answers = list(
                pool.map(
                    lambda w: call(server.url, "POST", "/translate", {"text": [f"{w} is {w}"]}),
                    words,
                )
            )
        stop.set()
        thread.join()
    assert [(status, a["translations"]) for status, a, _ in answers] == [
        (200, [expected(w)]) for w in words
    ]
    error = "sentence 1 is not valid Unicode: a lone surrogate at character 1"
    assert refused and set(map(str, refused)) == {str((400, {"error": error}))}


def raw_from(url: str, source: str, request: bytes) -> socket.socket:
    """A connection from the loopback address `source` (127.0.0.2: another client)."""
    connection = socket.create_connection(host_port(url), timeout=HANG, source_address=(source, 0))
    connection.sendall(request)
    return connection


def hung_up(connection: socket.socket) -> bool:
    """Whether the server closed the connection (an end of file, or a reset)."""
    try:
        return connection.recv(1) == b""
    except ConnectionResetError:
        return True


HEALTH = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"


def test_a_well_formed_client_gets_in_past_connections_that_send_no_request(seed_model):
    """Connections that never finish their headers once locked every other client out (503)
    until serve.timeout_s. Now the one waiting longest is closed to make room."""
    with running(seed_model, max_connections=4, timeout_s=HANG) as server:
        slow = [raw(server.url, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n") for _ in range(4)]
        assert answer_of(raw_from(server.url, "127.0.0.2", HEALTH))[0] == 200
        closed = select.select(slow, [], [], HANG)[0]
        assert closed and all(map(hung_up, closed))  # closed, without an answer
        for connection in slow:
            connection.close()


def test_one_client_cannot_hold_more_than_its_share_of_connections(seed_model):
    with running(seed_model, max_connections=8, max_client_connections=2) as server:
        held = [raw(server.url, b"") for _ in range(2)]
        assert answer_of(raw(server.url, b"")) == (
            503, {"error": "too many connections from your address "
                           "(serve.max_client_connections)"},
        )  # fmt: skip
        assert answer_of(raw_from(server.url, "127.0.0.2", HEALTH))[0] == 200
        for connection in held:
            connection.close()


def test_a_trusted_proxy_is_not_one_client_for_the_connection_cap(seed_model):
    """Behind a reverse proxy every client connects from the proxy's address: from
    serve.trusted_proxies, only serve.max_connections counts."""
    settings = {"max_connections": 8, "max_client_connections": 2}
    with running(seed_model, **settings, trusted_proxies=["127.0.0.3"]) as server:
        held = [raw_from(server.url, "127.0.0.3", b"") for _ in range(6)]
        assert answer_of(raw_from(server.url, "127.0.0.3", HEALTH))[0] == 200
        assert answer_of(raw_from(server.url, "127.0.0.4", HEALTH))[0] == 200
        held += [raw_from(server.url, "127.0.0.4", b"") for _ in range(2)]
        assert answer_of(raw_from(server.url, "127.0.0.4", b""))[0] == 503  # not a proxy
        for connection in held:
            connection.close()


def test_silent_and_trickling_connections_are_closed_after_the_timeout(seed_model):
    """A byte every 40 s once kept a connection open for ever."""
    with running(seed_model, timeout_s=1.0) as server:
        closed_by_the_server(raw(server.url, b""))  # silent
        headers = raw(server.url, b"GET /health HTTP/1.1\r\n")
        closed_by_the_server(headers, trickle=b"X")  # its headers never end
        body = raw(server.url, post(b'{"text": ', b"Content-Length: 100"))
        assert answer_of(body) == (408, {"error": "the body did not arrive within 1 s "
                                                  "(serve.timeout_s)"})  # fmt: skip
        assert call(server.url, "GET", "/health")[0] == 200


def serve_with_128_files(seed_run, *overrides: str) -> subprocess.Popen:
    """The service in a process that may open 128 files."""
    return start_server(
        "--checkpoint", str(seed_run / "best.pt"), *overrides,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128)),
    )  # fmt: skip


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc/PID/stat")
@pytest.mark.slow
def test_many_connections_never_run_the_server_out_of_files_or_spin_it(seed_run):
    """~1,020 open connections once ran the server out of files (the usual limit, 1,024),
    and its accept loop then spun at 98% of a core. Here it may open 128 files, and 200
    connections stay silent: those beyond serve.max_connections get a 503 at once."""
    process = serve_with_128_files(
        seed_run, "serve.max_connections=32", "serve.max_client_connections=32", "serve.timeout_s=5"
    )
    try:
        url = read_address(process)
        threading.Thread(target=process.stderr.read, daemon=True).start()
        silent = [socket.create_connection(host_port(url), timeout=HANG) for _ in range(200)]
        time.sleep(1)  # the server accepts them all (work, not spinning)
        before, start = cpu_seconds(process.pid), time.monotonic()
        time.sleep(2)  # (serve.timeout_s=5 closes the 32 it keeps after this)
        busy = (cpu_seconds(process.pid) - before) / (time.monotonic() - start)
        assert busy < 0.5, f"the server used {busy:.0%} of a core while the clients were silent"
        refused = [connection for connection in silent if connection.recv(1, socket.MSG_PEEK)]
        assert len(refused) == 200 - 32
        assert answer_of(refused[0])[0] == 503
        wait_until(lambda: call(url, "GET", "/health")[0] == 200, "room again", process)
        for connection in silent:
            connection.close()
    finally:
        stop_server(process)


def test_a_connection_limit_beyond_the_file_limit_is_refused_at_start(seed_run):
    process = serve_with_128_files(seed_run, "serve.max_connections=256")
    _, stderr = process.communicate(timeout=HANG)
    assert process.returncode == 1
    assert stderr.splitlines() == [
        "error: serve.max_connections needs about 320 open files and this process may open 128 "
        "(ulimit -n): lower serve.max_connections or raise the limit"
    ]


def gated(model: TorchEngine, monkeypatch) -> tuple[threading.Event, list]:
    """The model's decodings wait until the gate is open; `decoded` lists their sentences."""
    gate, decoded, translate = threading.Event(), [], model.translate

    def waiting(sentences, decoding):
        decoded.append(list(sentences))
        assert gate.wait(HANG)
        return translate(sentences, decoding)

    monkeypatch.setattr(model, "translate", waiting)
    return gate, decoded


def test_shutdown_answers_what_still_waits_at_drain_s_with_a_503(seed_model, monkeypatch):
    """After SIGTERM, 16 queued requests once kept the server decoding for minutes, and a
    second signal answered them with CancelledError tracebacks. Here a batch holds the
    decoder: the requests behind it get a 503 at serve.drain_s, that batch its answer."""
    gate, decoded = gated(seed_model, monkeypatch)
    with running(seed_model, batch_window_ms=0.0, max_batch_sentences=1, drain_s=0.5) as server:
        ask = lambda word: call(server.url, "POST", "/translate", {"text": [f"{word} is {word}"]})  # noqa: E731
        with ThreadPoolExecutor(3) as pool:
            first = pool.submit(ask, "one")
            wait_until(lambda: decoded == [["one is one"]], "the first decoding")
            behind = [pool.submit(ask, word) for word in ("two", "three")]
            wait_until(lambda: call(server.url, "GET", "/health")[1]["queued"] == 2, "queued")
            server.should_exit = True  # what SIGTERM does
            for answer in behind:
                status, body, _ = answer.result()
                assert (status, body) == (503, {"error": "the service is shutting down"})
            gate.set()
            status, body, _ = first.result()
            assert (status, body["translations"], body["warnings"]) == (200, ["1 la 1"], [])
    assert decoded == [["one is one"]]


def test_the_queue_is_bounded_and_work_of_clients_that_left_is_dropped(seed_model, monkeypatch):
    """Four requests of 64 long sentences, then a hang-up, were once decoded all the same,
    and the next request waited 7.2 s behind them."""
    gate, decoded = gated(seed_model, monkeypatch)
    work = 8 * len("two is two")  # 8 of those sentences, at beam size 1
    with running(seed_model, batch_window_ms=0.0, max_queue_work=work) as server:

        def queued() -> int:
            return call(server.url, "GET", "/health")[1]["queued"]

        with ThreadPoolExecutor(1) as pool:
            first = pool.submit(call, server.url, "POST", "/translate", {"text": ["one is one"]})
            wait_until(lambda: decoded == [["one is one"]], "the first decoding")
            body = json.dumps({"text": ["two is two"] * 4}).encode()
            request = post(body, b"Content-Length: %d" % len(body))
            leaving = [raw(server.url, request) for _ in range(2)]
            wait_until(lambda: queued() == 8, "8 sentences queued")
            status, answer, headers = call(server.url, "POST", "/translate", {"text": ["x"]})
            assert status == 503 and headers["Retry-After"] == "1"
            assert "serve.max_queue_work" in answer["error"]
            for connection in leaving:
                connection.close()
            wait_until(lambda: queued() == 0, "the requests of the clients that left dropped")
            gate.set()
            assert first.result()[1]["translations"] == ["1 la 1"]
        answer = call(server.url, "POST", "/translate", {"text": ["nine is nine"]})[1]
        assert answer["translations"] == ["9 la 9"]
    assert decoded == [["one is one"], ["nine is nine"]]  # never the 8 "two is two"


@pytest.mark.slow
def test_sigterm_answers_every_request_received_then_exits(seed_run):
    """SIGTERM under 32 keep-alive clients once lost the requests in flight, and those sent
    after it hung until the process ended."""
    process = start_server(
        "--checkpoint", str(seed_run / "best.pt"),
        f"serve.batch_window_ms={HANG * 1000}",  # only the signal ends the batch
    )  # fmt: skip
    try:
        url = read_address(process)
        words = WORDS[:8] * 4  # 32 clients, and one that sends nothing: the batch waits for it
        idle = socket.create_connection(urlsplit(url).netloc.rsplit(":", 1))
        clients = [http.client.HTTPConnection(urlsplit(url).netloc, timeout=HANG) for _ in words]
        for client, word in zip(clients, words, strict=True):
            client.request("POST", "/translate", json.dumps({"text": [f"{word} is {word}"]}), JSON)
        health = lambda: call(url, "GET", "/health")[1]  # noqa: E731
        wait_until(lambda: health()["queued"] == len(words), "every request queued", process)
        process.send_signal(signal.SIGTERM)
        for client, word in zip(clients, words, strict=True):
            response = client.getresponse()
            assert response.status == 200
            assert json.loads(response.read())["translations"] == [expected(word)]
        for client in clients:  # sent after the signal: a 503, or no connection
            try:
                client.request("POST", "/translate", json.dumps({"text": ["one is one"]}), JSON)
                status = client.getresponse().status
            except (ConnectionError, http.client.HTTPException):
                status = None
            assert status in (None, 503)
        assert process.wait(timeout=HANG) == 128 + signal.SIGTERM
        assert process.stderr.read() == "stopped serving (SIGTERM)\n"
        idle.close()
    finally:
        stop_server(process)
