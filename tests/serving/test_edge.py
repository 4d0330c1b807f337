"""The HTTP edge (serving/api.py, access.py, protocol.py) as a sloppy or hostile client meets it:
oversized, malformed or doubled bodies, other hosts and origins, unknown methods, each refused
with its own 4xx; every answer's security headers."""

import http.client
import json
from urllib.parse import urlsplit

import pytest

from helpers import (
    HANG,
    JSON,
    answer_of,
    call,
    post,
    raw,
    running,
)


def test_an_oversized_body_gets_its_413_whatever_the_client(url):
    """http.client sends a body whole before it reads the answer: the server once closed
    the connection on it, and the client saw a BrokenPipeError."""
    connection = http.client.HTTPConnection(urlsplit(url).netloc, timeout=HANG)
    connection.request("POST", "/translate", b"x" * 5_000_000, JSON)  # no Expect: 100-continue
    response = connection.getresponse()
    error = "the body has 5,000,000 bytes; the limit is 20,000 (serve.max_body_bytes)"
    assert (response.status, json.loads(response.read())) == (413, {"error": error})
    connection.request("POST", "/translate", b'{"text": ["three is three"]}', JSON)
    assert json.loads(connection.getresponse().read())["translations"] == ["3 la 3"]


def test_malformed_bodies_of_any_depth_or_size_are_4xx(url):
    status, answer, _ = call(
        url, "POST", "/translate", b"[" * 19_999
    )  # within serve.max_body_bytes
    assert (status, answer) == (400, {"error": "malformed JSON: nested too deeply"})
    status, answer, _ = call(url, "POST", "/translate", b'{"text": [], "beam_size": 1%s}' % (
        b"0" * 5000))  # fmt: skip
    assert status == 400 and "malformed JSON" in answer["error"]
    status, answer = answer_of(raw(url, post(b"{}", b"Content-Length: " + b"9" * 5000)))
    assert status == 400 and "not a valid HTTP/1.1 request" in answer["error"]


def test_a_field_name_that_is_not_unicode_gets_its_400(url):
    """{"\\ud800": 1} once dropped the connection: the error naming it could not be encoded."""
    status, answer, _ = call(url, "POST", "/translate", b'{"\\ud800": 1}')
    assert status == 400 and answer["error"].startswith("unknown field '\ud800'")


LIMITS = {"max_body_bytes": 20_000}


@pytest.fixture(scope="module")
def url(seed_model):
    with running(seed_model, **LIMITS) as server:
        yield server.url


@pytest.mark.parametrize(
    "method, path, status",
    [("HEAD", "/", 200), ("HEAD", "/health", 200), ("HEAD", "/translate", 405),
     ("TRACE", "/health", 405), ("get", "/health", 405), ("OPTIONS", "/translate", 405),
     ("CONNECT", "example.com:443", 404)],
)  # fmt: skip
def test_head_and_unknown_methods_get_json_answers(url, method, path, status):
    """They once got a 501 without a body, or an HTML page."""
    connection = http.client.HTTPConnection(urlsplit(url).netloc, timeout=HANG)
    connection.request(method, path)
    response = connection.getresponse()
    body = response.read()
    assert response.status == status
    if method == "HEAD":
        assert body == b""
    else:
        assert response.headers["Content-Type"] == "application/json"
        assert json.loads(body)["error"]
    if path != "/":
        assert response.headers["Content-Type"] == "application/json"


def test_requests_for_another_host_or_not_json_are_refused(url):
    """A page of another site (DNS rebinding: evil.example resolving to 127.0.0.1) once read
    /info, and any page could spend the decoder's time with a text/plain POST."""
    status, answer, _ = call(url, "GET", "/info", headers={"Host": "evil.example"})
    assert status == 400 and "'evil.example' is not served here" in answer["error"]
    assert "serve.allowed_hosts" in answer["error"]
    body = b'{"text": ["one is one"]}'
    status, answer, _ = call(url, "POST", "/translate", body, {"Content-Type": "text/plain"})
    assert status == 415 and "Content-Type: application/json" in answer["error"]
    # the form encoding is LibreTranslate's (tests/service/test_libretranslate.py): this is no form
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    status, answer, _ = call(url, "POST", "/translate", body, form)
    assert status == 400, answer
    headers = {"Content-Type": "application/json; charset=utf-8"}
    assert call(url, "POST", "/translate", body, headers)[0] == 200


def test_the_address_localhost_and_allowed_hosts_are_served(seed_model):
    with running(seed_model, allowed_hosts=["translate.example"]) as server:
        for host in ("translate.example", "localhost:8000", urlsplit(server.url).netloc):
            assert call(server.url, "GET", "/info", headers={"Host": host})[0] == 200, host
        assert call(server.url, "GET", "/info", headers={"Host": "other.example"})[0] == 400


def test_a_page_of_another_origin_cannot_post_or_delete_unless_cors_origins_allows_it(seed_model):
    """A form another site's page submits (browsers send those without asking, with an
    Origin header) was once translated: 200. Programs send no Origin."""
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    body = b"q=three is three&source=en&target=digits"
    with running(seed_model, cors_origins=["https://app.example"]) as server:
        own = f"http://{urlsplit(server.url).netloc}"
        for origin, status in (
            ("http://evil.example", 403), ("null", 403), (own, 200), ("https://app.example", 200),
            (None, 200),
        ):  # fmt: skip
            headers = {**form, **({"Origin": origin} if origin else {})}
            answer = call(server.url, "POST", "/translate", body, headers)
            assert answer[0] == status, (origin, answer)
        assert (
            "serve.cors_origins"
            in call(
                server.url, "POST", "/translate", body, {**form, "Origin": "http://evil.example"}
            )[1]["error"]
        )
        headers = {**JSON, "Origin": "https://app.example"}
        _, _, answered = call(server.url, "POST", "/translate", {"text": ["one is one"]}, headers)
        assert answered["access-control-allow-origin"] == "https://app.example"
        # DeepL's glossary routes: DELETE, PATCH and PUT, preflighted, allowed as POST is
        connection = http.client.HTTPConnection(urlsplit(server.url).netloc, timeout=HANG)
        preflight = {"Origin": "https://app.example", "Access-Control-Request-Method": "DELETE"}
        connection.request("OPTIONS", "/v2/glossaries/x", headers=preflight)
        methods = connection.getresponse().headers["access-control-allow-methods"]
        assert {"DELETE", "PATCH", "PUT"} <= set(methods.split(", "))
        evil = {"Origin": "http://evil.example"}
        assert call(server.url, "DELETE", "/v2/glossaries/x", headers=evil)[0] == 403


def test_every_answer_forbids_sniffing_and_the_page_has_a_content_security_policy(url):
    for path in ("/", "/app.js", "/info"):
        connection = http.client.HTTPConnection(urlsplit(url).netloc, timeout=HANG)
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        connection.close()
        headers = response.headers
        assert response.status == 200 and headers["x-content-type-options"] == "nosniff", path
        assert "default-src 'self'" in headers["content-security-policy"], path


def test_two_different_content_lengths_are_a_400_not_a_second_request(url):
    """The first was once used, and the rest of the body read as the next request."""
    smuggled = b"GET /info HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    body = b"{}" + smuggled
    connection = raw(url, post(body, b"Content-Length: 2", b"Content-Length: %d" % len(body)))
    status, answer = answer_of(connection)  # one answer, then the connection is closed
    assert status == 400 and "not a valid HTTP/1.1 request" in answer["error"]
