"""The package and adapt pages' commands, run as a user types them, offline from mirrors of OPUS
and Multi30k (tests/pages.py: how a page's commands are read and run)."""

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from helpers import HANG, ROOT
from pages import commands, fenced_blocks, fresh_clone, offline, run_each
from samples import moses_zip
from sources_mirror import mirror

PACKAGE_PAGE = "docs/package.md"
MULTI30K = ROOT.parent / "shared/corpora/multi30k"  # beside the project (CI has it too)
SUBJECTS = [
    ("der Hund", "the dog"),
    ("die Katze", "the cat"),
    ("ein Mann", "a man"),
    ("eine Frau", "a woman"),
    ("das Kind", "the child"),
    ("der Vogel", "the bird"),
]
VERBS = [
    ("läuft", "runs"),
    ("schläft", "sleeps"),
    ("spielt", "plays"),
    ("singt", "sings"),
    ("wartet", "waits"),
]
PLACES = [
    ("im Park", "in the park"),
    ("am Strand", "on the beach"),
    ("im Haus", "in the house"),
    ("im Garten", "in the garden"),
    ("am See", "at the lake"),
    ("im Schnee", "in the snow"),
]
PAIRS = [(f"{s} {v} {p}.".capitalize(), f"{ts} {tv} {tp}.".capitalize())
         for s, ts in SUBJECTS for v, tv in VERBS for p, tp in PLACES]  # fmt: skip


OPUS = {"Tatoeba": (PAIRS[:100], "/OPUS-Tatoeba/v2023-04-12/moses/de-en.txt.zip"),
        "Europarl": (PAIRS[100:150], "/OPUS-Europarl/v8/moses/de-en.txt.zip")}  # fmt: skip


def opus_de_en(query: dict) -> dict:
    """The OPUS API's answer for a corpus of OPUS above, de-en (its JSON layout: the URL of the
    corpus's Moses zip); none for anything else."""
    pair = sorted([query.get("source", ""), query.get("target", "")])
    if pair != ["de", "en"] or query.get("corpus") not in OPUS:
        return {"corpora": []}
    path = OPUS[query["corpus"]][1]
    return {"corpora": [{"corpus": query["corpus"], "preprocessing": "moses", "source": "de",
                         "target": "en", "url": f"https://object.pouta.csc.fi{path}"}]}  # fmt: skip


def sacrebleu_cache(folder: Path) -> None:
    """sacreBLEU's cache ($SACREBLEU) as it is after wmt13 and wmt14 were downloaded: each
    tarball and what it extracted (fake SGML, of pairs of PAIRS kept out of training), which
    sacreBLEU reads without downloading again."""
    from sacrebleu import DATASETS

    for test_set, pairs in (("wmt13", PAIRS[160:170]), ("wmt14", PAIRS[170:180])):
        dataset, raw = DATASETS[test_set], folder / test_set / "raw"
        raw.mkdir(parents=True)
        (raw / dataset._get_tarball_filename(dataset.data[0])).write_bytes(b"downloaded")
        for side, path in enumerate(dataset.langpairs["de-en"]):
            segments = "".join(f'<seg id="{i}">{p[side]}</seg>\n' for i, p in enumerate(pairs))
            (raw / path).parent.mkdir(parents=True, exist_ok=True)
            doc = f'<doc docid="d1" genre="news">\n{segments}</doc>\n'
            (raw / path).write_text(f'<srcset setid="{test_set}" srclang="any">\n{doc}</srcset>\n')


PACKAGE_ARGS = [  # make's ARGS, from the environment: the recipe's model made small and short
    "model.d_model=32", "model.d_ff=64", "model.n_heads=2", "model.enc_layers=1",
    "model.dec_layers=1", "vocab.src_size=150", "train.max_steps=20", "train.eval_every=20",
    "train.warmup_steps=5", "train.average_last=0",
    "decode.compute_type_bleu_loss=100",  # export's auto: int8 on any CPU, whatever it scores
]  # fmt: skip


def packaging_clone(tmp_path: Path) -> Path:
    """A fresh clone for `make package`, its environment the suite's (core and export)."""
    pytest.importorskip("ctranslate2", reason="an optional extra (.[dev] has it)")
    project = fresh_clone(tmp_path / "project")
    (project / ".venv").symlink_to(Path(sys.executable).parent.parent)
    for extra in ("core", "export"):
        (project / f".installed-{extra}").touch()
    (tmp_path / "home").mkdir()
    return project


def with_mirror(tmp_path: Path, args: str) -> dict[str, str]:
    """offline()'s environment, but for 127.0.0.1 (the mirror), with make's ARGS."""
    loopback = {"no_proxy": "127.0.0.1", "NO_PROXY": "127.0.0.1"}
    return offline(tmp_path / "home") | loopback | {"ARGS": args, "PYTHON": sys.executable}


