"""`python -m seq2seq.improve`: the model made better on its users' corrections, in the
background, safely: a fine-tune from the experiment's original best.pt, a gate, a version.

    python -m seq2seq.improve --config CONFIG --suggestions FILE [--minutes 10]
                              [--max-test-loss 1.0] [--database URL] [key.sub=value ...]
    python -m seq2seq.improve --config CONFIG --list
    python -m seq2seq.improve --config CONFIG --ask TEXTS [--count 20]
    python -m seq2seq.improve --config CONFIG --rollback [NNNN|original] [--force]

    runs/<experiment>/versions/improving.lock taken: one improvement of an experiment at a time
    (and with --database, the service's PostgreSQL, a lock there: across machines; started by
    a service: stopped once it is gone, end_with_starter)
    -> versions/<NNNN>/: the corrections for the config's pair, split (a held-out share), a
       replay of the original training pairs, the fine-tuning config (training/improvement.py;
       key.sub=value overrides apply to it: train.keep_teacher=0.3)
    -> `make data`, `make train` of that config, in data/ and runs/<experiment>.improve/ (the
       experiment's own files untouched); its best.pt -> versions/<NNNN>/best.pt, the run's
       folders removed
    -> the gate (training/gate.py) -> versions/<NNNN>/version.json; passed: what the
       service's engine makes of a checkpoint made (its CTranslate2 export, beside it), then
       versions/current names it (training/versions.py), which the service swaps in

Always from the original best.pt, never from the version served: a correction removed from
the file (python -m seq2seq.suggestions remove) is forgotten by the next improvement.

--ask: which corrections to ask a person for first. TEXTS (a file, a text a line; - for stdin:
say, the strings your users translated lately, or a program's new ones) are translated by the
version served, and the `--count` least sure (seq2seq/decoding/confidence.py) printed first,
a line each: confidence, text and translation, separated by tabs. Their corrections, sent as
suggestions (POST /suggest, `python -m seq2seq.suggestions import`), teach the next improvement
what the model knows least.
"""

import argparse
import contextlib
import datetime
import fcntl
import hashlib
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from seq2seq import data
from seq2seq.config import Config, add_config_arguments, load_config
from seq2seq.decoding.confidence import calibration_of, confidence_of
from seq2seq.decoding.engine_choice import load_engine, prepare
from seq2seq.decoding.engines import languages_of, one_line, translate_texts
from seq2seq.support.database import held_lock, shown
from seq2seq.support.errors import UserError, command_parser, run_cli, say, warn
from seq2seq.support.files import file_hash, write_json
from seq2seq.support.paths import (
    BEST,
    IMPROVING,
    STARTED_BY,
    VERSION_ABOUT,
    VERSIONS,
    served_checkpoint,
    version_folder,
)
from seq2seq.text.parallel import read_parallel, utf8_lines
from seq2seq.text.sentences import Texts
from seq2seq.train import train
from seq2seq.training import gate, improvement, versions

MINUTES = 10.0  # --minutes: the training's budget
MAX_TEST_LOSS = 1.0  # --max-test-loss: the original test set's BLEU an improvement may lose
ASKED = 20  # --count: how many of the least sure texts --ask prints
WATCH_S = 1.0  # how often a started one looks whether that process is still there


def main(argv: list[str] | None = None) -> None:
    args = parse_arguments(argv)
    end_with_starter()
    config = load_config(args.config)
    run_dir = config.run_dir
    if args.list:
        print("\n".join(versions.listed(run_dir)))
    elif args.ask:
        for sure, text, translation in least_sure(config, read_texts(args.ask), args.count):
            print(f"{sure:.2f}\t{one_line(text)}\t{translation}")
    elif args.rollback:
        print(versions.roll_back(run_dir, args.rollback, args.force))
    else:
        improve(
            config, args.suggestions, args.minutes, args.max_test_loss, args.overrides,
            args.database,
        )  # fmt: skip


