"""A glossary's terms found in sentences, written in for a taught model or masked and given
back, do-not-translate entries kept verbatim, term use counted with inflected forms; the term
pairs drawn from training pairs (seq2seq/localization/terms.py, term_pairs.py)."""

from seq2seq.localization.term_pairs import Teaching, lexicon, terms_in
from seq2seq.localization.terms import Term, annotated, found, shielded, term_use, used

MASK = "[X{}X]"


def test_terms_are_found_as_whole_words_the_longest_first_in_the_cases_a_user_means():
    terms = {"layer": "Ebene", "user interface": "Oberfläche", "user": "Benutzer", "Git": "Git"}
    sentence = "Layers, user interface and LAYER; a user's git, Git, Gits, players"
    got = [(t.text, t.target, t.verbatim) for t in found(sentence, terms)]
    assert got == [
        ("Layers", "Ebene", False),  # a lower-case entry: any case, a plural -s
        ("user interface", "Oberfläche", False),  # the longest entry first
        ("LAYER", "EBENE", False),
        ("user", "Benutzer", False),  # "user's": a whole word before the apostrophe
        ("Git", "Git", True),  # "git": an entry with capitals matches as written only
        ("Gits", "Gits", True),  # do-not-translate: the source's own text
    ]
    assert found(sentence, {}) == []


def test_annotation_writes_each_target_after_its_term_and_moves_the_verbatim_ones():
    sentence = "Open the layer on GitHub"
    terms = found(sentence, {"layer": "Ebene", "GitHub": "GitHub"})
    text, kept = annotated(sentence, terms)
    assert text == "Open the layer [[ Ebene ]] on GitHub"
    assert [text[t.start : t.end] for t in kept] == ["GitHub"]


def test_a_masked_term_comes_back_as_its_target_and_a_verbatim_one_as_written():
    sentence = "Delete the layer from GitHub %s"
    terms = found(sentence, {"layer": "Ebene", "GitHub": "GitHub"})
    masked = shielded(sentence, terms, MASK, placeholders=True, annotate=False)
    assert masked.source == "Delete the [X0X] from [X1X] [X2X]"
    assert masked.restore("Lösche die [X0X] von [X1X] [X2X]") == "Lösche die Ebene von GitHub %s"
    dropped = masked.restore("Lösche es").split()  # the masks dropped: each put back, once
    assert sorted(dropped) == sorted(["Lösche", "es", "Ebene", "GitHub", "%s"])
    alone = shielded("layer", found("layer", {"layer": "Ebene"}), MASK, True, False)
    assert alone.restore("anything") == "Ebene"  # nothing else to translate
    taught = shielded(sentence, terms, MASK, placeholders=False, annotate=True)
    assert taught.source == "Delete the layer [[ Ebene ]] from [X0X] %s"  # %s: as text
    assert taught.restore("Lösche die Ebene von [X0X] %s") == "Lösche die Ebene von GitHub %s"


def test_a_term_counts_as_used_in_an_inflected_form_and_not_in_another_word():
    assert used("Die Ebenen sind rot", "Ebene")
    assert used("mit den Benutzern", "Benutzer")
    assert used("die grafische Oberfläche", "grafische Oberfläche")
    assert not used("Die Schicht", "Ebene")
    assert not used("Benutzeroberfläche", "Benutzer")  # more than INFLECTION letters added
    assert not used("Oberfläche grafische", "grafische Oberfläche")  # words in order
    assert used("nutze C++ hier", "C++") and not used("nutze C hier", "C++")
    terms = [
        [Term("layer", "Ebene", 0, 5, False), Term("Git", "Git", 9, 12, True)],
        [Term("user", "Benutzer", 0, 4, False)],
    ]
    use = term_use(["die Ebenen in git", "der Nutzer"], terms)
    assert (use.used, use.terms) == (1, 3)  # "git" is not "Git" verbatim


PAIRS = [
    ("the red layer", "die rote Ebene"),
    ("a layer is here", "eine Ebene ist hier"),
    ("the blue layers", "die blauen Ebenen"),
    ("open the folder", "öffne den Ordner"),
    ("the folder is red", "der Ordner ist rot"),
] * 3 + [(f"the item{n}", f"die sache{n}") for n in range(100)]


def test_term_pairs_are_drawn_from_training_pairs_mutual_best_and_not_function_words():
    pairs = lexicon(PAIRS)
    assert pairs["layer"] == "Ebene" and pairs["folder"] == "Ordner"
    assert "the" not in pairs  # in every pair: a function word
    terms = terms_in("the two layer kinds", "die zwei Ebenen", pairs)
    assert [(t.text, t.target) for t in terms] == [("layer", "Ebene")]  # "Ebenen" counted
    assert terms_in("the layer", "die Schicht", pairs) == []  # not in the reference


def test_teaching_writes_terms_into_a_share_of_pairs_the_same_way_each_time(tmp_path):
    (tmp_path / "train.src").write_text("".join(src + "\n" for src, _ in PAIRS))
    (tmp_path / "train.tgt").write_text("".join(tgt + "\n" for _, tgt in PAIRS))
    runs = []
    for _ in range(2):
        teaching = Teaching(tmp_path, share=0.5, seed=3)
        teaching.start()
        runs.append(teaching.written(PAIRS))
    assert runs[0] == runs[1]
    written = [(src, tgt) for src, tgt in runs[0] if "[[" in src]
    assert 0 < teaching.annotated == len(written) < 15  # of the 15 pairs with a term
    for src, tgt in written:  # the note's target in the reference: its own or a swapped one
        note = src.split("[[ ")[1].split(" ]]")[0]
        assert used(tgt, note), (src, tgt)
    swapped = [pair for pair in written if pair[1] not in dict(PAIRS).values()]
    assert swapped and len(swapped) < len(written)  # SWAPPED: about half
    for pair, out in zip(PAIRS, runs[0], strict=True):
        assert out == pair or "[[" in out[0]  # the rest as they were
