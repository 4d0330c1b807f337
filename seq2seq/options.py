"""The experiment's options: one dataclass a section of the config, each option with its type,
its default, its range (`Annotated[int, "at least 1"]`: seq2seq/config.py checks it) and
the comment that describes it, once.

    Config        experiment (the runs/<experiment>/ folder) and the sections:
      corpus      CorpusConfig   the parallel text (seq2seq/corpora/corpus_types.py: its types)
      clean       CleanConfig    which pairs `make data` drops (seq2seq/corpora/cleaning.py)
      vocab       VocabConfig    the sentencepiece vocabularies
      model       ModelConfig    the Transformer (seq2seq/model/config.py, beside the model)
      train       TrainConfig    `make train`
      decode      DecodeConfig   translation: validation, `make eval`, translate, the service
      serve       ServeConfig    the HTTP service (seq2seq/serve_options.py: its concerns)

config.yaml's comments and docs/configuration.md are written from the comments beside the
fields (seq2seq/config_docs.py, `make config-docs`); seq2seq/config.py reads a YAML file into
a `Config` and checks it.
"""

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from seq2seq.model.config import ModelConfig
from seq2seq.serve_options import ServeConfig
from seq2seq.support import paths

DEFAULT_CONFIG = "config.yaml"

# decode.compute_type: ours (auto) and CTranslate2's names (its own "auto" is not ours)
ComputeTypeName = Literal[
    "auto",
    "default",
    "float32",
    "int8",
    "int8_float32",
    "int8_float16",
    "int8_bfloat16",
    "int16",
    "float16",
    "bfloat16",
]


@dataclass
class SplitFiles:
    """One split of a parallel corpus: two files where line N of `tgt` translates line N of
    `src`, or one `tsv` file with "source<TAB>target" lines. Plain text or gzip (.gz)."""

    src: str | None = None
    tgt: str | None = None
    tsv: str | None = None


@dataclass
class Source:
    """One source of sentence pairs for corpus.type: sources (seq2seq/corpora/sources.py): exactly
    one of `opus`, `sacrebleu`, `url`, `file` and `suggestions`, in the pair corpus.src_lang ->
    tgt_lang."""

    opus: str | None = None  # an OPUS corpus by name (opus.nlpl.eu), e.g. Tatoeba, its Moses files
    version: str = "latest"  # opus: the corpus's release, e.g. v2023-04-12
    sacrebleu: str | None = None  # a sacreBLEU test set by name, e.g. wmt14 (`sacrebleu --list`)
    # an http(s):// or file:// URL of a .tsv or .tsv.gz file ("source<TAB>target" lines), a .zip
    # holding a Moses pair (two files ending .<src_lang> and .<tgt_lang>), or a Moses pair
    # itself, plain or .gz, named once with {lang} for the language: https://x.org/train.{lang}.gz;
    # or a catalog (pip install 'seq2seq[catalogs]'; seq2seq/localization/catalogs.py):
    # gettext's .po or .mo (msgid -> msgstr), XLIFF 1.2 or 2 (.xlf, .xliff), a TMX translation
    # memory (.tmx)
    url: str | None = None
    # a file of yours, as url: .tsv, .tsv.gz, .zip, train.{lang} or a catalog; or a folder of
    # catalogs of one language, read at any depth (a path without a suffix, or ending in /),
    # e.g. /usr/share/locale/de/LC_MESSAGES
    file: str | None = None
    # the SQLite file where a service keeps its users' suggestions (serve.suggestions_file):
    # the better translations they sent for corpus.src_lang -> tgt_lang, each once
    suggestions: str | None = None
    # train: this source's pairs go in this many times, 1 or more (your own small data beside
    # a large corpus); the copies are not duplicates to the `clean` section; with more than
    # 1 the pairs are held in memory
    weight: int = 1
    # only the first this many pairs that pass the `clean` section are taken (null: all)
    max_pairs: int | None = None
    # A folder of catalogs (file:) among train_sources: this share of its programs, in [0, 1),
    # is held out whole for the valid and test splits (half each, one each at least), so that
    # their scores are on software the model has not seen. A program is a catalog's path in the
    # folder less its suffix (x.po and x.mo are one); those held out have the smallest hash
    # keyed by corpus.seed, the same on every run and in every language's folder of one tree.
    # valid_source and test_source must then be null (valid_size, test_size are unused);
    # report.json names the catalogs held out. 0: none. Or name folders as valid_source, test_source
    hold_out: float = 0.0
    # A folder of catalogs (file:): which of its programs it gives, each whole: all | base (60%
    # of them: a base model's own) | user (20%: a user's, what a fine-tune learns from) |
    # held_out (20%: no training's, for tests on programs never seen). A program's group comes
    # from a hash of its name with a fixed key (seq2seq/localization/catalogs.py:
    # PROGRAM_GROUPS): the same in every language's folder and every config, whatever corpus.seed
    programs: Literal["all", "base", "user", "held_out"] = "all"


