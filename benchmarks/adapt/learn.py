"""`make bench-learn`: the service learning from its users' corrections, replayed offline. A
held-out program's catalog is played in order as a translator would: each string translated,
then its human translation sent as a correction -> benchmarks/results/learn.{json,md}.

    python -m benchmarks.adapt.learn [--config configs/standin_en_de.yaml] [--programs git]
        [--strings 400] [--fuzzy 0.75] [--no-improve]

    the strings  the first --strings translated entries of --programs' catalogs (of the
                 held-out group, never trained on: localization/catalogs.py), in catalog order, each
                 once; the first half teaches, the later half is measured
    alone        the model alone: every string translated, nothing sent
    memory       a fresh service, serve.memory and memory_fuzzy: each string translated, then
                 its correction sent (POST /suggest, LibreTranslate's)
    learning     the same (unless --no-improve), with serve.improve_after the first half's
                 corrections that its checks keep: the service runs python -m seq2seq.improve
                 (its default budget, 10 minutes) once the first half is played; the later
                 half is played once its verdict is in (served: swapped in,
                 serve.watch_versions_s), on a copy of the experiment (<experiment>_learn)
    then         each run asks every string again: a repeat error is a string whose correction
                 was kept (alone: any string) answered otherwise
 -> chrF and BLEU (sacreBLEU) over the later half for each; repeat errors; the corrections
    refused (the service's checks); the improvement's seconds from the last correction to its
    verdict (and swap), its CPU seconds and the service's peak resident memory meanwhile, its
    scores; the service's CPU seconds and resident memory.
"""

import contextlib
import os
import shutil
import signal
import time
from pathlib import Path

import sacrebleu
import yaml

from benchmarks import common
from benchmarks.service.process import (
    Service,
    get_json,
    post_json,
    resident_mib,
    running_server,
    spending,
    waited_cpu_seconds,
)
from seq2seq.config import load_config
from seq2seq.localization import catalogs
from seq2seq.serving.checks import SuggestionChecks
from seq2seq.serving.refusals import Unwanted
from seq2seq.support.errors import UserError, run_cli

OUT = Path("benchmarks/results/learn")
CATALOGS = Path("/usr/share/locale/de/LC_MESSAGES")
WAIT_S = 3600  # for an improvement's verdict, at most
BATCH = 16  # strings a request when nothing is sent between them


def strings(folder: Path, programs: list[str], count: int, pair: tuple[str, str]) -> list:
    """The first `count` translated (source, reference) pairs of these held-out programs'
    catalogs, in their order, each source once."""
    held = catalogs.catalog_files(folder, "held_out")
    chosen = [path for path in held if path.stem in programs]
    if missing := set(programs) - {path.stem for path in chosen}:
        known = ", ".join(sorted(path.stem for path in held))
        raise UserError(f"--programs: {', '.join(sorted(missing))} not held out; held out: {known}")
    pairs = dict(catalogs.read_catalogs(chosen, pair, {}))
    return list(pairs.items())[:count]


def translate(url: str, texts: list[str], pair: tuple[str, str]) -> list[str]:
    """Our /translate's translations of `texts`, BATCH a request."""
    found = []
    for start in range(0, len(texts), BATCH):
        asked = {"text": texts[start : start + BATCH], "source": pair[0], "target": pair[1]}
        status, answer = post_json(url, "/translate", asked)
        if status != 200:
            raise UserError(f"the service answered {status}: {answer}")
        found += answer["translations"]
    return found


def play(url: str, pairs: list, pair: tuple[str, str]) -> tuple[list[str], set[str]]:
    """Each string translated, then its reference sent as a correction -> the answers, and the
    strings whose corrections were kept (the others refused by the service's checks)."""
    answers, kept = [], set()
    for source, reference in pairs:
        answers += translate(url, [source], pair)
        sent = {"q": source, "s": reference, "source": pair[0], "target": pair[1]}
        if post_json(url, "/suggest", sent)[0] == 200:
            kept.add(source)
    return answers, kept