def end_with_starter() -> None:
    """Started by a service (STARTED_BY names its process): a thread that stops this command,
    as a SIGTERM does (training saves, then exits), once that process is gone (killed: this
    one is then another's child), so that no improvement runs on alone."""
    starter = os.environ.get(STARTED_BY)
    if starter is None:
        return

    def watch() -> None:
        while os.getppid() == int(starter):
            time.sleep(WATCH_S)
        say(f"the service that started this (process {starter}) is gone: stopping")
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="starter", daemon=True).start()


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = command_parser("seq2seq.improve", __doc__.splitlines()[0])
    add_config_arguments(parser)
    parser.add_argument(
        "--suggestions",
        metavar="FILE",
        help="the service's suggestions file (serve.suggestions_file), or its database's URL "
        "(serve.database)",
    )
    parser.add_argument(
        "--database", metavar="URL",
        help="the service's serve.database (PostgreSQL): one improvement across its machines",
    )  # fmt: skip
    parser.add_argument(
        "--minutes", type=float, default=MINUTES, help=f"training budget (default {MINUTES:g})"
    )
    parser.add_argument(
        "--max-test-loss", type=float, default=MAX_TEST_LOSS, metavar="BLEU",
        help=f"test BLEU the new model may lose to the original (default {MAX_TEST_LOSS:g})",
    )  # fmt: skip
    parser.add_argument("--list", action="store_true", help="list the versions")
    parser.add_argument(
        "--ask", metavar="TEXTS",
        help="print the least sure translations of these texts (a file, a line each; -: stdin)",
    )  # fmt: skip
    parser.add_argument(
        "--count", type=int, default=ASKED, help=f"how many --ask prints (default {ASKED})"
    )
    parser.add_argument(
        "--rollback", nargs="?", const=versions.ORIGINAL, metavar="NNNN|original",
        help="serve an earlier version again, or the original (the default)",
    )  # fmt: skip
    parser.add_argument("--force", action="store_true", help="--rollback to a version kept aside")
    args = parser.parse_intermixed_args(argv)
    if not (args.list or args.rollback or args.suggestions or args.ask):
        parser.error("--suggestions FILE (or --list, --rollback or --ask)")
    if args.count < 1:
        parser.error("--count must be at least 1")
    if args.minutes <= 0:
        parser.error("--minutes must be positive")
    return args


def read_texts(name: str) -> list[str]:
    """The non-empty lines of the file `name` (- : stdin)."""
    if name == "-":
        return [line for line in utf8_lines(sys.stdin.buffer, "stdin") if line.strip()]
    try:
        with open(name, "rb") as file:
            return [line for line in utf8_lines(file, name) if line.strip()]
    except OSError as error:
        raise UserError(f"cannot read {name}: {error.strerror}") from None


def least_sure(config: Config, texts: list[str], count: int) -> list[tuple[float, str, str]]:
    """The `count` least sure of `texts`' translations by the version served, least sure
    first: (confidence, text, translation)."""
    engine = load_engine(config, served_checkpoint(config.run_dir))
    calibration = calibration_of(engine)  # its one-line error before anything is translated
    language = languages_of(engine)[0].code
    split = Texts(texts, language)
    translated = translate_texts(engine, split, engine.config.decode)
    sure = [
        confidence_of(calibration, each, one.sentences)
        for each, one in zip(translated.signals, split.splits, strict=True)
    ]
    ranked = sorted(zip(sure, texts, map(one_line, translated.translations), strict=True))
    return ranked[:count]


def improve(
    config: Config,
    suggestions: str | Path,
    minutes: float,
    max_test_loss: float,
    overrides: list[str],
    database: str | None = None,
) -> dict:
    """One improvement of the config's model, numbered and kept (one at a time: with
    `database`, across the machines that share it); its version.json."""
    run_dir, started = config.run_dir, time.perf_counter()
    original = run_dir / BEST
    if not original.is_file():
        raise UserError(f"no {original} to improve: run {config.make_command('train')} first")
    with one_at_a_time(run_dir, database):
        served, start = served_checkpoint(run_dir), file_hash(original)
        found = improvement.corrections(suggestions, config)
        taken = improvement.gathered(config, found)  # its faults said before a folder is made
        weight = improvement.weight_of(taken)
        folder = version_folder(run_dir, versions.next_number(run_dir))
        folder.mkdir(parents=True)
        improvement.write_data(config, taken, folder)
        say(f"{folder}: {described(found, taken, weight)}")
        tuning_file = improvement.write_config(config, folder, weight, minutes)
        best, model = fine_tune(tuning_file, overrides, folder)
        scores = gate_scores(config, folder, served, model, start)
        passed, reason = gate.verdict(scores["held_out"], scores["test"], max_test_loss)
        about = {
            "number": int(folder.name),
            "made": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "started_from": {"path": str(original), "sha256": start},
            "compared_with": {"path": str(served), "sha256": file_hash(served)},
            "trained_on": {
                "suggestions": shown(str(suggestions)), "corrections": found.read,
                "corrections_sha256": found.sha256, "training": len(found.train),
                "held_out": len(found.held_out), "weight": weight, "replay": len(taken["replay"]),
                "overrides": overrides,
            },
            "minutes": round(best["elapsed_s"] / 60, 2),
            "steps": best["step"],
            "scores": scores,
            "verdict": versions.SERVED if passed else versions.KEPT_ASIDE,
            "reason": reason,
            "seconds": round(time.perf_counter() - started),
        }  # fmt: skip
        write_json(folder / VERSION_ABOUT, about)
        if passed:
            prepared(model)
            versions.serve(run_dir, folder.name)
    say(f"version {folder.name}: {about['verdict']} ({reason}); {about['seconds']} s in all")
    return about


