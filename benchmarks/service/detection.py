"""`make bench-detect`: which language detector the service's `source: "auto"` and /detect use.
py3langid, lingua, langdetect and the service's pick of two (seq2seq/documents/detection.py)
against LibreTranslate 1.9.6's own detector (langdetect, and LexiLang for texts under 20
characters), each choosing among the same languages, on the same held-out texts, in one run.

    python -m benchmarks.service.detection [--corpus ../shared/corpora/multi30k]
        [--libretranslate-python benchmarks/.venv-libretranslate/bin/python] [--out DIR]

Texts: the Multi30k test sets (2016 and 2017 Flickr, 2,000 sentences a language) in German
and English, whole, and their first 1, 2 and 3 words (short inputs: what a user types into a
box). Each detector picks one of {de, en}; no answer counts as a wrong one.
Figures: accuracy on each kind of text, microseconds per text (one thread, in process), and
the installed size of each library -> <out>/detection.{json,md}.
"""

import sys
from importlib import metadata
from pathlib import Path

from benchmarks import common
from benchmarks.service.contenders import PYTHON as LIBRETRANSLATE_PYTHON
from seq2seq.documents.detection import Detector
from seq2seq.text.parallel import read_lines

LANGUAGES = ("de", "en")
FILES = ("test_2016_flickr", "test_2017_flickr")
KINDS = {"whole": None, "1 word": 1, "2 words": 2, "3 words": 3}
LIBRARIES = {"py3langid": ["py3langid"], "lingua": ["lingua-language-detector"],
             "langdetect": ["langdetect"]}  # fmt: skip
OURS = "seq2seq's pick: lingua for one word, py3langid for more (the service's)"

LIBRETRANSLATE = """
import json, sys, time
from libretranslate.detect import Detector
detector = Detector(sys.argv[1].split(","))
texts = json.load(sys.stdin)
start = time.perf_counter()
found = [detector.detect(text)[0].code for text in texts]
json.dump({"found": found, "seconds": time.perf_counter() - start}, sys.stdout)
"""


def texts(corpus: Path) -> dict[str, list[tuple[str, str]]]:
    """Each kind of text: (text, its language) pairs."""
    sentences = []
    for name in FILES:
        for language in LANGUAGES:
            lines = read_lines(corpus / f"{name}.{language}.gz")
            sentences += [(line.strip(), language) for line in lines if line.strip()]
    return {
        kind: [(" ".join(s.split()[:words]) if words else s, lang) for s, lang in sentences]
        for kind, words in KINDS.items()
    }


def py3langid():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE)
    identifier.set_languages(list(LANGUAGES))
    return lambda text: identifier.classify(text)[0]


def lingua():
    from lingua import IsoCode639_1, LanguageDetectorBuilder

    codes = [getattr(IsoCode639_1, code.upper()) for code in LANGUAGES]
    detector = LanguageDetectorBuilder.from_iso_codes_639_1(*codes).build()

    def detect(text: str) -> str | None:
        found = detector.detect_language_of(text)
        return found.iso_code_639_1.name.lower() if found else None

    return detect


def langdetect():
    from langdetect import DetectorFactory, LangDetectException, detect_langs

    DetectorFactory.seed = 0

    def detect(text: str) -> str | None:
        try:
            return next((f.lang for f in detect_langs(text) if f.lang in LANGUAGES), None)
        except LangDetectException:
            return None

    return detect


def in_process(detect, pairs: list[tuple[str, str]]) -> dict:
    """detect() on each text, in this process: figures()."""
    seconds, found = common.timed(lambda: [detect(text) for text, _ in pairs])
    return figures(found, seconds, pairs)


def libretranslates(python: Path, pairs: list[tuple[str, str]]) -> dict:
    """LibreTranslate's detector in its venv's Python: the texts on its stdin, what it found
    and its seconds (its imports left out) on its stdout."""
    command = [str(python), "-c", LIBRETRANSLATE, ",".join(LANGUAGES)]
    answer = common.run_json(command, [text for text, _ in pairs])
    return figures(answer["found"], answer["seconds"], pairs)


def figures(found: list, seconds: float, pairs: list[tuple[str, str]]) -> dict:
    """Accuracy, and microseconds per text."""
    right = sum(f == language for f, (_, language) in zip(found, pairs, strict=True))
    return {"accuracy": right / len(pairs), "us_per_text": 1e6 * seconds / len(pairs)}


def installed_mib(distribution: str) -> float:
    files = metadata.distribution(distribution).files or []
    return sum(f.size or 0 for f in files) / 2**20


def markdown(results: dict) -> str:
    about = (
        f"{results['texts']:,} texts of each kind (the Multi30k 2016 and 2017 test sets, "
        f"{' and '.join(LANGUAGES)}), each detector choosing among {', '.join(LANGUAGES)}."
    )
    header = ["detector", *(f"accuracy, {kind}" for kind in KINDS), "µs per text (whole)",
              "installed MiB"]  # fmt: skip
    rows = [
        [name, *(f"{row[kind]['accuracy']:.3f}" for kind in KINDS),
         f"{row['whole']['us_per_text']:,.0f}",
         f"{row['installed_mib']:.1f}" if row.get("installed_mib") else "-"]
        for name, row in results["detectors"].items()
    ]  # fmt: skip
    return common.service_page(
        "Language detection", results, "detection", about, common.markdown_table(header, rows)
    )


def main() -> None:
    parser = common.arguments(__doc__, out=common.RESULTS)
    parser.add_argument(
        "--corpus", type=Path, default=common.ROOT.parent / "shared/corpora/multi30k"
    )
    parser.add_argument("--libretranslate-python", type=Path, default=LIBRETRANSLATE_PYTHON)
    args = parser.parse_args()
    kinds = texts(args.corpus)
    ours = Detector(list(LANGUAGES))
    detectors = {
        "py3langid": py3langid(),
        "lingua": lingua(),
        "langdetect": langdetect(),
        OURS: lambda text: ours.detect(text)[0][0],
    }
    rows: dict = {}
    for name, detect in detectors.items():
        libraries = LIBRARIES.get(name, ("py3langid", "lingua-language-detector"))
        rows[name] = {"installed_mib": sum(map(installed_mib, libraries))}
        rows[name] |= {kind: in_process(detect, pairs) for kind, pairs in kinds.items()}
        print(name, rows[name], flush=True)
    if args.libretranslate_python.exists():
        name = "LibreTranslate 1.9.6 (langdetect; LexiLang under 20 characters)"
        python = args.libretranslate_python
        rows[name] = {kind: libretranslates(python, pairs) for kind, pairs in kinds.items()}
        print(name, rows[name], flush=True)
    else:
        print(f"no LibreTranslate at {args.libretranslate_python}: its row is left out")
    results = {"machine": common.machine(), "texts": len(kinds["whole"]), "detectors": rows}
    common.save_results(args.out / "detection", results, markdown(results))


if __name__ == "__main__":
    sys.exit(main())