def keepable(pairs: list, pair: tuple[str, str], most: int) -> int:
    """How many of these (source, reference) pairs the service's checks keep as corrections
    (serving/checks.py; the flooding limit opened): the first half's is the improvement's N."""
    checks, kept = SuggestionChecks(most), 0
    for source, reference in pairs:
        try:
            checks.check(source, reference, *pair)
            kept += 1
        except Unwanted:
            pass
    return kept


def scores(answers: list[str], references: list[str]) -> dict:
    return {
        "chrf": round(sacrebleu.corpus_chrf(answers, [references]).score, 2),
        "bleu": round(sacrebleu.corpus_bleu(answers, [references]).score, 2),
    }


def improvement(service: Service, pair: tuple[str, str]) -> dict:
    """The improvement the first half started, once its verdict is in (and, served, once the
    service serves it): its state in /info, the seconds waited, its CPU seconds (the service's
    waited child's) and the service's peak resident memory meanwhile, the child's included."""
    start, name, peak = time.monotonic(), "-".join(pair), 0.0
    cpu = waited_cpu_seconds(service.pid) or 0
    while time.monotonic() - start < WAIT_S:
        peak = max(peak, resident_mib(service.pid) or 0)
        info = get_json(service.url, "/info")[1]
        state = info["improvement"][name]
        if not state["running"] and state["exit_code"] is not None:
            served = state["served"]
            models = [m for m in info["models"] if (m["source"], m["target"]) == pair]
            versions = [m.get("version") for m in models]
            if served == state["last"]["version"] and versions != [served]:
                time.sleep(0.5)  # kept, not yet swapped in
                continue
            spent = (waited_cpu_seconds(service.pid) or 0) - cpu
            waited = round(time.monotonic() - start, 1)
            return {**state, "seconds": waited, "cpu_s": round(spent), "peak_mib": round(peak)}
        time.sleep(2)
    raise UserError(f"no verdict from the improvement in {WAIT_S} s: see {state['log']}")


