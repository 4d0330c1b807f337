"""Translate with a trained model.

    python -m seq2seq.translate "three is three"            # prints: 3 la 3
    python -m seq2seq.translate "one is one" "two is five"   # one output line per argument
    printf 'one is one\\ntwo is two\\n' | python -m seq2seq.translate   # one per input line
    python -m seq2seq.translate                              # interactive, on a terminal
    python -m seq2seq.translate --nbest 3 "three is three"   # the 3 best of beam search
    python -m seq2seq.translate --config configs/multi30k_de_en.yaml "Ein Hund. Ein Mann."
                                          # two sentences, translated each, on one line
    python -m seq2seq.translate --glossary terms.tsv "the layer"   # its terms followed

Line N of the output always answers line N of the input, so it works in a pipeline: input is
read and translated a chunk of `decode.batch_size` lines at a time, in bounded memory, and each
chunk's translations are written as soon as they are ready. An empty line gives an empty
line, and invalid UTF-8 is replaced (U+FFFD) with a warning. Words the vocabulary lacks are
still translated (as its unknown piece), with a warning on stderr naming them; an input
longer than the model's positions is cut to fit, with a warning.

A line of several sentences is split into them by the rules of the model's source language
(seq2seq/text/sentences.py; a line of one sentence is translated whole, as it is), and their
translations are joined with the white space that stood between them; --no-split translates
each line whole.

Placeholders and markup (%s, %1$s, {0}, %1, &Open, <b>, a literal \\n, Weblate's [X7X]: see
seq2seq/text/placeholders.py) are kept from the model and put back in the translation, each
exactly once (--placeholders off: translated as text).

With --glossary FILE (.tsv or .csv, DeepL's formats, or .tbx: seq2seq/localization/glossary.py,
for the model's pair), its terms are followed (seq2seq/localization/terms.py; an entry whose
target is its source comes back verbatim); a fault in it ends the command in one line naming
the file and the line, before anything is translated.

With --confidence, each translation is followed by a tab and its confidence: the chance,
from 0 to 1, that it is acceptable (seq2seq/decoding/confidence.py; docs/confidence.md: what it
does and does not promise), its sentences' weighted by their lengths.

With --nbest N, each input gets N lines "input number ||| translation ||| score" (numbered
from 0, best first; score = length-normalised log-probability; for a line of several
sentences, the Nth best of each joined, with the sum of their scores), searched with a beam
of at least N.

The model is runs/<experiment>/best.pt of the config (config.yaml by default), or the file
given with --checkpoint, which carries its own vocabularies and settings. Where CTranslate2 is
installed (the `export` extra; `make test` and `make package` install it), translations,
greedy and beam search, run in it, on an export of the checkpoint cached beside it
(runs/<experiment>/best.ct2/, made the first time): in float32 the same outputs, sooner
(seq2seq/decoding/engine_choice.py; `--engine torch`: our code alone), in the type
decode.compute_type names (auto: measured, seq2seq/decoding/compute_types.py). The engine and
its type are named on stderr at start ("decoding with ctranslate2 (translations), torch
(attention) on cpu in float32 (...)").
With --file report.docx, a document (.txt .html .srt .docx .pptx .odt .odp .epub:
seq2seq/documents/reading.py) is translated, its formatting kept, into report.<target>.docx
beside it (the target language's code; written whole or not at all), with a progress bar.

With `--engine ctranslate2 --model DIR` a model exported by `python -m seq2seq.export`
decodes in CTranslate2, in its own type (`--compute-type int8` quantizes it as it loads).

With --vmap CTranslate2 scores only the target pieces the export's vocabulary map lists for the
input's pieces; with --vmap DIR, those of a map made of the gettext catalogs under DIR (their
pairs of the model's languages, in its pieces: seq2seq/exports/vocab_map.py), for an export or
an Argos package (--model x.argosmodel), kept for the next run in ~/.cache/seq2seq/vmap.
"""

import itertools
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path

from tqdm import tqdm

from seq2seq.config import DEFAULT_CONFIG, is_override, load_config
from seq2seq.decoding.beam import beams_for
from seq2seq.decoding.confidence import calibration_of, confidence_of
from seq2seq.decoding.engine_choice import (
    add_engine_arguments,
    compute_type_set,
    described,
    load_engine,
)
from seq2seq.decoding.engines import Engine, languages_of, one_line, translate_texts
from seq2seq.decoding.warnings import numbered
from seq2seq.documents import reading
from seq2seq.localization.glossary import read_glossary
from seq2seq.support.errors import UserError, command_parser, run_cli, warn
from seq2seq.support.files import atomic_write
from seq2seq.text.parallel import utf8_lines
from seq2seq.text.sentences import Texts


