"""translate_texts, the one path from texts to translations (translate, evaluate and the
service's batcher call it): each text's sentences translated together, joined again in their
white space, n-best lists cut, warnings gathered text by text."""

import dataclasses

import pytest

from seq2seq.config import config_from_dict
from seq2seq.decoding.confidence import SURE_SIGNAL, UNTRANSLATED_SIGNAL, calibration_of
from seq2seq.decoding.engines import UNTRANSLATED, TorchEngine, Translations, translate_texts
from seq2seq.support.errors import UserError
from seq2seq.text.sentences import Texts


def test_each_text_is_its_sentences_translations_joined_with_their_warnings(
    trained_numbers_checkpoint,
):
    engine = TorchEngine(trained_numbers_checkpoint[0])  # its vocabulary has no "."
    decoding = engine.config.decode
    alone = engine.translate(["one is one.", "two is two.", "six is six", ""], decoding)
    texts = Texts(["one is one.  two is two.", "six is six", ""], "en")
    translated = translate_texts(engine, texts, decoding)
    first, second, third, empty = alone.outputs
    assert empty == "" and first and second
    assert translated.translations == [f"{first}  {second}", third, ""]
    unknown = "not in the vocabulary, translated as unknown: "
    assert translated.warnings == [[f"{unknown}'one.'", f"{unknown}'two.'"], [], []]


def test_nbest_gives_each_text_at_most_n_scored_translations_best_first(
    trained_numbers_checkpoint,
):
    engine = TorchEngine(trained_numbers_checkpoint[0])
    decoding = dataclasses.replace(engine.config.decode, beam_size=4)
    texts = Texts(["one is one.", "seven is seven"], "en")
    ranked = translate_texts(engine, texts, decoding, nbest=2).translations
    best = translate_texts(engine, texts, decoding).translations
    assert [len(hypotheses) for hypotheses in ranked] == [2, 2]
    assert [hypotheses[0][1] for hypotheses in ranked] == best  # the first is the best
    for hypotheses in ranked:
        assert hypotheses[0][0] >= hypotheses[1][0]


def test_placeholders_come_back_and_plain_texts_translate_as_without_protection(
    trained_numbers_checkpoint,
):
    engine = TorchEngine(trained_numbers_checkpoint[0])  # its vocabularies spell no mask
    protect = dataclasses.replace(engine.config.decode, placeholders="protect")
    off = dataclasses.replace(engine.config.decode, placeholders="off")
    plain = Texts(["one is one.  two is two.", "six is six", ""], "en")
    assert translate_texts(engine, plain, protect) == translate_texts(engine, plain, off)
    texts = Texts(["<b>seven is seven</b> %s", "%1$s nine is nine {0}"], "en")
    (seven, nine) = translate_texts(engine, Texts(["seven is seven", "nine is nine"]), off)[0]
    assert translate_texts(engine, texts, protect).translations == [
        f"<b>{seven}</b> %s",
        f"%1$s {nine} {{0}}",
    ]
    ranked = translate_texts(engine, texts, dataclasses.replace(protect, beam_size=2), nbest=2)
    assert all(text.startswith(("<b>", "%1$s ")) for best in ranked[0] for _, text in best)


def test_terms_come_back_verbatim_or_as_their_targets_and_no_glossary_changes_nothing(
    trained_numbers_checkpoint,
):
    engine = TorchEngine(trained_numbers_checkpoint[0])  # untaught: decode.terms auto, masked
    decoding = engine.config.decode
    texts = Texts(["seven is seven", "two is two", "five is five"], "en")
    plain = translate_texts(engine, texts, decoding)
    assert translate_texts(engine, texts, decoding, terms={}) == plain
    assert translate_texts(engine, texts, decoding, terms={"zebra": "Z"}) == plain
    kept = translate_texts(engine, texts, decoding, terms={"seven": "seven", "two": "ZWEI"})
    seven, two, five = kept.translations
    assert seven.split().count("seven") == 2 and "7" not in seven  # verbatim, each once
    assert two.split().count("ZWEI") == 2
    assert five == plain.translations[2]  # a sentence without terms: as it was


def test_an_annotated_translation_that_lacks_its_term_is_translated_again_masked(
    trained_numbers_checkpoint,
):
    engine = TorchEngine(trained_numbers_checkpoint[0])  # never taught: it ignores the note
    annotate = dataclasses.replace(engine.config.decode, terms="annotate")
    (out,) = translate_texts(engine, Texts(["four is four"]), annotate, terms={"four": "VIER"})[0]
    assert out.split().count("VIER") == 2


def test_the_model_translates_a_label_without_its_accelerator_which_comes_back_once(
    trained_numbers_checkpoint,
):
    engine = TorchEngine(trained_numbers_checkpoint[0])
    protect = dataclasses.replace(engine.config.decode, placeholders="protect")
    off = dataclasses.replace(engine.config.decode, placeholders="off")
    (plain,) = translate_texts(engine, Texts(["seven is seven"]), off).translations
    (marked,) = translate_texts(engine, Texts(["_seven is seven"]), protect).translations
    assert marked.replace("_", "", 1) == plain and marked.count("_") == 1


class Dotting:
    """A stand-in engine that answers every sentence with a full stop: no word."""

    config = config_from_dict({})

    def __init__(self):
        self.calls: list[list[str]] = []

    def translate(self, sentences: list[str], decoding) -> Translations:
        self.calls.append(list(sentences))
        return Translations(["."] * len(sentences), [[]] * len(sentences), [-0.5] * len(sentences))


def test_a_translation_without_a_word_is_made_again_then_given_back_untranslated():
    engine = Dotting()
    texts = Texts(["Middle English (1100-1500)", "—", "Save"])  # "—": nothing to give
    translated = translate_texts(engine, texts, engine.config.decode)
    assert translated.translations == ["Middle English (1100-1500)", ".", "Save"]  # "." kept
    assert translated.warnings == [[UNTRANSLATED], [], [UNTRANSLATED]]
    assert engine.calls[1] == ["Middle English (1100-1500)", "Save"]  # the second try
    # given back untranslated: confidence 0; answered: the engine's signal
    assert translated.signals == [[UNTRANSLATED_SIGNAL], [-0.5], [UNTRANSLATED_SIGNAL]]


def test_a_sentence_of_glossary_terms_alone_is_sure_and_the_others_are_the_models(
    trained_numbers_checkpoint,
):
    engine = TorchEngine(trained_numbers_checkpoint[0])
    texts = Texts(["seven", "seven is seven", "Seven!"])
    translated = translate_texts(engine, texts, engine.config.decode, terms={"seven": "7"})
    assert translated.translations[0] == "7"
    assert translated.signals[0] == translated.signals[2] == [SURE_SIGNAL]
    assert -10 < translated.signals[1][0] < 0
    with pytest.raises(UserError, match="no confidence calibration"):
        calibration_of(engine)  # a model trained before confidences: none to read
