"""A fine-tuned model given back to LibreTranslate: packaged as its original was, served by
LibreTranslate 1.9.6 (the real server, benchmarks/service/contenders.py) and by our
service, both asked the same strings through LibreTranslate's API -> how many answers differ.

    python -m benchmarks.adapt.served CHECKPOINT STRINGS_FILE [--strings 200]
        [--libretranslate-python benchmarks/.venv-libretranslate/bin/python]

    CHECKPOINT --python -m seq2seq.export argos--> PACKAGE.argosmodel (the original's pair,
        a newer package_version, int8 where the original's weights were)
    the first --strings lines of STRINGS_FILE, one request each, POST /translate {q, source,
    target}, to LibreTranslate at its defaults (beam 4; ARGOS_INTRA_THREADS=1) and to ours
    serving the package with "placeholders": "off" (LibreTranslate protects none)
      -> the strings whose answers differ (0 expected: our Argos engine decodes as Argos does),
         and how many of them our sentence splitter (sentencex) cuts into several sentences:
         LibreTranslate here splits with spaCy's rule-based sentencizer, standing in for its
         own MiniSBD, whose model it would download (contenders.py), and where the
         two splitters cut a string differently its sentences are not the same inputs

Called by benchmarks/adapt/target.py (make bench-adapt) when LibreTranslate's venv is there
(make benchmarks/.venv-libretranslate/.installed).
"""

import argparse
import json
import sys
import tempfile
from pathlib import Path

from benchmarks.common import ROOT, run
from benchmarks.service.clients import Shape, ask
from benchmarks.service.contenders import PYTHON as LIBRETRANSLATE_PYTHON
from benchmarks.service.contenders import contender
from seq2seq.exports.argos_package import package_metadata
from seq2seq.support.errors import run_cli
from seq2seq.text.sentences import split

BEAM = 4  # Argos's, LibreTranslate's default


def compare(checkpoint: Path, strings: list[str], python: Path) -> dict:
    """`checkpoint` packaged, served by LibreTranslate and by ours: the strings answered
    differently."""
    return compared(*answers(checkpoint, strings, python), strings)


def answers(checkpoint: Path, strings: list[str], python: Path) -> tuple[dict, list, list]:
    """`checkpoint` packaged, served by LibreTranslate and by ours: the package's facts, and
    each server's answers to `strings` (LibreTranslate's None where it did not answer)."""
    with tempfile.TemporaryDirectory(prefix="served-") as tmp:
        package = Path(tmp) / "tuned.argosmodel"
        export = ["seq2seq.export", "argos", "--checkpoint", str(checkpoint), str(package)]
        run([sys.executable, "-m", *export])
        metadata = package_metadata(package)
        facts = {key: metadata[key] for key in ("from_code", "to_code", "package_version")}
        shape = Shape.libretranslate(facts["from_code"], facts["to_code"])
        with contender("libretranslate", [package], BEAM, python=python) as server:
            theirs = [ask(server.url, shape, s)[1] for s in strings]  # None: not answered
        with contender("ours", [package], BEAM, config=str(ROOT / "config.yaml")) as ours:
            mine = [answer(ours.url, shape, s) for s in strings]
    return facts, theirs, mine


def compared(facts: dict, theirs: list, mine: list, strings: list[str]) -> dict:
    """How many of `strings` the two servers answered differently, and how many of those
    our splitter cuts into several sentences."""
    differ = [i for i, (a, b) in enumerate(zip(theirs, mine, strict=True)) if a != b]
    source = facts["from_code"]
    several = {i for i, text in enumerate(strings) if len(split(text, source).sentences) > 1}
    return {**facts, "strings": len(strings), "differ": len(differ),
            "several_sentences": len(several), "differ_several": len(several.intersection(differ)),
            "examples": [[strings[i], theirs[i], mine[i]] for i in differ[:5]]}  # fmt: skip


def answer(url: str, shape: Shape, text: str) -> str:
    """Our service's answer on LibreTranslate's route, placeholders as LibreTranslate treats
    them (not protected)."""
    status, translation = ask(url, Shape(shape.api, {**shape.fields, "placeholders": "off"}), text)
    if status != 200:
        sys.exit(f"our service answered {status} to {text!r}")
    return translation


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="benchmarks.adapt.served", description=__doc__)
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("strings", type=Path)
    parser.add_argument("--strings", dest="count", type=int, default=200)
    parser.add_argument("--libretranslate-python", type=Path, default=LIBRETRANSLATE_PYTHON)
    args = parser.parse_args(argv)
    lines = args.strings.read_text("utf-8").splitlines()[: args.count]
    print(json.dumps(compare(args.checkpoint, lines, args.libretranslate_python), indent=1))


if __name__ == "__main__":
    run_cli(main)
