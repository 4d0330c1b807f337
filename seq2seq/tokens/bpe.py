"""BPE vocabularies: subword-nmt's codes applied to Moses's tokens, as Argos Translate's BPE
packages split text (argostranslate/tokenizer.py, 1.11). An Argos package's tokenizer
(seq2seq/decoding/argos_tokenizers.py) and an imported BPE package's vocabulary
(seq2seq/exports/importing.py, in place of a sentencepiece model: vocab.py's read_vocab).

    sentence --sacremoses' punctuation normaliser and tokenizer (the source's language)-->
      words --subword-nmt's BPE (the codes)--> tokens ("@@" ends a word's non-final parts)
      --their places in the vocabulary's token list--> ids (a token it lacks: unk)
    ids --> tokens --"@@ " joined--> words --sacremoses' detokenizer (the target's)--> text

    BPEVocab(codes, languages, tokens, unk_token)   what vocab.Vocab has (encode, detokenize,
                                                    pieces, all_pieces, unknown ...), and the
                                                    steps tokens(sentence), ids(tokens),
                                                    text(tokens)
    BPEVocab.model_bytes    what a checkpoint keeps of it: JSON {"bpe": the codes, "languages":
                            [from, to], "tokens": [...]} (from_bytes reads it back)

sacremoses and subword-nmt are the `argos` extra; subword-nmt's apply_bpe is the code Argos
Translate's apply_bpe.py copies (an older version, whose merges give the same segmentation:
tested, tests/decoding/test_argos_bpe.py).
"""

import io
import json
from collections.abc import Callable
from pathlib import Path

from seq2seq.support.errors import UserError
from seq2seq.tokens.special import UNK

MARK = b'{"bpe":'  # how model_bytes begin (a sentencepiece model, a protobuf, never does)


def bpe_libraries(where: str):
    """sacremoses and subword-nmt's apply_bpe, or a one-line error naming the extra."""
    try:
        import sacremoses
        from subword_nmt import apply_bpe
    except ImportError:
        raise UserError(
            f"{where}: a BPE package needs sacremoses and subword-nmt: "
            'pip install -e ".[argos]" (or pip install sacremoses subword-nmt)'
        ) from None
    return sacremoses, apply_bpe


def codes_text(path: Path) -> str:
    """A codes file's text, read as Argos Translate reads it (UTF-8)."""
    try:
        return path.read_text("utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{path}: not a BPE codes file (subword-nmt's)") from None


def read_codes(codes: str, where: str, bpe_class):
    """subword-nmt's BPE of a codes file's text; one that is not a codes file is a UserError
    (subword-nmt itself exits, its reason on stderr)."""
    try:
        return bpe_class(io.StringIO(codes))
    except SystemExit:
        raise UserError(f"{where}: not a BPE codes file (subword-nmt's)") from None


class BPEVocab:
    """`codes` (subword-nmt's, as text) on Moses's tokens of `languages` (from, to), ids by
    place in `tokens`; a token the list lacks is `unk_token`'s id. A source vocabulary also
    normalises the text it encodes (`normalize`: vocab.py's normalize_source)."""

    def __init__(
        self, codes: str, languages: tuple[str, str], tokens: list[str], unk_token: str,
        where: str = "bpe.model", normalize: Callable[[str], str] | None = None,
    ):  # fmt: skip
        sacremoses, apply_bpe = bpe_libraries(where)
        source, target = languages
        self.codes, self.languages, self.vocabulary = codes, (source, target), list(tokens)
        self.normalizer = sacremoses.MosesPunctNormalizer(source)
        self.tokenizer = sacremoses.MosesTokenizer(source)
        self.detokenizer = sacremoses.MosesDetokenizer(target)
        self.bpe = read_codes(codes, where, apply_bpe.BPE)
        self.index = {token: i for i, token in enumerate(self.vocabulary)}
        self.unk, self.normalizing = self.index.get(unk_token), normalize

    @classmethod
    def from_bytes(cls, model_bytes: bytes, normalize=None) -> "BPEVocab":
        """The vocabulary whose model_bytes these are (its tokens in our order: special.py's)."""
        saved = json.loads(model_bytes)
        where = "a checkpoint's BPE vocabulary"
        tokens = saved["tokens"]
        return cls(saved["bpe"], tuple(saved["languages"]), tokens, tokens[UNK], where, normalize)

    @property
    def model_bytes(self) -> bytes:
        saved = {"bpe": self.codes, "languages": list(self.languages), "tokens": self.vocabulary}
        return json.dumps(saved, ensure_ascii=False).encode("utf-8")

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

    def normalize(self, sentence: str) -> str:
        return self.normalizing(sentence) if self.normalizing else sentence

    def encode(self, sentences: list[str]) -> list[list[int]]:
        return [self.ids(self.tokens(self.normalize(sentence))) for sentence in sentences]

    def detokenize(self, ids: list[list[int]]) -> list[str]:
        """Id lists -> their texts, as Argos Translate's: one leading space dropped."""
        texts = [self.text(self.pieces(one)) for one in ids]
        return [text[1:] if text.startswith(" ") else text for text in texts]

    def pieces(self, ids: list[int]) -> list[str]:
        return [self.vocabulary[i] for i in ids]

    def all_pieces(self) -> list[str]:
        return list(self.vocabulary)

    def unknown(self, sentence: str) -> list[str]:
        """The words of `sentence` (normalised) with a token the vocabulary lacks."""
        return [w for w in self.normalize(sentence).split() if self.is_unknown(w)]

    def is_unknown(self, word: str) -> bool:
        return self.unk in self.ids(self.tokens(word))
