"""How an Argos Translate package turns a sentence into its model's tokens and an output's
tokens into text, as Argos Translate 1.11 does (argostranslate/tokenizer.py; package.py
chooses which):

    package_tokenizer(folder, from_code, to_code)   sentencepiece.model if the package has
                                                     one, else bpe.model, else an error
                                                     (seq2seq/exports/argos_package.py)
    SentencePieceTokenizer   sentencepiece.model: its pieces; decoded, "▁" and "_" as spaces
    bpe_tokenizer            bpe.model, subword-nmt's codes on Moses's tokens (from_code's;
                             detokenized as to_code's): seq2seq/tokens/bpe.py's BPEVocab

Both have what our engines' vocabularies have (seq2seq/tokens/vocab.py's Vocab: unk, len,
all_pieces, normalize, unknown), which the service and the warnings read, and

    tokenizer.tokens(sentence)   the tokens Argos Translate gives CTranslate2
    tokenizer.ids(tokens)        their ids (unk for one the vocabulary lacks), for the warnings
    tokenizer.text(tokens)       Argos Translate's text of an output's tokens

so the engine (argos_engine.py) never asks which it has. A BPE package's vocabulary is its
CTranslate2 model's source vocabulary (a codes file lists none): a token outside it is one
CTranslate2 reads as unknown.
"""

from pathlib import Path

from seq2seq.exports.argos_package import BPE, MODEL, tokenizer_file
from seq2seq.exports.ctranslate2_reader import model_vocabularies, read_model_config
from seq2seq.tokens.bpe import BPEVocab, codes_text
from seq2seq.tokens.vocab import Vocab


class SentencePieceTokenizer(Vocab):
    """A package's sentencepiece.model, as Argos Translate's SentencePieceTokenizer uses it."""

    def __init__(self, path: Path):
        super().__init__(path.read_bytes(), special_ids=False)

    def tokens(self, sentence: str) -> list[str]:
        return self.sp.encode(sentence, out_type=str)

    def ids(self, tokens: list[str]) -> list[int]:
        return [self.sp.piece_to_id(token) for token in tokens]

    def text(self, tokens: list[str]) -> str:
        return self.sp.decode_pieces(tokens).replace("▁", " ").replace("_", " ")


def package_tokenizer(folder: Path, from_code: str, to_code: str):
    """The package's tokenizer (argos_package.tokenizer_file: sentencepiece.model first)."""
    path = tokenizer_file(folder)
    if path.name == BPE:
        return bpe_tokenizer(path, folder / MODEL, (from_code, to_code))
    return SentencePieceTokenizer(path)


def bpe_tokenizer(codes: Path, model: Path, languages: tuple[str, str]) -> BPEVocab:
    """A package's bpe.model, its vocabulary the model's source tokens (a codes file lists
    none): a token outside it is one CTranslate2 reads as unknown (its unk_token)."""
    tokens, unk = model_vocabularies(model)[0], read_model_config(model).get("unk_token", "<unk>")
    return BPEVocab(codes_text(codes), languages, tokens, unk, str(codes))
