"""The translation service: its answers are translate's, every mistake in a request gets a 4xx
that names it, concurrent requests share batches, and its page works in a real browser."""

import asyncio
import contextlib
import dataclasses
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from starlette.requests import Request

from benchmarks.service.process import stop_server
from seq2seq import serve
from seq2seq.checkpoint import load_checkpoint
from seq2seq.config import ServeConfig
from seq2seq.decoding.batches import translate_sentences
from seq2seq.decoding.ctranslate2_engine import CTranslate2Engine
from seq2seq.decoding.engines import TorchEngine
from seq2seq.exports.ctranslate2 import export_ctranslate2
from seq2seq.service.ours import CLIENT_SETTINGS
from seq2seq.serving import api, refusals
from seq2seq.serving.api import Body
from seq2seq.support.errors import run_cli

from helpers import (
    ENV,
    HANG,
    JSON,
    ROOT,
    call,
    command,
    read_address,
    running,
    spawned_workers,
    start_server,
    start_workers,
    wait_until,
)

ARTIFACTS = ROOT / "runs/test-artifacts"  # git-ignored; CI may keep it
LIMITS = {"max_sentences": 100, "max_chars": 1500, "max_body_bytes": 20_000, "max_beam_size": 4}


@pytest.fixture(scope="module")
def numbers(trained_numbers_checkpoint):
    """The small numbers model, its test sentences, and a server for it."""
    checkpoint, test = trained_numbers_checkpoint
    model = TorchEngine(checkpoint)
    with running(model, **LIMITS) as server:
        yield server.url, model, [source for source, _ in test]


def reference(model: TorchEngine, sentences: list[str], **changes) -> list[str]:
    decoding = dataclasses.replace(model.config.decode, **changes)
    return translate_sentences(
        model.checkpoint.model, model.src_vocab, model.tgt_vocab, sentences, decoding
    )


@pytest.mark.same_outputs
def test_translations_and_warnings_are_those_of_translate(numbers):
    url, model, test = numbers
    sentences = [*test[:97], "", "three is eleventy", "one " * 300]
    status, answer, _ = call(url, "POST", "/translate", {"text": sentences})
    assert status == 200
    assert answer["translations"] == reference(model, sentences)
    assert len(set(answer["translations"])) > 50, "the outputs should vary"
    assert answer["warnings"] == [
        "line 99: not in the vocabulary, translated as unknown: 'eleventy'",
        f"line 100: 300 pieces, cut to the model's {model.longest_source}",
    ]
    status, answer, _ = call(url, "POST", "/translate", {"text": test[:9], "beam_size": 3})
    assert answer["translations"] == reference(model, test[:9], beam_size=3)
    assert call(url, "POST", "/translate", {"text": []})[1] == {
        "translations": [],
        "warnings": [],
    }


@pytest.mark.same_outputs
def test_nbest_gives_translate_nbest_with_scores(numbers):
    url, model, test = numbers
    status, answer, _ = call(url, "POST", "/translate", {"text": test[:20], "nbest": 3})
    assert status == 200
    decoding = dataclasses.replace(model.config.decode, beam_size=3)
    expected = model.translate_nbest(test[:20], decoding).outputs
    for hypotheses, best in zip(answer["translations"], expected, strict=True):
        assert [h["translation"] for h in hypotheses] == [text for _, text in best]
        assert [h["score"] for h in hypotheses] == pytest.approx([score for score, _ in best])
    request = {"text": test[:20], "nbest": 2, "beam_size": 3}  # the 2 best of 3 beams
    answer = call(url, "POST", "/translate", request)[1]
    assert [[h["translation"] for h in best] for best in answer["translations"]] == [
        [text for _, text in best[:2]] for best in expected
    ]