@dataclass
class CorpusConfig:
    """The parallel text to learn from, written to data/<name>/ by `make data`."""

    # numbers: the built-in generator | parallel: your own files | multi30k: the Multi30k
    # task 1 corpus, downloaded and checked (seq2seq/corpora/multi30k.py) | sources: corpora
    # by name, URLs and files, mixed (seq2seq/corpora/sources.py) | imported: none, a model made
    # elsewhere (python -m seq2seq.import_model)
    type: Literal["numbers", "parallel", "multi30k", "sources", "imported"] = "numbers"
    name: str = "numbers"  # the corpus and its vocabularies go to data/<name>/
    # numbers: "default" is "<a> is <b>" sentences of number words for 0..999,999; "seed" the
    # nine pairs "one is one" -> "1 la 1" ... "nine is nine" -> "9 la 9"
    preset: Literal["default", "seed"] = "default"
    train_size: int = 20000  # numbers: sentence pairs in the training split
    # numbers: sentence pairs in the validation split; other types: the pairs split off the
    # training data, at random, when the corpus gives no validation split (parallel: no
    # valid; sources: no valid_source)
    valid_size: int = 500
    test_size: int = 1000  # the test split's, as valid_size
    same_prob: Annotated[float, "in [0, 1]"] = 0.5  # numbers: probability that <b> repeats <a>
    # numbers: probability that a digit after the first is 0
    zero_prob: Annotated[float, "in [0, 1]"] = 0.3
    # numbers: the corpus is a deterministic function of this seed; other types: which pairs
    # valid_size and test_size split off the training data (sources: which catalogs hold_out
    # holds out)
    seed: int = 1
    # multi30k, sources: the source language's code (multi30k: de or en; sources: as OPUS and
    # sacreBLEU name it, e.g. fr)
    src_lang: str = "de"
    tgt_lang: str = "en"  # multi30k, sources: the target language's code, as src_lang
    # multi30k: the test set
    test_set: Literal["test_2016_flickr", "test_2017_flickr"] = "test_2016_flickr"
    # multi30k: where the raw files come from (a mirror, or a local folder as file:///path)
    base_url: str = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw"
    # every type but numbers: longer pairs (in words, either side) are dropped, from every split
    max_words: Annotated[int, "positive"] = 250
    # parallel: the training split, {src: FILE, tgt: FILE} (line N of tgt translates line N of
    # src) or {tsv: FILE} ("source<TAB>target" lines); UTF-8, plain or .gz
    train: SplitFiles | None = None
    # parallel: the validation split, as train; null: valid_size pairs split off train
    valid: SplitFiles | None = None
    test: SplitFiles | None = None  # parallel: the test split, as valid (test_size pairs)
    # sources: the training split, from these sources together, each
    # {opus: NAME} | {sacrebleu: NAME} | {url: URL} | {file: PATH}, with its weight and max_pairs
    train_sources: list[Source] = field(default_factory=list)
    # sources: the validation split, one source as above; null: valid_size pairs split off
    # the training sources
    valid_source: Source | None = None
    test_source: Source | None = None  # sources: the test split, as valid_source (test_size)
    # sources: a base URL that replaces the scheme and host of every URL they download (the
    # OPUS API's, its corpora's, sacreBLEU's test sets' and url sources'), keeping the path:
    # with http://mirror.lan/opus, https://opus.nlpl.eu/opusapi/ is http://mirror.lan/opus/opusapi/
    mirror: str = ""