def read_input_lines(stream) -> Iterator[str]:
    """The lines of a binary stream, as they come; invalid UTF-8 replaced by U+FFFD, with a
    warning."""

    def replaced(number: int, error: UnicodeDecodeError) -> None:
        warn(f"line {number}: invalid UTF-8 ({error.reason}) replaced by U+FFFD")

    return utf8_lines(stream, "stdin", on_invalid=replaced)


def chunks(lines: Iterator[str], size: int) -> Iterator[tuple[int, list[str]]]:
    """-> (number of the chunk's first line, counted from 1; up to `size` lines)."""
    first = 1
    while chunk := list(itertools.islice(lines, size)):
        yield first, chunk
        first += len(chunk)


def translate_lines(
    engine: Engine,
    lines: list[str],
    nbest: int | None = None,
    first_line: int = 1,
    language: str | None = None,
    terms: dict[str, str] | None = None,
    confidence: bool = False,
) -> list[str]:
    """The output lines for the input `lines`: one translation each (with `confidence`: a tab
    and its confidence after it), or `nbest` lines each. Each line is split into its
    sentences by the rules of `language` (None: translated whole), and the sentences of all
    lines are translated together, following `terms`."""
    texts = Texts(lines, language)
    translations, warnings, signals = translate_texts(
        engine, texts, engine.config.decode, nbest, terms
    )
    if nbest is None:  # a line out for a line in, whatever white space joined its sentences
        translations = [one_line(text) for text in translations]
        if confidence:
            sure = [
                confidence_of(engine.calibration, each, one.sentences)
                for each, one in zip(signals, texts.splits, strict=True)
            ]
            translations = [f"{text}\t{p:.2f}" for text, p in zip(translations, sure, strict=True)]
    else:
        translations = [
            f"{number} ||| {one_line(text)} ||| {score:.4f}"
            for number, hypotheses in enumerate(translations, first_line - 1)
            for score, text in hypotheses
        ]
    for message in numbered(warnings, first_line):
        warn(message)
    return translations


def main(argv: list[str] | None = None) -> None:
    args = parse_arguments(argv)
    config = None if args.checkpoint or args.model else load_config(args.config)
    engine = load_engine(
        config, args.checkpoint, args.engine, args.model, args.device, decode_flags(args),
    )  # fmt: skip
    print(f"decoding with {described(engine)}", file=sys.stderr, flush=True)
    if args.nbest is not None:
        engine.config.decode.beam_size = beams_for(engine.config.decode.beam_size, args.nbest)
    pair = [language.code for language in languages_of(engine)]
    terms = read_glossary(Path(args.glossary), *pair).entries if args.glossary else None
    language = None if args.no_split else pair[0]
    if args.confidence:
        calibration_of(engine)  # its one-line error, before anything is translated
    translated = partial(
        translate_lines, engine, nbest=args.nbest, language=language, terms=terms,
        confidence=args.confidence,
    )  # fmt: skip
    if args.file:
        print(translate_file(engine, Path(args.file), language, terms))
    elif args.sentences:
        print("\n".join(translated(args.sentences)))
    elif sys.stdin.isatty():  # interactive: one sentence at a time, until Ctrl-D
        print("type a sentence and press Enter (Ctrl-D to quit)", file=sys.stderr)
        for number in itertools.count(1):
            print("> ", end="", file=sys.stderr, flush=True)
            line = sys.stdin.readline()
            if not line:
                print(file=sys.stderr)
                return
            sentence = line.rstrip("\r\n")
            print("\n".join(translated([sentence], first_line=number)))
    else:  # a file or a pipe: a chunk at a time, in bounded memory, each written at once
        batch_size = engine.config.decode.batch_size
        for first, chunk in chunks(read_input_lines(sys.stdin.buffer), batch_size):
            lines = translated(chunk, first_line=first)
            sys.stdout.writelines(line + "\n" for line in lines)
            sys.stdout.flush()


