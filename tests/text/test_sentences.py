"""Texts split into their sentences and their translations joined back in the same spacing
(seq2seq/text/sentences.py): a text of one sentence stays whole, line breaks end sentences,
any language code gets rules, and nothing is lost or added between the sentences."""

from hypothesis import given
from hypothesis import strategies as st

from seq2seq.text.sentences import Split, Texts, split


def test_a_text_of_three_sentences_keeps_its_odd_spacing():
    text = "One is one.   Two is two!\t\tThree is three?"
    assert split(text, "en") == Split(
        ["One is one.", "Two is two!", "Three is three?"], ["   ", "\t\t"]
    )
    texts = Texts([text], "en")
    assert texts.joined(["1 la 1.", "2 la 2!", "3 la 3?"]) == ["1 la 1.   2 la 2!\t\t3 la 3?"]


def test_a_text_of_one_sentence_is_that_sentence_whole():
    for text in ["three is three", "  twenty-one is five  ", "Dr. Smith came at 3.5 p.m.", ""]:
        assert split(text, "en") == Split([text], [])
    assert split("   \n\t", "en") == Split(["   \n\t"], [])  # no sentence: whole, as before


def test_line_breaks_end_sentences_and_are_kept():
    text = "one is one\ntwo is two\r\n\r\nthree is three. four is four\n"
    assert split(text, "en") == Split(
        ["one is one", "two is two", "three is three.", "four is four\n"],
        ["\n", "\r\n\r\n", " "],
    )  # the text's trailing white space goes with its last sentence, as its leading with its first


def test_abbreviations_do_not_end_a_sentence_and_every_code_gets_rules():
    assert split("Mr. Smith came. He sat.", "en").sentences == ["Mr. Smith came.", "He sat."]
    assert split("Dr. Müller kam um 3 Uhr. Er saß.", "de").sentences == [
        "Dr. Müller kam um 3 Uhr.",
        "Er saß.",
    ]
    for code in ("digits", "src", "xx"):  # codes without rules of their own: English's
        assert split("One is one. Two is two.", code).sentences == ["One is one.", "Two is two."]


def test_no_sentence_splits_a_placeholder_or_is_punctuation_alone():
    """sentencex cuts "%.*s" after its "%." and makes "..." a sentence of its own: found in
    software catalogs' strings, mended."""
    assert split("from %.*s", "en") == Split(["from %.*s"], [])
    assert split("...Sorry, your time is up!", "en") == Split(["...Sorry, your time is up!"], [])
    assert split("Time is up. ...", "en") == Split(["Time is up. ..."], [])
    assert split("Saved to %1. Open %.*s? Yes.", "en").sentences == [
        "Saved to %1.",
        "Open %.*s?",
        "Yes.",
    ]


def test_texts_are_one_list_of_sentences_and_their_answers_regroup_text_by_text():
    texts = Texts(["one is one. two is two.", "", "six is six"], "en")
    assert texts.sentences == ["one is one.", "two is two.", "", "six is six"]
    assert texts.joined(["A.", "B.", "", "C"]) == ["A. B.", "", "C"]
    warnings = texts.warnings([["w1"], ["w2", "w3"], [], ["w4"]])
    assert warnings == [["w1", "w2", "w3"], [], ["w4"]]
    assert Texts(["one is one. two is two."]).sentences == ["one is one. two is two."]  # whole


def test_texts_together_are_each_lists_texts_in_order():
    first, second = Texts(["one is one. two is two."], "en"), Texts(["six is six", ""])
    together = Texts.together([first, second])
    assert len(together) == 3 and len(first) == 1 and len(second) == 2
    assert together.sentences == ["one is one.", "two is two.", "six is six", ""]
    assert together.joined(["A.", "B.", "C", ""]) == ["A. B.", "C", ""]


def test_a_texts_nbest_joins_the_nth_of_each_sentence_and_sums_their_scores():
    texts = Texts(["One. Two.", "Six"], "en")
    nbest = [
        [(-0.25, "A."), (-0.5, "A!"), (-2.0, "A?")],
        [(-0.5, "B."), (-1.0, "B!")],  # two only: the text gets two
        [(-0.125, "C"), (-3.0, "K")],
    ]
    assert texts.nbest(nbest) == [
        [(-0.75, "A. B."), (-1.5, "A! B!")],
        [(-0.125, "C"), (-3.0, "K")],  # one sentence: its own n-best, as it was
    ]


@given(st.lists(st.text(alphabet="ab .!?\n\t\r。", max_size=40), max_size=5))
def test_the_sentences_joined_untranslated_give_back_every_text(texts):
    split_texts = Texts(texts, "en")
    assert split_texts.joined(split_texts.sentences) == texts
    for one in split_texts.splits:  # only white space between sentences, none of them blank
        assert all(not gap.strip() for gap in one.gaps)
        assert len(one.sentences) == 1 or all(sentence.strip() for sentence in one.sentences)
