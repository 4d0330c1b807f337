"""The engines that translate with a trained model: one interface, and the one path from texts
to translations that every command and the service take.

    translate_texts(engine, texts, decoding, nbest)    texts (seq2seq/text/sentences.py: each
      -> engine.translate(texts.sentences, decoding)   split into its sentences, or whole)
         or engine.translate_nbest(...)                -> one translation per sentence
      -> each on one line, joined text by text         -> Translated: a translation (or the
         (the n-best: the Nth of each sentence)           n best) and the warnings of each text

Each sentence's placeholders (%s, {0}, <b>, [X7X] ...) are kept from the model and put back
in its translation, each exactly once (decode.placeholders, seq2seq/text/placeholders.py):
masked in a form both vocabularies spell, else lifted out; a sentence without any goes to
the model as it is. Its accelerator ("_Save", "&Open") is taken out before and put back
after. No sentence with words is answered with none: the search never ends an output at its
first piece (special.MIN_OUTPUT_PIECES), a translation of placeables alone (or of no word) is
made again with them lifted out, and one still without a word is the sentence itself, with a
warning (unbared).

Every engine has these members (a new engine is a class with them; nothing that holds one
asks which one it has):

    engine.config                     the experiment config the model was trained with; its
                                      `decode` section is the default decoding, with what the
                                      command line set in place (engine_choice.py)
    engine.unused                     the decode settings it has no use for, each with why
                                      (refused when the command line sets one)
    engine.src_vocab, .tgt_vocab      the sentencepiece vocabularies (an Argos package's: its
                                      tokenizer, with their members: argos_tokenizers.py)
    engine.longest_source             source pieces the model takes (longer inputs are cut)
    engine.facts()                    what it says of itself: engine, device, parameters,
                                      config (the settings it knows it has) ...
    engine.translate(sentences, decoding)        -> Translations: one text each, each
                                                    sentence's warnings (unknown words, a
                                                    cut to fit), from one encoding, and the
                                                    mean log-probability a piece of each
                                                    translation (its confidence's signal)
    engine.translate_nbest(sentences, decoding)  -> the same with decoding.beam_size
                                                    (score, text) pairs each, best first
    engine.calibration                what maps a signal to a confidence (confidence.py): the
                                      model's, fitted on its validation set; None if it has
                                      none
    engine.replicas                   how many batches it decodes at once (a service's
                                      decoder threads: serving/batcher.py): 1, or
                                      CTranslate2's decoders (decoding/threads.py)
    engine.attention(sentence)        the attention weights of one translation (torch only:
                                      engine.shows_attention says whether it can)

    TorchEngine(checkpoint)           our PyTorch model (batches.py: greedy.py, beam.py)
    CTranslate2Engine.load(folder)    a model exported by `python -m seq2seq.export
                                      ctranslate2`, decoded by CTranslate2 (ctranslate2_engine.py)

Which one a command gets (`--engine auto`, the fastest whose outputs are ours, by default) is
chosen in engine_choice.py.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, NamedTuple, Protocol

from seq2seq.checkpoint import Checkpoint
from seq2seq.config import Config, DecodeConfig, Language, ServeConfig, translation_pair
from seq2seq.decoding.attention_maps import Attention, attention_maps
from seq2seq.decoding.batches import nbest_of_sources, search_sources
from seq2seq.decoding.beam import per_piece
from seq2seq.decoding.confidence import SURE_SIGNAL, UNTRANSLATED_SIGNAL, Calibration
from seq2seq.decoding.warnings import source_warnings
from seq2seq.localization.terms import Term, found_in, shielded, used
from seq2seq.text.placeholders import (
    Accelerated,
    Protected,
    bare,
    has_placeables,
    protect,
    unaccelerated,
)
from seq2seq.text.sentences import Texts
from seq2seq.tokens.vocab import Vocab, mask_for


def one_line(text: str) -> str:
    """A translation never spans two lines."""
    return " ".join(text.splitlines())


class Translations(NamedTuple):
    """What an engine answers for a list of sentences, each list in their order."""

    outputs: list  # a text each (translate), or (score, text) pairs best first (translate_nbest)
    warnings: list[list[str]]  # each sentence's, unnumbered (warnings.numbered)
    signals: list[float]  # each best translation's mean log-probability a piece (beam.per_piece)


def encoded(engine, sentences: list[str]) -> tuple[list[list[int]], list[list[str]]]:
    """Each sentence's source ids, cut to what the model takes, and its warnings: one encoding."""
    return warned(engine, sentences, engine.src_vocab.encode(sentences))


def warned(engine, sentences: list[str], sources: list[list[int]]):
    """The sentences' source ids (`sources`), cut to what the model takes, and their warnings."""
    longest = engine.longest_source
    warnings = [
        source_warnings(engine.src_vocab, longest, sentence, ids)
        for sentence, ids in zip(sentences, sources, strict=True)
    ]
    return [ids[:longest] for ids in sources], warnings


