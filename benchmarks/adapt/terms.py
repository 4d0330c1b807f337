"""`make bench-terms`: how well glossaries are followed, by the stand-in (make standin) as it
is and taught terms (make terms), on Multi30k's test set and on held-out programs' catalogs,
with the right glossary, a random one and none -> benchmarks/results/terms.{json,md}.

    python -m benchmarks.adapt.terms [--plain CHECKPOINT] [--taught CHECKPOINT]
        [--catalogs DIR] [--sentences 1000]

    the tests, each with its glossary (docs/terms.md says why so):
      multi30k  test_2016_flickr, en -> de; the glossary: the term pairs drawn from the
                stand-in's training pairs (term_pairs.lexicon) that a test pair's reference
                confirms (term_pairs.terms_in), nouns (capitalised in German alone), ENTRIES
                of them drawn
      catalogs  the held-out programs' strings that hold a glossary term; the glossary:
                ENTRIES of their one-word entries ("Layer" -> "Ebene"; a word given two
                translations: the commonest), those whose translation is the word itself
                do-not-translate (names: "GtkApplication"; a lower-case one, "keep" in git,
                is a command's word left out)
      random    each test's glossary with every target swapped for another of its targets,
                drawn with a fixed seed (WMT 2023's random terms): wrong but plausible, so a
                model follows it or not, it cannot guess it
    each model and way (decode.terms: mask, annotate; none: no glossary; annotated text:
    the sources annotated, translated without a glossary, as LibreTranslate is sent them:
    the model alone, no masked retry) translates each test's sources as the service does
    (translate_texts, its own decoding, one thread)
      -> term use (terms.term_use: every target term of a source's glossary terms, an
         inflected form counted), do-not-translate entries verbatim, BLEU and chrF against
         the references, CPU ms per sentence (the process's CPU time)
    where LibreTranslate's venv is installed: the taught model packaged, served by
    LibreTranslate 1.9.6 and by ours, both sent 200 multi30k sources annotated
      (served.py) -> the answers that differ, LibreTranslate's term use
"""

import json
import random
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import sacrebleu
import torch

from benchmarks import common
from benchmarks.adapt.served import LIBRETRANSLATE_PYTHON, answers, compared
from benchmarks.adapt.tuning import MULTI30K
from seq2seq.config import Config, load_config
from seq2seq.decoding.engine_choice import described, load_engine
from seq2seq.decoding.engines import translate_texts
from seq2seq.localization import catalogs
from seq2seq.localization.term_pairs import lexicon, terms_in
from seq2seq.localization.terms import annotated, found_in, term_use
from seq2seq.support.errors import UserError, run_cli
from seq2seq.support.paths import text_files
from seq2seq.text.parallel import iter_parallel, read_lines
from seq2seq.text.sentences import Texts

OUT = common.RESULTS / "terms"
PLAIN = common.ROOT / "runs/standin_en_de/best.pt"  # make standin's
TAUGHT = common.ROOT / "runs/standin_en_de_terms/best.pt"  # make terms'
CONFIG = common.ROOT / "configs/standin_en_de.yaml"
CATALOGS = Path("/usr/share/locale/de/LC_MESSAGES")
# model -> its ways: decode.terms (mask, annotate), none (no glossary), or TEXT: the sources
# annotated, translated without a glossary (what LibreTranslate is sent: the model alone)
TEXT = "annotated text"
WAYS = {"plain": ("none", "mask"), "taught": ("none", TEXT, "annotate")}
SEED = 1
ENTRIES = 100  # a glossary's entries, drawn from those a test has: about one term a sentence


def multi30k_test(config: Config, count: int) -> dict:
    """Multi30k's test pairs and their glossary (the module's docstring)."""
    sources = read_lines(MULTI30K / "test_2016_flickr.en.gz")[:count]
    references = read_lines(MULTI30K / "test_2016_flickr.de.gz")[:count]
    pairs = lexicon(list(iter_parallel(*text_files(config.data_dir, "train"))))
    confirmed = {
        term.text.casefold()
        for source, reference in zip(sources, references, strict=True)
        for term in terms_in(source, reference, pairs)
        if term.target[:1].isupper() and term.text.islower()  # a German noun: a term's kind
    }
    chosen = random.Random(SEED).sample(sorted(confirmed), min(ENTRIES, len(confirmed)))
    return {"sources": sources, "references": references,
            "glossary": {word: pairs[word] for word in sorted(chosen)}}  # fmt: skip


