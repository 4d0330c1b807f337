"""`make eval`: decode the test split with the best checkpoint and score it.

    python -m seq2seq.evaluate [--config config.yaml] [--checkpoint runs/<exp>/best.pt] [--again]
                               [--glossary terms.tsv] [--calibrate]

Greedy decoding always; beam search too when decode.beam_size > 1; always by our torch code
(the engine eval.json names), whatever is installed. The decode settings are the
checkpoint's own (its config's when it was trained), but those set on the command line
(`decode.beam_size=4`: engine_choice.py's decoding_in_force). Writes the translations to
runs/<experiment>/test.hyp (and test.beam.hyp; line N answers line N of the test source) and
every score to runs/<experiment>/eval.json (beam search's under "beam", sacreBLEU's
signatures beside its figures), and prints a few lines:

    decoding 1,000 test sentences with torch on cpu
    greedy     exact match 98.6%  BLEU 99.76  chrF 99.89  (1,000 sentences, 2,140/s)
    beam 4     exact match 98.9%  BLEU 99.81  chrF 99.92  (1,000 sentences, 310/s)
    wrote runs/numbers/test.hyp, runs/numbers/test.beam.hyp and runs/numbers/eval.json

A calibrated model's confidences (seq2seq/decoding/confidence.py) are judged too: each test
sentence's is written to test.hyp.confidence (and test.beam.hyp.confidence), a line each, and
eval.json's "confidence" says how well they tell the good translations from the bad (Pearson
and Spearman against sentence chrF, ROC AUC, expected calibration error, the chrF kept when
the least sure are withheld). --calibrate first fits the checkpoint's calibration on the
config's validation split, translated at the model's own beam size (a calibration holds for
the search it was fitted on), and writes it into the checkpoint (training's validations fit
theirs at train.valid_beam_size).

With --glossary FILE (.tsv, .csv or .tbx: seq2seq/localization/glossary.py, for the model's pair),
every decoding follows its terms (seq2seq/localization/terms.py); a fault in it ends the command in
one line naming the file and the line, before anything is decoded or written.

eval.json keeps what its scores follow from (`inputs`: the checkpoint's and the test split's
SHA-256, the decode settings set on the command line, the glossary's SHA-256 if any): run
again with the same ones, the command prints the scores it has and decodes nothing (`--again`
decodes anyway), so that `make package` twice does nothing the second time.
"""

import dataclasses
import json
import time
from pathlib import Path

from seq2seq.checkpoint import save_checkpoint
from seq2seq.config import (
    Config,
    DecodeConfig,
    add_config_arguments,
    decode_overrides,
    load_config,
)
from seq2seq.corpora.corpus_types import corpus_type
from seq2seq.decoding.confidence import (
    NOT_CALIBRATED,
    confidence_of,
    fit,
    measured,
    sentence_chrfs,
)
from seq2seq.decoding.engine_choice import described, load_engine
from seq2seq.decoding.engines import languages_of, translate_texts
from seq2seq.localization.glossary import read_glossary
from seq2seq.support.errors import command_parser, run_cli
from seq2seq.support.files import file_hash, write_json, write_lines
from seq2seq.support.paths import BEAM_HYPOTHESES, CONFIDENCES, EVAL, HYPOTHESES, text_files
from seq2seq.text.parallel import load_split
from seq2seq.text.placeholders import bare
from seq2seq.text.sentences import Texts
from seq2seq.training.metrics import score

WARM_UP = 8  # sentences decoded once before the timed decoding


