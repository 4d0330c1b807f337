"""Each translation's confidence in the service's answers (serving/confidences.py): ours
(each text's, each sentence's where asked), LibreTranslate's added field, a pivot's hops
multiplied, a model without a calibration's null; no translation rather than a bad one
(serve.min_confidence, a request's min_confidence and withheld_as); /metrics' histogram; a
document's report of its least sure segments; the page's marks.

The model is a stand-in (Judging) whose calibration and signals are set: a sentence that
holds "maybe" has the signal UNSURE_SIGNAL, any other 0, so that every confidence is one of
two numbers far from each other and from the bounds the tests ask for (no tie to break)."""

import math
from urllib.parse import urlencode

import httpx
import pytest
from libretranslatepy import LibreTranslateAPI
from prometheus_client.parser import text_string_to_metric_families

from seq2seq.config import Language, config_from_dict
from seq2seq.decoding.confidence import Calibration
from seq2seq.decoding.engines import Translations
from seq2seq.serving.loaders import Loader

from helpers import FORM, HANG, call, running

EN, DE, FR = Language("en", "English"), Language("de", "German"), Language("fr", "French")
CALIBRATION = Calibration(slope=1.0, intercept=3.0)
UNSURE_SIGNAL = -5.0
SURE_P = 1 / (1 + math.exp(-3.0))  # about 0.95
UNSURE_P = 1 / (1 + math.exp(2.0))  # about 0.12


def weighted(*parts: tuple[float, str]) -> float:
    """A text's confidence from its sentences' (confidence, sentence): weighted by length."""
    return sum(p * len(s) for p, s in parts) / sum(len(s) for _, s in parts)


class Vocabulary(list):
    """/info's vocabularies: empty."""

    def all_pieces(self) -> list[str]:
        return []


class Judging:
    """A stand-in engine: a sentence translates as its upper case (n best: numbered); its
    signal: UNSURE_SIGNAL if it holds "maybe", else 0; its calibration, `calibration`."""

    config = config_from_dict({})
    shows_attention = False
    src_vocab = tgt_vocab = Vocabulary()
    replicas = 1  # a batch at a time

    def __init__(self, calibration: Calibration | None = CALIBRATION):
        self.calibration = calibration

    def facts(self) -> dict:
        return {"engine": "judging", "checkpoint": {}, "config": {}, "device": "cpu"}

    @staticmethod
    def signals(sentences: list[str]) -> list[float]:
        return [UNSURE_SIGNAL if "maybe" in s.lower() else 0.0 for s in sentences]

    def translate(self, sentences: list[str], decoding) -> Translations:
        upper = [sentence.upper() for sentence in sentences]
        return Translations(upper, [[] for _ in sentences], self.signals(sentences))

    def translate_nbest(self, sentences: list[str], decoding) -> Translations:
        ranked = [
            [(-0.5 * n, f"{sentence.upper()} #{n}") for n in range(decoding.beam_size)]
            for sentence in sentences
        ]
        return Translations(ranked, [[] for _ in sentences], self.signals(sentences))


def loader(source: Language, target: Language, engine: Judging) -> Loader:
    name = f"{source.code}-{target.code}"
    return Loader(name, "", lambda _: (source, target), 0, 4, lambda: engine)


def models(calibration: Calibration | None = CALIBRATION) -> list[Loader]:
    """en -> de and de -> fr: en -> fr goes through de."""
    return [loader(EN, DE, Judging(calibration)), loader(DE, FR, Judging(calibration))]


@pytest.fixture(scope="module")
def url():
    with running(models(), max_beam_size=4) as server:
        yield server.url


def ours(url: str, texts: list[str], **fields) -> dict:
    status, answer, _ = call(url, "POST", "/translate", {"text": texts, **fields})
    assert status == 200, answer
    return answer


TEXTS = ["Sure one. Maybe two.", "All sure."]


def test_each_text_has_its_sentences_confidence_by_their_lengths_and_each_its_own(url):
    answer = ours(url, TEXTS, sentences=True)
    assert answer["translations"] == ["SURE ONE. MAYBE TWO.", "ALL SURE."]
    first = weighted((SURE_P, "Sure one."), (UNSURE_P, "Maybe two."))
    assert answer["confidence"] == pytest.approx([first, SURE_P], abs=1e-4)
    assert answer["sentences"] == [
        [
            {"source": "Sure one.", "translation": "SURE ONE.", "confidence": round(SURE_P, 4)},
            {"source": "Maybe two.", "translation": "MAYBE TWO.", "confidence": round(UNSURE_P, 4)},
        ],
        [{"source": "All sure.", "translation": "ALL SURE.", "confidence": round(SURE_P, 4)}],
    ]
    assert "withheld" not in answer  # no bound in force
    assert "sentences" not in ours(url, TEXTS)  # not asked
    best = ours(url, TEXTS, nbest=2)  # the best's confidence
    assert best["confidence"] == answer["confidence"]