def catalogs_test(folder: Path, count: int) -> dict:
    """The held-out programs' strings that hold one of their one-word entries, and those
    entries as the glossary (the module's docstring)."""
    paths = catalogs.catalog_files(folder, "held_out")
    pairs = list(dict.fromkeys(catalogs.read_catalogs(paths, ("en", "de"), {})))
    words: dict[str, Counter] = {}
    for source, target in pairs:
        if source.isalpha() and target.isalpha() and len(source) > 2:
            words.setdefault(source, Counter())[target] += 1
    entries = {source: targets.most_common(1)[0][0] for source, targets in words.items()}
    named = [(s, t) for s, t in entries.items() if s != t or s != s.lower()]  # not "keep"
    glossary = dict(sorted(random.Random(SEED).sample(named, min(ENTRIES, len(named)))))
    each = found_in([source for source, _ in pairs], glossary)
    held = [(s, t) for (s, t), terms in zip(pairs, each, strict=True) if " " in s.strip() and terms]
    chosen = random.Random(SEED).sample(held, min(count, len(held)))
    return {"sources": [s for s, _ in chosen], "references": [t for _, t in chosen],
            "glossary": glossary}  # fmt: skip


def randomized(glossary: dict[str, str]) -> dict[str, str]:
    """`glossary` with each target swapped for another of its targets (do-not-translate
    entries kept)."""
    targets = sorted({t for s, t in glossary.items() if s != t})
    draw = random.Random(SEED)
    return {
        s: t if s == t else draw.choice([other for other in targets if other != t] or [t])
        for s, t in glossary.items()
    }


def measured(engine, decoding, way: str, test: dict, glossary: dict | None) -> dict:
    """One model, one way, one test: term use, do-not-translate kept, BLEU, chrF, CPU."""
    sources, references = test["sources"], test["references"]
    given, terms = sources, glossary
    if way == TEXT:
        each = zip(sources, found_in(sources, glossary), strict=True)
        given, terms = [annotated(source, found)[0] for source, found in each], None
    start = time.process_time()
    outputs = translate_texts(engine, Texts(given), decoding, terms=terms).translations
    cpu = (time.process_time() - start) / len(sources)
    row = {"bleu": round(sacrebleu.corpus_bleu(outputs, [references]).score, 2),
           "chrf": round(sacrebleu.corpus_chrf(outputs, [references]).score, 2),
           "cpu_ms": round(1000 * cpu, 2)}  # fmt: skip
    if glossary:
        each = found_in(sources, glossary)
        translated = [[t for t in terms if not t.verbatim] for terms in each]
        verbatim = [[t for t in terms if t.verbatim] for terms in each]
        row["term_use"] = term_use(outputs, translated)._asdict()
        row["verbatim"] = term_use(outputs, verbatim)._asdict()
    return row


def run(models: dict[str, Path], tests: dict[str, dict]) -> dict:
    """Every model, way and glossary on every test."""
    torch.set_num_threads(1)
    rows = []
    for model, path in models.items():
        engine = load_engine(checkpoint=path, device="cpu")
        print(f"{model}: {described(engine)}")
        for way in WAYS[model]:
            decoding = engine.config.decode
            if way in ("mask", "annotate"):
                decoding = replace(decoding, terms=way)
            for name, test in tests.items():
                glossaries = {"none": None} if way == "none" else {
                    "right": test["glossary"], "random": randomized(test["glossary"])
                }  # fmt: skip
                for kind, glossary in glossaries.items():
                    row = measured(engine, decoding, way, test, glossary)
                    rows.append({"model": model, "way": way, "test": name, "glossary": kind, **row})
                    print(json.dumps(rows[-1]))
    return {"rows": rows}


def through_libretranslate(taught: Path, test: dict, count: int) -> dict:
    """The taught model packaged and served by LibreTranslate 1.9.6 and by ours (served.py),
    both sent the first `count` sources annotated with the test's glossary: the answers
    that differ, and the term use of LibreTranslate's."""
    sources = test["sources"][:count]
    each = found_in(sources, test["glossary"])
    texts = [annotated(source, terms)[0] for source, terms in zip(sources, each, strict=True)]
    facts, theirs, mine = answers(taught, texts, LIBRETRANSLATE_PYTHON)
    use = term_use([text or "" for text in theirs], each)._asdict()
    return {**compared(facts, theirs, mine, texts), "term_use": use}


