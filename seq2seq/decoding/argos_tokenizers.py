"""How an Argos Translate package turns a sentence into its model's tokens and an output's
tokens into text, as Argos Translate 1.11 does (argostranslate/tokenizer.py; package.py
chooses which):

    package_tokenizer(folder, from_code, to_code)   sentencepiece.model if the package has
                                                     one, else bpe.model, else an error
                                                     (seq2seq/exports/argos_package.py)
    SentencePieceTokenizer   sentencepiece.model: its pieces; decoded, "▁" and "_" as spaces
    BPETokenizer             bpe.model, subword-nmt's codes: sacremoses' punctuation
                             normaliser and tokenizer (Moses's, for from_code), then
                             subword-nmt's BPE on those tokens ("@@" ends a word's non-final
                             parts); decoded, "@@ " joined and sacremoses' detokenizer (to_code)

Both have what our engines' vocabularies have (seq2seq/text/vocab.py's Vocab: unk, len,
all_pieces, normalize, unknown), which the service and the warnings read, and

    tokenizer.tokens(sentence)   the tokens Argos Translate gives CTranslate2
    tokenizer.ids(tokens)        their ids (unk for one the vocabulary lacks), for the warnings
    tokenizer.text(tokens)       Argos Translate's text of an output's tokens

so the engine (argos.py) never asks which it has. A BPE package's vocabulary is its
CTranslate2 model's source vocabulary (a codes file lists none): a token outside it is one
CTranslate2 reads as unknown. sacremoses and subword-nmt are the `argos` extra; subword-nmt's
apply_bpe is the code Argos Translate's apply_bpe.py copies (an older version, whose merges
give the same segmentation: tested, tests/decoding/test_argos_bpe.py).
"""

from pathlib import Path

from seq2seq.exports.argos_package import BPE, MODEL, tokenizer_file
from seq2seq.exports.ctranslate2_reader import model_vocabularies, read_model_config
from seq2seq.support.errors import UserError
from seq2seq.text.vocab import Vocab


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


class BPETokenizer:
    """A package's bpe.model (subword-nmt's codes) with Moses's tokenization, as Argos
    Translate's BPETokenizer uses them; its vocabulary the model's source tokens."""

    def __init__(self, codes: Path, model: Path, from_code: str, to_code: str):
        sacremoses, apply_bpe = bpe_libraries(codes)
        self.normalizer = sacremoses.MosesPunctNormalizer(from_code)
        self.tokenizer = sacremoses.MosesTokenizer(from_code)
        self.detokenizer = sacremoses.MosesDetokenizer(to_code)
        self.bpe = read_codes(codes, apply_bpe.BPE)
        self.vocabulary = model_vocabularies(model)[0]
        self.index = {token: i for i, token in enumerate(self.vocabulary)}
        self.unk = self.index.get(read_model_config(model).get("unk_token", "<unk>"))

    def tokens(self, sentence: str) -> list[str]:
        """Moses's tokens of the normalised sentence, each split by the BPE codes."""
        words = self.tokenizer.tokenize(self.normalizer.normalize(sentence))
        return self.bpe.segment_tokens(words)

    def ids(self, tokens: list[str]) -> list[int]:
        return [self.index.get(token, self.unk) for token in tokens]

    def text(self, tokens: list[str]) -> str:
        """The tokens' words ("@@ " joins a word's parts), detokenized by Moses's rules."""
        return self.detokenizer.detokenize(" ".join(tokens).replace("@@ ", "").split(" "))

    def __len__(self) -> int:
        return len(self.vocabulary)

    def all_pieces(self) -> list[str]:
        return list(self.vocabulary)

    def normalize(self, sentence: str) -> str:
        return sentence

    def unknown(self, sentence: str) -> list[str]:
        """The words of `sentence` with a token the vocabulary lacks."""
        return [word for word in sentence.split() if self.unk in self.ids(self.tokens(word))]


def package_tokenizer(folder: Path, from_code: str, to_code: str):
    """The package's tokenizer (argos_package.tokenizer_file: sentencepiece.model first)."""
    path = tokenizer_file(folder)
    if path.name == BPE:
        return BPETokenizer(path, folder / MODEL, from_code, to_code)
    return SentencePieceTokenizer(path)


def bpe_libraries(codes: Path):
    """sacremoses and subword-nmt's apply_bpe, or a one-line error naming the extra."""
    try:
        import sacremoses
        from subword_nmt import apply_bpe
    except ImportError:
        raise UserError(
            f"{codes}: a BPE package needs sacremoses and subword-nmt: "
            'pip install -e ".[argos]" (or pip install sacremoses subword-nmt)'
        ) from None
    return sacremoses, apply_bpe


def read_codes(codes: Path, bpe_class):
    """subword-nmt's BPE of a codes file, read as Argos Translate reads it (UTF-8 text); one
    that is not a codes file is a UserError (subword-nmt itself exits, its reason on stderr)."""
    try:
        with open(codes, encoding="utf-8") as file:
            return bpe_class(file)
    except (UnicodeDecodeError, SystemExit):
        raise UserError(f"{codes}: not a BPE codes file (subword-nmt's)") from None