def test_attention_weights_come_with_their_tokens(numbers):
    url, model, test = numbers
    status, answer, _ = call(url, "POST", "/attention", {"text": test[0]})
    assert status == 200 and answer["translation"] == reference(model, test[:1])[0]
    kinds = [(m["kind"], m["layer"]) for m in answer["maps"]]
    assert kinds == [("encoder self", 1), ("decoder self", 1), ("cross", 1)]
    heads = model.config.model.n_heads
    for m in answer["maps"]:
        assert len(m["weights"]) == heads
        assert [len(row) for row in m["weights"][0]] == [len(m["keys"])] * len(m["queries"])
        assert all(abs(sum(row) - 1) < 1e-3 for head in m["weights"] for row in head)
    assert answer["maps"][2]["keys"] == answer["maps"][0]["keys"]  # cross: keys from the source


def test_health_and_info(numbers):
    url, model, _ = numbers
    status, before, _ = call(url, "GET", "/health")
    assert status == 200 and before["status"] == "ok" and before["queued"] == 0
    assert call(url, "POST", "/translate", {"text": ["one is one", "two is two"]})[0] == 200
    after = call(url, "GET", "/health")[1]  # one request more, its two sentences in one batch
    counts = ("requests", "batches", "sentences")
    assert [after[key] - before[key] for key in counts] == [1, 1, 2] and after["queued"] == 0
    status, info, _ = call(url, "GET", "/info")
    assert status == 200 and info["parameters"] == model.checkpoint.model.num_parameters()
    source = info["vocab"]["source"]
    assert source["size"] == len(model.src_vocab) == len(source["pieces"])
    assert info["config"]["model"]["d_model"] == 64 and "serve" not in info["config"]
    assert info["serve"]["max_sentences"] == LIMITS["max_sentences"]
    assert set(info["serve"]) == {*CLIENT_SETTINGS, "api_key_needed"}  # no file paths
    assert "path" not in info["checkpoint"] and not info["serve"]["api_key_needed"]
    assert info["attention"] is True  # the torch engine: the page draws it


def test_the_page_off_leaves_the_api_alone(trained_numbers_checkpoint):
    """serve.page false, as LibreTranslate's --disable-web-ui: its files are 404s, the API
    answers, and the description lists no page."""
    with running(TorchEngine(trained_numbers_checkpoint[0]), page=False) as server:
        pages = [call(server.url, "GET", path)[0] for path in ("/", "/app.js", "/style.css")]
        translated = call(server.url, "POST", "/translate", {"text": ["one is one"]})[0]
        described = call(server.url, "GET", "/openapi.json")[1]["paths"]
    assert (pages, translated) == ([404] * 3, 200)
    assert "/" not in described and "/translate" in described


def test_answers_are_sent_at_once_on_keep_alive_connections(trained_numbers_checkpoint):
    """Nagle's algorithm is off (TCP_NODELAY) on every connection the server accepts: with it
    on, each answer after the first on a keep-alive connection waited for the client's delayed
    ACK (~40 ms on Linux)."""
    with running(TorchEngine(trained_numbers_checkpoint[0])) as server:
        connection = http.client.HTTPConnection(urlsplit(server.url).netloc, timeout=HANG)
        for _ in range(2):  # one connection, kept alive
            connection.request("GET", "/health")
            assert connection.getresponse().read()
        sockets = [c.transport.get_extra_info("socket") for c in server.server_state.connections]
        assert len(sockets) == 1
        assert sockets[0].getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        connection.close()


