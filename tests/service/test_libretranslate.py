"""LibreTranslate's API on the service's port, driven by a real client (libretranslatepy) and by
hand; API keys (seq2seq/serving/keystore.py, checks.py) and the rate limit (access.py)."""

import dataclasses
import json
import random
import re
import shutil
import subprocess
from html.parser import HTMLParser
from urllib.error import HTTPError
from urllib.parse import urlencode

import pytest
from libretranslatepy import LibreTranslateAPI
from urllib3 import encode_multipart_formdata

from benchmarks.service.process import stop_server
from seq2seq.config import ConfigError, Language, ServeConfig, config_from_dict, translation_pair
from seq2seq.decoding.batches import translate_sentences
from seq2seq.decoding.engines import TorchEngine
from seq2seq.documents import markup
from seq2seq.service.libretranslate import formatted
from seq2seq.serving import access, checks, keystore
from seq2seq.serving.keystore import KeyLimits, digest
from seq2seq.support.errors import UserError

from helpers import HANG, JSON, ROOT, call, read_address, running, start_server

LIMITS = {"max_sentences": 8, "max_chars": 400, "max_beam_size": 4}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


# Sentences whose words the small numbers model's vocabulary knows
SENTENCES = ["three is three", "twenty one is five", "four hundred six is nine"]


@pytest.fixture(scope="module")
def numbers(trained_numbers_checkpoint):
    """A server of the small numbers model (no keys, no limit), and the model."""
    model = TorchEngine(trained_numbers_checkpoint[0])
    with running(model, **LIMITS) as server:
        yield server.url, model, SENTENCES


def reference(model: TorchEngine, sentences: list[str]) -> list[str]:
    checkpoint = model.checkpoint
    return translate_sentences(
        checkpoint.model, model.src_vocab, model.tgt_vocab, sentences, model.config.decode
    )


def failure(call, *args) -> tuple[int, dict]:
    """The status and JSON error of a libretranslatepy call that fails."""
    with pytest.raises(HTTPError) as raised:
        call(*args)
    return raised.value.code, json.loads(raised.value.read())


@pytest.mark.same_outputs
def test_the_libretranslatepy_client_translates_detects_and_lists_languages(numbers):
    url, model, test = numbers
    client = LibreTranslateAPI(url)
    assert client.languages() == [
        {"code": "en", "name": "English", "targets": ["digits", "en"]},
        {"code": "digits", "name": "Digits", "targets": ["digits"]},
    ]
    expected = [reference(model, [text])[0] for text in test[:3]]  # a request each
    assert [client.translate(text, "en", "digits") for text in test[:3]] == expected
    assert client.translate(test[0], "auto", "digits") == expected[0]
    assert client.detect("three is three") == [{"confidence": 100.0, "language": "en"}]
    assert client.detect("three is eleventy") == [{"confidence": 66.7, "language": "en"}]
    status, answer = failure(client.translate, test[0], "de", "en")
    assert status == 400 and answer == {
        "error": "de to en is not available: this service translates en (English) to digits "
        "(Digits)"
    }


NPM_CLIENT = ROOT / "benchmarks/.npm-libretranslate/node_modules/libretranslate/dist/translate.js"
NPM_TRANSLATE = """require(process.argv[1]).translate({query: process.argv[2], source: "en",
  target: "digits", apiurl: process.argv[3], apiKey: "sesame"})
  .then(t => console.log(JSON.stringify(t)))"""


def test_the_npm_client_translates_and_its_key_counts(numbers, tmp_path):
    """LibreTranslate's npm client (libretranslate 1.0.1), run by node, as it is: it reads
    /languages, then posts its key as `apiKey` (which LibreTranslate ignores; ours takes it
    as api_key). Installed by `make benchmarks/.npm-libretranslate/.installed`, not in CI."""
    if shutil.which("node") is None or not NPM_CLIENT.exists():
        pytest.skip("no node, or no npm client: make benchmarks/.npm-libretranslate/.installed")
    url, model, test = numbers
    (tmp_path / "keys").write_text("sesame\n")

    def translated(server_url: str) -> str:
        args = ["node", "-e", NPM_TRANSLATE, str(NPM_CLIENT), test[0], server_url.rstrip("/")]
        done = subprocess.run(args, capture_output=True, text=True, timeout=HANG)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    assert translated(url) == reference(model, [test[0]])[0]
    with running(model, api_keys=str(tmp_path / "keys")) as server:  # its key counts
        assert translated(server.url) == reference(model, [test[0]])[0]


