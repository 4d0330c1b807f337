"""`make data`: write the corpus to data/<corpus.name>/, train its vocabularies, and encode
every split into token ids for training (seq2seq/tokens/dataset.py), without the pairs longer
than the model takes (counted, in the output and in report.json).

python -m seq2seq.data [--config config.yaml] [key.sub=value ...]

Fine-tuning (train.init_from): the vocabularies are the checkpoint's, copied instead of
trained (seq2seq/training/finetune.py), and a line reports which words of the new training
text they know: a word they lack reaches the model as UNK.
"""

import importlib

from seq2seq.config import Config, add_config_arguments, load_config
from seq2seq.corpora.cleaning import add_to_report
from seq2seq.corpora.corpus_types import build_corpus
from seq2seq.corpora.source_checks import catalog_sources
from seq2seq.localization.term_pairs import Teaching
from seq2seq.support.errors import UserError, command_parser, run_cli
from seq2seq.support.paths import SIDES, text_files
from seq2seq.text.parallel import iter_lines
from seq2seq.tokens.dataset import Limits, build_ids, dropped_pairs
from seq2seq.tokens.vocab import Vocab, build_vocabs, copy_vocabs, coverage, load_vocabs
from seq2seq.training.finetune import read_source

SHOWN = 5  # unknown words named in the coverage line, the most frequent first
# The optional extras (pyproject.toml) a corpus may need, and the modules each gives
EXTRAS = {"catalogs": ("polib", "defusedxml"), "langid": ("py3langid",)}


def main(argv: list[str] | None = None) -> None:
    parser = command_parser("seq2seq.data", __doc__.splitlines()[0])
    add_config_arguments(parser)
    args = parser.parse_intermixed_args(argv)  # options before or after the overrides
    config = load_config(args.config, args.overrides)
    check_extras(config)
    source = read_source(config) if config.train.init_from else None  # checked before writing
    counts = build_corpus(config)
    sizes = ", ".join(f"{split} {count:,}" for split, count in counts.items())
    print(f"corpus {config.data_dir}/: {sizes} pairs")
    if source:
        copied = copy_vocabs(config, (source["src_vocab"], source["tgt_vocab"]))
        state = f"copied from {config.train.init_from}" if copied else "up to date (copied)"
    else:
        state = "trained" if build_vocabs(config) else "up to date"
    src_vocab, tgt_vocab = load_vocabs(config)
    if config.vocab.joint:
        print(f"one vocabulary for both languages {state}: {len(src_vocab)} pieces")
    else:
        print(f"vocabularies {state}: {len(src_vocab)} source and {len(tgt_vocab)} target pieces")
    if source:
        print(coverage_line(config, (src_vocab, tgt_vocab)))
    limits = Limits.of(config)
    terms = config.train.terms
    teaching = Teaching(config.data_dir, terms, config.train.seed) if terms else None
    encoded = build_ids(config.data_dir, (src_vocab, tgt_vocab), limits, teaching)
    print(f"token ids: {', '.join(encoded)} encoded" if encoded else "token ids up to date")
    if "train" in encoded and teaching:
        print(f"terms written into {teaching.annotated:,} training sources, from "
              f"{len(teaching.pairs):,} term pairs drawn from them (train.terms)")  # fmt: skip
    dropped = dropped_pairs(config.data_dir)
    add_to_report(config.data_dir, "too_long_for_model", dropped)
    for split, left_out in dropped.items():
        if left_out["pairs"]:
            print(too_long_line(config, split, left_out, limits))


def needed_extras(config: Config) -> dict[str, str]:
    """The optional extras (EXTRAS) `make data` needs for `config` -> the key that needs it:
    catalogs for a catalog source or a folder of them, langid for clean.language_id."""
    needed = {}
    if config.corpus.type == "sources" and (keys := list(catalog_sources(config.corpus))):
        needed["catalogs"] = keys[0]
    if config.clean.language_id:
        needed["langid"] = "clean.language_id"
    return needed


def check_extras(config: Config) -> None:
    """A one-line error, before anything is written, if an extra the config needs is missing."""
    for extra, key in needed_extras(config).items():
        for module in EXTRAS[extra]:
            try:
                importlib.import_module(module)
            except ImportError:
                raise UserError(f"{config.file}: {key} needs {module}: pip install "
                                f"'seq2seq[{extra}]'") from None  # fmt: skip


def too_long_line(config: Config, split: str, left_out: dict, limits: Limits) -> str:
    """The line that names a split's pairs left out of its ids, e.g. "train: 1 pair longer
    than the model takes (over 255 source or 255 target pieces) left out of the token ids:
    line 37 of data/x/train.src"."""
    count, lines = left_out["pairs"], ", ".join(f"{n:,}" for n in left_out["lines"])
    more = ", ..." if count > len(left_out["lines"]) else ""
    return (
        f"{split}: {count:,} {'pair' if count == 1 else 'pairs'} longer than the model takes "
        f"(over {limits.src:,} source or {limits.tgt:,} target pieces) left out of the token "
        f"ids: {'line' if count == 1 else 'lines'} {lines}{more} of {config.data_dir}/{split}.src"
    )


def coverage_line(config: Config, vocabs: tuple[Vocab, Vocab]) -> str:
    """The share of the training text's words each vocabulary knows, and the most frequent
    of those it does not: "known words of the training split: src 99.71% (2 unknown: 'ten'
    x40, 'eleven' x3); tgt 100.00%"."""
    parts = []
    for side, path, vocab in zip(SIDES, text_files(config.data_dir, "train"), vocabs, strict=True):
        words, unknown = coverage(vocab, iter_lines(path))
        part = f"{side} {1 - unknown.total() / max(words, 1):.2%}"
        if unknown:
            named = ", ".join(f"{word!r} x{n:,}" for word, n in unknown.most_common(SHOWN))
            more = ", ..." if len(unknown) > SHOWN else ""
            part += f" ({len(unknown):,} unknown: {named}{more})"
        parts.append(part)
    return "known words of the training split: " + "; ".join(parts)


if __name__ == "__main__":
    run_cli(main)