T, A = "/translate", "/attention"
MISTAKES = [
    ("POST", T, b'{"text": ["one"', 400, r"malformed JSON: Expecting"),
    ("POST", T, b"\xff\xfe{}", 400, r"malformed JSON"),
    ("POST", T, b"", 400, r"malformed JSON"),
    ("POST", T, [1, 2], 400, r"the body must be a JSON object"),
    ("POST", T, {}, 400, r"the field 'text' is missing"),
    ("POST", T, {"text": [], "beam": 2}, 400, r"'beam' \(did you mean 'beam_size'\?\)"),
    ("POST", T, {"text": "one is one"}, 400, r"'text' must be a list of strings"),
    ("POST", T, {"text": ["one", 2]}, 400, r"'text' must be a list of strings"),
    ("POST", T, {"text": [], "beam_size": "2"}, 400, r"'beam_size' must be an integer from 1 "
     r"to 4 \(serve.max_beam_size\), got \"2\""),
    ("POST", T, {"text": [], "beam_size": True}, 400, r"'beam_size' must be an integer"),
    ("POST", T, {"text": [], "beam_size": 0}, 400, r"'beam_size' must be an integer"),
    ("POST", T, {"text": [], "nbest": 5}, 400, r"'nbest' must be an integer from 1 to 4 .*got 5"),
    ("POST", T, {"text": [], "nbest": 2.5}, 400, r"'nbest' must be an integer"),
    ("POST", T, {"text": ["one"] * 101}, 413, r"the request holds 101 texts; the limit is 100 "
     r"sentences \(serve.max_sentences\)"),
    ("POST", T, {"text": ["one", "x" * 1501]}, 413, r"sentence 2 has 1,501 characters; the "
     r"limit is 1,500 \(serve.max_chars\)"),
    ("POST", A, {"text": ["one is one"]}, 400, r"'text' must be a string"),
    ("POST", A, {"text": "   "}, 400, r"nothing to show: the sentence is empty"),
    ("POST", A, {"text": "x" * 1501}, 413, r"'text' has 1,501 characters"),
    ("POST", A, {"text": "one", "nbest": 2}, 400, r"unknown field 'nbest'"),
    ("GET", "/nowhere", None, 404, r"no /nowhere here; there are GET /, .* POST /translate"),
    ("GET", T, None, 405, r"/translate takes POST, not GET"),
    ("DELETE", "/health", None, 405, r"/health takes GET, HEAD, not DELETE"),
    ("POST", T, b"{}" * 10_001, 413, r"the body has 20,002 bytes; the limit is 20,000 "
     r"\(serve.max_body_bytes\)"),
]  # fmt: skip


@pytest.mark.parametrize("method, path, body, status, error", MISTAKES)
def test_every_mistake_gets_a_4xx_that_names_it(numbers, method, path, body, status, error):
    url = numbers[0]
    got, answer, headers = call(url, method, path, body)
    assert got == status and re.search(error, answer["error"]), answer
    if status == 405:
        assert headers["Allow"] == ("GET, HEAD" if path == "/health" else "POST")
    assert call(url, "GET", "/health")[0] == 200  # and the server goes on


