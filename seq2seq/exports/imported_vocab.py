"""An imported model's vocabularies in our order (importing.py): <pad> <unk> <s> </s>
(seq2seq/tokens/special.py), then the model's other pieces in its own order, its tokenizer made
to number them so.

    the model's pieces (model/*_vocabulary.json), its special tokens (model/config.json)
      --our_order-->  each of our ids' row in the model (None: a special it lacks: zeros)
    its tokenizer (argos_package.tokenizer_file):
      sentencepiece.model --sentencepiece_rows--> that model rewritten: our pieces, our ids
      bpe.model --vocab_rows--> tokens/bpe.py's BPEVocab: the codes, the package's languages
                                (Moses's tokenizer's), the tokens in our order
    --> Rows (pieces, each one's row in the model, the vocabulary's bytes), a report

Pieces: the model's vocabulary maps sentencepiece's pieces to rows by string (CTranslate2
turns an unknown piece into <unk>). A piece of the sentencepiece model that the vocabulary
lacks is dropped from the rewritten model (sentencepiece then spells the word with pieces the
model knows); a vocabulary entry that sentencepiece never produces stays, as an unused piece.
Both are counted in the import's report. Where neither happens, our outputs are
CTranslate2's (tests/exports/test_import.py).

Tokens (BPE): the model's vocabulary maps the codes' tokens to rows by string, as for
sentencepiece; a token it lacks is <unk>, as CTranslate2 reads it, so our outputs are
CTranslate2's (tests/decoding/test_argos_bpe.py).
"""

from dataclasses import dataclass
from pathlib import Path

import torch

from seq2seq.exports.argos_package import BPE
from seq2seq.tokens.bpe import BPEVocab, codes_text
from seq2seq.tokens.special import BOS, EOS, PAD, UNK

SPECIAL_NAMES = {PAD: "<pad>", UNK: "<unk>", BOS: "<s>", EOS: "</s>"}  # ours, in id order


@dataclass
class Rows:
    """A vocabulary in our order: `pieces` by our id, `source_rows` each one's row in the
    stored model (None: a special the model lacks, a row of zeros), and the bytes of the
    vocabulary that numbers pieces so (tokens/vocab.py's read_vocab reads them)."""

    pieces: list[str]
    source_rows: list[int | None]
    model_bytes: bytes


def vocab_rows(
    tokenizer: Path, model_pieces: list[str], ct2_config: dict, languages: tuple[str, str]
) -> tuple[Rows, dict]:
    """Our order of a model's vocabulary, with its `tokenizer` (a sentencepiece model, or BPE
    codes on Moses's tokens of `languages`) made to number its pieces so; and a report."""
    special_rows, rest = our_order(model_pieces, ct2_config)
    if tokenizer.name == BPE:
        pieces = [*SPECIAL_NAMES.values(), *(model_pieces[row] for row in rest)]
        vocab = BPEVocab(codes_text(tokenizer), languages, pieces, SPECIAL_NAMES[UNK])
        return Rows(pieces, special_rows + rest, vocab.model_bytes), {"pieces": len(pieces)}
    return sentencepiece_rows(model_pieces, special_rows, rest, tokenizer.read_bytes())


def our_order(model_pieces: list[str], ct2_config: dict) -> tuple[list[int | None], list[int]]:
    """The model's rows of our special ids (PAD, UNK, BOS, EOS; None: one it lacks), and of
    its other pieces, in its order."""
    index = {piece: row for row, piece in enumerate(model_pieces)}
    theirs = {  # our special id -> the model's token for it
        PAD: "<blank>" if "<blank>" in index else "<pad>",
        UNK: ct2_config.get("unk_token", "<unk>"),
        BOS: ct2_config.get("decoder_start_token") or ct2_config.get("bos_token", "<s>"),
        EOS: ct2_config.get("eos_token", "</s>"),
    }
    special_rows = [index.get(theirs[i]) for i in (PAD, UNK, BOS, EOS)]
    taken = {theirs[i] for i in (PAD, UNK, EOS)} | {ct2_config.get("bos_token", "<s>")}
    return special_rows, [row for row, piece in enumerate(model_pieces) if piece not in taken]


def sentencepiece_rows(
    model_pieces: list[str], special_rows: list[int | None], rest: list[int], sp_bytes: bytes
) -> tuple[Rows, dict]:
    """The rows, and the sentencepiece model rewritten to number its pieces in our order."""
    from sentencepiece import sentencepiece_model_pb2 as pb  # needs protobuf (.[export])

    sp, Piece = pb.ModelProto.FromString(sp_bytes), pb.ModelProto.SentencePiece
    known = {p.piece: p for p in sp.pieces}
    new = pb.ModelProto()
    new.CopyFrom(sp)
    del new.pieces[:]
    for i, name in SPECIAL_NAMES.items():
        kind = Piece.UNKNOWN if i == UNK else Piece.CONTROL
        new.pieces.add(piece=name, score=0.0, type=kind)
    unused = 0
    for row in rest:
        piece = known.get(model_pieces[row])
        if piece is None or piece.type in (piece.CONTROL, piece.UNKNOWN):
            new.pieces.add(piece=model_pieces[row], score=0.0, type=Piece.UNUSED)
            unused += 1
        else:
            new.pieces.add().CopyFrom(piece)
    spec = new.trainer_spec
    spec.pad_id, spec.unk_id, spec.bos_id, spec.eos_id = PAD, UNK, BOS, EOS
    spec.pad_piece, spec.unk_piece, spec.bos_piece, spec.eos_piece = SPECIAL_NAMES.values()
    spec.vocab_size = len(new.pieces)
    in_model = set(model_pieces)
    dropped = sum(1 for p in sp.pieces if p.type == p.NORMAL and p.piece not in in_model)
    report = {"pieces": len(new.pieces), "sentencepiece_pieces_not_in_model": dropped,
              "model_pieces_sentencepiece_never_makes": unused}  # fmt: skip
    rows = Rows([p.piece for p in new.pieces], special_rows + rest, new.SerializeToString())
    return rows, report


def permuted(matrix: torch.Tensor, rows: Rows) -> torch.Tensor:
    """A (V, ...) matrix of the stored model's rows in our order (zeros for a missing row)."""
    out = matrix.new_zeros((len(rows.source_rows), *matrix.shape[1:]))
    for ours, theirs in enumerate(rows.source_rows):
        if theirs is not None:
            out[ours] = matrix[theirs]
    return out