@pytest.mark.same_outputs
def test_frontend_settings_answers_libretranslate_19s_fields_with_ours(numbers):
    """The fields of LibreTranslate 1.9's GET /frontend/settings (libretranslate/app.py), which
    its page reads at start-up: the limit of a text, suggestions off, the pair it starts on."""
    url = numbers[0]
    status, settings, _ = call(url, "GET", "/frontend/settings")
    assert status == 200
    assert set(settings) == {
        "charLimit", "frontendTimeout", "apiKeys", "keyRequired", "suggestions",
        "filesTranslation", "supportedFilesFormat", "language",
    }  # fmt: skip
    assert settings["charLimit"] == LIMITS["max_chars"]
    assert settings["apiKeys"] is settings["keyRequired"] is settings["suggestions"] is False
    english, digits = {"code": "en", "name": "English"}, {"code": "digits", "name": "Digits"}
    assert settings["language"] == {"source": english, "target": digits}


def test_each_request_is_answered_in_its_own_shape(numbers):
    url, model, test = numbers
    request = {"q": test[:3], "source": "auto", "target": "digits", "alternatives": 2}
    status, answer, _ = call(url, "POST", "/translate", request)
    decoding = dataclasses.replace(model.config.decode, beam_size=3)
    nbest = model.translate_nbest(test[:3], decoding).outputs
    assert status == 200 and answer == {
        "translatedText": [best[0][1] for best in nbest],
        "alternatives": [[text for _, text in best[1:]] for best in nbest],
        "detectedLanguage": [{"confidence": 100.0, "language": "en"}] * 3,
    }
    ours = call(url, "POST", "/translate", {"text": test[:3]})[1]
    assert ours == {"translations": reference(model, test[:3]), "warnings": []}
    one = {"q": test[0], "source": "en", "target": "digits", "alternatives": "1"}
    status, answer, _ = call(url, "POST", "/translate", urlencode(one).encode(), FORM)
    decoding = dataclasses.replace(model.config.decode, beam_size=2)  # the best, 1 alternative
    ((best, alternative),) = model.translate_nbest(test[:1], decoding).outputs
    assert status == 200 and answer == {"translatedText": best[1], "alternatives": [alternative[1]]}


@pytest.mark.same_outputs
def test_html_translates_text_nodes_only_and_keeps_the_markup_as_it_was(numbers):
    """Cases that a split on "<...>" once broke: a ">" in an attribute value, a comment,
    <script> and <style>, an entity in a blank node."""
    url, model, _ = numbers
    cases = {
        '<a title="x>seven is seven">nine is nine</a>': '<a title="x>seven is seven">NINE</a>',
        "<!-- seven > is --> nine is nine": "<!-- seven > is --> NINE",
        "<b>&nbsp;</b><script>seven()</script><style>p {}</style>nine is nine":
            "<b>&nbsp;</b><script>seven()</script><style>p {}</style>NINE",
    }  # fmt: skip
    request = {"q": list(cases), "source": "en", "target": "digits", "format": "html"}
    status, answer, _ = call(url, "POST", "/translate", request)
    (nine,) = reference(model, ["nine is nine"])
    expected = [out.replace("NINE", nine) for out in cases.values()]
    assert (status, answer["translatedText"]) == (200, expected)


class Markup(HTMLParser):
    """Everything of a fragment but its text: tags and their attributes, comments, ..."""

    def __init__(self, fragment: str):
        super().__init__(convert_charrefs=True)
        self.events: list = []
        self.handle_starttag = lambda *event: self.events.append(("start", *event))
        self.handle_endtag = lambda *event: self.events.append(("end", *event))
        self.handle_startendtag = lambda *event: self.events.append(("startend", *event))
        self.handle_comment = lambda *event: self.events.append(("comment", *event))
        self.feed(fragment)
        self.close()