@dataclass
class CleanConfig:
    """Which sentence pairs `make data` drops from a corpus it reads (every type but numbers),
    each counted in data/<corpus.name>/report.json. The filters clean the training and
    validation splits; a given test split loses only the pairs no model can take (an empty
    side, more than corpus.max_words words), so that its scores stay comparable."""

    drop_empty: bool = True  # a side that is empty or only white space
    # the longer side has more than this many times the characters of the shorter (0: off);
    # 9 is Moses' clean-corpus-n default (in words there), far above any language pair's
    max_length_ratio: Annotated[float, ">= 0"] = 9.0
    drop_identical: bool = True  # the source is the target, an untranslated copy
    # a control character (Unicode category Cc, tab aside) on either side: binary junk or
    # a broken encoding
    drop_control_chars: bool = True
    # a pair seen before in its split (from any of its sources; not the copies a source's
    # weight makes), a training pair that is in valid or test, and a validation pair that is
    # in test (the test split keeps its own)
    drop_duplicates: bool = True
    # a side that py3langid (pip install 'seq2seq[langid]') does not identify as its
    # language: serve.source_language and target_language, else the corpus's (multi30k,
    # sources: corpus.src_lang, tgt_lang). Short sentences are misidentified often: measure first.
    language_id: bool = False


@dataclass
class VocabConfig:
    """The sentencepiece vocabularies, learnt from the training split only."""

    # word | unigram | bpe | char; the last three split digits into single pieces
    model_type: Literal["word", "unigram", "bpe", "char"] = "word"
    src_size: Annotated[int, "at least 8"] = 64  # source pieces at most (a small corpus gets fewer)
    tgt_size: Annotated[int, "at least 8"] = 64  # target pieces at most
    # share of characters covered (lower it for large alphabets)
    character_coverage: Annotated[float, "in (0, 1]"] = 1.0
    joint: bool = False  # one vocabulary of src_size pieces for both languages, or two
    # sentencepiece learns from a random sample of at most this many sentences of each side:
    # its time and memory stay bounded however large the corpus
    sample_size: Annotated[int, "at least 1"] = 1_000_000
    # Source text normalisation, the same at training and translation time
    # (seq2seq/tokens/vocab.py); real text usually keeps both.
    lowercase: bool = False  # "Twenty one" reads as "twenty one"
    hyphens_as_spaces: bool = False  # "twenty-one" reads as "twenty one"