def published(config: Config) -> dict:
    """A model's config as its engine tells it (facts()): what it was trained with, less the
    serve section saved then (a service's settings in force are its own)."""
    settings = config.to_dict()
    del settings["serve"]
    return settings


@dataclass
class TorchEngine:
    """A checkpoint decoded by our own code (greedy.py, beam.py)."""

    checkpoint: Checkpoint
    shows_attention = True
    replicas = 1  # one batch at a time (on serve.threads torch threads)
    unused: ClassVar[dict[str, str]] = {
        "compute_type": "our torch code decodes it, in decode.precision (compute_type is "
        "CTranslate2's: --engine auto or ctranslate2)",
        "vmap": "our torch code decodes it, over every target piece (the vocabulary map is "
        "CTranslate2's: --engine auto or ctranslate2)",
        "vmap_catalogs": "our torch code decodes it, over every target piece (the vocabulary "
        "map is CTranslate2's: --engine auto or ctranslate2)",
    }

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
        return self.checkpoint.model.cfg.longest_source

    @property
    def device(self) -> str:
        return str(next(self.checkpoint.model.parameters()).device)

    @property
    def calibration(self) -> Calibration | None:
        return Calibration.read(self.checkpoint.info.get("confidence"))

    def facts(self) -> dict:
        return {
            "engine": "torch",
            "checkpoint": dict(self.checkpoint.info),  # training step, valid scores, example
            "parameters": self.checkpoint.model.num_parameters(),
            "device": self.device,
            "config": published(self.config),
        }

    def translate(self, sentences: list[str], decoding: DecodeConfig) -> Translations:
        sources, warnings = encoded(self, sentences)
        outputs = search_sources(self.checkpoint.model, sources, decoding)
        texts = self.tgt_vocab.detokenize([output.ids for output in outputs])
        return Translations(texts, warnings, [output.log_prob for output in outputs])

    def translate_nbest(self, sentences: list[str], decoding: DecodeConfig) -> Translations:
        sources, warnings = encoded(self, sentences)
        nbest = nbest_of_sources(self.checkpoint.model, sources, decoding)
        texts = [[(score, self.tgt_vocab.detokenize([ids])[0]) for score, ids in n] for n in nbest]
        alpha = decoding.length_penalty
        signals = [per_piece(score, len(ids), alpha) for (score, ids), *_ in nbest]
        return Translations(texts, warnings, signals)

    def attention(self, sentence: str) -> Attention:
        return attention_maps(self.checkpoint, sentence)


class Engine(Protocol):
    """What every engine has: the members in the table above."""

    shows_attention: bool
    config: Config
    unused: dict[str, str]
    src_vocab: Vocab
    tgt_vocab: Vocab
    longest_source: int
    calibration: Calibration | None

    def facts(self) -> dict: ...
    def translate(self, sentences: list[str], decoding: DecodeConfig) -> Translations: ...
    def translate_nbest(self, sentences: list[str], decoding: DecodeConfig) -> Translations: ...
    def attention(self, sentence: str) -> Attention: ...


def model_languages(
    config: Config | None, fixed: tuple | None, settings: ServeConfig | None = None
) -> tuple[Language, Language]:
    """What a model translates from and to: an Argos package's `fixed` pair (its metadata),
    else its config's with these serve settings (None: the config's own; translation_pair)."""
    return fixed or translation_pair(config, settings or config.serve)


def languages_of(engine: Engine, settings: ServeConfig | None = None) -> tuple[Language, Language]:
    """model_languages of a loaded engine (an Argos engine has `languages`)."""
    return model_languages(engine.config, getattr(engine, "languages", None), settings)


class Translated(NamedTuple):
    """What translate_texts answers, for each text in order."""

    translations: list  # a text each, or (nbest) its n best (score, text) pairs, best first
    warnings: list[list[str]]  # each text's, its sentences' in order, unnumbered
    signals: list[list[float]]  # each text's sentences' confidence signals (confidence.py)


