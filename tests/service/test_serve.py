"""The translation service: its answers are translate's, every mistake in a request gets a 4xx
that names it, and concurrent requests share batches (the command: test_serve_command.py; the
page: test_page.py)."""

import asyncio
import dataclasses
import http.client
import json
import re
import socket
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import pytest
from starlette.requests import Request

from seq2seq.checkpoint import load_checkpoint
from seq2seq.config import ServeConfig
from seq2seq.decoding.batches import translate_sentences
from seq2seq.decoding.engines import TorchEngine
from seq2seq.service.ours import CLIENT_SETTINGS
from seq2seq.serving import api, refusals
from seq2seq.serving.api import Body

from helpers import (
    HANG,
    JSON,
    call,
    running,
    wait_until,
)

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
        "confidence": [],
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
    # The batch closes when it holds 32 sentences; the window never ends it first, held open
    # by a connection that sends nothing (a request may still come on it).
    settings = dict(LIMITS, max_sentences=1, max_batch_sentences=32, batch_window_ms=HANG * 1000.0)
    with running(model, **settings) as server:
        idle = socket.create_connection(urlsplit(server.url)[1].rsplit(":", 1))
        with idle, ThreadPoolExecutor(32) as pool:
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
