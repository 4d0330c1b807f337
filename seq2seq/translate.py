"""Translate with a trained model.

    python -m seq2seq.translate "three is three"            # prints: 3 la 3
    python -m seq2seq.translate "one is one" "two is five"   # one output line per argument
    printf 'one is one\\ntwo is two\\n' | python -m seq2seq.translate   # one per input line
    python -m seq2seq.translate                              # interactive, on a terminal
    python -m seq2seq.translate --nbest 3 "three is three"   # the 3 best of beam search

Line N of the output always answers line N of the input, so it works in a pipeline: input is
read and translated a chunk of `decode.batch_size` lines at a time, in bounded memory, and each
chunk's translations are written as soon as they are ready. An empty line gives an empty
line, and invalid UTF-8 is replaced (U+FFFD) with a warning. Words the vocabulary lacks are
still translated (as its unknown piece), with a warning on stderr naming them; an input
longer than the model's positions is cut to fit, with a warning.

With --nbest N, each input gets N lines "input number ||| translation ||| score" (numbered
from 0, best first; score = length-normalised log-probability), searched with a beam of at
least N.

The model is runs/<experiment>/best.pt of the config (config.yaml by default), or the file
given with --checkpoint, which carries its own vocabularies and settings. With
`--engine ctranslate2 --model DIR` a model exported by `python -m seq2seq.export` decodes in
CTranslate2 instead (`--compute-type int8` quantizes it as it loads).
"""

import itertools
import sys
from collections.abc import Iterator
from dataclasses import dataclass

from seq2seq.checkpoint import Checkpoint, load_checkpoint
from seq2seq.config import DEFAULT_CONFIG, Config, DecodeConfig, is_override, load_config
from seq2seq.corpus import decode_stream
from seq2seq.ctranslate2 import CTranslate2Model
from seq2seq.decode import longest_source, translate_sentences, translate_sentences_nbest
from seq2seq.device import pick_device
from seq2seq.errors import UserError, command_parser, run_cli, warn
from seq2seq.special import UNK
from seq2seq.vocab import Vocab


def read_input_lines(stream) -> Iterator[str]:
    """The lines of a binary stream, as they come; invalid UTF-8 replaced by U+FFFD, with a
    warning."""

    def replaced(number: int, error: UnicodeDecodeError) -> None:
        warn(f"line {number}: invalid UTF-8 ({error.reason}) replaced by U+FFFD")

    return decode_stream(stream, "stdin", on_invalid=replaced)


def chunks(lines: Iterator[str], size: int) -> Iterator[tuple[int, list[str]]]:
    """-> (number of the chunk's first line, counted from 1; up to `size` lines)."""
    first = 1
    while chunk := list(itertools.islice(lines, size)):
        yield first, chunk
        first += len(chunk)


@dataclass
class TorchModel:
    """A checkpoint decoded by our own code (seq2seq/decode.py), with the interface that
    translate_lines uses; seq2seq.ctranslate2.CTranslate2Model has the same."""

    checkpoint: Checkpoint

    @property
    def config(self) -> Config:
        return self.checkpoint.config

    @property
    def src_vocab(self) -> Vocab:
        return self.checkpoint.src_vocab

    @property
    def tgt_vocab(self) -> Vocab:
        return self.checkpoint.tgt_vocab

    @property
    def longest_source(self) -> int:
        return longest_source(self.checkpoint.model)

    def model_and_vocabs(self) -> tuple:
        return self.checkpoint.model, self.checkpoint.src_vocab, self.checkpoint.tgt_vocab

    def translate(self, sentences: list[str], cfg: DecodeConfig) -> list[str]:
        return translate_sentences(*self.model_and_vocabs(), sentences, cfg)

    def translate_nbest(self, sentences: list[str], cfg: DecodeConfig) -> list[list]:
        return translate_sentences_nbest(*self.model_and_vocabs(), sentences, cfg)


def input_warnings(
    model: TorchModel | CTranslate2Model, sentences: list[str], first_line: int = 1
) -> list[str]:
    """The warnings about `sentences`: words the source vocabulary lacks, inputs cut to fit
    the model. Each names its line, counted from `first_line`."""
    src_vocab, longest = model.src_vocab, model.longest_source
    messages = []
    for number, (sentence, ids) in enumerate(
        zip(sentences, src_vocab.encode(sentences), strict=True), first_line
    ):
        if UNK in ids:
            words = ", ".join(repr(word) for word in dict.fromkeys(src_vocab.unknown(sentence)))
            messages.append(f"line {number}: not in the vocabulary, translated as unknown: {words}")
        if len(ids) > longest:
            messages.append(f"line {number}: {len(ids)} pieces, cut to the model's {longest}")
    return messages


