"""Placeholders found in real software strings, protected from the model and put back exactly
once (seq2seq/text/placeholders.py), and the metric that counts it."""

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from seq2seq.options import VocabConfig
from seq2seq.text.placeholders import (
    accelerator_free,
    bare,
    find,
    kept,
    protect,
    share_kept,
    unaccelerated,
)
from seq2seq.tokens.vocab import mask_for, train_vocab

# (string, the placeables found in it), from gettext, Qt, GTK, .NET, ICU and Weblate catalogs
FOUND = [
    ("Delete %s?", ["%s"]),
    ("%1$s of %2$s copied", ["%1$s", "%2$s"]),
    ("Hello %(name)s, you have %d new messages", ["%(name)s", "%d"]),
    ("Progress: %.2f%% done, %-5d left, %lu bytes", ["%.2f", "%%", "%-5d", "%lu"]),
    ("Found {0} files in {1:N2} seconds", ["{0}", "{1:N2}"]),
    ("Welcome {user.name}, {count} items, {name!r}, {0,-10}, {}", None),
    ("{count, plural, one {# file} other {# files}} selected", None),
    ("Copying %1 to %2 (%L3 left)", ["%1", "%2", "%L3"]),
    ("&Open", []),  # accelerators are taken out apart (unaccelerated, below)
    ("Save &As...", []),
    ("_File", []),
    ("Click <b>here</b> or <a href=\"https://example.org/a_b\">there</a><br/>",
     ['<b>', '</b>', '<a href="https://example.org/a_b">', "</a>", "<br/>"]),
    ("Tom &amp; Jerry &#39;s", ["&amp;", "&#39;"]),
    ("First line\\nSecond line\\tend", ["\\n", "\\t"]),
    ("[X7X] three is three [X12X]", ["[X7X]", "[X12X]"]),
    ("Hello {{ user }}", ["{{ user }}"]),
    # not placeables: ordinary text stays text
    ("R&D department", []),
    ("snake_case and __init__ names", []),
    ("50% off, 100% sure, 5%done", []),
    ("a { b } c, a < b > c, x {", []),
    ("mail john_doe@example.com or _admin@example.org", []),
    ("Tom & Jerry", []),
    ("C++ and C# at 3 o'clock", []),
]  # fmt: skip


@pytest.mark.parametrize(("text", "expected"), FOUND)
def test_placeables_of_real_strings_are_found_and_ordinary_text_is_not(text, expected):
    found = [p.text for p in find(text)]
    if expected is None:  # every brace form of the string, whole
        expected = [part for part in found if part.startswith("{")]
        assert len(expected) == text.count("{") - text.count("{#") and found
    assert found == expected


def test_an_icu_plural_block_is_one_opaque_placeable():
    (block,) = find("{count, plural, one {# file} other {# files}} selected")
    assert (block.kind, block.text) == ("icu", "{count, plural, one {# file} other {# files}}")


MASK = "[X{}X]"


@pytest.mark.parametrize("mask", [MASK, None])
def test_a_text_without_placeables_goes_to_the_model_as_it_is(mask):
    for text in ["three is three", "R&D is 50% of it", " spaced  out ", ""]:
        protected = protect(text, mask)
        assert protected.source == text and protected.restore("drei") == "drei"


def test_masks_go_back_in_place_and_wrong_ones_are_dropped_or_added():
    protected = protect("%s files found in %d.", MASK)
    assert protected.source == "[X0X] files found in [X1X]."
    assert protected.restore("[X0X] Dateien in [X1X] gefunden.") == "%s Dateien in %d gefunden."
    # swapped: printf forms without n$ keep their order; spaces inside, lower case
    assert protected.restore("[X1X] Dateien in [ x0X ].") == "%s Dateien in %d."
    # repeated and invented ones dropped, a missing one at its place
    assert protected.restore("Dateien [X0X] [X0X] [X7X].") == "Dateien %s %d."
    assert protected.restore("Dateien gefunden.") == "%s Dateien gefunden %d."
    numbered = protect("%1$s of %2$s", MASK)
    assert numbered.restore("[X1X] von [X0X]") == "%2$s von %1$s"  # may move: numbered


