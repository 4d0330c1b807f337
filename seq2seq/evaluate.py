"""`make eval`: decode the test split with the best checkpoint and score it.

    python -m seq2seq.evaluate [--config config.yaml] [--checkpoint runs/<exp>/best.pt]

Greedy decoding always; beam search too when decode.beam_size > 1. Writes the translations to
runs/<experiment>/test.hyp (and test.beam.hyp; line N answers line N of the test source) and
the scores to runs/<experiment>/eval.json (beam search's under "beam"), and prints them.
"""

import dataclasses
import json
import time

from seq2seq.checkpoint import load_checkpoint
from seq2seq.config import DecodeConfig, add_config_arguments, load_config
from seq2seq.corpus import load_split
from seq2seq.decode import translate_sentences
from seq2seq.device import pick_device
from seq2seq.errors import command_parser, run_cli
from seq2seq.files import write_json, write_lines
from seq2seq.metrics import score
from seq2seq.paths import BEAM_HYPOTHESES, EVAL, HYPOTHESES


def main(argv: list[str] | None = None) -> None:
    parser = command_parser("seq2seq.evaluate", __doc__.splitlines()[0])
    add_config_arguments(parser)
    parser.add_argument("--checkpoint", help="model to evaluate (default: the config's best)")
    args = parser.parse_intermixed_args(argv)  # options before or after the overrides
    config = load_config(args.config, args.overrides)
    test = load_split(config, "test")
    checkpoint = load_checkpoint(
        args.checkpoint or config.checkpoint_path, pick_device(config.train.device)
    )
    sources, references = [s for s, _ in test], [t for _, t in test]

    def evaluate(decoding: DecodeConfig, hypotheses_file: str) -> dict:
        start = time.perf_counter()
        hypotheses = translate_sentences(
            checkpoint.model, checkpoint.src_vocab, checkpoint.tgt_vocab, sources, decoding
        )
        seconds = time.perf_counter() - start
        write_lines(config.run_dir / hypotheses_file, hypotheses)
        result = score(hypotheses, references, numbers=config.corpus.type == "numbers")
        return {**result, "decode_seconds": seconds, "sentences_per_s": len(sources) / seconds}

    result = evaluate(dataclasses.replace(config.decode, beam_size=1), HYPOTHESES)
    result.update(
        checkpoint=str(args.checkpoint or config.checkpoint_path),
        checkpoint_step=checkpoint.info.get("step"),
    )
    if config.decode.beam_size > 1:
        result["beam"] = {
            "beam_size": config.decode.beam_size,
            "length_penalty": config.decode.length_penalty,
            **evaluate(config.decode, BEAM_HYPOTHESES),
        }
    write_json(config.run_dir / EVAL, result)
    print(json.dumps(result, indent=2))
    print(f"wrote the translations and {config.run_dir / EVAL}")


if __name__ == "__main__":
    run_cli(main)
