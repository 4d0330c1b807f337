"""Folders of catalogs as a corpus (localization/catalogs.py): a program's catalogs in one split
only, programs held out whole in groups the same in every language, the skipped entries
counted in report.json, accelerators taken out of both sides."""

import json
import shutil

import polib
import pytest

from seq2seq import data
from seq2seq.config import ConfigError, config_from_dict
from seq2seq.corpora.corpus_types import build_corpus
from seq2seq.localization.catalogs import (
    PROGRAM_GROUPS,
    catalog_files,
    gettext_catalogs,
    held_out,
    program,
)
from seq2seq.support.errors import UserError
from seq2seq.text.parallel import load_split

from samples import ENTRIES, SKIPPED, TMX, read, write_po


def locale_tree(root, programs=("alpha", "beta", "gamma", "delta", "epsilon", "zeta")):
    """A usr/share/locale/de/LC_MESSAGES of MO catalogs, one per program, each with ENTRIES
    and strings of its own; and the shared ones (Open file ...) in every catalog."""
    folder = root / "locale/de/LC_MESSAGES"
    for name in programs:
        own = [polib.POEntry(msgid=f"{name} {i}", msgstr=f"{name.upper()} {i}") for i in range(3)]
        catalog = write_po(root / "po" / f"{name}.po", ENTRIES + own)
        folder.mkdir(parents=True, exist_ok=True)
        catalog.save_as_mofile(str(folder / f"{name}.mo"))
    return folder


def catalog_config(train_sources, **corpus):
    return config_from_dict(
        {
            "corpus": {
                "type": "sources", "name": "catalogs", "src_lang": "en", "tgt_lang": "de",
                "train_sources": train_sources, **corpus,
            },
            "clean": {"drop_identical": False},
        }
    )  # fmt: skip