def shown(path: Path) -> str:
    """A path as the table names it: from the checkout's root where it is inside it."""
    path = path.resolve()
    return str(path.relative_to(common.ROOT) if path.is_relative_to(common.ROOT) else path)


def share(counts: dict | None) -> str:
    if not counts or not counts["terms"]:
        return "-"
    return f"{100 * counts['used'] / counts['terms']:.1f}% of {counts['terms']:,}"


def served(compared: dict | None) -> list[str]:
    """The line on the taught model's package in LibreTranslate, if it was measured."""
    if compared is None:
        return ["LibreTranslate was not measured (its venv is not installed)."]
    return [
        f"The taught model's package (version {compared['package_version']}) in LibreTranslate "
        f"1.9.6, sent {compared['strings']} multi30k sources annotated (the right glossary): "
        f"term use {share(compared['term_use'])}; {compared['differ']} answers differ from our "
        f"service's to the same texts ({compared['differ_several']} of them split into "
        "several sentences by one server and not the other: served.py)."
    ]


def table(results: dict) -> str:
    header = ["model", "way", "test", "glossary", "term use", "do-not-translate kept",
              "BLEU", "chrF", "CPU ms / sentence"]  # fmt: skip
    rows = [
        [r["model"], r["way"], r["test"], r["glossary"], share(r.get("term_use")),
         share(r.get("verbatim")), r["bleu"], r["chrf"], r["cpu_ms"]]
        for r in results["rows"]
    ]  # fmt: skip
    t = results["tests"]
    notes = [
        f"Models: plain {results['models']['plain']}, taught {results['models']['taught']} "
        f"(`make terms`). Tests: multi30k, the first {t['multi30k']['sentences']:,} sentences "
        f"of test_2016_flickr, a glossary of {t['multi30k']['entries']:,} term pairs; catalogs, "
        f"{t['catalogs']['sentences']:,} strings of the held-out programs, a glossary of "
        f"{t['catalogs']['entries']:,} one-word entries ({t['catalogs']['verbatim']:,} "
        "do-not-translate). Each model decodes as its config says (the stand-in's: beam "
        f"{results['beam_size']}), one thread; term use counts inflected forms (docs/terms.md).",
        *served(results.get("libretranslate")),
        common.on_machine(results["machine"], "make bench-terms"),
    ]
    return common.page("Glossaries followed", common.markdown_table(header, rows, *notes))


def main(argv: list[str] | None = None) -> None:
    parser = common.arguments(__doc__, out=OUT)
    parser.add_argument("--plain", type=Path, default=PLAIN)
    parser.add_argument("--taught", type=Path, default=TAUGHT)
    parser.add_argument("--catalogs", type=Path, default=CATALOGS)
    parser.add_argument("--sentences", type=int, default=1000)
    args = parser.parse_args(argv)
    models = {"plain": args.plain, "taught": args.taught}
    for name, path in models.items():
        if not path.is_file():
            made = "make standin" if name == "plain" else "make terms"
            raise UserError(f"--{name}: no checkpoint at {path} (`{made}` makes it)")
    config = load_config(str(CONFIG))
    tests = {"multi30k": multi30k_test(config, args.sentences),
             "catalogs": catalogs_test(args.catalogs, args.sentences)}  # fmt: skip
    results = run(models, tests)
    results["models"] = {name: shown(path) for name, path in models.items()}
    results["beam_size"] = config.decode.beam_size
    results["tests"] = {
        name: {"sentences": len(test["sources"]), "entries": len(test["glossary"]),
               "verbatim": sum(s == t for s, t in test["glossary"].items())}
        for name, test in tests.items()
    }  # fmt: skip
    if LIBRETRANSLATE_PYTHON.exists():  # make benchmarks/.venv-libretranslate/.installed
        results["libretranslate"] = through_libretranslate(args.taught, tests["multi30k"], 200)
    results["machine"] = common.machine()
    common.save_results(args.out, results, table(results))


if __name__ == "__main__":
    run_cli(main)