@dataclass
class TrainConfig:
    """`make train` (seq2seq/train.py)."""

    device: str = "auto"  # auto: CUDA, then Apple MPS, then CPU | cpu | cuda | cuda:1 | mps
    seed: int = 1  # the initial weights, the batches and dropout follow from it
    # Fine-tuning: a checkpoint of ours (a best.pt, an averaged one) this run starts from instead
    # of random weights, with a fresh optimizer and this section's schedule, in its own
    # runs/<experiment>/. `make data` then encodes the corpus with the checkpoint's
    # vocabularies (copied to data/<corpus.name>/: they cannot grow), and the model and vocab
    # sections must be the checkpoint's. Resuming reads last.pt, not this. null: from scratch
    init_from: str | None = None
    # Fine-tuning that keeps what the start knew, without its training data (needs
    # init_from; 0: off): the share of each token's target that is the start model's own
    # output distribution, the rest the reference (Khayrallah et al. 2018); costs a forward
    # pass of the start model per batch
    keep_teacher: Annotated[float, "in [0, 1)"] = 0.0
    # The same aim another way (needs init_from; 0: off): after each step every weight moves
    # lr x this of the way back to its start value, an L2 pull toward the start decoupled as
    # AdamW's decay is (Thompson et al. 2019, with a uniform Fisher); costs a copy of the weights
    keep_weights: Annotated[float, ">= 0"] = 0.0
    # What must not be lost, measured (needs init_from; null: off): sentence pairs of the kind
    # the start translates well and the fine-tune does not learn from, {src: FILE, tgt: FILE}
    # or {tsv: FILE} as corpus.valid (general text with the start's own translations will
    # do). Each validation scores their BLEU too, the start's first, at step 0; one more
    # than keep_bleu_drop below the start's is never best.pt and counts as a validation
    # without gain (train.patience: that many in a row stop training)
    keep_valid: SplitFiles | None = None
    keep_bleu_drop: Annotated[float, ">= 0"] = 1.0  # BLEU on keep_valid a validation may lose
    # Parameters that do not learn (fine-tuning), by the start of their names: the model's
    # parts src_embed, tgt_embed, encoder, encoder_norm, decoder, decoder_norm, or deeper
    # (encoder.0: the first encoder layer); a matrix shared by the embeddings goes by
    # src_embed. []: all learn
    freeze: list[str] = field(default_factory=list)
    # Teach the model to follow glossaries (0: off): this share of the training pairs that
    # hold a term get its target written into their source, "the layer [[ Ebene ]] is red",
    # the term pairs drawn from the training pairs themselves (localization/term_pairs.py), in the
    # token ids `make data` writes; decode.terms auto then annotates (docs/terms.md)
    terms: Annotated[float, "in [0, 1]"] = 0.0
    # padded source + target tokens per optimizer step, in all
    batch_tokens: Annotated[int, "positive"] = 1500
    # micro-batches per process and step: each step is split into processes x accumulate
    # micro-batches of equal token budgets
    accumulate: Annotated[int, "at least 1"] = 1
    # Memory for the training process, in MiB (its resident size on a CPU, torch's reserve on
    # a GPU): at the start a step on the data's costliest batches is measured, and train.
    # accumulate doubled until it fits (the same steps, in more and smaller micro-batches), or
    # training stops at once, saying what the model needs. 0: no bound
    max_memory_mib: Annotated[int, ">= 0"] = 0
    max_steps: Annotated[int, "positive"] = 5000  # training stops here at the latest
    # A schedule from the size of the data: training stops after this many passes over the
    # training split at the latest (each as many steps as the first epoch has), the learning
    # rate's decay laid over them, as over max_steps if that comes first. 0: no bound
    max_epochs: Annotated[float, ">= 0"] = 0.0
    # A time budget: training also stops once it has run this many minutes (validations
    # included; a resumed run counts its earlier minutes), and the learning rate's decay is
    # laid over the budget, reaching min_lr at its end (or at max_steps, if that comes first).
    # 0: no budget
    max_minutes: Annotated[float, ">= 0"] = 0.0
    lr: Annotated[float, "positive"] = 0.002  # peak learning rate (AdamW), reached after the warmup
    min_lr: Annotated[float, ">= 0"] = 0.0001  # the cosine decay ends here at max_steps
    warmup_steps: Annotated[int, ">= 0"] = 200  # linear warmup from 0
    weight_decay: Annotated[float, ">= 0"] = 0.01  # AdamW's, on the weight matrices only
    # share of the target probability spread over the ordinary tokens (not PAD, BOS, EOS)
    label_smoothing: Annotated[float, "in [0, 1)"] = 0.1
    clip_norm: Annotated[float, "positive"] = 1.0  # gradients are scaled down to at most this norm
    # validate (loss, and the exact match and BLEU of translations) every this many steps
    eval_every: Annotated[int, "positive"] = 250
    # early stopping: after this many validations in a row without a gain in
    # train.best_metric, whichever it is (an equal score with a lower loss is a gain); 0: never
    patience: Annotated[int, ">= 0"] = 0
    # what makes a checkpoint the best: valid exact match or BLEU (ties: lower loss), or loss
    best_metric: Literal["exact_match", "bleu", "loss"] = "exact_match"
    # validation translates greedily (1), or with this many beams
    valid_beam_size: Annotated[int, "at least 1"] = 1
    # what decodes the valid split: ctranslate2 (the export extra) gives our own decoding's
    # outputs sooner on a CPU, two batches at once on 2 cores; auto: ctranslate2 when training
    # on a CPU where it is installed, else torch (our own code, seq2seq/decoding/)
    valid_engine: Literal["auto", "torch", "ctranslate2"] = "auto"
    # keep the models of the last this many validations (runs/<experiment>/step-<N>.pt) and
    # at the end validate their average, which becomes best.pt if it is better (0: off)
    average_last: Annotated[int, ">= 0"] = 0
    threads: Annotated[int, ">= 0"] = 0  # CPU threads for torch (0: torch's default)
    # CPU (Linux, glibc): memory blocks up to this size that a step frees are kept by the
    # process for the next step instead of going back to the kernel, which would zero them
    # again (faster steps, a larger resident size between validations); 0: glibc's defaults
    keep_freed_mib: Annotated[int, ">= 0"] = 1024
    # CPU: how many compiled kernels oneDNN (torch's bf16 matrix products on a CPU) keeps, one
    # for each shape of matrix it met, each with buffers of its own: a training's batches come
    # in hundreds of shapes, and at oneDNN's default, 1024, a bf16 run grew by GBs (fewer: less
    # memory, more kernels made again). The environment's ONEDNN_PRIMITIVE_CACHE_CAPACITY wins
    onednn_kernels: Annotated[int, ">= 0"] = 16
    # The memory allocator of `python -m seq2seq.train` (Linux; it starts itself again with the
    # library preloaded, and its first lines name it): tcmalloc (the system's package), mimalloc
    # (installed with seq2seq) or jemalloc (the system's) hand freed memory to the next step
    # with less left unused between blocks than glibc's (peak RSS, docs/training-speed.md);
    # auto: the first of them installed, in that order; system: glibc's
    allocator: Literal["auto", "tcmalloc", "mimalloc", "jemalloc", "system"] = "auto"
    # auto: bf16 autocast on a GPU with bf16 tensor cores, fp16 on older GPUs (T4, V100), bf16
    # on a CPU that computes it natively (avx512_bf16, amx_bf16), fp32 elsewhere
    # (seq2seq/support/device.py); fp16 adds a gradient scaler. Weights, gradients, the
    # optimizer's state and checkpoints stay fp32
    precision: Literal["auto", "fp32", "bf16", "fp16"] = "auto"
    compile: bool = False  # torch.compile the model for training (pays off on GPUs)