def test_html_of_random_markup_keeps_every_tag_attribute_and_comment():
    rng = random.Random(0)
    pieces = [
        "seven is seven", "one", " ", "\n", "&amp;", "&nbsp;", "&#32;", "a < b", "<b>", "</b>",
        "<br/>", '<a href="x?a=1&amp;b=2" title=\'1 > 0\'>', "</a>", "<!-- one > two -->",
        "<script>if (a < b) one()</script>", "<style>p > b {}</style>", "<p class=x>", "</p>",
    ]  # fmt: skip
    for _ in range(500):
        fragment = "".join(rng.choices(pieces, k=rng.randint(0, 12)))  # "" too
        texts = markup.texts(fragment)
        translated = markup.put_back(fragment, iter(f"<{t.upper()}>" for t in texts))
        assert Markup(translated).events == Markup(fragment).events, fragment
        assert markup.texts(translated) == [f"<{t.upper()}>" for t in texts], fragment


@pytest.mark.same_outputs
def test_html_keeps_its_tags_and_translates_the_text_between(numbers):
    url, model, test = numbers
    first, second = reference(model, test[:2])
    q = f"<p class='x'>{test[0]} <b>{test[1].replace(' ', ' &#32;', 1)}</b></p>\n<br>"
    request = {"q": [q, "<i></i>"], "source": "en", "target": "digits", "format": "html"}
    status, answer, _ = call(url, "POST", "/translate", request)
    assert status == 200
    assert answer["translatedText"] == [
        f"<p class='x'>{first} <b>{second}</b></p>\n<br>",
        "<i></i>",
    ]


T, D = "/translate", "/detect"
PAIR = {"source": "en", "target": "digits"}
MISTAKES = [
    (T, {**PAIR, "q": ""}, 400, r"^Invalid request: missing q parameter$"),
    (T, {**PAIR, "q": []}, 400, r"missing q parameter"),
    (T, {"q": "one", "target": "digits"}, 400, r"missing source parameter"),
    (T, {"q": "one", "source": "en"}, 400, r"missing target parameter"),
    (T, {**PAIR, "q": ["one", 2]}, 400, r"'q' must be a string or a list of strings"),
    (T, {**PAIR, "q": "one", "target": "fr"}, 400, r"en to fr is not available: .* en "
     r"\(English\) to digits \(Digits\)"),
    (T, {**PAIR, "q": "one", "source": "de"}, 400, r"de to digits is not available"),
    (T, {**PAIR, "q": "one", "format": "pdf"}, 400, r'"pdf" format is not supported: text or html'),
    (T, {**PAIR, "q": "one", "alternatives": 4}, 400, r"'alternatives' must be an integer from "
     r"0 to 3 \(serve.max_beam_size - 1\), got 4"),
    (T, {**PAIR, "q": "one", "alternatives": "two"}, 400, r"'alternatives' must be an integer"),
    (T, {**PAIR, "q": "one", "beam_size": 2}, 400, r"unknown field 'beam_size'; the fields: q,"),
    (T, {**PAIR, "q": "one", "api_key": 1}, 400, r"'api_key' must be a string"),
    (T, {**PAIR, "q": "x" * 401}, 400, r"'q' has 401 characters; the limit is 400"),
    (T, {**PAIR, "q": ["one"] * 9}, 400, r"9 texts; the limit is 8 sentences"),
    (T, {**PAIR, "q": "<b>a</b>" * 9, "format": "html"}, 400, r"9 texts between tags"),
    (D, {"q": ""}, 400, r"missing q parameter"),
    (D, {"q": ["one"]}, 400, r"missing q parameter \(a string\)"),
    (D, {"qq": "one"}, 400, r"unknown field 'qq' \(did you mean 'q'\?\); the fields: q, api_key"),
    (D, [1], 400, r"the body must be a JSON object"),
]  # fmt: skip


@pytest.mark.parametrize("path, body, status, error", MISTAKES)
def test_every_mistake_gets_libretranslates_error(numbers, path, body, status, error):
    got, answer, _ = call(numbers[0], "POST", path, body)
    assert got == status and re.search(error, answer["error"]), answer