def test_a_pivots_confidence_is_the_product_of_its_hops(url):
    answer = ours(url, TEXTS, target="fr", sentences=True)
    assert answer["translations"] == ["SURE ONE. MAYBE TWO.", "ALL SURE."]
    first = weighted((SURE_P**2, "Sure one."), (UNSURE_P**2, "Maybe two."))
    assert answer["confidence"] == pytest.approx([first, SURE_P**2], abs=1e-4)
    assert [s["confidence"] for s in answer["sentences"][0]] == pytest.approx(
        [SURE_P**2, UNSURE_P**2], abs=1e-4
    )


def test_a_sentence_below_min_confidence_is_given_back_untranslated_or_empty(url):
    withheld = ours(url, TEXTS, min_confidence=0.5, sentences=True)
    assert withheld["translations"] == ["SURE ONE. Maybe two.", "ALL SURE."]
    assert withheld["withheld"] == [[1], []]
    assert withheld["sentences"][0][1]["translation"] == "Maybe two."  # as given
    assert withheld["confidence"] == ours(url, TEXTS)["confidence"]  # the model's, still
    empty = ours(url, TEXTS, min_confidence=0.5, withheld_as="empty")
    assert empty["translations"] == ["SURE ONE. ", "ALL SURE."]
    every = ours(url, TEXTS, min_confidence=0.99)
    assert every["translations"] == TEXTS and every["withheld"] == [[0, 1], [0]]
    ranked = ours(url, TEXTS, min_confidence=0.5, nbest=2)  # a text withheld: no others
    assert ranked["translations"][0] == [{"translation": "SURE ONE. #0 Maybe two.", "score": 0.0}]
    assert len(ranked["translations"][1]) == 2


def test_serve_min_confidence_is_the_bound_a_request_does_not_name():
    with running(models(), min_confidence=0.5) as server:
        default = ours(server.url, TEXTS)
        off = ours(server.url, TEXTS, min_confidence=0)
    assert default["translations"][0] == "SURE ONE. Maybe two." and default["withheld"] == [[1], []]
    assert off["translations"][0] == "SURE ONE. MAYBE TWO." and "withheld" not in off


def test_the_cache_keeps_each_sentences_confidence_and_answers_as_decoding_does():
    """serve.translation_cache: a text asked again (its sentences, confidences and what a
    bound withholds) answered as without the cache, through a pivot and with nbest too."""
    asked = [{"sentences": True}, {"min_confidence": 0.5, "sentences": True},
             {"target": "fr", "min_confidence": 0.5, "sentences": True}, {"nbest": 2}]  # fmt: skip
    with running(models(), translation_cache=100) as on, running(models()) as off:
        for fields in asked * 2:  # the second time, from the cache
            assert ours(on.url, TEXTS, **fields) == ours(off.url, TEXTS, **fields), fields
        # found: the first two asks share their entries, and the second round is all found
        assert call(on.url, "GET", "/health")[1]["cache"]["hits"] == len(TEXTS) * (1 + 4)


def test_a_model_without_calibration_has_no_confidence_and_nothing_withheld():
    with running(models(None), min_confidence=0.5) as server:
        answer = ours(server.url, TEXTS, sentences=True)
    assert answer["confidence"] == [None, None]
    assert answer["translations"] == ["SURE ONE. MAYBE TWO.", "ALL SURE."]
    assert answer["withheld"] == [[], []]
    assert answer["sentences"][0][0]["confidence"] is None


@pytest.mark.parametrize(
    "fields, error",
    [
        ({"min_confidence": 2}, "'min_confidence' must be a number from 0 to 1, got 2"),
        ({"min_confidence": "nan"}, "'min_confidence' must be a number from 0 to 1, got \"nan\""),
        ({"min_confidence": True}, "'min_confidence' must be a number from 0 to 1, got true"),
        ({"withheld_as": "blank"}, '\'withheld_as\' must be "source" or "empty", got "blank"'),
        ({"sentences": 1}, "'sentences' must be true or false, got 1"),
    ],
)  # fmt: skip
def test_a_bad_confidence_field_is_a_400_naming_it(url, fields, error):
    status, answer, _ = call(url, "POST", "/translate", {"text": ["one"], **fields})
    assert (status, answer) == (400, {"error": error})


