"""Fuzzy matches (localization/fuzzy.py, localization/suggestions.py's similar): word
similarity, the three-way merge that carries a user's correction over to a new text, and the
memory's look-up through its word index."""

import pytest

from seq2seq.localization.fuzzy import repaired, similarity, words
from seq2seq.localization.suggestions import Suggestions


def test_similarity_is_one_less_the_share_of_words_changed():
    assert similarity(words("Could not open file %s"), words("could not open FILE %s")) == 1.0
    assert similarity(words("a b c d e"), words("a b X d e")) == pytest.approx(0.8)
    assert similarity(words("a b c d"), words("a b c d e f g h")) == pytest.approx(0.5)
    assert similarity([], []) == 1.0 and similarity(["a"], []) == 0.0


def test_a_correction_is_merged_with_what_the_new_text_changed():
    before, now = "Datei %s konnte nicht geöffnet werden", "Datei %s konnte nicht gelesen werden"
    corrected = "Die Akte %s konnte nicht geöffnet werden"
    assert repaired(before, corrected, now) == "Die Akte %s konnte nicht gelesen werden"
    assert repaired(before, before, now) == now  # nothing corrected: the model's
    assert repaired(before, corrected, before) == corrected  # nothing changed: the correction
    assert repaired("a b c", "a X c", "a X c") == "a X c"  # one change made on both sides, once
    assert repaired("a b c", "a b c (fixed)", "a b d") == "a b d (fixed)"


def test_two_changes_of_the_same_words_are_a_clash_and_give_nothing():
    assert repaired("Datei löschen", "Akte löschen", "Ordner löschen") is None
    assert repaired("a b c", "a X b c", "a Y b c") is None  # two insertions at one place
    assert repaired("a b c d", "a X d", "a b Y d") is None  # one inside the other


def test_the_memory_finds_the_text_most_like_one_through_its_index(database):
    store = Suggestions(database)
    store.add("Could not open file %s", "Datei %s nicht geöffnet", "en", "de")
    store.add("Could not open folder %s at all", "Ordner %s gar nicht geöffnet", "en", "de")
    store.add("Could not open the file %s", "Fichier %s", "en", "fr")
    found = store.similar(["could not open the file %s", "Delete everything"], "en", "de", 0.75)
    assert found[0] == ("Could not open file %s", "Datei %s nicht geöffnet", pytest.approx(5 / 6))
    assert found[1] is None
    assert store.similar(["Could not open file %s"], "en", "de", 0.5) == [None]  # recall's
    assert store.similar(["Could not open a b c d file"], "en", "de", 0.75) == [None]
    store.add("Everything was deleted", "Alles gelöscht", "en", "de")  # after counts were read
    same_words = store.similar(["Everything was deleted!!"], "en", "de", 0.75)[0]
    assert same_words == ("Everything was deleted", "Alles gelöscht", 1.0)  # not its own form
    assert store.similar(["Nothing was deleted"], "en", "de", 0.6)[0].s == "Alles gelöscht"
    store.close()
