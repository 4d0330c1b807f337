"""serve.watch_versions_s (seq2seq/serving/versions.py): a version written while the service
serves is swapped in under load, with one worker or two, no request failed, none answered but
by one of the two models, only the new one after the swap; the old engine freed; a damaged
version said and kept out, the old one serving."""

import json
import re
import shutil
import threading
import time
import urllib.request
import weakref
from pathlib import Path

import pytest

from benchmarks.service.process import stop_server
from seq2seq.checkpoint import load_checkpoint, save_checkpoint
from seq2seq.config import Config
from seq2seq.decoding.engine_choice import load_engine
from seq2seq.decoding.engines import translate_texts
from seq2seq.serving import versions
from seq2seq.serving.loaders import load_models
from seq2seq.support.paths import CURRENT, VERSION_ABOUT, VERSIONS, served_version
from seq2seq.text.sentences import Texts

from helpers import HANG, call, damage, read_address, running, start_server, wait_until

TEXTS = ["one is one", "two is two", "three is three"]
CLIENTS, REQUESTS = 6, 100  # concurrent clients; requests at least before the swap, and after


def other_model(checkpoint: Path, to: Path) -> None:
    """A version of `checkpoint` that translates otherwise: its output rows of the tokens 1
    and 2 exchanged ("one is one" -> "2 la 2")."""
    found = load_checkpoint(checkpoint)
    [one], [two] = found.tgt_vocab.encode(["1", "2"])  # a token each
    weights = found.model.generator.weight.data
    weights[[one, two]] = weights[[two, one]]
    to.parent.mkdir(parents=True, exist_ok=True)
    save_checkpoint(to, found.config, found.model, found.src_vocab, found.tgt_vocab, found.info)


def translations(checkpoint: Path) -> list[str]:
    """TEXTS as the service translates them with `checkpoint` (--engine torch)."""
    engine = load_engine(checkpoint=checkpoint, choice="torch")
    return translate_texts(engine, Texts(TEXTS), engine.config.decode).translations


@pytest.fixture
def experiment(seed_run, tmp_path) -> Path:
    """A copy of the seed run's best.pt in runs/seed/ of its own, and versions/0001/best.pt
    that translates TEXTS otherwise (not yet `current`)."""
    run_dir = tmp_path / "runs/seed"
    run_dir.mkdir(parents=True)
    shutil.copy(seed_run / "best.pt", run_dir / "best.pt")
    other_model(run_dir / "best.pt", run_dir / VERSIONS / "0001/best.pt")
    return run_dir


def serve(version: str | None, run_dir: Path) -> None:
    """versions/current names `version` (None: removed), written as a new file and renamed."""
    current = run_dir / VERSIONS / CURRENT
    if version is None:
        current.unlink()
        return
    written = current.with_suffix(".new")
    written.write_text(version + "\n")
    written.replace(current)


def loaded_in(url: str) -> int:
    """How many workers have built their service, the model loaded (GET /metrics): a worker
    that starts after versions/current changed loads that version, and has nothing to swap."""
    metrics = urllib.request.urlopen(url + "metrics", timeout=HANG).read().decode()
    return int(float(re.search(r"^seq2seq_models_loaded\{.*\} (\S+)$", metrics, re.M).group(1)))


def load(url: str, until: threading.Event, answered: list) -> None:
    """A client: TEXTS again and again until `until`, each (sent at, status, translations)."""
    while not until.is_set():
        sent = time.monotonic()
        status, answer, _ = call(url, "POST", "/translate", {"text": TEXTS})
        answered.append((sent, status, answer.get("translations")))


@pytest.mark.parametrize("workers", [1, 2])
def test_a_version_is_swapped_in_under_load_nothing_failed(experiment, workers):
    """Clients ask all along; versions/0001 becomes current after REQUESTS answers, and they
    go on for REQUESTS more after the swap: every answer a 200 with one of the two models'
    translations, only the new one's after every worker said it swapped (the translations
    cached too: serve.translation_cache), and /info says the version. The version is written
    once every worker has started (a worker that starts later loads it, and says nothing)."""
    old, new = (
        translations(experiment / "best.pt"),
        translations(experiment / VERSIONS / "0001/best.pt"),
    )
    assert old != new
    process = start_server(
        "--checkpoint", str(experiment / "best.pt"), "--engine", "torch",
        f"serve.workers={workers}", "serve.watch_versions_s=0.05",
        "serve.translation_cache=100", "serve.metrics=true",
    )  # fmt: skip
    lines, until, answered = [], threading.Event(), []
    clients: list[threading.Thread] = []
    try:
        url = read_address(process)
        reader = threading.Thread(target=lambda: lines.extend(process.stderr), daemon=True)
        reader.start()
        clients = [
            threading.Thread(target=load, args=(url, until, answered)) for _ in range(CLIENTS)
        ]
        for client in clients:
            client.start()
        wait_until(lambda: len(answered) >= REQUESTS, "requests before the swap", process)
        wait_until(lambda: loaded_in(url) == workers, "every worker started", process)
        serve("0001", experiment)
        try:
            # what the workers said, counted in all they wrote: whole lines or not
            wait_until(lambda: "".join(lines).count("-> 0001") == workers, "the swaps")
        except AssertionError as hung:  # what each worker said, to tell why
            raise AssertionError(f"{hung}; the service said: {''.join(lines)[-4000:]}") from None
        swapped = time.monotonic()

        def after() -> list:
            return [said for sent, _, said in answered if sent > swapped]

        wait_until(lambda: len(after()) >= REQUESTS, "requests after the swap", process)
        until.set()
        for client in clients:
            client.join()
        assert {status for _, status, _ in answered} == {200}
        assert {tuple(said) for _, _, said in answered} == {tuple(old), tuple(new)}
        assert {tuple(said) for said in after()} == {tuple(new)}
        models = call(url, "GET", "/info")[1]["models"]
        assert [(m["version"], Path(m["path"]).parent.name) for m in models] == [("0001", "0001")]
        swaps = [line for line in lines if "-> 0001" in line]
        assert all(line.startswith("seed (en-digits): version original -> 0001") for line in swaps)
    finally:
        until.set()
        for client in clients:
            client.join(timeout=HANG)
        stop_server(process)