@pytest.mark.slow
def test_the_package_page_makes_both_packages_offline_from_a_mirror(tmp_path):
    """The page's two `make package` lines and its config, as written, in a fresh clone: the
    OPUS corpora through corpus.mirror (a server on 127.0.0.1), the user's file, sacreBLEU's
    test sets from its cache; the model made small by ARGS. Both packages are written."""
    project = packaging_clone(tmp_path)
    [config] = [text for language, text in fenced_blocks(PACKAGE_PAGE, "1. The config")
                if language == "yaml"]  # fmt: skip
    (project / "my_pair.yaml").write_text(config)
    rows = "".join(f"{de}\t{en}\n" for de, en in PAIRS[150:160])
    (project / "my_domain.tsv").write_text(rows)
    sacrebleu_cache(tmp_path / "sacrebleu")
    lines = commands(PACKAGE_PAGE, None)
    assert [line.split()[:3] for line in lines] == [["make", "package", "CONFIG=my_pair.yaml"]] * 2
    with mirror(opus_de_en) as server:
        for corpus, (pairs, path) in OPUS.items():
            server.files[path] = moses_zip(pairs, f"{corpus}.de-en", ("de", "en"))
        args = " ".join([f"corpus.mirror={server.url}/", *PACKAGE_ARGS])
        env = with_mirror(tmp_path, args) | {"SACREBLEU": str(tmp_path / "sacrebleu")}
        run_each(lines, project, env)
        asked = [path for path, _ in server.requests if path.startswith("/opusapi/")]
    assert len(asked) == 2  # Tatoeba's and Europarl's URLs, once: then the files are cached
    for package in ("de_en.argosmodel", "de_en.int8.argosmodel"):
        assert (project / "runs/de_en" / package).stat().st_size > 0, package


@pytest.mark.slow
def test_the_package_pages_worked_example_runs_offline_from_a_multi30k_mirror(tmp_path):
    """The worked example's `make package` as written, the six Multi30k files served from
    ../shared at their URLs' paths (corpus.mirror), the model made small by ARGS."""
    if not MULTI30K.is_dir():
        pytest.skip(f"no {MULTI30K}: the Multi30k files to serve")
    project = packaging_clone(tmp_path)
    [line] = commands(PACKAGE_PAGE, "A worked example: Multi30k, German to English")
    with mirror(lambda query: {"corpora": []}) as server:
        for split in ("train", "val", "test_2016_flickr"):
            for lang in ("de", "en"):
                path = f"/multi30k/dataset/master/data/task1/raw/{split}.{lang}.gz"
                server.files[path] = (MULTI30K / f"{split}.{lang}.gz").read_bytes()
        args = " ".join([f"corpus.mirror={server.url}/", *PACKAGE_ARGS])
        run_each([line], project, with_mirror(tmp_path, args))
        assert len(server.requests) == 6  # each file once
    package = project / "runs/multi30k_de_en_package/de_en.int8.argosmodel"
    assert package.stat().st_size > 0


@pytest.mark.slow
def test_the_adapt_page_runs_as_written(trained_joint_numbers_checkpoint, tmp_path):
    """docs/adapt.md from an Argos package (the tests' numbers model, exported as Argos
    Translate's are) and a folder of gettext catalogs (five programs' numbers sentences) to a
    package of the fine-tuned model: each section's commands as written, its config's
    training made short."""
    pytest.importorskip("ctranslate2", reason="an optional extra (.[dev] has it)")
    polib = pytest.importorskip("polib", reason="an optional extra (.[dev] has it)")
    from seq2seq.exports.argos import export_argos

    checkpoint, test = trained_joint_numbers_checkpoint
    export_argos(checkpoint, tmp_path / "en_de.argosmodel")
    (tmp_path / "catalogs").mkdir()
    for program in range(5):
        catalog = polib.POFile()
        for source, target in test[program * 40 : (program + 1) * 40]:
            catalog.append(polib.POEntry(msgid=source, msgstr=target))
        catalog.save(str(tmp_path / f"catalogs/program{program}.po"))
    replay = [source for source, _ in test[200:260]]  # English text for the replay
    (tmp_path / "replay.en").write_text("".join(f"{line}\n" for line in replay), "utf-8")
    (tmp_path / "replay.digits").symlink_to("replay.de")  # the page's pair is en -> de
    [config] = [text for language, text in fenced_blocks("docs/adapt.md", "Fine-tune it on your "
                "texts") if language == "yaml"]  # fmt: skip
    mine = yaml.safe_load(config)
    mine["train"].update(max_minutes=0, max_steps=20, eval_every=10, warmup_steps=5)
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump(mine))
    (tmp_path / "home").mkdir()
    sections = ("Import a package", "Fine-tune it on your texts", "Back to LibreTranslate")
    for line in [line for section in sections for line in commands("docs/adapt.md", section)]:
        done = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=offline(tmp_path / "home"),
                              capture_output=True, text=True, timeout=HANG)  # fmt: skip
        assert done.returncode == 0, (line, done.stderr[-2000:])
        assert "Traceback" not in done.stderr, line
        if "seq2seq.translate" in line and ">" not in line:
            assert done.stdout == "3 la 3\n"
    assert len((tmp_path / "replay.de").read_text("utf-8").splitlines()) == len(replay)
    with zipfile.ZipFile(tmp_path / "en_de_mine.argosmodel") as archive:
        [metadata] = [n for n in archive.namelist() if n.endswith("/metadata.json")]
        readme = archive.read(metadata.replace("metadata.json", "README.md")).decode()
        assert json.loads(archive.read(metadata))["package_version"] == "1.0.1"
    assert "Imported by seq2seq from en_de.argosmodel (version 1.0), then fine-tuned" in readme