def stop_improvements(config: str) -> None:
    """An improvement the later half started (serve.improve_after reached again) outlives the
    service (improving.py): stopped, as nothing measures it."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):  # it ended
            if "seq2seq.improve" in (args := cmdline.read_text()) and config in args:
                os.kill(int(cmdline.parent.name), signal.SIGTERM)


def replay(config: str, pairs: list, fuzzy: float | None, improve_after: int) -> dict:
    """One service, fresh suggestions: every string played (fuzzy None: the model alone,
    translated, nothing sent), the later half scored, the improvement (improve_after > 0)
    waited for after the first half, every string asked again."""
    named = load_config(config)
    pair = named.corpus.src_lang, named.corpus.tgt_lang
    suggestions = named.run_dir / "suggestions.db"
    for stale in suggestions.parent.glob(suggestions.name + "*"):
        stale.unlink()
    learning = fuzzy is not None
    overrides = [
        f"serve.suggestions_file={suggestions}",
        f"serve.suggestions={learning}",
        f"serve.memory={learning}",
        f"serve.memory_fuzzy={fuzzy or 0}",
        "serve.suggestions_per_hour=1000000",
        f"serve.improve_after={improve_after}",
        "serve.watch_versions_s=1",
        "serve.max_chars=100000",
        "serve.max_sentences=256",
        "serve.max_queue_work=1000000000",
    ]  # a catalog's strings: any length
    half, result = len(pairs) // 2, {}
    sources, references = [s for s, _ in pairs], [r for _, r in pairs]
    with running_server(["--model", config], config, overrides) as service:
        with spending(service, batches=False) as spent:
            if not learning:
                answers, kept = translate(service.url, sources, pair), set(sources)
            else:
                answers, kept = play(service.url, pairs[:half], pair)
                if improve_after:
                    result["improvement"] = improvement(service, pair)
                later, kept_later = play(service.url, pairs[half:], pair)
                answers, kept = answers + later, kept | kept_later
            again = translate(service.url, sources, pair)
        result["resident_mib"] = round(resident_mib(service.pid) or 0)
    stop_improvements(config)
    answered = zip(sources, references, again, strict=True)
    repeats = [a for s, r, a in answered if s in kept and a != r]
    result |= scores(answers[half:], references[half:])
    cpu = round(spent["cpu"] or 0, 1)
    result |= {"cpu_s": cpu, "kept": len(kept), "refused": len(pairs) - len(kept),
               "repeat_errors": len(repeats)}  # fmt: skip
    return result


def learning_copy(config: str) -> str:
    """A config of a copy of the experiment (<experiment>_learn, its best.pt copied, no
    versions), so that the improvements leave the experiment itself as it was."""
    named = load_config(config)
    if not named.checkpoint_path.is_file():
        raise UserError(f"{config}: no checkpoint at {named.checkpoint_path} (make standin)")
    copy = named.run_dir.with_name(f"{named.experiment}_learn")
    shutil.rmtree(copy, ignore_errors=True)
    copy.mkdir(parents=True)
    shutil.copy2(named.checkpoint_path, copy / named.checkpoint_path.name)
    path = copy / "config.yaml"
    path.write_text(yaml.safe_dump({"base": str(Path(config).resolve()),
                                    "experiment": copy.name}))  # fmt: skip
    return str(path)


def table(results: dict) -> str:
    rows = [
        [name, run["chrf"], run["bleu"], f"{run['repeat_errors']} of {run['kept']}",
         run["refused"], run["cpu_s"], run["resident_mib"]]
        for name, run in results["runs"].items()
    ]  # fmt: skip
    about = (
        f"{results['strings']} strings of {', '.join(results['programs'])} (held out), "
        f"the later {results['measured']} scored; {results['model']}; "
        f"serve.memory_fuzzy {results['fuzzy']}. {common.on_machine(results['machine'])}"
    )
    if found := results["runs"].get("learning", {}).get("improvement"):
        last = found["last"] or {}
        about += (
            f" The improvement: {last.get('verdict')} ({last.get('reason') or 'gate passed'}), "
            f"{found['seconds']} s from the first half's last correction, {found['cpu_s']} s "
            f"of CPU, the service's peak resident memory meanwhile {found['peak_mib']} MiB; "
            f"scores {last.get('scores')}."
        )
    header = ["run", "chrF, later half", "BLEU", "repeat errors", "corrections refused",
              "service CPU s", "resident MiB"]  # fmt: skip
    return common.page("Learning from corrections", common.markdown_table(header, rows, about))


def main(argv: list[str] | None = None) -> None:
    parser = common.arguments(__doc__, out=OUT, config="configs/standin_en_de.yaml")
    parser.add_argument("--programs", default="git", help="held-out catalogs, comma-separated")
    parser.add_argument("--strings", type=int, default=400)
    parser.add_argument("--fuzzy", type=float, default=0.75)
    parser.add_argument("--no-improve", action="store_true")
    args = parser.parse_args(argv)
    named = load_config(args.config)
    pair = named.corpus.src_lang, named.corpus.tgt_lang
    pairs = strings(CATALOGS, args.programs.split(","), args.strings, pair)
    copy = learning_copy(args.config)
    runs = {"alone": replay(copy, pairs, None, 0), "memory": replay(copy, pairs, args.fuzzy, 0)}
    if not args.no_improve:
        first = keepable(pairs[: len(pairs) // 2], pair, named.serve.suggestion_chars)
        runs["learning"] = replay(copy, pairs, args.fuzzy, first)
    results = {"programs": args.programs.split(","), "strings": len(pairs),
               "measured": len(pairs) - len(pairs) // 2, "model": str(named.checkpoint_path),
               "fuzzy": args.fuzzy, "runs": runs, "machine": common.machine()}  # fmt: skip
    common.save_results(args.out, results, table(results))


if __name__ == "__main__":
    run_cli(main)
