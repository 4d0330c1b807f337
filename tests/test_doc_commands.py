"""The commands of the docs, run as a user types them: offline, in an empty home.

A page's command lines are those of its fenced blocks without a language, in a section; a line
ending in `# with the internet` needs it and is left out (in Python, with its block), and so are
`pip install` lines (tests/test_setup.py installs the extras). Every other line runs with bash,
in a folder that holds what the page's earlier steps made, with HOME an empty folder and every
HTTP request sent to a closed port, so that a command that downloads fails here as it would
offline; a section's Python blocks run after its command lines. A transcript (`$ command` lines,
each followed by what it prints) must print what the page shows."""

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from seq2seq.checkpoint import save_checkpoint

from helpers import HANG, ROOT, mirror, moses_zip

ONLINE = "# with the internet"


def section_text(page: str, section: str | None) -> str:
    """The text of `section` (a `## ` heading) in `page`; None: the text above the first."""
    text = (ROOT / page).read_text("utf-8")
    if section is not None:
        text = text.split(f"\n## {section}\n", 1)[1]
    return text.split("\n## ", 1)[0]


def fenced_blocks(page: str, section: str | None) -> list[tuple[str, str]]:
    """The fenced blocks of `section` (a `## ` heading) in `page`: (language, text)."""
    blocks, language, lines = [], None, []
    for line in section_text(page, section).splitlines():
        if not line.startswith("```"):
            lines.append(line)
        elif language is None:  # a block opens
            language, lines = line[3:].strip(), []
        else:
            blocks.append((language, "\n".join(lines)))
            language = None
    return blocks


def commands(page: str, section: str | None) -> list[str]:
    """The command lines of the blocks without a language of `section` in `page`."""
    blocks = [text for language, text in fenced_blocks(page, section) if not language]
    lines = [line for block in blocks for line in block.splitlines() if line.strip()]
    return [line for line in lines if not is_online(line) and not line.startswith("pip ")]


def code_blocks(page: str, section: str) -> list[str]:
    """The Python blocks (```python) of `section` in `page` but those that need the internet
    (a line ending in `# with the internet`)."""
    blocks = [text for language, text in fenced_blocks(page, section) if language == "python"]
    return [text for text in blocks if not any(map(is_online, text.splitlines()))]


def is_online(line: str) -> bool:
    return line.endswith(ONLINE)


def transcript(page: str, section: str | None) -> list[tuple[str, list[str]]]:
    """The `$ command` lines of the transcripts (blocks without a language whose lines begin
    with one) of `section` in `page`, each with the lines the page shows it printing."""
    shown: list[tuple[str, list[str]]] = []
    for language, text in fenced_blocks(page, section):
        if language or not text.startswith("$ "):
            continue
        for line in filter(str.strip, text.splitlines()):
            if line.startswith("$ "):
                shown.append((line[2:], []))
            else:
                shown[-1][1].append(line)
    return shown


def fresh_clone(folder: Path) -> Path:
    """The project's files as a fresh clone has them (git's tracked files), in `folder`."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    for name in filter(None, listed.stdout.decode().split("\0")):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, folder / name)
    return folder


def offline(home: Path) -> dict[str, str]:
    """The environment of a user without the internet and with an empty home: this Python's
    folder first on PATH (its python, its argos-translate), no XDG folders set."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    closed = "http://127.0.0.1:9"  # the discard port: nothing listens
    return {
        **env, "HOME": str(home), "PATH": f"{Path(sys.executable).parent}:{env['PATH']}",
        "http_proxy": closed, "https_proxy": closed, "HTTP_PROXY": closed,
        "HTTPS_PROXY": closed, "no_proxy": "", "PYTHONPATH": str(ROOT),
    }  # fmt: skip


EXPORTS = [  # export.md's sections: the package each needs, and its command lines
    ("CTranslate2", "ctranslate2", 3),
    ("Argos Translate and LibreTranslate", "argostranslate", 4),
    ("Hugging Face", "transformers", 1),
]


@pytest.mark.slow
@pytest.mark.parametrize("section, package, count", EXPORTS)
def test_the_commands_of_the_export_page_run_offline(
    trained_joint_numbers_checkpoint, tmp_path, section, package, count
):
    pytest.importorskip(package, reason="an optional extra (.[dev] has it)")
    checkpoint = trained_joint_numbers_checkpoint[0]
    parts = (checkpoint.model, checkpoint.src_vocab, checkpoint.tgt_vocab, {"step": 1})
    save_checkpoint(tmp_path / "runs/numbers/best.pt", checkpoint.config, *parts)
    (tmp_path / "input.txt").write_text("three is three\nfive is five\n")  # the user's text
    (tmp_path / "home").mkdir()
    lines = commands("docs/export.md", section)
    assert len(lines) == count
    programs = [["bash", "-c", line] for line in lines]
    programs += [[sys.executable, "-c", code] for code in code_blocks("docs/export.md", section)]
    for program in programs:
        done = subprocess.run(
            program, cwd=tmp_path, env=offline(tmp_path / "home"),
            capture_output=True, text=True, timeout=HANG,
        )  # fmt: skip
        assert done.returncode == 0, (program, done.stderr[-2000:])
        assert "Traceback" not in done.stderr
    assert done.stdout.strip()  # the last one translates


@pytest.mark.slow
def test_the_mistakes_on_the_getting_started_page_end_as_it_shows(tmp_path):
    project = fresh_clone(tmp_path / "project")
    (tmp_path / "home").mkdir()
    shown = transcript("docs/getting-started.md", "Configs and errors")
    assert len(shown) == 3
    for command, printed in shown:
        done = subprocess.run(
            ["bash", "-c", command], cwd=project, env=offline(tmp_path / "home"),
            capture_output=True, text=True, timeout=HANG,
        )  # fmt: skip
        assert done.returncode != 0, command
        assert (done.stdout + done.stderr).splitlines() == printed, command


