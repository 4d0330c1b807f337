"""Translate with a trained model.

    python -m seq2seq.translate "three is three"            # prints: 3 la 3
    python -m seq2seq.translate "one is one" "two is five"   # one output line per argument
    printf 'one is one\\ntwo is two\\n' | python -m seq2seq.translate   # one per input line

The model is runs/<experiment>/best.pt of the config (config.yaml by default), or the file
given with --checkpoint, which carries its own vocabularies and settings.
"""

import argparse
import sys

from seq2seq.checkpoint import load_checkpoint
from seq2seq.config import DEFAULT_CONFIG, load_config
from seq2seq.decode import translate
from seq2seq.device import pick_device
from seq2seq.errors import UserError, run_cli


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="Translate sentences given as arguments, or one per line on stdin."
    )
    parser.add_argument("sentences", nargs="*", help="sentences to translate (default: stdin)")
    parser.add_argument("--config", default=DEFAULT_CONFIG, help="experiment config (YAML)")
    parser.add_argument("--checkpoint", help="model file (default: the config's best.pt)")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps")
    parser.add_argument(
        "--beam-size", type=int, help="beams (default: the model's config; 1: greedy)"
    )
    parser.add_argument("--length-penalty", type=float, help="beam search length penalty alpha")
    args = parser.parse_args(argv)
    path = args.checkpoint or load_config(args.config).checkpoint_path
    checkpoint = load_checkpoint(path, pick_device(args.device))
    sentences = args.sentences or [line.rstrip("\r\n") for line in sys.stdin]
    decode = checkpoint.config.decode
    if args.beam_size is not None:
        decode.beam_size = args.beam_size
    if args.length_penalty is not None:
        decode.length_penalty = args.length_penalty
    if decode.beam_size < 1:
        raise UserError("--beam-size must be at least 1")
    translations = translate(
        checkpoint.model, checkpoint.src_vocab, checkpoint.tgt_vocab, sentences, decode
    )
    for translation in translations:
        print(translation)


if __name__ == "__main__":
    run_cli(main)