def test_placeables_the_model_writes_itself_are_dropped_and_glued_ones_stay_glued():
    # seen in a model fine-tuned on catalogs (make bench-adapt): escapes it learnt to write
    protected = protect("Close transactions.\\nYou might also commit.", MASK)
    assert protected.source == "Close transactions.[X0X]You might also commit."
    output = "Transaktionen zu \\nschließen.[X0X]Auch \\n bestätigen."
    assert protected.restore(output) == "Transaktionen zu schließen.\\nAuch bestätigen."


def test_lifted_placeables_go_back_at_their_anchors():
    cases = {  # source -> (what the model gets, its output, the restored output)
        "[X0X] three is three [X19X]": ("three is three", "3 la 3", "[X0X] 3 la 3 [X19X]"),
        "Delete <b>%s</b>?": ("Delete?", "Löschen?", "Löschen <b>%s</b>?"),
        "<b>three</b> is three": ("three is three", "3 la 3", "<b>3</b> la 3"),
        "%s": ("", "", "%s"),
    }
    for text, (source, output, restored) in cases.items():
        protected = protect(text, None)
        assert (protected.source, protected.restore(output)) == (source, restored)


WORDS = st.sampled_from(["three", "is", "la", "Open", "file", "?", ".", ",", "R&D", "50%"])
PLACEABLES = st.sampled_from(
    ["%s", "%d", "%1$s", "%(name)s", "{0}", "{count}", "{}", "%1", "<b>", "</b>", "<br/>",
     "\\n", "[X3X]", "&amp;", "{n, plural, one {#} other {#s}}", "%%"]
)  # fmt: skip
PARTS = st.lists(st.one_of(WORDS, PLACEABLES), max_size=12)
# what the model writes: words that cannot join a put-back placeholder into another one, as
# "50%" before a "%s" would make a "%%" that no source had (a count the checks could not read)
OUTPUT_WORDS = st.sampled_from(["three", "is", "la", "Open", "file", "?", ".", ","])
SPACES = st.lists(st.sampled_from([" ", "", "  "]), min_size=13, max_size=13)


def joined(parts: list[str], spaces: list[str]) -> str:
    return "".join(part + space for part, space in zip(parts, spaces, strict=False))


@given(PARTS, SPACES)
def test_masked_text_restores_to_itself(parts, spaces):
    text = joined(parts, spaces)
    protected = protect(text, MASK)
    assert protected.restore(protected.source) == text


@settings(max_examples=1000)
@given(PARTS, SPACES, st.lists(st.one_of(OUTPUT_WORDS, st.integers(0, 15)), max_size=14))
def test_whatever_the_model_writes_every_placeable_comes_back_exactly_once(parts, spaces, out):
    """Outputs of words and masks, some unknown, repeated or missing: every run of the source
    is in the restored output once, and the ordered ones (printf without n$, {}, tags) in
    source order."""
    text = joined(parts, spaces)
    for mask in (MASK, None):
        protected = protect(text, mask)
        runs = [run.text for run in protected.runs]
        assume(all(text.count(run) == runs.count(run) for run in runs))  # no run in another
        output = " ".join(MASK.format(p) if isinstance(p, int) else p for p in out)
        restored = protected.restore(output)
        for run in runs:
            assert restored.count(run) == runs.count(run), (text, output, restored)
        ordered = [run.text for run in protected.runs if run.ordered]
        if len(set(ordered)) == len(ordered):  # each found once: their order is clear
            assert [run for run in ordered_runs(restored, runs) if run in ordered] == ordered


def ordered_runs(restored: str, runs: list[str]) -> list[str]:
    """The runs as they come in `restored`."""
    return [run for _, run in sorted((restored.index(run), run) for run in set(runs))]


