"""`make data`: write the corpus to data/<corpus.name>/, train its vocabularies, and encode
every split into token ids for training (seq2seq/text/dataset.py).

python -m seq2seq.data [--config config.yaml] [key.sub=value ...]
"""

from seq2seq.config import add_config_arguments, load_config
from seq2seq.support.errors import command_parser, run_cli
from seq2seq.support.paths import vocab_files
from seq2seq.text.corpora import build_corpus
from seq2seq.text.dataset import build_ids
from seq2seq.text.vocab import build_vocabs, load_vocabs


def main(argv: list[str] | None = None) -> None:
    parser = command_parser("seq2seq.data", __doc__.splitlines()[0])
    add_config_arguments(parser)
    args = parser.parse_intermixed_args(argv)  # options before or after the overrides
    config = load_config(args.config, args.overrides)
    counts = build_corpus(config)
    sizes = ", ".join(f"{split} {count:,}" for split, count in counts.items())
    print(f"corpus {config.data_dir}/: {sizes} pairs")
    retrained = build_vocabs(config)
    src_vocab, tgt_vocab = load_vocabs(config)
    state = "trained" if retrained else "up to date"
    print(f"vocabularies {state}: {len(src_vocab)} source and {len(tgt_vocab)} target pieces")
    encoded = build_ids(config.data_dir, (src_vocab, tgt_vocab), vocab_files(config.data_dir))
    print(f"token ids: {encoded} of 6 files encoded" if encoded else "token ids up to date")


if __name__ == "__main__":
    run_cli(main)