def prepared(model: Path) -> None:
    """`model` prepared as the service's engine would on its first load (its CTranslate2
    export), so that its swap only loads it; if that fails, said: the service makes it then."""
    try:
        prepare(model)
    except (OSError, RuntimeError, UserError) as error:
        warn(f"{model}: not prepared for the service ({error}); it will be as it swaps in")


@contextlib.contextmanager
def one_at_a_time(run_dir: Path, database: str | None = None) -> Iterator[None]:
    """Holds versions/improving.lock (flock: let go if the process dies), and with `database`
    (the service's serve.database, PostgreSQL) a lock of the experiment's there, which the
    instances on other machines see too: a second improvement of the same experiment is
    refused while one runs."""
    path = run_dir / VERSIONS / IMPROVING
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(f"{run_dir}: another improvement is under way ({path})") from None
        if database is None:
            yield
            return
        with held_lock(database, f"improving {run_dir.name}") as taken:
            if not taken:
                where = f"its lock in {shown(database)}"
                raise UserError(f"{run_dir}: another improvement is under way ({where})")
            yield


def described(found: improvement.Corrections, taken: dict[str, list], weight: int) -> str:
    held = (
        f"{len(found.held_out)} held out for the gate"
        if found.held_out
        else "none held out (too few: the gate uses the test set alone)"
    )
    return (
        f"{found.read} corrections for the pair, {len(found.train)} to train on (x{weight}), "
        f"{held}; {len(taken['replay']):,} original pairs replayed"
    )


def fine_tune(tuning_file: Path, overrides: list[str], folder: Path) -> tuple[dict, Path]:
    """`make data` and `make train` of the version's config, from scratch; its best
    validation, and its best.pt moved into the version's folder (the run's folders removed)."""
    tuning = load_config(tuning_file, overrides)
    for scratch in (tuning.run_dir, tuning.data_dir):
        shutil.rmtree(scratch, ignore_errors=True)
    data.main(["--config", str(tuning_file), *overrides])
    best = train(tuning, restart=True)
    model = folder / BEST
    shutil.move(tuning.checkpoint_path, model)
    for scratch in (tuning.run_dir, tuning.data_dir):
        shutil.rmtree(scratch)
    return best, model


def gate_scores(config: Config, folder: Path, served: Path, model: Path, start: str) -> dict:
    """The gate's scores: the held-out corrections by the model served and the new one (None
    without any), the test sample by the original (whose SHA-256 is `start`) and the new one."""
    device = config.train.device
    held, test = (read_parallel(*improvement.pair_files(config, folder, name))
                  for name in ("held_out", "test"))  # fmt: skip
    held_scores = None
    if held:
        old = gate.scored(served, held, device, "held-out corrections, the model served")
        new = gate.scored(model, held, device, "held-out corrections, the new model")
        held_scores = {
            **{f"{metric}_old": old[metric] for metric in ("chrf", "bleu")},
            **{f"{metric}_new": new[metric] for metric in ("chrf", "bleu")},
            "sentences": len(held),
        }
    sample = hashlib.sha256(
        "".join(map(file_hash, improvement.pair_files(config, folder, "test"))).encode()
    ).hexdigest()
    before = scored_before(config.run_dir, start, sample)
    if before is None:
        before = gate.scored(config.run_dir / BEST, test, device, "test sample, the original")
    after = gate.scored(model, test, device, "test sample, the new model")
    return {
        "held_out": held_scores,
        "test": {
            "bleu_original": before["bleu"],
            "bleu_new": after["bleu"],
            "sentences": len(test),
            "sample_sha256": sample,
        },
    }


def scored_before(run_dir: Path, start: str, sample: str) -> dict | None:
    """The original's BLEU on the test sample from the gate of an earlier version that started
    from the same original (SHA-256 `start`) and was gated on the same sample (`sample`):
    the original is decoded once, not at every improvement."""
    for name, about in reversed(versions.versions(run_dir).items()):
        test = about["scores"]["test"]
        if about["started_from"]["sha256"] == start and test.get("sample_sha256") == sample:
            say(f"gate: test sample, the original: BLEU {test['bleu_original']:.2f} "
                f"(version {name}'s gate)")  # fmt: skip
            return {"bleu": test["bleu_original"]}
    return None


if __name__ == "__main__":
    run_cli(main)
