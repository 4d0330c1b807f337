"""Cleaning, counted: each filter on hand-made pairs, the report, the cross-split rule, the
valid and test splits split off train, and the numbers corpus left alone."""

import json

import pytest

from seq2seq.config import ConfigError, config_from_dict
from seq2seq.corpora.cleaning import Tally, clean, language_rule, rules, sample
from seq2seq.corpora.corpus_types import build_corpus
from seq2seq.support.errors import UserError
from seq2seq.text.parallel import CorpusError, load_split


def kept(pairs, split="train", **options):
    """The pairs a split keeps with these clean options, and its tally."""
    config = config_from_dict({"clean": options, "corpus": {"max_words": 6}})
    tally = Tally()
    found = list(
        clean(pairs, rules(config, split, {hash(("in", "test"))}, ("de", "en")), tally, split)
    )
    return found, tally


def test_empty_and_whitespace_only_sides_are_dropped():
    pairs = [("a", ""), (" \t ", "b"), ("a", "b")]
    assert kept(pairs)[0] == [("a", "b")]
    assert kept(pairs, drop_empty=False)[0] == pairs


def test_too_long_counts_words_on_either_side():
    pairs = [("a b c d e f", "v w"), ("a b", "t u v w x y z"), ("a\tb c d e f", "x y")]
    found, tally = kept(pairs)
    assert found == [pairs[0], pairs[2]]  # 6 words, a tab between two
    assert tally.removed["too_long"] == 1


def test_length_ratio_in_characters_so_scripts_without_spaces_pass():
    pairs = [("狗在雪地里跑", "the dog runs in the snow"), ("@@", "Young girls weave corn")]
    assert kept(pairs, max_length_ratio=9)[0] == pairs[:1]  # 6 vs 24 characters: 4
    assert kept([*pairs, ("Hund", "dog")], max_length_ratio=3)[0] == [("Hund", "dog")]
    assert "length_ratio" not in kept(pairs, max_length_ratio=0)[1].removed  # 0: off


def test_identical_sides_are_dropped():
    pairs = [("Berlin", "Berlin"), ("Berlin", "berlin")]
    assert kept(pairs)[0] == [("Berlin", "berlin")]
    assert kept(pairs, drop_identical=False)[0] == pairs


def test_control_characters_but_not_tabs_or_ordinary_unicode():
    ordinary = [
        ("e\u0301t\u00e9", "tab\there"),  # a combining acute accent; a tab
        ("狗 跑", "नमस्ते"),  # CJK; Devanagari with its combining vowel signs
        ("zero\u200dwidth joiner", "emoji 👩\u200d💻"),  # format characters (Cf) are text
    ]
    junk = [("bell\x07", "x"), ("a", "nul\x00"), ("c1\x85", "x"), ("del\x7f", "x"), ("cr\r", "x")]
    found, tally = kept(ordinary + junk)
    assert found == ordinary
    assert tally.removed["control_chars"] == len(junk)
    assert kept(junk, drop_control_chars=False)[0] == junk


def test_duplicates_within_a_split_keep_the_first_and_pairs_in_test_leave_train():
    pairs = [("a", "x"), ("b", "y"), ("a", "x"), ("a", "z"), ("in", "test")]
    found, tally = kept(pairs)
    assert found == [("a", "x"), ("b", "y"), ("a", "z")]  # a pair is both sides
    assert (tally.removed["duplicate"], tally.removed["in_other_split"]) == (1, 1)
    assert kept(pairs, drop_duplicates=False)[0] == pairs


def test_the_test_split_loses_only_what_no_model_can_take():
    pairs = [
        ("a", ""),
        ("a b c d e f g", "x"),
        ("same", "same"),
        ("a", "x"),
        ("a", "x"),
        ("@", "abcdefghij"),
    ]
    found, tally = kept(pairs, split="test")
    assert found == pairs[2:]
    assert list(tally.removed) == ["empty", "too_long"]


def test_each_pair_is_counted_once_under_the_first_rule_it_fails():
    found, tally = kept([("", ""), ("x\x07", "x\x07"), ("ok", "fine")])
    assert vars(tally) == {
        "read": 3,
        "removed": {"empty": 1, "too_long": 0, "length_ratio": 0, "identical": 1,
                    "control_chars": 0, "duplicate": 0, "in_other_split": 0},
        "kept": 1,
        "copies": 0,
        "sources": {},
        "skipped": {},
    }  # fmt: skip


def test_a_split_left_empty_is_an_error():
    with pytest.raises(CorpusError, match="valid: no sentence pairs left to use"):
        kept([("same", "same")], split="valid")


def test_language_identification_drops_a_side_in_another_language():
    wrong = language_rule(("de", "en-GB"))
    assert not wrong("Ein Hund rennt durch den tiefen Schnee.", "A dog runs through the snow.")
    assert wrong("A dog runs through the deep snow.", "A dog runs through the snow.")
    assert wrong("Ein Hund rennt durch den tiefen Schnee.", "Ein Hund rennt durch den Schnee.")
    with pytest.raises(UserError, match="py3langid does not know the language 'xx'"):
        language_rule(("xx", "en"))


def test_language_identification_needs_languages_and_py3langid(monkeypatch):
    with pytest.raises(ConfigError, match="'clean.language_id' needs the languages"):
        config_from_dict({"corpus": {"type": "parallel", "train": {"tsv": "a"}},
                          "clean": {"language_id": True}})  # fmt: skip
    monkeypatch.setitem(__import__("sys").modules, "py3langid.langid", None)
    with pytest.raises(UserError, match=r"needs py3langid: pip install 'seq2seq\[langid\]'"):
        language_rule(("de", "en"))


def write_tsv(path, pairs):
    path.write_text("".join(f"{s}\t{t}\n" for s, t in pairs))
    return str(path)