def test_the_metric_counts_outputs_that_keep_every_placeable_exactly_once():
    pairs = [
        ("Delete %s?", "Löschen %s?"),  # kept
        ("%s of %d", "%s von"),  # %d lost
        ("%s or %s", "%s oder %s %s"),  # one too many
        ("three is three", "3 la 3"),  # none: not counted
        ("[X0X] three [X1X]", "[X0X] 3 [X1X]"),  # kept
        ("[X0X] <b>three</b>", "[X0X] 3"),  # the mask kept, the tags lost
    ]
    assert share_kept(pairs) == (2, 5) and share_kept(pairs).share == 0.4
    assert share_kept(pairs, kinds=("mask",)) == (2, 2)
    assert kept("three", "3") is None and share_kept([]).share is None


def test_the_mask_is_one_both_vocabularies_spell_else_none():
    words = train_vocab(["one two three is"] * 50, 12, VocabConfig())  # a word vocabulary
    assert words.unknown("[X0X]") and mask_for(words, words) is None
    chars = VocabConfig(model_type="char")
    spelled = train_vocab(["[X0123456789X] one two"] * 50, 40, chars)
    assert mask_for(spelled, spelled) == MASK and mask_for(spelled, words) is None


ACCELERATED = {  # source -> (what the model gets, its output, the translation given back)
    "_Save": ("Save", "Speichern", "_Speichern"),  # the same letter
    "Save &As": ("Save As", "Speichern unter", "Speichern &unter"),  # no "a": the first letter
    "~Open": ("Open", "Öffnen", "~Öffnen"),  # LibreOffice's mark
    "_Noise": ("Noise", "Lä_rm", "_Lärm"),  # the model's own mark dropped first
    "Open <b>_File</b>": ("Open <b>File</b>", "Öffne <b>Datei</b>", "Öffne <b>_Datei</b>"),
    "&Open %s": ("Open %s", "%s öffnen", "%s &öffnen"),  # "s" of %s is no word
    # not a label's access key: as it is, and its output as the model wrote it
    "R&D and snake_case": ("R&D and snake_case", "F&E", "F&E"),
    "_one and _two": ("_one and _two", "x", "x"),
    "Tom &amp; Jerry": ("Tom &amp; Jerry", "Tom &amp; Jerry", "Tom &amp; Jerry"),
    "mail _admin@example.org": ("mail _admin@example.org", "x", "x"),
}


@pytest.mark.parametrize("text", ACCELERATED)
def test_an_accelerator_is_taken_out_and_put_back_once(text):
    model_gets, output, given_back = ACCELERATED[text]
    accelerated = unaccelerated(text)
    assert (accelerated.text, accelerated.restore(output)) == (model_gets, given_back)


def test_a_catalogs_pair_loses_its_accelerator_on_both_sides_as_training_reads_it():
    assert accelerator_free("_Save", "Spei_chern") == ("Save", "Speichern")  # inside a word
    assert accelerator_free("_Save", "保存(_S)") == ("Save", "保存")  # CJK's form
    assert accelerator_free("&Open", "Tom &amp; &Öffnen") == ("Open", "Tom &amp; Öffnen")
    assert accelerator_free("snake_case", "snake_case") == ("snake_case", "snake_case")
    assert accelerator_free("_Save", "Speichern") == ("Save", "Speichern")


@given(st.sampled_from(["_", "&", "~"]), st.lists(OUTPUT_WORDS, max_size=8))
def test_whatever_the_model_writes_the_accelerator_comes_back_once(mark, out):
    restored = unaccelerated(f"Open {mark}the file").restore(" ".join(out))
    assert restored.count(mark) == 1
    assert kept(f"Open {mark}the file", restored) or not any(map(str.isalpha, out))


def test_an_empty_or_bare_output_is_told_apart():
    assert bare("Noise", "") and bare("Delete %s", "%s") and bare("_Noise", "_")
    assert not bare("%s", "") and not bare("Noise", "Rauschen") and not bare("", "")
    assert bare("Noise", ".") and not bare("three is three", "3")  # digits are a translation
