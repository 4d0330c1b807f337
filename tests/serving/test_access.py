"""Who may ask, and how often (serving/keystore.py, checks.py, access.py), as LibreTranslate's
clients meet it: API keys from a file, the environment or a form, required or not; the rate
limits a minute, an hour and a day; the client named by a trusted proxy alone."""

from urllib.parse import urlencode

import pytest
from libretranslatepy import LibreTranslateAPI
from urllib3 import encode_multipart_formdata

from seq2seq.config import ServeConfig
from seq2seq.decoding.engines import TorchEngine
from seq2seq.serving import access, checks, keystore
from seq2seq.serving.keystore import KeyLimits, digest
from seq2seq.support.errors import UserError

from helpers import FORM, JSON, call, failure, running
from pairs import PAIR

T, D = "/translate", "/detect"


def test_with_keys_every_post_needs_one(trained_numbers_checkpoint, tmp_path):
    model = TorchEngine(trained_numbers_checkpoint[0])
    (tmp_path / "keys").write_text("first-key\n\nsecond-key\n")
    sentence, bearer = "three is three", {"Authorization": "Bearer second-key"}
    with running(model, api_keys=str(tmp_path / "keys")) as server:
        url = server.url
        assert LibreTranslateAPI(url, "first-key").translate(sentence, "en", "digits")
        assert LibreTranslateAPI(url).languages()[0]["code"] == "en"  # GETs need none
        status, answer = failure(LibreTranslateAPI(url).translate, sentence, "en", "digits")
        assert status == 403 and answer["error"].startswith("an API key is needed")
        status, answer = failure(LibreTranslateAPI(url, "first-kez").detect, sentence)
        assert (status, answer) == (403, {"error": "Invalid API key"})
        for path, body in ((T, {"text": [sentence]}), ("/attention", {"text": sentence})):
            assert call(url, "POST", path, body)[0] == 403
            assert (
                call(url, "POST", path, body, {"Content-Type": "application/json", **bearer})[0]
                == 200
            )
        ours = {"text": [sentence], "api_key": "second-key"}  # our API: the header only
        assert call(url, "POST", T, ours)[0] == 403
        status, answer, _ = call(url, "POST", T, ours, {**JSON, **bearer})
        assert status == 400 and "unknown field 'api_key'" in answer["error"]


def test_keys_not_required_let_a_keyless_request_in_and_a_link_says_where_to_get_one(
    trained_numbers_checkpoint, tmp_path
):
    """serve.keys_required false: LibreTranslate's --api-keys without --under-attack (a
    request without a key served at the client's limits, a wrong key still refused);
    serve.api_key_link: its --get-api-key-link, in the 403."""
    model = TorchEngine(trained_numbers_checkpoint[0])
    (tmp_path / "keys").write_text("the-key\n")
    request, where = {"q": "three is three", **PAIR}, "https://example.org/keys"
    keys = {"api_keys": str(tmp_path / "keys")}
    with running(model, keys_required=False, **keys) as server:
        keyless = call(server.url, "POST", T, request)[0]
        wrong = call(server.url, "POST", T, {**request, "api_key": "nope"})[0]
        settings = call(server.url, "GET", "/frontend/settings")[1]
    with running(model, api_key_link=where, **keys) as server:
        status, answer, _ = call(server.url, "POST", T, request)
    assert (keyless, wrong) == (200, 403)
    assert (settings["apiKeys"], settings["keyRequired"]) == (True, False)
    assert status == 403 and answer["error"].endswith(f"; get one at {where}")


def test_a_key_in_the_query_string_or_a_multipart_form_as_libretranslate_takes_it(
    trained_numbers_checkpoint, tmp_path
):
    model = TorchEngine(trained_numbers_checkpoint[0])
    (tmp_path / "keys").write_text("the-key\n")
    fields = {"q": "three is three", **PAIR}
    with running(model, api_keys=str(tmp_path / "keys")) as server:
        form = urlencode(fields).encode()
        assert call(server.url, "POST", T + "?api_key=the-key", form, FORM)[:2] == (
            200, {"translatedText": "3 la 3", "confidence": None}  # no calibration: no confidence
        )  # fmt: skip
        assert call(server.url, "POST", T + "?api_key=wrong", form, FORM)[0] == 403
        for key, status in (("the-key", 200), ("wrong", 403)):
            body, content_type = encode_multipart_formdata({**fields, "api_key": key})
            answer = call(server.url, "POST", T, body, {"Content-Type": content_type})
            assert answer[0] == status, answer
        body, content_type = encode_multipart_formdata({"q": ("a.txt", b"three is three")})
        assert call(server.url, "POST", D, body, {"Content-Type": content_type})[0] == 400


