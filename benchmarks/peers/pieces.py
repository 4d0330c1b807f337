"""The text every peer trains and decodes on (benchmarks/README.md): each split's sentences cut
into our sentencepiece pieces (with our source normalisation), pieces separated by spaces, so
that every toolkit sees the same tokens and the same vocabulary; and a peer's output pieces
joined back into text by the same sentencepiece model before they are scored.

    data/<corpus>/{train,valid,test}.{src,tgt}  --our vocabularies-->  <run>/pieces/<same names>
    a peer's output "▁Ein ▁Hund ..."  --detokenize-->  "Ein Hund ..."  --score--> exact match, BLEU
"""

from pathlib import Path

from seq2seq.config import Config
from seq2seq.support.paths import text_files
from seq2seq.tokens.special import EOS
from seq2seq.tokens.vocab import Vocab, load_vocabs

SPLITS = ("train", "valid", "test")


def write_pieces(config: Config, folder: Path) -> Path:
    """<folder>/<split>.src and .tgt in pieces, and vocab.src, vocab.tgt: our pieces in id
    order, one a line, the special ones left out (each peer adds its own). -> folder."""
    folder.mkdir(parents=True, exist_ok=True)
    vocabs = load_vocabs(config)
    for split in SPLITS:
        for vocab, path in zip(vocabs, text_files(config.data_dir, split), strict=True):
            lines = path.read_text("utf-8").splitlines()
            pieces = (" ".join(vocab.pieces(ids)) for ids in vocab.encode(lines))
            (folder / path.name).write_text("".join(p + "\n" for p in pieces), encoding="utf-8")
    for side, vocab in zip(("src", "tgt"), vocabs, strict=True):
        words = vocab.all_pieces()[EOS + 1 :]  # after <pad> <unk> <s> </s>
        (folder / f"vocab.{side}").write_text("".join(w + "\n" for w in words), "utf-8")
    return folder


def detokenizer(config: Config):
    """lines of target pieces -> their text, as our decoding writes it."""
    target: Vocab = load_vocabs(config)[1]
    return lambda lines: [target.sp.decode_pieces(line.split()) for line in lines]
