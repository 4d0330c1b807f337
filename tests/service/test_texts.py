"""Texts of several sentences through both APIs: each text split into its sentences
(seq2seq/text/sentences.py), all of a request's translated in one batch, each text's joined
in its own spacing; a text of one sentence as it was; serve.split_sentences=false keeps
texts whole; the sentences in all count against serve.max_sentences."""

from urllib.parse import urlencode

import pytest

from seq2seq.decoding.engines import TorchEngine
from seq2seq.service.libretranslate import formatted

from helpers import call, running

LIMITS = {"max_sentences": 8, "max_chars": 400, "max_beam_size": 4}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}

# A text of three sentences in odd spacing, and its sentences alone. The word vocabulary does
# not know "three." and its kind: each is translated as its unknown piece, with a warning.
TEXT = "three is three.   twenty one is five!\tfour hundred six is nine?"
SENTENCES = ["three is three.", "twenty one is five!", "four hundred six is nine?"]


def joined(a: str, b: str, c: str) -> str:
    """Three translations in TEXT's spacing."""
    return f"{a}   {b}\t{c}"


@pytest.fixture(scope="module")
def numbers(trained_numbers_checkpoint):
    with running(TorchEngine(trained_numbers_checkpoint[0]), **LIMITS) as server:
        yield server.url


def translate(url: str, request: dict) -> dict:
    status, answer, _ = call(url, "POST", "/translate", request)
    assert status == 200, answer
    return answer


@pytest.mark.same_outputs
def test_our_api_translates_each_sentence_and_joins_them_in_the_texts_spacing(numbers):
    texts = [TEXT, "one is one\n\ntwo is two", "", "one is one"]
    alone = translate(numbers, {"text": [*SENTENCES, "one is one", "two is two", "", "one is one"]})
    a, b, c, one, two, empty, _ = alone["translations"]
    assert len({a, b, c}) == 3 and empty == ""
    answer = translate(numbers, {"text": texts})  # the same sentences, in one batch
    assert answer["translations"] == [joined(a, b, c), f"{one}\n\n{two}", "", one]
    messages = [warning.partition(": ")[2] for warning in alone["warnings"]]
    assert answer["warnings"] == [f"line 1: {message}" for message in messages]
    assert len(messages) == 3  # one for each sentence's unknown word, all of text 1


@pytest.mark.same_outputs
def test_our_api_gives_a_texts_nbest_as_its_sentences_nth_joined(numbers):
    alone = translate(numbers, {"text": SENTENCES, "nbest": 2})["translations"]
    [best] = translate(numbers, {"text": [TEXT], "nbest": 2})["translations"]
    assert [h["translation"] for h in best] == [
        joined(*(sentence[n]["translation"] for sentence in alone)) for n in range(2)
    ]
    assert [h["score"] for h in best] == pytest.approx(
        [sum(sentence[n]["score"] for sentence in alone) for n in range(2)]
    )
    request = {"q": TEXT, "source": "en", "target": "digits", "alternatives": 1}
    assert translate(numbers, request) == {  # formatted as LibreTranslate formats them
        "translatedText": formatted(TEXT, best[0]["translation"]),
        "alternatives": [formatted(TEXT, best[1]["translation"])],
        "confidence": None,  # the model has no calibration
    }


@pytest.mark.same_outputs
def test_libretranslates_api_splits_q_as_a_string_a_list_or_html(numbers):
    a, b, c = translate(numbers, {"text": SENTENCES})["translations"]
    request = {"q": TEXT, "source": "en", "target": "digits"}
    text = formatted(TEXT, joined(a, b, c))  # as LibreTranslate formats it: html is not
    unknown = {"confidence": None}  # the model has no calibration
    assert translate(numbers, request) == {"translatedText": text, **unknown}
    form = urlencode(request).encode()
    status, answer, _ = call(numbers, "POST", "/translate", form, FORM)
    assert (status, answer) == (200, {"translatedText": text, **unknown})
    request |= {"q": f"<p>{TEXT}</p><br>", "format": "html"}
    html = {"translatedText": f"<p>{joined(a, b, c)}</p><br>", **unknown}
    assert translate(numbers, request) == html

    a, b, c, d, e = translate(numbers, {"text": [*SENTENCES, "one is one.", "two is two."]})[
        "translations"
    ]
    request = {"q": [TEXT, "one is one.\ntwo is two."], "source": "en", "target": "digits"}
    texts = [joined(a, b, c), f"{d}\n{e}"]
    texts = [formatted(q, text) for q, text in zip(request["q"], texts, strict=True)]
    assert translate(numbers, request) == {"translatedText": texts, "confidence": [None, None]}


def test_the_sentences_of_a_request_count_against_max_sentences(numbers):
    nine = "one is one. " * 9
    status, answer, _ = call(numbers, "POST", "/translate", {"text": [nine]})
    error = "the request holds 9 sentences; the limit is 8 sentences (serve.max_sentences)"
    assert (status, answer) == (413, {"error": error})
    request = {"q": nine, "source": "en", "target": "digits"}
    status, answer, _ = call(numbers, "POST", "/translate", request)
    assert (status, answer) == (400, {"error": error})


@pytest.mark.same_outputs
def test_split_sentences_false_translates_each_text_whole(trained_numbers_checkpoint):
    model = TorchEngine(trained_numbers_checkpoint[0])
    whole = model.translate([TEXT], model.config.decode).outputs
    with running(model, split_sentences=False, **LIMITS) as server:
        assert translate(server.url, {"text": [TEXT]})["translations"] == whole
        request = {"q": TEXT, "source": "en", "target": "digits"}
        assert translate(server.url, request) == {
            "translatedText": formatted(TEXT, whole[0]), "confidence": None
        }  # fmt: skip