def test_report_json_counts_each_sources_skipped_entries(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    locale_tree(tmp_path / "a", ("alpha", "beta"))
    locale_tree(tmp_path / "b", ("gamma", "delta", "epsilon"))
    (tmp_path / "memory.tmx").write_text(TMX, encoding="utf-8")
    config = catalog_config(
        [{"file": "a/po/"}, {"file": "b/locale/de/LC_MESSAGES"}, {"file": "memory.tmx"}],
        valid_source={"file": "b/po/gamma.po"}, test_source={"file": "b/po/delta.po"},
    )  # fmt: skip
    assert build_corpus(config) == {"train": 6 + 3 + 2, "valid": 3, "test": 9}
    report = json.loads((tmp_path / "data/catalogs/report.json").read_text())
    po, mo, tmx = report["train"]["sources"].values()
    assert po["skipped"] == {key: 2 * count for key, count in SKIPPED.items()}  # 2 catalogs
    assert mo["skipped"] == {"header": 3}  # the compiler left out the rest
    assert tmx["skipped"] == {"untranslated": 1}
    assert report["train"]["skipped"] == {"header": 5, "fuzzy": 2, "untranslated": 5, "obsolete": 2}
    assert report["valid"]["skipped"] == report["test"]["skipped"] == SKIPPED
    # alpha's shared strings are in test, beta's (and every MO's) duplicates of them
    assert (po["read"], po["kept"], po["removed"]["in_other_split"]) == (18, 6, 6)
    assert (po["removed"]["duplicate"], mo["removed"]["duplicate"]) == (6, 18)
    assert (mo["kept"], tmx["kept"]) == (3, 2)
    assert "train_sources[0] (a/po/): 18 pairs read (10 entries skipped: 2 header, 2 fuzzy, " in (
        capsys.readouterr().out
    )


def test_hold_out_puts_each_program_in_one_split_only(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = locale_tree(tmp_path)
    config = catalog_config([{"file": str(folder), "hold_out": 0.34}])  # 6 programs: 1, 1, 4
    assert build_corpus(config) == {"train": 12, "valid": 3, "test": 9}
    programs = {}
    for split in ("train", "valid", "test"):
        for source, _ in load_split(config, split):
            if source.split()[0] in ("alpha", "beta", "gamma", "delta", "epsilon", "zeta"):
                programs.setdefault(source.split()[0], set()).add(split)
    assert len(programs) == 6 and all(len(splits) == 1 for splits in programs.values())
    held = [program for program, splits in programs.items() if splits != {"train"}]
    assert len(held) == 2
    report = json.loads((tmp_path / "data/catalogs/report.json").read_text())
    (valid_label,) = report["valid"]["sources"]
    assert valid_label.startswith(f"train_sources[0] ({folder}, 1 held out: ")
    # the shared strings are the test split's (written first), and none is in train
    assert ("Open file", "Datei öffnen") in load_split(config, "test")
    assert ("Open file", "Datei öffnen") not in load_split(config, "train")

    # another language's tree of the same programs holds out the same ones
    shutil.copytree(folder, tmp_path / "locale/fr/LC_MESSAGES")
    build_corpus(catalog_config([{"file": "locale/fr/LC_MESSAGES", "hold_out": 0.34}]))
    french = json.loads((tmp_path / "data/catalogs/report.json").read_text())
    for split in ("valid", "test"):
        (label,) = report[split]["sources"]
        assert [label.split(" held out: ")[1]] == [
            label.split(" held out: ")[1] for label in french[split]["sources"]
        ]


@pytest.mark.parametrize(
    ("share", "sizes"), [(0.01, (4, 1, 1)), (0.34, (4, 1, 1)), (0.5, (2, 2, 2)), (0.99, (2, 2, 2))]
)
def test_hold_out_holds_one_program_each_at_least_and_trains_on_one(tmp_path, share, sizes):
    paths = [tmp_path / f"{name}.mo" for name in "abcdef"] + [tmp_path / "a.po"]
    splits = held_out(tmp_path, paths, share, seed=1)
    programs = {split: {path.stem for path in found} for split, found in splits.items()}
    assert tuple(len(programs[split]) for split in ("train", "valid", "test")) == sizes
    assert set().union(*programs.values()) == set("abcdef")
    assert sum(map(len, splits.values())) == len(paths)
    assert any({tmp_path / "a.po", tmp_path / "a.mo"} <= set(found) for found in splits.values())


@pytest.mark.parametrize(
    ("source", "corpus", "expected"),
    [
        ({"file": "po", "hold_out": 1.5}, {}, r"'corpus.train_sources\[0\].hold_out' must be in"),
        ({"file": "a.po", "hold_out": 0.1}, {}, "is for a file: source that names a folder"),
        ({"url": "https://x.org/a.tmx", "hold_out": 0.1}, {}, "names a folder of catalogs"),
        (
            {"file": "po", "hold_out": 0.1}, {"valid_source": {"file": "v.po"}},
            "'corpus.valid_source' is given, but a training source's hold_out makes",
        ),
        ({"file": "a.txt"}, {}, r"be a catalog \(.po, .mo, .xlf, .xliff, .tmx\) or a folder"),
        ({"file": "a.po", "programs": "user"}, {}, r"\[0\].programs' is for a file: source"),
    ],
)  # fmt: skip
def test_catalog_source_config_problems_name_the_key(source, corpus, expected):
    with pytest.raises(ConfigError, match=expected):
        catalog_config([source], **corpus)


PROGRAMS = tuple(f"program{i:02}" for i in range(30))


def test_a_folders_programs_fall_in_three_groups_the_same_in_every_language(tmp_path):
    """Source.programs: base, user and held_out split a folder's programs, whole and apart,
    about 60/20/20; a program is in the same group in another language's folder (same name)
    and under any corpus.seed."""
    groups = {}
    for language in ("de", "fr"):
        folder = locale_tree(tmp_path / language, PROGRAMS)
        groups[language] = {
            group: {program(folder, path) for path in catalog_files(folder, group)}
            for group in PROGRAM_GROUPS
        }
    assert groups["de"] == groups["fr"]
    named = list(groups["de"].values())
    assert set().union(*named) == set(PROGRAMS) and sum(map(len, named)) == len(PROGRAMS)
    assert all(len(names) >= 3 for names in named) and len(groups["de"]["base"]) >= 12


def test_a_source_of_the_user_programs_reads_theirs_alone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = locale_tree(tmp_path, PROGRAMS)
    user = {program(folder, path) for path in catalog_files(folder, "user")}
    for seed in (1, 2):
        sources = [{"file": str(folder), "programs": "user", "hold_out": 0.5}]
        config = catalog_config(sources, seed=seed)
        build_corpus(config)
        pairs = [p for split in ("train", "valid", "test") for p in load_split(config, split)]
        own = {source.split()[0] for source, _ in pairs if source.split()[0] in PROGRAMS}
        assert own == user  # every user program, in one split or another, and no other


def test_a_folder_without_catalogs_and_too_few_programs_to_hold_out(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match=r"empty holds no catalog \(no .po, .mo"):
        build_corpus(catalog_config([{"file": "empty"}], valid_size=1, test_size=1))
    locale_tree(tmp_path, ("alpha", "beta"))
    with pytest.raises(UserError, match="holds 2 program.* hold_out needs 3 at least"):
        build_corpus(catalog_config([{"file": "po", "hold_out": 0.5}]))


def test_make_data_on_a_folder_of_catalogs(tmp_path, monkeypatch, capsys):
    """python -m seq2seq.data, end to end: corpus, vocabularies and token ids."""
    monkeypatch.chdir(tmp_path)
    locale_tree(tmp_path)
    (tmp_path / "catalogs.yaml").write_text(
        "corpus: {type: sources, name: catalogs, src_lang: en, tgt_lang: de,\n"
        "  train_sources: [{file: locale/de/LC_MESSAGES, hold_out: 0.34}]}\n",
        encoding="utf-8",
    )
    data.main(["--config", "catalogs.yaml"])
    out = capsys.readouterr().out
    assert "corpus data/catalogs/: train 12, valid 3, test 9 pairs" in out
    assert "(locale/de/LC_MESSAGES, 4 catalogs): 36 pairs read (4 entries skipped: 4 header)" in out
    assert (tmp_path / "data/catalogs/train.src").read_text().count("\n") == 12


def test_a_pairs_accelerator_is_taken_out_of_both_sides_as_translation_takes_it(tmp_path):
    """What the model learns is what it is shown at translation (placeholders.unaccelerated):
    the words, the mark wherever the translator put it dropped."""
    write_po(tmp_path / "gtk.po", [
        polib.POEntry(msgid="_Save", msgstr="Spei_chern"),
        polib.POEntry(msgid="Save &As", msgstr="Speichern &unter"),
        polib.POEntry(msgid="snake_case", msgstr="snake_case"),
    ])  # fmt: skip
    assert read(tmp_path / "gtk.po")[0] == [
        ("Save", "Speichern"), ("Save As", "Speichern unter"), ("snake_case", "snake_case"),
    ]  # fmt: skip


def test_a_folders_gettext_catalogs_of_a_language_by_their_header_else_their_path(tmp_path):
    """gettext_catalogs (a vocabulary map's): a catalog's Language header names its language,
    with a region or without; a catalog without one is named by its path, as gettext lays
    them out (po/<language>.po, <language>/LC_MESSAGES/<program>.mo)."""
    write_po(tmp_path / "po/app.po", language="de_DE")
    write_po(tmp_path / "po/de.po", language="")
    write_po(tmp_path / "po/de_AT.po", language="fr")  # its header, not its name
    write_po(tmp_path / "po/nl.po", language="")
    catalog = write_po(tmp_path / "tool.po", language="")  # neither: no language
    (tmp_path / "locale/de/LC_MESSAGES").mkdir(parents=True)
    catalog.save_as_mofile(str(tmp_path / "locale/de/LC_MESSAGES/tool.mo"))
    (tmp_path / "po/de.tmx").write_text(TMX, encoding="utf-8")  # not gettext
    found = [path.relative_to(tmp_path).as_posix() for path in gettext_catalogs(tmp_path, "de")]
    assert found == ["locale/de/LC_MESSAGES/tool.mo", "po/app.po", "po/de.po"]