def test_forms_where_libretranslate_takes_them_and_json_elsewhere(numbers):
    url, model, test = numbers
    expected = {"translatedText": reference(model, test[:1])[0]}
    form = urlencode({"q": test[0], **PAIR}).encode()
    assert call(url, "POST", T, form, FORM)[1] == expected
    assert call(url, "POST", T, form, JSON)[0] == 400
    status, answer, _ = call(url, "POST", T, b"text=one", FORM)
    assert status == 400 and "unknown field 'text'" in answer["error"]
    status, answer, _ = call(url, "POST", "/attention", b"text=one", FORM)
    assert status == 415 and "JSON" in answer["error"]
    status, answer, _ = call(url, "POST", D, b"q=one&q=two", FORM)
    assert status == 400 and answer["error"] == "malformed form: a field is given twice"
    status, answer, _ = call(url, "POST", D, b"q=%ff", FORM)
    assert status == 400 and "malformed form" in answer["error"]
    status, answer, _ = call(url, "POST", D, b"one", {"Content-Type": "text/plain"})
    assert status == 415 and answer["error"].startswith("send the body as JSON or as a form")


def test_a_failure_is_libretranslates_500(numbers, monkeypatch):
    url, model, test = numbers

    def broken(sentences, decoding):
        raise RuntimeError("out of luck")

    monkeypatch.setattr(model, "translate", broken)
    status, answer, _ = call(url, "POST", T, {"q": test[0], **PAIR})
    assert status == 500 and answer == {"error": "RuntimeError: out of luck"}


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


def test_the_frontend_settings_say_the_languages_and_wait_the_operator_chose(
    trained_numbers_checkpoint,
):
    """LibreTranslate's --frontend-language-source, -target and --frontend-timeout."""
    model = TorchEngine(trained_numbers_checkpoint[0])
    chosen = {"frontend_source": "digits", "frontend_target": "en", "frontend_timeout_ms": 900}
    with running(model, **chosen) as server:
        settings = call(server.url, "GET", "/frontend/settings")[1]
    assert settings["frontendTimeout"] == 900
    assert settings["language"] == {
        "source": {"code": "digits", "name": "Digits"}, "target": {"code": "en", "name": "English"}
    }  # fmt: skip
    refused = pytest.raises(UserError, match="serve.frontend_target: 'auto' is not a language")
    with refused, running(model, frontend_target="auto"):
        pass