def test_libretranslates_answer_adds_confidence_and_withheld_which_its_client_ignores(url):
    """libretranslatepy reads translatedText alone; a form's min_confidence is text."""
    pair = {"source": "en", "target": "de"}
    one = call(url, "POST", "/translate", {"q": "Maybe so.", **pair})[1]
    assert one == {"translatedText": "MAYBE SO.", "confidence": round(UNSURE_P, 4)}
    many = call(url, "POST", "/translate", {"q": TEXTS, **pair, "min_confidence": 0.5})[1]
    first = weighted((SURE_P, "Sure one."), (UNSURE_P, "Maybe two."))  # before withholding
    assert many == {
        "translatedText": ["SURE ONE. Maybe two.", "ALL SURE."],
        "confidence": pytest.approx([first, SURE_P], abs=1e-4),
        "withheld": [True, False],
    }
    form = b"q=Maybe+so.&source=en&target=de&min_confidence=0.5&withheld_as=empty"
    assert call(url, "POST", "/translate", form, FORM)[1] == {
        "translatedText": "", "confidence": round(UNSURE_P, 4), "withheld": True
    }  # fmt: skip
    html = {"q": "<p>Sure.</p><p>Maybe.</p>", **pair, "format": "html"}
    nodes = weighted((SURE_P, "Sure."), (UNSURE_P, "Maybe."))  # the text nodes'
    assert call(url, "POST", "/translate", html)[1]["confidence"] == pytest.approx(nodes, abs=1e-4)
    bad = urlencode({"q": "one", **pair, "min_confidence": "most"}).encode()
    assert call(url, "POST", "/translate", bad, FORM)[:2] == (
        400, {"error": "'min_confidence' must be a number from 0 to 1, got \"most\""}
    )  # fmt: skip
    assert LibreTranslateAPI(url).translate("Maybe so.", "en", "de") == "MAYBE SO."


def test_metrics_count_each_translated_sentences_confidence_by_pair():
    with running(models(), metrics=True) as server:
        ours(server.url, TEXTS)  # en-de: 2 sure, 1 unsure
        ours(server.url, ["Maybe."], target="fr")  # en-fr: 1, below 0.2
        figures = httpx.get(f"{server.url.rstrip('/')}/metrics").text

    buckets = {
        (sample.labels["pair"], sample.labels["le"]): sample.value
        for family in text_string_to_metric_families(figures)
        for sample in family.samples
        if sample.name == "seq2seq_sentence_confidence_bucket"
    }

    def bucket(pair: str, le: str) -> float:
        return buckets[pair, le]

    assert (bucket("en-de", "0.2"), bucket("en-de", "0.9"), bucket("en-de", "1.0")) == (1, 1, 3)
    assert (bucket("en-fr", "0.2"), bucket("en-fr", "+Inf")) == (1, 1)


def test_a_documents_report_lists_its_segments_below_the_bound_least_sure_first(tmp_path):
    document = b"Sure one.\nMaybe two.\nSure. Maybe four, five or six.\nMaybe five here.\n"
    with running(models(), files_dir=str(tmp_path)) as server:
        path = f"{server.url.rstrip('/')}/translate_file"
        form = {"source": "en", "target": "de"}
        sent = httpx.post(path, data=form, files={"file": ("a.txt", document)}, timeout=60)
        withheld = httpx.post(
            path, data={**form, "min_confidence": "0.5"}, files={"file": ("a.txt", document)},
            timeout=60,
        )  # fmt: skip
        kept = httpx.get(withheld.json()["translatedFileUrl"]).text
    assert sent.status_code == 200, sent.text
    mixed = weighted((SURE_P, "Sure."), (UNSURE_P, "Maybe four, five or six."))  # 0.26
    segments = [
        {"segment": n, "confidence": pytest.approx(p, abs=1e-4), "text": text}
        for n, p, text in (
            (2, UNSURE_P, "Maybe two."), (4, UNSURE_P, "Maybe five here."),
            (3, mixed, "Sure. Maybe four, five or six."),
        )
    ]  # fmt: skip
    assert sent.json()["confidence"] == {"min_confidence": 0.5, "below": 3, "least_sure": segments}
    assert kept == "SURE ONE.\nMaybe two.\nSURE. Maybe four, five or six.\nMaybe five here.\n"


def test_the_page_marks_each_sentence_less_sure_than_even_chances(browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import WebDriverWait

    with running(models()) as server:
        browser.get(server.url)
        browser.find_element(By.ID, "sentence").send_keys("Sure one. Maybe two.")
        shown = (By.ID, "translation")
        WebDriverWait(browser, HANG).until(
            seen.text_to_be_present_in_element(shown, "SURE ONE. MAYBE TWO.")
        )
        spans = browser.find_elements(By.CSS_SELECTOR, "#translation span")
        marks = [(s.text, s.get_attribute("class"), s.get_attribute("title")) for s in spans]
    assert marks == [
        ("SURE ONE.", "", f"confidence {SURE_P:.2f}"),
        ("MAYBE TWO.", "unsure", f"confidence {UNSURE_P:.2f}"),
    ]
