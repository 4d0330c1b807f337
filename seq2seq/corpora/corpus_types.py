"""The corpus types, one entry each: what `corpus.type` in the config chooses.

    CORPORA["numbers"]    generated: English number words -> digits    corpora/numbers.py
    CORPORA["parallel"]   your own files, one pair a line              text/parallel.py
    CORPORA["multi30k"]   downloaded: Multi30k task 1, de <-> en       corpora/multi30k.py
    CORPORA["sources"]    corpora by name, URLs and files, mixed       corpora/sources.py

An entry says once everything that differs between corpus types: how `make data` gets each
split's sentence pairs, the languages it translates (LibreTranslate's API, the Argos package
and the Hugging Face model card all ask `seq2seq.config.translation_pair`, which asks here), how a
model card describes it, the rules its config section must meet beyond each option's own
range (checked with the config), and the scores `make eval` adds for it. Adding a corpus type
is one entry here and its name in CorpusConfig.type (seq2seq/options.py; a test keeps the
two in step).

    build_corpus(config):  CORPORA[corpus.type].splits(config)
                             -> cleaned, and valid or test split off train where not given
                                (seq2seq/corpora/cleaning.py; not the generated numbers; a split
                                mixed from sources, each source before its max_pairs, weight)
                             -> data/<corpus.name>/{split}.src|tgt, and report.json
"""

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from seq2seq.corpora import multi30k, numbers, source_checks, sources
from seq2seq.corpora.cleaning import Mixed, Tally, clean_corpus, write_report
from seq2seq.options import Config, CorpusConfig
from seq2seq.serve_options import Language, ServeConfig
from seq2seq.support.errors import UserError
from seq2seq.text import parallel
from seq2seq.text.parallel import SPLITS, PairStream, write_pairs

# Stand-ins for a side that is no language: LibreTranslate's API needs a code and a name for
# each side, where the Hugging Face Hub's language tags leave them out (is_language).
DIGITS = Language("digits", "Digits")
SOURCE, TARGET = Language("src", "Source"), Language("tgt", "Target")


@dataclass(frozen=True)
class CorpusType:
    # `make data`: each split's sentence pairs; a type that gives no valid or test split has
    # it split off train
    splits: Callable[[Config], dict[str, PairStream | Mixed]]
    default_languages: Callable[[CorpusConfig], tuple[Language, Language]]  # from, to
    description: Callable[[CorpusConfig], str]  # a model card's "Trained with seq2seq on ..."
    # what its config section must meet besides each option's range, as error messages
    problems: Callable[[CorpusConfig], Iterable[str]] = lambda corpus: ()
    # `make eval`'s scores for it besides the common ones (seq2seq/training/metrics.py)
    metrics: Callable[[list[str], list[str]], dict] = lambda hypotheses, references: {}
    reads_files: bool = False  # corpus.train, valid and test name the user's files
    cleaned: bool = True  # `make data` drops the pairs the config's `clean` section rules out


CORPORA = {
    "numbers": CorpusType(
        splits=numbers.splits,
        default_languages=lambda corpus: (Language("en", "English"), DIGITS),
        description=lambda corpus: (
            f"the generated numbers corpus (English number words to digits, preset "
            f"{corpus.preset}, {corpus.train_size:,} training pairs, seed {corpus.seed})"
        ),
        problems=numbers.problems,
        # generated clean; the seed preset repeats its nine pairs in every split on purpose
        cleaned=False,
        metrics=lambda hypotheses, references: {
            "exact_match_by_digits": numbers.exact_match_by_digits(hypotheses, references)
        },
    ),
    "parallel": CorpusType(
        splits=parallel.splits,
        default_languages=lambda corpus: (SOURCE, TARGET),
        description=lambda corpus: f"the parallel corpus {corpus.name}",
        problems=parallel.problems,
        reads_files=True,
    ),
    "multi30k": CorpusType(
        splits=multi30k.splits,
        default_languages=lambda corpus: tuple(
            Language(code, multi30k.LANGUAGE_NAMES[code])
            for code in (corpus.src_lang, corpus.tgt_lang)
        ),
        description=lambda corpus: (
            f"Multi30k task 1, {corpus.src_lang} to {corpus.tgt_lang} (test: {corpus.test_set})"
        ),
        problems=multi30k.problems,
    ),
    "sources": CorpusType(
        splits=sources.splits,
        # a code as its own name: serve.source_language and target_language give names
        default_languages=lambda corpus: tuple(
            Language(code, code) for code in (corpus.src_lang, corpus.tgt_lang)
        ),
        description=source_checks.description,
        problems=source_checks.problems,
    ),
    # a model made elsewhere, read by python -m seq2seq.import_model: no corpus of its own
    "imported": CorpusType(
        splits=lambda config: imported_has_no_corpus(config.corpus),
        default_languages=lambda corpus: tuple(
            Language(code, code) for code in (corpus.src_lang, corpus.tgt_lang)
        ),
        description=lambda corpus: "another toolkit (an imported model)",
        cleaned=False,
    ),
}


def imported_has_no_corpus(corpus: CorpusConfig):
    raise UserError(
        f"corpus {corpus.name!r} is an imported model's: it has no texts of its own; to "
        "fine-tune it, write a config with your corpus and train.init_from: its checkpoint"
    )


def corpus_type(corpus: CorpusConfig) -> CorpusType:
    return CORPORA[corpus.type]


def corpus_problems(corpus: CorpusConfig) -> Iterator[str]:
    """What the config's corpus section gets wrong for its type, as error messages."""
    if not corpus_type(corpus).reads_files:
        readers = " or ".join(name for name, kind in CORPORA.items() if kind.reads_files)
        for split in SPLITS:
            if getattr(corpus, split) is not None:
                yield f"'corpus.{split}' is only used with corpus.type: {readers}"
    if corpus.type != "sources":
        for key in ("train_sources", "valid_source", "test_source", "mirror"):
            if getattr(corpus, key):
                yield f"'corpus.{key}' is only used with corpus.type: sources"
    yield from corpus_type(corpus).problems(corpus)


def corpus_languages(corpus: CorpusConfig, settings: ServeConfig) -> tuple[Language, Language]:
    """What the model translates from and to: serve's settings, else the corpus type's."""
    source, target = corpus_type(corpus).default_languages(corpus)
    return settings.source_language or source, settings.target_language or target


def is_language(language: Language) -> bool:
    """Whether a side is a language (a code the Hub's tags know), not a stand-in."""
    return language not in (DIGITS, SOURCE, TARGET)


def build_corpus(config: Config) -> dict[str, int]:
    """Write the corpus of `config` to data/<corpus.name>/, with its report; returns the pairs
    per split."""
    kind = corpus_type(config.corpus)
    splits = kind.splits(config)
    if kind.cleaned:
        codes = tuple(language.code for language in corpus_languages(config.corpus, config.serve))
        tallies = clean_corpus(config, splits, codes)
    else:
        tallies = {split: uncleaned(config, split, pairs) for split, pairs in splits.items()}
    write_report(config, tallies)
    return {split: tally.pairs for split, tally in tallies.items()}


def uncleaned(config: Config, split: str, pairs: PairStream) -> Tally:
    count = write_pairs(config.data_dir, split, pairs)
    return Tally(read=count, kept=count)
