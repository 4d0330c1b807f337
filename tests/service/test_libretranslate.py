"""LibreTranslate's API on the service's port, driven by a real client (libretranslatepy) and by
hand; API keys (seq2seq/serving/keystore.py, checks.py) and the rate limit (access.py)."""

import dataclasses
import json
import random
import re
import shutil
import subprocess
from html.parser import HTMLParser
from urllib.parse import urlencode

import pytest
from libretranslatepy import LibreTranslateAPI

from benchmarks.service.process import stop_server
from seq2seq.config import ConfigError, Language, ServeConfig, config_from_dict, translation_pair
from seq2seq.decoding.batches import translate_sentences
from seq2seq.decoding.engines import TorchEngine
from seq2seq.documents import markup
from seq2seq.service.libretranslate import formatted
from seq2seq.support.errors import UserError

from helpers import FORM, HANG, JSON, ROOT, call, failure, read_address, running, start_server
from pairs import PAIR

LIMITS = {"max_sentences": 8, "max_chars": 400, "max_beam_size": 4}


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


NPM_CLIENT = ROOT / "tests/service/node/node_modules/libretranslate/dist/translate.js"
NPM_TRANSLATE = """require(process.argv[1]).translate({query: process.argv[2], source: "en",
  target: "digits", apiurl: process.argv[3], apiKey: "sesame"})
  .then(t => console.log(JSON.stringify(t)))"""


def test_the_npm_client_translates_and_its_key_counts(numbers, tmp_path):
    """LibreTranslate's npm client (libretranslate 1.0.1, pinned in
    tests/service/node/package-lock.json: `make test` installs it where npm is on PATH), run
    by node, as it is: it reads /languages, then posts its key as `apiKey` (which
    LibreTranslate ignores; ours takes it as api_key), and reads translatedText alone (ours
    adds confidence)."""
    if shutil.which("node") is None or not NPM_CLIENT.exists():
        pytest.skip("no node, or no npm client: npm ci --prefix tests/service/node")
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
        "confidence": [None] * 3,  # ours: the model has no calibration
    }
    ours = call(url, "POST", "/translate", {"text": test[:3]})[1]
    expected = {
        "translations": reference(model, test[:3]),
        "warnings": [],
        "confidence": [None] * 3,
    }
    assert ours == expected
    one = {"q": test[0], "source": "en", "target": "digits", "alternatives": "1"}
    status, answer, _ = call(url, "POST", "/translate", urlencode(one).encode(), FORM)
    decoding = dataclasses.replace(model.config.decode, beam_size=2)  # the best, 1 alternative
    ((best, alternative),) = model.translate_nbest(test[:1], decoding).outputs
    assert status == 200 and answer == {
        "translatedText": best[1], "alternatives": [alternative[1]], "confidence": None
    }  # fmt: skip


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


def test_html_keeps_what_is_marked_not_to_translate_and_the_ignored_tags():
    """HTML's translate="no" (nested elements of its name too), and DeepL's ignore_tags."""
    fragment = ('<p>one</p><p translate="no">two <p>three</p> four</p><raw>five</raw>'
                '<x id="0"></x>six')  # fmt: skip
    assert markup.texts(fragment) == ["one", "five", "six"]
    assert markup.texts(fragment, ("raw", "x")) == ["one", "six"]
    kept = markup.put_back(fragment, iter(["1", "6"]), ("raw",))
    assert kept == fragment.replace("one", "1").replace("six", "6")


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
    expected = {"translatedText": reference(model, test[:1])[0], "confidence": None}
    form = urlencode({"q": test[0], **PAIR}).encode()
    assert call(url, "POST", T, form, FORM)[1] == expected
    assert call(url, "POST", T, form, JSON)[0] == 400
    status, answer, _ = call(url, "POST", T, b"text=one", FORM)
    assert status == 400 and "unknown field 'text'" in answer["error"]
    status, answer, _ = call(url, "POST", "/attention", b"text=one", FORM)
    assert status == 415 and "JSON" in answer["error"]
    status, answer, _ = call(url, "POST", D, b"q=one&q=two", FORM)
    assert status == 400 and answer["error"] == "malformed form: the field 'q' is given twice"
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