@dataclass
class DecodeConfig:
    """Translation: validation, `make eval`, translate and the service."""

    batch_size: Annotated[int, "positive"] = 500  # sentences decoded together
    cache: bool = True  # keep keys/values between steps (false: rerun the whole prefix)
    # 1: greedy decoding | more: beam search with this many beams
    beam_size: Annotated[int, "at least 1"] = 1
    # beam search: scores are divided by length ** this (length: pieces and EOS)
    length_penalty: Annotated[float, ">= 0"] = 1.0
    # an output stops after max_len_a * its source length + max_len_b pieces
    max_len_a: Annotated[float, ">= 0"] = 2.0
    max_len_b: Annotated[int, ">= 0"] = 10  # see max_len_a
    # no runaway loops ("salad salad salad ..."): a token that would repeat an n-gram of this
    # many pieces already in the output is never chosen (CTranslate2's and transformers'
    # no_repeat_ngram_size; Argos has none); 0: off. 7: no correct numbers output repeats 7
    # pieces, but "1 2 3 4 5 6 la 1 2 3 4 5 6" repeats 6 (docs/learn.md)
    no_repeat_ngram: Annotated[int, ">= 0"] = 7
    # auto: bf16 autocast on a GPU with bf16 tensor cores, fp16 on older GPUs, fp32 elsewhere
    # (seq2seq/support/device.py); fp32 gives CTranslate2's float32 outputs exactly
    precision: Literal["auto", "fp32", "bf16", "fp16"] = "auto"
    # protect: placeholders and markup (%s %1$s {0} %1 <b> \n [X7X] ...) and an accelerator
    # (&Open, _Save) are kept from the model and put back in its output, each exactly once
    # (seq2seq/text/placeholders.py); a text without any goes to the model as it is | off:
    # translated as text
    placeholders: Literal["protect", "off"] = "protect"
    # CTranslate2's type for the weights (default: the model's own, as saved) | auto: for a
    # checkpoint decoded from its export, the fastest type whose BLEU on the first validation
    # sentences is within compute_type_bleu_loss of float32's, measured once per machine and
    # kept in the export (decoding/compute_types.py); a model given with --model: its own
    compute_type: ComputeTypeName = "auto"
    compute_type_bleu_loss: Annotated[float, ">= 0"] = 0.3  # BLEU that auto may give up
    # CTranslate2 scores, for a batch, only the target pieces its source pieces' vocabulary map
    # lists (the export's vmap.txt, from the training pairs: exports/vocab_map.py; or one made
    # of vmap_catalogs): a smaller output layer; false: every piece. An export without the map
    # decodes without it; a package holds none (vmap_catalogs makes it one)
    vmap: bool = False
    # With vmap, the map made of the gettext catalogs (.po, .mo) under this folder, at any depth,
    # of the model's target language, for any model CTranslate2 decodes (an Argos package too):
    # e.g. /usr/share/locale/de/LC_MESSAGES or a project's po/ (kept in ~/.cache/seq2seq/vmap);
    # a model given with --model: the command line's. Empty: the export's own map
    vmap_catalogs: str = ""
    # How a glossary's terms are followed (localization/terms.py): annotate: the target term written
    # after the source term, for a model taught terms (train.terms), a sentence whose output
    # lacks one translated again masked | mask: the term kept from the model as a placeholder
    # and given back as the target, uninflected | auto: annotate for a model taught terms,
    # else mask. Do-not-translate entries (target = source) come back verbatim either way
    terms: Literal["auto", "annotate", "mask"] = "auto"


@dataclass
class Config:
    """One experiment: its corpus, vocabularies, model, training, decoding and service."""

    experiment: str = "numbers"  # outputs go to runs/<experiment>/
    corpus: CorpusConfig = field(default_factory=CorpusConfig)
    clean: CleanConfig = field(default_factory=CleanConfig)
    vocab: VocabConfig = field(default_factory=VocabConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    decode: DecodeConfig = field(default_factory=DecodeConfig)
    serve: ServeConfig = field(default_factory=ServeConfig)
    file = DEFAULT_CONFIG  # not a field: the YAML file load_config read, for `make_command`

    def make_command(self, target: str) -> str:
        """What to type to run a make target on this experiment, for "run ... first" errors:
        `make train`, or `make train CONFIG=configs/x.yaml`."""
        if Path(self.file) == Path(DEFAULT_CONFIG):
            return f"`make {target}`"
        return f"`make {target} CONFIG={self.file}`"

    @property
    def data_dir(self) -> Path:
        return Path("data") / self.corpus.name

    @property
    def run_dir(self) -> Path:
        return Path("runs") / self.experiment

    @property
    def checkpoint_path(self) -> Path:
        return self.run_dir / paths.BEST

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)