def test_one_connection_survives_its_mistakes_and_odd_bodies(numbers):
    connection = http.client.HTTPConnection(urlsplit(numbers[0]).netloc, timeout=HANG)

    def send(method, path, body=None, headers=JSON) -> tuple[int, dict]:
        connection.request(method, path, body, headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read())

    assert send("POST", "/translate", b"nonsense")[0] == 400  # kept alive after a 4xx
    assert send("GET", "/nowhere")[0] == 404
    assert send("POST", "/translate", b"{}" * 10_001)[0] == 413  # the body discarded
    assert send("POST", "/translate", b'{"text": ["one is one"]}')[0] == 200
    status, answer = send("POST", "/translate", b"{}", {**JSON, "Content-Length": "x"})
    assert status == 400 and "not a valid HTTP/1.1 request" in answer["error"]
    connection.close()  # which the server did too
    for body, status in ((b'{"text": ["one is one"]}', 200), (b"{}" * 10_001, 413)):
        connection.putrequest("POST", "/translate")  # a chunked body: read as it comes
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Transfer-Encoding", "chunked")
        connection.endheaders(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
        response = connection.getresponse()
        assert response.status == status, json.loads(response.read())
        assert json.loads(response.read()) if status == 200 else True
    connection.close()


def test_a_failure_while_decoding_is_a_500_and_the_server_goes_on(numbers, monkeypatch, caplog):
    url, model, test = numbers

    def broken(sentences, decoding):
        raise RuntimeError("out of luck")

    monkeypatch.setattr(model, "translate", broken)
    status, answer, _ = call(url, "POST", "/translate", {"text": test[:2]})
    assert status == 500 and answer["error"] == "RuntimeError: out of luck"
    # the traceback, logged by uvicorn once the answer is sent
    wait_until(lambda: "RuntimeError: out of luck" in caplog.text, "the traceback")
    monkeypatch.undo()
    answer = call(url, "POST", "/translate", {"text": test[:2]})[1]
    assert answer["translations"] == reference(model, test[:2])


def test_a_body_is_read_from_the_client_once_whoever_asks():
    """Both APIs look at /translate's body (LibreTranslate's first, then ours): the client's
    bytes are received once, and parsed once."""
    sent = [{"type": "http.request", "body": b'{"text": ["one"]}', "more_body": False}]

    async def receive() -> dict:
        return sent.pop(0)  # a second read would find nothing: IndexError

    headers = [(b"content-type", b"application/json; charset=utf-8")]
    body = Body(
        Request({"type": "http", "method": "POST", "headers": headers}, receive), ServeConfig()
    )

    async def twice() -> tuple:
        return await body.read(), await body.json(), await body.json_object("{}")

    raw, data, same = asyncio.run(twice())
    assert body.media_type == "application/json" and raw == b'{"text": ["one"]}'
    assert data == {"text": ["one"]} and same is data and not sent


@pytest.mark.parametrize(
    "refusal, ours, libretranslates, headers",
    [
        (refusals.Invalid("no such pair"), 400, 400, {}),
        (refusals.OverLimit("too many"), 413, 400, {}),  # LibreTranslate's: a 400
        (refusals.Forbidden("no key"), 403, 403, {}),
        (refusals.Slowdown("Slowdown: wait", 7), 429, 429, {"Retry-After": "7"}),
        (refusals.Busy("the queue is full"), 503, 503, {"Retry-After": "1"}),
        (refusals.Stopping("stopping"), 503, 503, {"Connection": "close"}),
        (refusals.NoRoom("no room"), 507, 507, {}),
    ],
)
def test_each_refusal_is_answered_with_its_apis_status(refusal, ours, libretranslates, headers):
    """The service refuses in its own terms (refusals.py); each API's routes choose the status
    (api.answers), the message as it is."""

    async def route() -> None:
        raise refusal

    for statuses, status in ((api.STATUSES, ours), (api.LIBRETRANSLATE, libretranslates)):
        with pytest.raises(api.HTTPError) as raised:
            asyncio.run(api.answers(statuses)(route)())
        assert (raised.value.status, str(raised.value)) == (status, str(refusal))
        assert raised.value.headers == headers


@pytest.mark.same_outputs
def test_concurrent_requests_share_a_batch_and_each_gets_its_own_answer(numbers):
    _, model, test = numbers
    sentences = test[:32]
    # The batch closes when it holds 32 sentences; the window never ends it first.
    settings = dict(LIMITS, max_sentences=1, max_batch_sentences=32, batch_window_ms=HANG * 1000.0)
    with running(model, **settings) as server:
        with ThreadPoolExecutor(32) as pool:
            answers = list(
                pool.map(lambda s: call(server.url, "POST", "/translate", {"text": [s]}), sentences)
            )
        health = call(server.url, "GET", "/health")[1]
    assert [status for status, _, _ in answers] == [200] * 32
    assert [answer["translations"][0] for _, answer, _ in answers] == reference(model, sentences)
    assert (health["requests"], health["batches"], health["sentences"]) == (32, 1, 32)


def test_concurrent_requests_with_different_options(seed_run):
    """Requests of every kind at once, each answered with its own sentence's result (the seed
    model knows its nine sentences by heart)."""
    model = TorchEngine(load_checkpoint(seed_run / "best.pt"))
    words = "one two three four five six seven eight nine".split()
    digits = {word: str(i) for i, word in enumerate(words, 1)}
    requests = []
    for i, word in enumerate(words * 4):
        sentence = f"{word} is {word}"
        kind = i % 4
        requests.append(
            [
                ("/translate", {"text": [sentence]}),
                ("/translate", {"text": [sentence, "nine is nine"], "beam_size": 2}),
                ("/translate", {"text": [sentence], "nbest": 2}),
                ("/attention", {"text": sentence}),
            ][kind]
        )
    with running(model) as server:
        with ThreadPoolExecutor(len(requests)) as pool:
            answers = list(pool.map(lambda r: call(server.url, "POST", *r), requests))
        health = call(server.url, "GET", "/health")[1]
    for (path, request), (status, answer, _) in zip(requests, answers, strict=True):
        assert status == 200
        word = (request["text"] if path == "/attention" else request["text"][0]).split()[0]
        expected = f"{digits[word]} la {digits[word]}"
        if path == "/attention":
            assert answer["translation"] == expected
        elif "nbest" in request:
            assert answer["translations"][0][0]["translation"] == expected
        else:
            assert answer["translations"][0] == expected
    assert health["requests"] == len(requests)


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
def test_the_page_translates_as_you_type_and_draws_the_attention(seed_run, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import Select, WebDriverWait

    model = TorchEngine(load_checkpoint(seed_run / "best.pt"))
    example = model.checkpoint.info["example"]
    assert example == (seed_run.parent.parent / "data/seed/valid.src").read_text().splitlines()[0]
    with running(model, max_chars=40) as server:
        browser.get(server.url)
        wait = WebDriverWait(browser, HANG)
        box = browser.find_element(By.ID, "sentence")
        translation = model.translate([example], model.config.decode).outputs[0]
        wait.until(seen.text_to_be_present_in_element((By.ID, "translation"), translation))
        assert box.get_attribute("value") == example  # shown before anything is typed
        box.send_keys("three is three")  # the example is selected: typing replaces it
        wait.until(seen.text_to_be_present_in_element((By.ID, "translation"), "3 la 3"))
        caption = (By.CSS_SELECTOR, "#heatmap caption")
        wait.until(seen.text_to_be_present_in_element(caption, "decoder 1 cross, head 1"))
        assert len(browser.find_elements(By.CSS_SELECTOR, "#heatmap tbody td")) == 4 * 4
        Select(browser.find_element(By.ID, "kind")).select_by_value("encoder self")
        Select(browser.find_element(By.ID, "head")).select_by_value("2")
        assert browser.find_element(*caption).text == "encoder 1 self, head 2"
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(ARTIFACTS / "serve-page.png"))
        print(f"screenshot: {ARTIFACTS / 'serve-page.png'}")

        browser.set_window_size(360, 800)  # a phone: nothing wider than the screen
        width = browser.execute_script("return document.documentElement.scrollWidth")
        assert width <= browser.execute_script("return window.innerWidth")
        browser.save_screenshot(str(ARTIFACTS / "serve-page-360.png"))

        box.send_keys(" and so on" * 4)  # over max_chars: the page shows the API's error
        wait.until(seen.visibility_of_element_located((By.ID, "error")))
        assert "serve.max_chars" in browser.find_element(By.ID, "error").text


@pytest.mark.slow
def test_the_page_translates_with_the_ctranslate2_engine_and_says_why_no_attention(
    seed_run, tmp_path, browser
):
    pytest.importorskip("ctranslate2", reason='CTranslate2 is an optional extra: ".[export]"')
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import WebDriverWait

    export_ctranslate2(load_checkpoint(seed_run / "best.pt"), tmp_path / "ct2")
    with running(CTranslate2Engine.load(tmp_path / "ct2")) as server:
        browser.get(server.url)
        wait = WebDriverWait(browser, HANG)
        heatmap = (By.ID, "heatmap")
        wait.until(seen.text_to_be_present_in_element(heatmap, "needs our torch model"))
        browser.find_element(By.ID, "sentence").send_keys("three is three")
        wait.until(seen.text_to_be_present_in_element((By.ID, "translation"), "3 la 3"))
        assert "ctranslate2" in browser.find_element(By.ID, "model").text
        assert not browser.find_element(By.ID, "error").is_displayed()


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
        while process.poll() is None:
            for new in spawned_workers(process.pid) - killed:
                with contextlib.suppress(ProcessLookupError):  # it ended on its own
                    os.kill(new, signal.SIGKILL)  # a spawned Python, still importing
                killed.add(new)
            time.sleep(0.01)
        assert process.returncode == 1
        assert serve.START_TRIES <= len(killed) <= 2 * serve.START_TRIES
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