def test_keys_come_from_a_file_or_the_environment(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KEYS_FOR_TEST", "one, two three")
    keys = keystore.ApiKeys.load("env:KEYS_FOR_TEST").keys
    assert keys == {digest(key): KeyLimits() for key in ("one", "two", "three")}
    assert not keystore.ApiKeys.load("")
    for where, message in (
        ("env:NO_SUCH_VARIABLE", r"no API keys in the environment variable NO_SUCH_VARIABLE"),
        (str(tmp_path / "missing"), r"cannot read the API keys \(serve.api_keys\): .*missing"),
    ):
        with pytest.raises(UserError, match=message):
            keystore.ApiKeys.load(where)
    (tmp_path / "keys").write_text("clé\n")
    with pytest.raises(UserError, match="API keys are printable ASCII"):
        keystore.ApiKeys.load(str(tmp_path / "keys"))
    for host, warned in (("127.0.0.1", False), ("::1", False), ("0.0.0.0", True)):
        access.warn_if_open(ServeConfig(host=host), keystore.ApiKeys([]))
        assert ("warning: serving on" in capsys.readouterr().err) == warned
    access.warn_if_open(ServeConfig(host="0.0.0.0"), keystore.ApiKeys(["key"]))
    assert capsys.readouterr().err == ""


def test_a_client_over_the_rate_limit_gets_429(trained_numbers_checkpoint, monkeypatch):
    """3 a minute, on a clock that stands still: the 4th POST in a row is refused."""
    monkeypatch.setattr(checks.Buckets, "clock", staticmethod(lambda: 1000.0))
    model = TorchEngine(trained_numbers_checkpoint[0])
    with running(model, requests_per_minute=3) as server:
        request = {"q": "three is three", **PAIR}
        assert [call(server.url, "POST", T, request)[0] for _ in range(3)] == [200] * 3
        status, answer, headers = call(server.url, "POST", T, request)
        assert status == 429 and headers["Retry-After"] == "20"
        assert answer["error"].startswith("Slowdown: 3 requests per minute at most")
        assert call(server.url, "POST", D, {"q": "one"})[0] == 429
        assert call(server.url, "GET", "/languages")[0] == 200  # GETs are not counted
        monkeypatch.setattr(checks.Buckets, "clock", staticmethod(lambda: 1020.0))
        assert call(server.url, "POST", T, request)[0] == 200  # a token back after 20 s
        assert call(server.url, "POST", T, request)[0] == 429


def test_a_client_over_its_requests_an_hour_or_a_day_gets_429(
    trained_numbers_checkpoint, monkeypatch
):
    """LibreTranslate's --hourly-req-limit and --daily-req-limit: the tightest window says no."""
    clock = [1000.0]
    monkeypatch.setattr(checks.Buckets, "clock", staticmethod(lambda: clock[0]))
    model = TorchEngine(trained_numbers_checkpoint[0])
    request = {"q": "three is three", **PAIR}
    with running(model, requests_per_minute=5, requests_per_hour=3, requests_per_day=4) as server:
        assert [call(server.url, "POST", T, request)[0] for _ in range(4)] == [200] * 3 + [429]
        status, answer, headers = call(server.url, "POST", T, request)
        assert answer["error"].startswith("Slowdown: 3 requests per hour at most")
        assert headers["Retry-After"] == "1200"  # one an hour / 3
        clock[0] += 1200
        assert call(server.url, "POST", T, request)[0] == 200  # the day's 4th
        clock[0] += 1200
        status, answer, headers = call(server.url, "POST", T, request)
        assert (
            status == 429
            and "4 requests per day at most (serve.requests_per_day)" in answer["error"]
        )


def test_x_forwarded_for_names_the_client_only_from_a_trusted_proxy(trained_numbers_checkpoint):
    """Each request claims another address: ignored by default (the connection's address is
    the client's, so the 4th is refused); from serve.trusted_proxies, each is its own client."""
    model = TorchEngine(trained_numbers_checkpoint[0])
    request = {"q": "three is three", **PAIR}

    def statuses(server) -> list[int]:
        claims = [{**JSON, "X-Forwarded-For": f"203.0.113.{n}"} for n in range(6)]
        return [call(server.url, "POST", T, request, headers)[0] for headers in claims]

    with running(model, requests_per_minute=3) as server:
        assert statuses(server) == [200] * 3 + [429] * 3
    with running(model, requests_per_minute=3, trusted_proxies=["127.0.0.0/8"]) as server:
        assert statuses(server) == [200] * 6


def test_the_rate_limit_keeps_a_bounded_table_of_clients(monkeypatch):
    """Any number of clients: the table keeps the most recently seen, each request O(1)."""
    monkeypatch.setattr(checks.Buckets, "most_clients", 100)
    limit = checks.Buckets(2, 60)
    for n in range(5_000):
        assert limit.take(f"client {n}") == 0
    assert len(limit.buckets) == 100 and next(iter(limit.buckets)) == "client 4900"
    assert limit.take("client 4999") == 0 and limit.take("client 4999") > 0  # its 3rd: wait