def main(argv: list[str] | None = None) -> None:
    parser = command_parser("seq2seq.evaluate", __doc__.splitlines()[0])
    add_config_arguments(parser)
    parser.add_argument("--checkpoint", help="model to evaluate (default: the config's best)")
    parser.add_argument(
        "--again", action="store_true", help="decode even if eval.json has these inputs' scores"
    )
    parser.add_argument(
        "--glossary", metavar="FILE", help="follow a glossary's terms (.tsv, .csv or .tbx)"
    )
    parser.add_argument(
        "--calibrate", action="store_true",
        help="fit the checkpoint's confidence calibration on the validation split first",
    )  # fmt: skip
    args = parser.parse_intermixed_args(argv)  # options before or after the overrides
    config = load_config(args.config, args.overrides)
    decode = decode_overrides(args.overrides)
    checkpoint = Path(args.checkpoint or config.checkpoint_path)
    glossary = Path(args.glossary) if args.glossary else None
    if args.calibrate:
        calibrate(config, checkpoint, decode)
    inputs = inputs_of(config, checkpoint, decode, glossary)
    if not args.again and (done := scored_before(config, inputs)):
        print(f"{config.run_dir / EVAL} is up to date (--again to decode anyway):")
        print_summary(done)
        return
    test = load_split(config, "test")
    engine = load_engine(
        config, args.checkpoint, "torch", device=config.train.device, decode=decode
    )
    decoding = engine.config.decode  # the checkpoint's, with decode's
    pair = [language.code for language in languages_of(engine)]
    terms = read_glossary(glossary, *pair).entries if glossary else None
    sources, references = [s for s, _ in test], [t for _, t in test]
    print(f"decoding {len(sources):,} test sentences with {described(engine)}", flush=True)
    corpus_metrics = corpus_type(config.corpus).metrics

    def evaluate(decoding: DecodeConfig, hypotheses_file: str) -> dict:
        translate_texts(engine, Texts(sources[:WARM_UP]), decoding, terms=terms)  # untimed
        start = time.perf_counter()
        hypotheses, _, signals = translate_texts(engine, Texts(sources), decoding, terms=terms)
        seconds = time.perf_counter() - start
        write_lines(config.run_dir / hypotheses_file, hypotheses)
        result = {**score(hypotheses, references), **corpus_metrics(hypotheses, references)}
        result["bare_outputs"] = sum(map(bare, sources, hypotheses))  # empty, or placeables
        if engine.calibration:
            sure = [
                confidence_of(engine.calibration, each, [source])
                for each, source in zip(signals, sources, strict=True)
            ]
            lines = [f"{p:.4f}" for p in sure]
            write_lines(config.run_dir / (hypotheses_file + CONFIDENCES), lines)
            chrfs = sentence_chrfs(hypotheses, references)
            result["confidence"] = measured(sure, chrfs, engine.calibration.bound)
        return {**result, "decode_seconds": seconds, "sentences_per_s": len(sources) / seconds}

    result = evaluate(dataclasses.replace(decoding, beam_size=1), HYPOTHESES)
    facts = engine.facts()
    result.update(
        checkpoint=str(checkpoint),
        checkpoint_step=facts["checkpoint"].get("step"),
        engine=facts["engine"],
        no_repeat_ngram=decoding.no_repeat_ngram,  # greedy's and beam search's
    )
    if decoding.beam_size > 1:
        result["beam"] = {
            "beam_size": decoding.beam_size,
            "length_penalty": decoding.length_penalty,
            **evaluate(decoding, BEAM_HYPOTHESES),
        }
    if engine.calibration is None:
        print(f"no confidences: {NOT_CALIBRATED}")
    write_json(config.run_dir / EVAL, {**result, "inputs": inputs})
    print_summary(result)
    files = [config.run_dir / HYPOTHESES]
    if "beam" in result:
        files.append(config.run_dir / BEAM_HYPOTHESES)
    print(f"wrote {', '.join(map(str, files))} and {config.run_dir / EVAL}")


def calibrate(config: Config, path: Path, decode: dict) -> None:
    """Fit the confidence calibration of the checkpoint at `path` on the config's validation
    split, translated as the model translates (its decode settings, with `decode`'s: beam
    search where it has a beam), and write it into the checkpoint."""
    engine = load_engine(config, str(path), "torch", device=config.train.device, decode=decode)
    valid = load_split(config, "valid")
    sources, references = [s for s, _ in valid], [t for _, t in valid]
    decoding = engine.config.decode
    hypotheses, _, signals = translate_texts(engine, Texts(sources), decoding)
    chrfs = sentence_chrfs(hypotheses, references)
    calibration = fit([each[0] for each in signals], chrfs, decoding.beam_size)
    c = engine.checkpoint
    info = {**c.info, "confidence": calibration.to_dict()}
    save_checkpoint(path, c.config, c.model, c.src_vocab, c.tgt_vocab, info)
    print(
        f"calibrated {path} on {calibration.sentences:,} validation sentences, beam "
        f"{calibration.beam_size} ({calibration.acceptable:.0%} at chrF {calibration.bound:g} "
        "or above)"
    )


def inputs_of(
    config: Config, checkpoint: Path, decode: dict, glossary: Path | None = None
) -> dict | None:
    """What the scores follow from: the checkpoint's and the test split's bytes (the
    checkpoint's holding its decode settings), the decode settings the command line set in
    their place (as JSON gives them back), and the glossary's bytes if one is followed; None
    without them (the loading, or the glossary's reading, says so)."""
    test, glossaries = text_files(config.data_dir, "test"), [glossary] if glossary else []
    if not all(path.is_file() for path in (checkpoint, *test, *glossaries)):
        return None
    inputs = {
        "checkpoint_sha256": file_hash(checkpoint),
        "test_sha256": [file_hash(path) for path in test],
        "decode": json.loads(json.dumps(decode)),
    }
    if glossary:
        inputs["glossary_sha256"] = file_hash(glossary)
    return inputs


def scored_before(config: Config, inputs: dict | None) -> dict | None:
    """eval.json's scores if they follow from `inputs` and its hypotheses are there."""
    path, files = config.run_dir / EVAL, [config.run_dir / HYPOTHESES]
    try:
        done = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if "beam" in done:
        files.append(config.run_dir / BEAM_HYPOTHESES)
    fresh = inputs is not None and done.get("inputs") == inputs
    return done if fresh and all(file.exists() for file in files) else None


def print_summary(result: dict) -> None:
    print(summary_line("greedy", result))
    if "beam" in result:
        print(summary_line(f"beam {result['beam']['beam_size']}", result["beam"]))


def summary_line(decoding: str, scores: dict) -> str:
    """One decoding's headline figures; eval.json has them all."""
    sure = scores.get("confidence")
    judged = (
        f"  confidence: Spearman {sure['spearman']:.2f}, calibration error "
        f"{sure['calibration_error']:.3f}" if sure else ""
    )  # fmt: skip
    return (
        f"{decoding:<10} exact match {scores['exact_match']:.1%}  BLEU {scores['bleu']:.2f}  "
        f"chrF {scores['chrf']:.2f}  ({scores['n_sentences']:,} sentences, "
        f"{scores.get('bare_outputs', 0):,} empty or bare, {scores['sentences_per_s']:,.0f}/s)"
        + judged
    )


if __name__ == "__main__":
    run_cli(main)