SHORT = [  # make's ARGS, from the environment: the default experiment, small and short
    "corpus.train_size=2000", "corpus.valid_size=50", "corpus.test_size=50",
    "model.d_model=32", "model.d_ff=64", "train.max_steps=20", "train.eval_every=20",
]  # fmt: skip


@pytest.mark.slow
def test_the_readme_runs_as_written_in_a_fresh_clone(tmp_path):
    """`make all`, then the transcript in the shell it activates; the model is a short run's,
    so its translations are checked for their count, not their digits. (`make test` is the
    suite that runs this.)"""
    venv = Path(sys.executable).parent.parent
    if not (venv / "bin/activate").exists():
        pytest.skip("the tests run outside a virtual environment: nothing to activate")
    project = fresh_clone(tmp_path / "project")
    (project / ".venv").symlink_to(venv)  # the environment `make all` made
    (project / ".installed-core").touch()  # installed: make's PYTHON below is that venv's
    (tmp_path / "home").mkdir()
    env = offline(tmp_path / "home") | {"ARGS": " ".join(SHORT), "PYTHON": sys.executable}
    lines = [line for line in commands("README.md", None) if not line.startswith("$ ")]
    assert lines[0].startswith("make all") and lines[1].startswith("make test")
    done = subprocess.run(
        ["bash", "-c", lines[0]], cwd=project, env=env, capture_output=True, text=True,
        timeout=HANG,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    shown = transcript("README.md", None)
    script = "set -e\n" + "\n".join(f"{command}\necho ---" for command, _ in shown)
    done = subprocess.run(
        ["bash", "-c", script], cwd=project, env=env, capture_output=True, text=True,
        timeout=HANG,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    printed = [part.splitlines() for part in done.stdout.split("---\n")[:-1]]
    assert [len(lines) for lines in printed] == [len(lines) for _, lines in shown]


def small_default_config(project: Path) -> None:
    """The clone's config.yaml made small and short (the numbers experiment still): what the
    page's commands train takes seconds, not minutes."""
    config = yaml.safe_load((project / "config.yaml").read_text())
    config["corpus"].update(train_size=2000, valid_size=50, test_size=50)
    config["model"].update(d_model=32, d_ff=64)
    config["train"].update(max_steps=60, eval_every=60, warmup_steps=20, batch_tokens=500)
    (project / "config.yaml").write_text(yaml.safe_dump(config))


def fine_tuning_corpus(project: Path) -> None:
    """The Fine-tuning section's configs/mine.yaml (its YAML block) and the pairs beside it
    (the user's own: here, lines of the numbers corpus)."""
    [config] = [text for language, text in fenced_blocks(GETTING_STARTED, "Training")
                if language == "yaml"]  # fmt: skip
    (project / "configs/mine.yaml").write_text(config)
    src = (project / "data/numbers/train.src").read_text().splitlines()
    tgt = (project / "data/numbers/train.tgt").read_text().splitlines()
    for split, lines in (("train", range(0, 300)), ("valid", range(300, 330)),
                         ("test", range(330, 360))):  # fmt: skip
        rows = "".join(f"{src[i]}\t{tgt[i]}\n" for i in lines)
        (project / f"configs/mine.{split}.tsv").write_text(rows)


GETTING_STARTED = "docs/getting-started.md"
USAGE_PRINTS = [2, 2, 1, 1, 3, 1, 0, 1, 1]  # output lines of the Usage block's translations


@pytest.mark.slow
def test_the_getting_started_commands_run_as_written_in_a_fresh_clone(tmp_path):
    """The Usage and Training sections' command lines, one after the other in a fresh clone
    whose config.yaml is made small; each ends well, and each translation prints a line per
    sentence (or per n-best entry)."""
    venv = Path(sys.executable).parent.parent
    project = fresh_clone(tmp_path / "project")
    (project / ".venv").symlink_to(venv)
    (project / ".installed-core").touch()
    small_default_config(project)
    (tmp_path / "home").mkdir()
    env = offline(tmp_path / "home") | {"PYTHON": sys.executable}
    usage, training = commands(GETTING_STARTED, "Usage"), commands(GETTING_STARTED, "Training")
    assert len(usage) == 16 and len(training) == 3
    printed = []
    for number, line in enumerate(usage + training):
        if number == len(usage):
            fine_tuning_corpus(project)
        done = subprocess.run(
            ["bash", "-c", line], cwd=project, env=env, stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=HANG,
        )  # fmt: skip
        assert done.returncode == 0, (line, done.stderr[-2000:])
        assert "Traceback" not in done.stderr, line
        if (
            line.startswith("python -m seq2seq.translate")
            or "| python -m seq2seq.translate" in line
        ):
            printed.append(len(done.stdout.splitlines()))
    assert printed == USAGE_PRINTS
    assert (project / "avg.pt").exists() and (project / "runs/mine/eval.json").exists()
    for picture in ("attention.png", "curves.png"):
        assert (project / "runs/numbers" / picture).stat().st_size > 0


PACKAGE_PAGE = "docs/package.md"
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


def run_each(lines: list[str], project: Path, env: dict[str, str]) -> None:
    """Each command line with bash in `project`: each ends with 0, without a traceback."""
    for line in lines:
        done = subprocess.run(
            ["bash", "-c", line], cwd=project, env=env, capture_output=True, text=True,
            timeout=HANG,
        )  # fmt: skip
        assert done.returncode == 0, (line, (done.stdout + done.stderr)[-3000:])
        assert "Traceback" not in done.stderr, line


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


MULTI30K = ROOT.parent / "shared/corpora/multi30k"  # beside the project (CI has it too)


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