def parallel(tmp_path, **corpus):
    return config_from_dict({"corpus": {"type": "parallel", "name": "c", **corpus}})


def test_the_report_counts_each_split_and_train_drops_what_valid_and_test_hold(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    train = [("a", "x"), ("b", "y"), ("b", "y"), ("v", "1"), ("t", "2"), ("c", "c"), ("d", "z")]
    valid = [("v", "1"), ("t", "2"), ("v", "1")]
    test = [("t", "2"), ("t", "2"), ("q", "")]
    config = parallel(
        tmp_path,
        train={"tsv": write_tsv(tmp_path / "train.tsv", train)},
        valid={"tsv": write_tsv(tmp_path / "valid.tsv", valid)},
        test={"tsv": write_tsv(tmp_path / "test.tsv", test)},
    )
    assert build_corpus(config) == {"train": 3, "valid": 1, "test": 2}
    report = json.loads((tmp_path / "data/c/report.json").read_text())
    assert report["test"] == {
        "read": 3, "removed": {"empty": 1, "too_long": 0}, "kept": 2, "copies": 0, "sources": {},
        "skipped": {},
    }  # fmt: skip
    assert report["valid"]["removed"]["in_other_split"] == 1  # ("t", "2") is in test
    assert report["valid"]["removed"]["duplicate"] == 1
    assert report["train"]["read"] == 7 and report["train"]["kept"] == 3
    removed = {name: n for name, n in report["train"]["removed"].items() if n}
    assert removed == {"identical": 1, "duplicate": 1, "in_other_split": 2}
    assert load_split(config, "train") == [("a", "x"), ("b", "y"), ("d", "z")]
    assert load_split(config, "test") == [("t", "2"), ("t", "2")]  # as given
    assert "train: 7 pairs read, 1 identical, 1 duplicate, 2 in_other_split removed, 3 kept" in (
        capsys.readouterr().out
    )


def test_valid_and_test_are_split_off_train_disjoint_and_deterministic(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pairs = [(f"s{i}", f"t{i}") for i in range(200)] + [("s7", "t7")] * 3
    files = {"train": {"tsv": write_tsv(tmp_path / "train.tsv", pairs)}}
    config = parallel(tmp_path, valid_size=20, test_size=30, **files)
    assert config.corpus.valid is None and config.corpus.test is None
    assert build_corpus(config) == {"train": 150, "valid": 20, "test": 30}
    splits = {split: load_split(config, split) for split in ("train", "valid", "test")}
    assert not set(splits["train"]) & (set(splits["valid"]) | set(splits["test"]))
    assert not set(splits["valid"]) & set(splits["test"])
    assert set().union(*map(set, splits.values())) == set(pairs)
    report = json.loads((tmp_path / "data/c/report.json").read_text())
    assert report["train"]["removed"]["held_out"] == 50
    assert report["valid"] == {
        "read": 20, "removed": {}, "kept": 20, "copies": 0, "sources": {}, "skipped": {}
    }  # fmt: skip
    # The same seed picks the same pairs, whatever their order; another seed others.
    write_tsv(tmp_path / "train.tsv", pairs[::-1])
    build_corpus(config)
    assert load_split(config, "valid") == splits["valid"]
    build_corpus(parallel(tmp_path, valid_size=20, test_size=30, seed=2, **files))
    assert load_split(config, "valid") != splits["valid"]


def test_a_copy_of_a_split_off_pair_leaves_train_even_without_deduplication(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pairs = [("a", "x")] * 5 + [("b", "y"), ("c", "z")]
    config = config_from_dict({
        "corpus": {"type": "parallel", "name": "c", "valid_size": 1, "test_size": 1,
                   "train": {"tsv": write_tsv(tmp_path / "train.tsv", pairs)}},
        "clean": {"drop_duplicates": False},
    })  # fmt: skip
    build_corpus(config)
    held = set(load_split(config, "valid")) | set(load_split(config, "test"))
    assert len(held) == 2 and not held & set(load_split(config, "train"))


def test_too_few_pairs_to_split_off_is_an_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pairs = [("a", "x"), ("b", "y"), ("a", "x")]
    config = parallel(tmp_path, valid_size=1, test_size=1,
                      train={"tsv": write_tsv(tmp_path / "t.tsv", pairs)})  # fmt: skip
    with pytest.raises(CorpusError, match="train: no sentence pairs left"):
        build_corpus(config)
    config = parallel(tmp_path, valid_size=2, test_size=1,
                      train={"tsv": write_tsv(tmp_path / "t.tsv", pairs)})  # fmt: skip
    with pytest.raises(CorpusError, match="train has 2 distinct pairs after cleaning, too few"):
        build_corpus(config)
    with pytest.raises(ConfigError, match="'corpus.test_size' must be positive to split off"):
        parallel(tmp_path, test_size=0, train={"tsv": "t.tsv"})


def test_the_sample_depends_on_the_seed_and_the_set_of_pairs_only():
    pairs = [(f"s{i}", f"t{i}") for i in range(100)]
    first = sample(pairs, 10, seed=1)
    assert len(set(first)) == 10 and sample(pairs[::-1] + pairs, 10, seed=1) == first
    assert sample(pairs, 10, seed=2) != first


def test_the_numbers_corpus_is_not_cleaned_and_gets_a_report(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = config_from_dict({"corpus": {"preset": "seed"}})  # nine pairs in every split
    assert build_corpus(config) == {"train": 9, "valid": 9, "test": 9}
    report = json.loads((tmp_path / "data/numbers/report.json").read_text())
    assert report["train"] == {
        "read": 9, "removed": {}, "kept": 9, "copies": 0, "sources": {}, "skipped": {}
    }  # fmt: skip