def test_the_old_engine_is_freed_and_a_damaged_version_is_kept_out(experiment, capsys):
    """Swapped to 0001, then back (versions/current removed), then to 0001 again: each time
    the engine swapped out is gone (nothing holds it: memory back to one model's); a damaged
    version named current is said on stderr, and the one served goes on answering."""
    [loader] = load_models([str(experiment / "best.pt")], Config(), "torch", "cpu")
    versions = experiment / VERSIONS
    shutil.copytree(versions / "0001", versions / "0002")
    damage(versions / "0002/best.pt")
    old, new = translations(experiment / "best.pt"), translations(versions / "0001/best.pt")
    with running(loader, watch_versions_s=0.01) as server:
        model = server.models.default

        def swap_to(version: str | None, expected: list[str]) -> None:
            was = weakref.ref(model.engine)
            serve(version, experiment)
            wait_until(lambda: model.version == version, f"version {version} served")
            wait_until(lambda: was() is None, "the engine swapped out freed")
            status, answer, _ = call(server.url, "POST", "/translate", {"text": TEXTS})
            assert (status, answer["translations"]) == (200, expected)

        swap_to("0001", new)
        swap_to(None, old)
        swap_to("0001", new)
        serve("0002", experiment)
        wait_until(lambda: "0002 is not served" in capsys.readouterr().err, "the refusal")
        status, answer, _ = call(server.url, "POST", "/translate", {"text": TEXTS})
        assert (status, answer["translations"], model.version) == (200, new, "0001")
        assert call(server.url, "GET", "/info")[1]["models"][0]["version"] == "0001"


def verdicts(run_dir: Path, **found: str) -> None:
    """version.json for each version named (v0001="served"): its gate's verdict."""
    for name, verdict in found.items():
        about = {"verdict": verdict, "made": "2026-11-29T00:00:00", "reason": "a test's"}
        (run_dir / VERSIONS / name[1:] / VERSION_ABOUT).write_text(json.dumps(about))


@pytest.mark.parametrize(
    "broken, kept, expected",
    [("0003", {"v0002": "kept aside"}, "0001"), ("0001", {"v0002": "served"}, None)],
    ids=["the newest served before it", "the original, not a version after it"],
)
def test_a_broken_version_named_at_start_is_passed_over(experiment, capsys, broken, kept, expected):
    """versions/current names a damaged version at start: the service starts all the same,
    serving the newest version before it that its gate served (0002 was kept aside), else
    the original (0002 came after 0001: a roll back went back from it), and says so."""
    versions = experiment / VERSIONS
    for name in ("0002", "0003"):
        shutil.copytree(versions / "0001", versions / name)
    verdicts(experiment, v0001="served", v0003="served", **kept)
    damage(versions / broken / "best.pt")
    serve(broken, experiment)
    [loader] = load_models([str(experiment / "best.pt")], Config(), "torch", "cpu")
    said = capsys.readouterr().err
    assert f"version {broken} cannot be served: {versions / broken / 'best.pt'} is damaged" in said
    assert loader.versions.first == expected
    replacement = "version 0001, the newest" if expected else f"the original, {experiment}"
    assert f"warning: {experiment}: serving {replacement}" in said
    served = versions / "0001/best.pt" if expected else experiment / "best.pt"
    with running(loader) as server:
        status, answer, _ = call(server.url, "POST", "/translate", {"text": TEXTS})
        assert (status, answer["translations"]) == (200, translations(served))
        assert server.models.default.version == expected


def test_a_turn_that_fails_is_said_and_the_watcher_goes_on(experiment, monkeypatch, capsys):
    """versions/current unreadable for a turn (an exception the watcher does not expect): one
    line on stderr, and the next turns swap as ever (the thread did not end)."""
    failures = [OSError("Input/output error")]

    def unreadable_once(run_dir: Path) -> str | None:
        if failures:
            raise failures.pop()
        return served_version(run_dir)

    monkeypatch.setattr(versions, "served_version", unreadable_once)
    [loader] = load_models([str(experiment / "best.pt")], Config(), "torch", "cpu")
    with running(loader, watch_versions_s=0.01) as server:
        serve("0001", experiment)
        wait_until(lambda: server.models.default.version == "0001", "version 0001 served")
    said = capsys.readouterr().err
    assert "warning: the versions' watcher: OSError: Input/output error" in said