def test_a_key_in_the_query_string_or_a_multipart_form_as_libretranslate_takes_it(
    trained_numbers_checkpoint, tmp_path
):
    model = TorchEngine(trained_numbers_checkpoint[0])
    (tmp_path / "keys").write_text("the-key\n")
    fields = {"q": "three is three", **PAIR}
    with running(model, api_keys=str(tmp_path / "keys")) as server:
        form = urlencode(fields).encode()
        assert call(server.url, "POST", T + "?api_key=the-key", form, FORM)[:2] == (
            200, {"translatedText": "3 la 3"}
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


def test_the_languages_come_from_the_config(trained_numbers_checkpoint):
    model = TorchEngine(trained_numbers_checkpoint[0])
    french = {"source_language": Language("fr", "French")}
    with running(model, **french) as server:
        assert LibreTranslateAPI(server.url).languages()[0] == {
            "code": "fr", "name": "French", "targets": ["digits", "fr"]
        }  # fmt: skip
    same = ServeConfig(source_language=Language("digits", "Digits"))
    with pytest.raises(UserError, match="are both 'digits': they must differ"):
        translation_pair(model.config, same)


@pytest.mark.slow
def test_the_command_serves_libretranslate_clients(seed_run):
    """python -m seq2seq.serve: its errors are JSON too (the routes' HTTPError is
    seq2seq/serving/api.py's, which the app's handlers answer, serve.py running as __main__)."""
    process = start_server("--checkpoint", str(seed_run / "best.pt"))
    try:
        client = LibreTranslateAPI(read_address(process))
        assert client.translate("three is three", "en", "digits") == "3 la 3"
        status, answer = failure(client.translate, "three is three", "en", "fr")
        assert status == 400 and "this service translates en (English)" in answer["error"]
    finally:
        stop_server(process)


def test_a_language_code_must_be_one():
    raw = {"serve": {"target_language": {"code": "auto", "name": "Detected"}}}
    with pytest.raises(ConfigError, match=r"'serve.target_language.code' must be a language code"):
        config_from_dict(raw)
    with pytest.raises(ConfigError, match=r"'serve.source_language.' needs the keys \['name'\]"):
        config_from_dict({"serve": {"source_language": {"code": "fr"}}})


@pytest.mark.parametrize(
    "source, translation, expected",
    [
        ("Ein Hund.", "a dog", "A dog."),  # the source's final mark, its first letter's case
        ("Ein Hund", "A dog.", "A dog"),  # no mark: none
        ("Wer?", "Who.", "Who?"),  # another mark: the source's
        ("ein hund", "A Dog", "a dog"),  # all lower
        ("EIN HUND", "a dog", "A DOG"),  # all upper
        ("Hund", "dog dog dog dog", "Dog"),  # one word many times, from one word: that word
        ("3 Hunde", "3 dogs", "3 dogs"),  # a first character without case: as it is
        ("Hallo", "", "Hallo"),  # no translation: the source
        ("  ", "x", ""),
    ],
)
def test_text_translations_are_formatted_as_libretranslate_formats_them(
    source, translation, expected
):
    assert formatted(source, translation) == expected


class WeblateMasks:
    """A minimal re-implementation of Weblate's masking for machine translation, written from
    its documented behaviour (weblate/machinery/base.py, BatchMachineTranslation: cleanup_text
    replaces each placeable it highlights with format_replacement's "[X<start>X]", <start>
    being the placeable's character offset, and the results are unmasked by replacing each
    mask with its placeable again). Not Weblate's code (GPL): its rule, for this test. The
    placeables it highlights here: printf forms and braces (a c-format / python-brace-format
    string's)."""

    PLACEABLE = re.compile(r"%(?:\d+\$)?[sd]|\{\w*\}")

    def __init__(self, text: str):
        self.replacements = {f"[X{m.start()}X]": m.group() for m in self.PLACEABLE.finditer(text)}
        self.masked = self.PLACEABLE.sub(lambda m: f"[X{m.start()}X]", text)

    def unmask(self, translation: str) -> str:
        for mask, placeable in self.replacements.items():
            translation = translation.replace(mask, placeable)
        return translation


@pytest.mark.same_outputs
def test_weblate_masks_come_back_intact_once_each_and_in_order(numbers):
    """Weblate's LibreTranslate machinery masks the placeables, asks the service, unmasks:
    with protection (the default) every mask comes back once, in order, around the words'
    translation."""
    url, model, _ = numbers
    strings = {  # a Weblate string -> the words the model translates
        "%s three is three {0}": "three is three",
        "{count} twenty one is five %1$s": "twenty one is five",
        "four hundred six is nine %d": "four hundred six is nine",
        "%s %d nine is nine": "nine is nine",
    }
    masks = [WeblateMasks(text) for text in strings]
    assert masks[0].masked == "[X0X] three is three [X18X]"
    request = {"q": [m.masked for m in masks], "source": "en", "target": "digits"}
    status, answer, _ = call(url, "POST", "/translate", request)
    words = reference(model, list(strings.values()))
    for mask, text, translation, output in zip(
        masks, strings, words, answer["translatedText"], strict=True
    ):
        found = re.findall(r"\[X\d+X\]", output)
        assert found == list(mask.replacements), output  # each once, in the source's order
        restored = mask.unmask(output)
        assert [p.group() for p in WeblateMasks.PLACEABLE.finditer(restored)] == [
            p.group() for p in WeblateMasks.PLACEABLE.finditer(text)
        ]
        assert translation in output
    off = {**request, "placeholders": "off"}
    assert call(url, "POST", "/translate", off)[0] == 200
    status, answer, _ = call(url, "POST", "/translate", {**request, "placeholders": "no"})
    assert status == 400 and answer == {
        "error": '\'placeholders\' must be "protect" or "off", got "no"'
    }
