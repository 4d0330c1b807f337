"""An Argos Translate package as an engine: the format LibreTranslate serves, ours
(`python -m seq2seq.export argos`) or a published one, decoded by CTranslate2 as Argos
Translate decodes it.

    ArgosEngine.load(path, device, compute_type, why)   an .argosmodel file, or a package's folder

What a package holds: seq2seq/exports/argos_package.py (its pair and target_prefix in
metadata.json, the CTranslate2 model in model/, its tokenizer: argos_tokenizers.py).

A sentence's way, as Argos Translate 1.11 has it (argostranslate/translate.py):

    the tokenizer's tokens of the sentence (no </s>: a model that needs one adds it)
    -> Translator.translate_batch(beam_size, num_hypotheses, length_penalty=0.2,
       replace_unknowns=True, the package's target_prefix if it has one)
    -> the tokens decoded by the tokenizer, the prefix and one leading space dropped

so each output is Argos Translate's for the same sentence at the same beam size (tested:
tests/exports/test_argos.py, on our packages and on one laid out as Argos's published ones
are; tests/decoding/test_argos_bpe.py, on a BPE package). Splitting a text into sentences
is ours (seq2seq/text/sentences.py), not Argos's.

A package holds no decode section: its own is Argos Translate's (OWN_DECODE: beam 4, length
penalty 0.2, no rule against repeats; decode.terms annotate where its metadata says the model
was taught terms), which decode.beam_size, length_penalty, no_repeat_ngram, batch_size,
placeholders and terms set on the command line replace (engine_choice.py); the others it has
no use for (ArgosEngine.unused) are refused. A package holds no vocabulary map: decode.vmap
takes one made of the user's catalogs, decode.vmap_catalogs (package_map), and is refused
without them.
"""

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from seq2seq.config import Config, DecodeConfig, Language, config_from_dict
from seq2seq.decoding.argos_tokenizers import package_tokenizer
from seq2seq.decoding.attention_maps import Attention
from seq2seq.decoding.beam import beams_for
from seq2seq.decoding.confidence import Calibration
from seq2seq.decoding.ctranslate2_engine import (
    ONE_BATCH,
    Split,
    compute_type_fact,
    load_translator,
    signals_of,
    texts_of,
)
from seq2seq.decoding.engines import Translations, warned
from seq2seq.exports.argos_package import (
    BEAM_SIZE,
    LENGTH_PENALTY,
    LONGEST_INPUT,
    METADATA,
    MODEL,
    package_languages,
    package_metadata,
    unpacked,
)
from seq2seq.exports.vocab_map import catalog_map
from seq2seq.support.errors import UserError

# Argos Translate's decoding: a package's own decode section (the rest, unused, our defaults)
OWN_DECODE = {"beam_size": BEAM_SIZE, "length_penalty": LENGTH_PENALTY, "no_repeat_ngram": 0}