def one_line(text: str) -> str:
    """A translation never spans two lines."""
    return " ".join(text.splitlines())


def translate_lines(
    model: TorchModel | CTranslate2Model,
    sentences: list[str],
    nbest: int | None = None,
    first_line: int = 1,
) -> list[str]:
    """The output lines for `sentences`: one translation each, or `nbest` lines each."""
    for message in input_warnings(model, sentences, first_line):
        warn(message)
    decoding = model.config.decode
    if nbest is None:
        return [one_line(text) for text in model.translate(sentences, decoding)]
    lines = []
    for number, hypotheses in enumerate(model.translate_nbest(sentences, decoding)):
        for score, text in hypotheses[:nbest]:
            lines.append(f"{number + first_line - 1} ||| {one_line(text)} ||| {score:.4f}")
    return lines


def load_model(args, config: Config | None = None) -> TorchModel | CTranslate2Model:
    """The model the arguments name: a checkpoint (--checkpoint, or the best of `config`, by
    default that of --config), or with --engine ctranslate2 an export."""
    if args.engine == "ctranslate2":
        if not args.model:
            raise UserError("--engine ctranslate2 needs --model DIR (made by seq2seq.export)")
        return CTranslate2Model.load(args.model, args.device, args.compute_type)
    device = pick_device(args.device)
    if args.checkpoint:  # no config file needed
        return TorchModel(load_checkpoint(args.checkpoint, device))
    config = config or load_config(args.config)
    return TorchModel(load_checkpoint(config.checkpoint_path, device, config.make_command("train")))


def main(argv: list[str] | None = None) -> None:
    parser = command_parser(
        "seq2seq.translate", "Translate sentences given as arguments, or one per line on stdin."
    )
    parser.add_argument("sentences", nargs="*", help="sentences to translate (default: stdin)")
    parser.add_argument("--config", default=DEFAULT_CONFIG, help="experiment config (YAML)")
    parser.add_argument("--checkpoint", help="model file (default: the config's best.pt)")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps")
    parser.add_argument(
        "--engine", choices=["torch", "ctranslate2"], default="torch", help="who decodes"
    )
    parser.add_argument("--model", help="--engine ctranslate2: the exported model's folder")
    parser.add_argument(
        "--compute-type", default="default", help="--engine ctranslate2: float32, int8, ..."
    )
    parser.add_argument(
        "--beam-size", type=int, help="beams (default: the model's config; 1: greedy)"
    )
    parser.add_argument("--length-penalty", type=float, help="beam search length penalty alpha")
    parser.add_argument(
        "--nbest", type=int, metavar="N", help="print the N best translations of each input"
    )
    args = parser.parse_intermixed_args(argv)  # options before or after the sentences
    if overrides := [sentence for sentence in args.sentences if is_override(sentence)]:
        raise UserError(
            f"{overrides[0]!r} sets a config option, which translate does not take: the "
            "checkpoint holds its config; choose it with --checkpoint or --config, the "
            "decoding with --beam-size and --length-penalty (to translate that text, send it "
            "on stdin)"
        )
    model = load_model(args)
    decoding = model.config.decode
    if args.beam_size is not None:
        decoding.beam_size = args.beam_size
    if args.length_penalty is not None:
        decoding.length_penalty = args.length_penalty
    if decoding.beam_size < 1:
        raise UserError("--beam-size must be at least 1")
    if args.nbest is not None:
        if args.nbest < 1:
            raise UserError("--nbest must be at least 1")
        decoding.beam_size = max(decoding.beam_size, args.nbest)

    if args.sentences:
        print("\n".join(translate_lines(model, args.sentences, args.nbest)))
    elif sys.stdin.isatty():  # interactive: one sentence at a time, until Ctrl-D
        print("type a sentence and press Enter (Ctrl-D to quit)", file=sys.stderr)
        for number in itertools.count(1):
            print("> ", end="", file=sys.stderr, flush=True)
            line = sys.stdin.readline()
            if not line:
                print(file=sys.stderr)
                return
            sentence = line.rstrip("\r\n")
            print("\n".join(translate_lines(model, [sentence], args.nbest, number)))
    else:  # a file or a pipe: a chunk at a time, in bounded memory, each written at once
        for first, chunk in chunks(read_input_lines(sys.stdin.buffer), decoding.batch_size):
            lines = translate_lines(model, chunk, args.nbest, first)
            sys.stdout.writelines(line + "\n" for line in lines)
            sys.stdout.flush()


if __name__ == "__main__":
    run_cli(main)