def translate_texts(
    engine: Engine, texts: Texts, decoding: DecodeConfig, nbest: int | None = None,
    terms: Mapping[str, str] | None = None,
) -> Translated:  # fmt: skip
    """Texts -> each one's translation (its sentences' joined in the white space that stood
    between them) or, with `nbest`, its `nbest` best (score, text), its warnings, and its
    sentences' confidence signals. The sentences of all the texts are decoded together; no
    translated sentence spans two lines. `terms` (a glossary's entries, source -> target) are
    followed (seq2seq/localization/terms.py)."""
    protecting = decoding.placeholders == "protect"
    keys = [unaccelerated(s) if protecting else Accelerated(s, None) for s in texts.sentences]
    plain = [key.text for key in keys]  # without their accelerators
    each = found_in(plain, terms) if terms else None
    annotate = bool(each) and term_method(engine, decoding) == "annotate"
    shields = protected(engine, plain, decoding.placeholders, each, annotate)
    sentences = [shield.source for shield in shields]
    if nbest is None:
        outputs, warnings, signals = engine.translate(sentences, decoding)
        lines = [
            shield.restore(one_line(text)) for shield, text in zip(shields, outputs, strict=True)
        ]
        if annotate:
            lines = with_terms(engine, plain, decoding, each, lines, signals)
        lines = unbared(engine, plain, decoding, lines, warnings, signals)
        lines = [key.restore(line) for key, line in zip(keys, lines, strict=True)]
        translations = texts.joined(lines)
    else:
        ranked, warnings, signals = engine.translate_nbest(sentences, decoding)
        lines = [
            [(score, key.restore(shield.restore(one_line(text)))) for score, text in best]
            for key, shield, best in zip(keys, shields, ranked, strict=True)
        ]
        translations = [best[:nbest] for best in texts.nbest(lines)]
    if each:
        whole = [all_terms(sentence, found) for sentence, found in zip(plain, each, strict=True)]
        signals = [SURE_SIGNAL if w else x for w, x in zip(whole, signals, strict=True)]
    return Translated(translations, texts.warnings(warnings), texts.grouped(signals))


def all_terms(sentence: str, terms: list[Term]) -> bool:
    """Whether every word of `sentence` is one of its glossary `terms` (then its translation
    is the glossary's: sure)."""
    rest = list(sentence)
    for term in terms:
        rest[term.start : term.end] = " " * (term.end - term.start)
    return bool(terms) and not any(c.isalnum() for c in rest)


def term_method(engine: Engine, decoding: DecodeConfig) -> str:
    """decode.terms in force: auto is annotate for a model taught terms (train.terms), else
    mask."""
    if decoding.terms != "auto":
        return decoding.terms
    return "annotate" if engine.config.train.terms > 0 else "mask"


def with_terms(
    engine: Engine, sentences: list[str], decoding: DecodeConfig, each: list[list[Term]],
    lines: list[str], signals: list[float],
) -> list[str]:  # fmt: skip
    """`lines`, the annotated translations of `sentences`, each that lacks a term of its
    sentence's (`each`) translated again with its terms masked, so that every term is there
    (its `signals` the new translation's)."""
    missed = [
        i for i, (line, terms) in enumerate(zip(lines, each, strict=True))
        if not all(used(line, term.target) for term in terms if not term.verbatim)
    ]  # fmt: skip
    if not missed:
        return lines
    again = [sentences[i] for i in missed]
    shields = protected(engine, again, decoding.placeholders, [each[i] for i in missed], False)
    outputs, _, new = engine.translate([shield.source for shield in shields], decoding)
    lines = list(lines)
    for i, shield, text, signal in zip(missed, shields, outputs, new, strict=True):
        lines[i], signals[i] = shield.restore(one_line(text)), signal
    return lines


def unbared(
    engine: Engine, sentences: list[str], decoding: DecodeConfig, lines: list[str],
    warnings: list[list[str]], signals: list[float],
) -> list[str]:  # fmt: skip
    """`lines`, the translations of `sentences`, each that is bare (no letter or digit where
    its sentence has one: placeholders.bare) translated again with its placeables lifted out
    (its `signals` the new translation's); one still bare is its sentence itself,
    untranslated, which its `warnings` say (its signal: UNTRANSLATED_SIGNAL)."""
    again = [i for i, (s, line) in enumerate(zip(sentences, lines, strict=True)) if bare(s, line)]
    if not again:
        return lines
    shields = [protect(sentences[i], None) for i in again]
    outputs, _, new = engine.translate([shield.source for shield in shields], decoding)
    lines = list(lines)
    for i, shield, text, signal in zip(again, shields, outputs, new, strict=True):
        lines[i], signals[i] = shield.restore(one_line(text)), signal
        if bare(sentences[i], lines[i]):
            lines[i], signals[i] = sentences[i], UNTRANSLATED_SIGNAL
            warnings[i] = [*warnings[i], UNTRANSLATED]  # lists an engine may share
    return lines


UNTRANSLATED = "the model gave none of its words: given back untranslated"


def protected(
    engine: Engine, sentences: list[str], placeholders: str,
    terms: list[list[Term]] | None = None, annotate: bool = False,
) -> list[Protected]:  # fmt: skip
    """Each sentence as the model gets it: its placeholders masked in a form both vocabularies
    spell, else lifted out (decode.placeholders protect), or as it is (off); its `terms`
    (found in it) annotated or masked as well (terms.py)."""
    protecting = placeholders == "protect" and any(map(has_placeables, sentences))
    if not protecting and not any(terms or []):
        return [Protected(sentence, sentence, [], None) for sentence in sentences]
    mask = mask_for(engine.src_vocab, engine.tgt_vocab)
    each = terms or [[] for _ in sentences]
    return [
        shielded(sentence, theirs, mask, placeholders == "protect", annotate)
        for sentence, theirs in zip(sentences, each, strict=True)
    ]