def translate_file(
    engine: Engine, path: Path, language: str | None, terms: dict[str, str] | None = None
) -> Path:
    """The document at `path` translated beside it (report.docx -> report.<target>.docx),
    decode.batch_size texts at a time, following `terms`; the path written."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise UserError(f"cannot read {path}: {error.strerror}") from None
    document = reading.read(path.name, data, most_chars=sys.maxsize)
    decode, translations = engine.config.decode, []
    with tqdm(total=document.chars, unit="char", unit_scale=True, desc=path.name) as bar:
        for _, chunk in chunks(iter(document.texts), decode.batch_size):
            texts = Texts(chunk, language)
            translations += translate_texts(engine, texts, decode, terms=terms).translations
            bar.update(sum(map(len, chunk)))
    target = languages_of(engine)[1].code
    out = path.with_name(reading.translated_name(path.name, target))
    with atomic_write(out, "wb") as file:
        file.write(document.rebuilt(translations))
    return out


def parse_arguments(argv: list[str] | None):
    parser = command_parser(
        "seq2seq.translate", "Translate sentences given as arguments, or one per line on stdin."
    )
    parser.add_argument("sentences", nargs="*", help="sentences to translate (default: stdin)")
    parser.add_argument("--config", default=DEFAULT_CONFIG, help="experiment config (YAML)")
    add_engine_arguments(parser)
    parser.add_argument(
        "--beam-size", type=int, help="beams (default: the model's config; 1: greedy)"
    )
    parser.add_argument("--length-penalty", type=float, help="beam search length penalty alpha")
    parser.add_argument(
        "--no-repeat-ngram", type=int, metavar="N", help="no output repeats N pieces (0: off)"
    )
    parser.add_argument(
        "--nbest", type=int, metavar="N", help="print the N best translations of each input"
    )
    parser.add_argument(
        "--confidence", action="store_true",
        help="a tab and each translation's confidence (0-1: the chance it is acceptable) after it",
    )  # fmt: skip
    parser.add_argument(
        "--vmap", nargs="?", const=True, default=None, metavar="DIR",
        help="CTranslate2 scores only the target pieces a vocabulary map lists for the input's "
        "pieces: the export's own, or (DIR) one made of the gettext catalogs (.po, .mo) under "
        "DIR, for an export or an Argos package (--vmap alone takes a sentence after it for "
        "DIR: put it last); default: decode.vmap, false",
    )  # fmt: skip
    parser.add_argument(
        "--placeholders",
        choices=("protect", "off"),
        help="%%s, {0}, <b>, [X7X] ...: kept from the model and put back, each exactly once "
        "(protect), or translated as text (off); default: decode.placeholders, protect",
    )
    parser.add_argument(
        "--file",
        metavar="PATH",
        help="translate a document (.txt .html .srt .docx .pptx .odt .odp .epub) into "
        "PATH's name with the target language's code before its extension",
    )
    parser.add_argument(
        "--glossary",
        metavar="FILE",
        help="follow the terms of a glossary for the model's pair: .tsv or .csv (source, "
        "target: DeepL's formats) or .tbx; a target equal to its source is kept verbatim",
    )
    parser.add_argument(
        "--terms",
        choices=("auto", "annotate", "mask"),
        help="how the glossary's terms are followed: written into the source for a model "
        "taught terms (annotate) or kept from the model and given back (mask); default: "
        "decode.terms, auto (annotate for a model taught terms)",
    )
    parser.add_argument(
        "--no-split",
        action="store_true",
        help="translate each input whole (default: split it into its sentences)",
    )
    args = parser.parse_intermixed_args(argv)  # options before or after the sentences
    if args.file and (args.sentences or args.nbest):
        raise UserError("--file translates a document alone: no sentences, no --nbest with it")
    if args.confidence and (args.nbest or args.file):
        raise UserError("--confidence follows each translation: not with --nbest or --file")
    if isinstance(args.vmap, str) and not Path(args.vmap).is_dir():
        raise UserError(
            f"--vmap {args.vmap!r}: no such folder of catalogs (--vmap takes the argument after "
            "it as one: for the export's own map, put --vmap after the sentences)"
        )
    if overrides := [sentence for sentence in args.sentences if is_override(sentence)]:
        raise UserError(
            f"{overrides[0]!r} sets a config option, which translate does not take: the "
            "checkpoint holds its config; choose it with --checkpoint or --config, the "
            "decoding with --beam-size and --length-penalty (to translate that text, send it "
            "on stdin)"
        )
    args.sentences = [utf8_argument(n, text) for n, text in enumerate(args.sentences, 1)]
    return args


def utf8_argument(number: int, text: str) -> str:
    """An argument as text: bytes that are not UTF-8 (which Python's argv keeps as lone
    surrogates) replaced by U+FFFD, with a warning, as on stdin."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        warn(f"argument {number}: invalid UTF-8 replaced by U+FFFD")
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return text


def decode_flags(args) -> dict:
    """The decode settings that --beam-size, --length-penalty, --no-repeat-ngram,
    --placeholders, --vmap (--vmap DIR: vmap_catalogs too), --terms and --compute-type set,
    checked: in place of the model's own, whatever the model (engine_choice.py's
    decoding_in_force; a setting it has no use for is refused)."""
    if args.beam_size is not None and args.beam_size < 1:
        raise UserError("--beam-size must be at least 1")
    if args.no_repeat_ngram is not None and args.no_repeat_ngram < 0:
        raise UserError("--no-repeat-ngram must be at least 0")
    if args.nbest is not None and args.nbest < 1:
        raise UserError("--nbest must be at least 1")
    flags = ("beam_size", "length_penalty", "no_repeat_ngram", "placeholders", "vmap", "terms")
    given = {flag: getattr(args, flag) for flag in flags if getattr(args, flag) is not None}
    if isinstance(args.vmap, str):  # --vmap DIR: the map made of DIR's catalogs
        given |= {"vmap": True, "vmap_catalogs": args.vmap}
    return {**given, **compute_type_set(args)}


if __name__ == "__main__":
    run_cli(main)