@dataclass
class ArgosEngine:
    """An Argos package's model, decoded as Argos Translate decodes it."""

    config: Config  # decode: OWN_DECODE, or what the command line set; no model settings
    languages: tuple[Language, Language]
    tokenizer: object  # argos_tokenizers.py's: the package's one, both sides
    target_prefix: str
    translator: object  # ctranslate2.Translator
    origin: str
    why: str = ""  # how its compute type was chosen (compute_types.py)
    calibration: Calibration | None = None  # its metadata's "confidence" (confidence.py)
    split: Split = ONE_BATCH  # batches decoded at once, threads each (load_translator)
    shows_attention = False
    longest_source = LONGEST_INPUT  # CTranslate2 cuts a source there
    unused: ClassVar[dict[str, str]] = {
        "cache": "a package is decoded by CTranslate2, which keeps keys and values always",
        "precision": "a package is decoded by CTranslate2, in decode.compute_type",
        "max_len_a": "a package's outputs stop where Argos Translate's do, at CTranslate2's limit",
        "max_len_b": "a package's outputs stop where Argos Translate's do, at CTranslate2's limit",
    }

    @classmethod
    def load(
        cls, path: str | Path, device: str = "auto", compute_type: str = "default",
        why: str = "", catalogs: Path | None = None, split: Split = ONE_BATCH,
    ):  # fmt: skip
        """`compute_type`: CTranslate2's (default: the package's own, as saved), chosen as
        `why` says; `catalogs`: a folder of gettext catalogs its vocabulary map is made of
        (package_map); `split`: batches decoded at once and the threads of each."""
        path = Path(path)
        with unpacked(path) as folder:
            return cls.from_folder(folder, device, compute_type, why, str(path), catalogs, split)

    @classmethod
    def from_folder(
        cls, folder: Path, device: str, compute_type: str, why: str = "", origin: str = "",
        catalogs: Path | None = None, split: Split = ONE_BATCH,
    ):  # fmt: skip
        """The package in `folder`, loaded into memory (the folder may go afterwards)."""
        metadata = package_metadata(folder)
        source, target = package_languages(metadata)
        tokenizer = package_tokenizer(folder, source.code, target.code)
        prefix = metadata.get("target_prefix", "")
        pair = (source.code, target.code)
        vmap = catalogs and package_map(catalogs, folder, pair, tokenizer, prefix)
        translator = load_translator(folder / MODEL, device, compute_type, split, vmap)
        taught = {"terms": "annotate"} if metadata.get("terms") == "annotate" else {}
        config = config_from_dict({"decode": OWN_DECODE | taught}, source=str(folder / METADATA))
        origin = origin or str(folder)
        calibration = Calibration.read(metadata.get("confidence"), str(folder / METADATA))
        return cls(
            config, (source, target), tokenizer, prefix, translator, origin, why, calibration,
            split,
        )  # fmt: skip

    @property
    def replicas(self) -> int:
        """Batches it decodes at once: a service's decoder threads (batcher.py)."""
        return self.split.decoders

    @property
    def src_vocab(self):
        """The tokenizer, as the vocabulary the service and the warnings read."""
        return self.tokenizer

    @property
    def tgt_vocab(self):
        return self.tokenizer

    def facts(self) -> dict:
        """Its config: the decode settings in force that it takes, no more (a package holds no
        training config)."""
        settings = dataclasses.asdict(self.config.decode).items()
        decode = {key: value for key, value in settings if key not in self.unused}
        return {"engine": "argos package", "package": self.origin, "checkpoint": {},
                "device": self.translator.device,
                "compute_type": compute_type_fact(self.translator, self.why),
                "threads": self.split.fact(),
                "config": {"decode": decode}}  # fmt: skip

    def encoded(self, sentences: list[str]) -> tuple[list[list[str]], list[list[str]]]:
        """Each sentence's tokens, as Argos Translate gives them to CTranslate2 (an unknown
        one as it is written, which replace_unknowns copies into the output), and its
        warnings: one encoding."""
        tokens = [self.tokenizer.tokens(sentence) for sentence in sentences]
        _, warnings = warned(self, sentences, [self.tokenizer.ids(one) for one in tokens])
        return tokens, warnings

    def search(self, tokens: list[list[str]], decoding: DecodeConfig, nbest: int) -> list:
        """CTranslate2's results for the sentences of some `tokens` (None for the empty ones),
        with the options Argos Translate passes, at `decoding`'s settings."""
        searched = [p for p in tokens if p]
        options = self.search_options(decoding, nbest, len(searched))
        results = iter(self.translator.translate_batch(searched, **options))
        return [next(results) if p else None for p in tokens]

    def search_options(self, decoding: DecodeConfig, nbest: int, count: int) -> dict:
        """translate_batch's keyword arguments for `count` sentences, the options Argos
        Translate passes, at `decoding`'s settings (the engine's, and CTranslate2 alone's:
        benchmarks/common.py's ctranslate2_alone)."""
        prefix = [[self.target_prefix]] * count if self.target_prefix else None
        return {"target_prefix": prefix, "replace_unknowns": True,
                "beam_size": beams_for(decoding.beam_size, nbest), "num_hypotheses": nbest,
                "length_penalty": decoding.length_penalty, "return_scores": True,
                "no_repeat_ngram_size": decoding.no_repeat_ngram,
                "max_batch_size": decoding.batch_size,
                "use_vmap": decoding.vmap}  # fmt: skip

    def detokenize(self, tokens: list[str]) -> str:
        """Argos Translate's: the tokenizer's text, its prefix and a leading space dropped."""
        text = self.tokenizer.text(tokens)
        if self.target_prefix and text.startswith(self.target_prefix):
            text = text[len(self.target_prefix) :]
        return text[1:] if text.startswith(" ") else text

    def translate(self, sentences: list[str], decoding: DecodeConfig) -> Translations:
        tokens, warnings = self.encoded(sentences)
        results = self.search(tokens, decoding, 1)
        texts = texts_of(results, self.detokenize, ranked=False)
        return Translations(texts, warnings, signals_of(results, decoding.length_penalty))

    def translate_nbest(self, sentences: list[str], decoding: DecodeConfig) -> Translations:
        tokens, warnings = self.encoded(sentences)
        results = self.search(tokens, decoding, decoding.beam_size)
        texts = texts_of(results, self.detokenize, ranked=True)
        return Translations(texts, warnings, signals_of(results, decoding.length_penalty))

    def attention(self, sentence: str) -> Attention:
        raise UserError("attention maps need our torch model, not an Argos package")


def package_map(catalogs: Path, folder: Path, pair: tuple[str, str], tokenizer, prefix: str):
    """The vocabulary map of the package in `folder` made of the gettext catalogs under
    `catalogs` (vocab_map.py's catalog_map): its pair's, in its tokenizer's tokens, each
    target after the package's target_prefix, which starts every output."""

    def source(texts: list[str]) -> list[list[str]]:
        return [tokenizer.tokens(text) for text in texts]

    def target(texts: list[str]) -> list[list[str]]:
        return [([prefix] if prefix else []) + tokens for tokens in source(texts)]

    return catalog_map(catalogs, pair, (source, target), folder, folder / MODEL)
