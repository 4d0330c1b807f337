"""The experiment configuration: one typed object, read from YAML, checked key by key.

`config.yaml` at the top of the repository is the default experiment. Every option is
described once, by the comment above or beside its field below; config.yaml's comments and
docs/configuration.md are written from them (seq2seq/config_docs.py, `make config-docs`).
`load_config(path, overrides)` reads a config, applies command-line overrides such as
`train.max_steps=200`, and returns a `Config`. Anything unknown or of the wrong type
is a `ConfigError` that names the file and the key (and the nearest valid key for a typo).

A config file may start from another: `base: other.yaml` (a path relative to the file) reads
that file first, and the file's own keys override the base's, section by section; the base
may have a base too. configs/numbers_gpu.yaml, for example, holds only what the GPU recipe
changes in config.yaml.

Other paths in the config are relative to the directory the commands run from (the repository
root when you use `make`). The config names the two folders every stage works in,
data/<corpus.name>/ and runs/<experiment>/; seq2seq/support/paths.py names the files in them.
"""

import argparse
import contextlib
import dataclasses
import difflib
import ipaddress
import math
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import yaml

from seq2seq.model.config import ModelConfig
from seq2seq.support import paths
from seq2seq.support.errors import UserError

DEFAULT_CONFIG = "config.yaml"

# The numbers corpus holds out at most this many first numbers for its valid and test splits:
# half of the 900 three-digit numbers, for each of the digit counts 3..6 they are drawn from.
MAX_HELD_OUT = 4 * 450


class ConfigError(UserError):
    pass


@dataclass
class SplitFiles:
    """One split of a parallel corpus: two files where line N of `tgt` translates line N of
    `src`, or one `tsv` file with "source<TAB>target" lines. Plain text or gzip (.gz)."""

    src: str | None = None
    tgt: str | None = None
    tsv: str | None = None


@dataclass
class CorpusConfig:
    """The parallel text to learn from, written to data/<name>/ by `make data`."""

    # numbers: the built-in generator | parallel: your own files | multi30k: the Multi30k
    # task 1 corpus, downloaded and checked (seq2seq/text/multi30k.py)
    type: Literal["numbers", "parallel", "multi30k"] = "numbers"
    name: str = "numbers"  # the corpus and its vocabularies go to data/<name>/
    # numbers: "default" is "<a> is <b>" sentences of number words for 0..999,999; "seed" the
    # nine pairs "one is one" -> "1 la 1" ... "nine is nine" -> "9 la 9"
    preset: Literal["default", "seed"] = "default"
    train_size: int = 20000  # numbers: sentence pairs in the training split
    valid_size: int = 500  # numbers: sentence pairs in the validation split
    test_size: int = 1000  # numbers: sentence pairs in the test split
    same_prob: float = 0.5  # numbers: probability that <b> repeats <a>
    zero_prob: float = 0.3  # numbers: probability that a digit after the first is 0
    seed: int = 1  # numbers: the corpus is a deterministic function of this seed
    src_lang: Literal["de", "en"] = "de"  # multi30k: the source language
    tgt_lang: Literal["de", "en"] = "en"  # multi30k: the target language
    # multi30k: the test set
    test_set: Literal["test_2016_flickr", "test_2017_flickr"] = "test_2016_flickr"
    # multi30k: where the raw files come from (a mirror, or a local folder as file:///path)
    base_url: str = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw"
    max_words: int = 250  # parallel, multi30k: longer pairs (in words, either side) are dropped
    # parallel: the training split, {src: FILE, tgt: FILE} (line N of tgt translates line N of
    # src) or {tsv: FILE} ("source<TAB>target" lines); UTF-8, plain or .gz
    train: SplitFiles | None = None
    valid: SplitFiles | None = None  # parallel: the validation split, as train
    test: SplitFiles | None = None  # parallel: the test split, as train


@dataclass
class VocabConfig:
    """The sentencepiece vocabularies, learnt from the training split only."""

    # word | unigram | bpe | char; the last three split digits into single pieces
    model_type: Literal["word", "unigram", "bpe", "char"] = "word"
    src_size: int = 64  # source pieces at most (a small corpus gets fewer)
    tgt_size: int = 64  # target pieces at most
    character_coverage: float = 1.0  # share of characters covered (lower it for large alphabets)
    joint: bool = False  # one vocabulary of src_size pieces for both languages, or two
    # sentencepiece learns from a random sample of at most this many sentences of each side:
    # its time and memory stay bounded however large the corpus
    sample_size: int = 1_000_000
    # Source text normalisation, the same at training and translation time (seq2seq/text/vocab.py);
    # real text usually keeps both.
    lowercase: bool = False  # "Twenty one" reads as "twenty one"
    hyphens_as_spaces: bool = False  # "twenty-one" reads as "twenty one"


@dataclass
class TrainConfig:
    """`make train` (seq2seq/train.py)."""

    device: str = "auto"  # auto: CUDA, then Apple MPS, then CPU | cpu | cuda | cuda:1 | mps
    seed: int = 1  # the initial weights, the batches and dropout follow from it
    batch_tokens: int = 1500  # padded source + target tokens per optimizer step, in all
    # micro-batches per process and step: each step is split into processes x accumulate
    # micro-batches of equal token budgets
    accumulate: int = 1
    max_steps: int = 5000  # training stops here at the latest
    lr: float = 0.002  # peak learning rate (AdamW), reached after the warmup
    min_lr: float = 0.0001  # the cosine decay ends here at max_steps
    warmup_steps: int = 200  # linear warmup from 0
    weight_decay: float = 0.01  # AdamW's, on the weight matrices only
    label_smoothing: float = 0.1  # share of the target probability spread over the vocabulary
    clip_norm: float = 1.0  # gradients are scaled down to at most this norm
    # validate (loss, and the exact match and BLEU of translations) every this many steps
    eval_every: int = 250
    patience: int = 0  # stop after this many validations without improvement (0: never)
    # what makes a checkpoint the best: valid exact match or BLEU (ties: lower loss), or loss
    best_metric: Literal["exact_match", "bleu", "loss"] = "exact_match"
    valid_beam_size: int = 1  # validation translates greedily (1), or with this many beams
    threads: int = 0  # CPU threads for torch (0: torch's default)
    # auto: bf16 autocast on a GPU with bf16 tensor cores, fp16 on older GPUs (T4, V100), fp32
    # elsewhere (seq2seq/support/device.py); fp16 adds a gradient scaler
    precision: Literal["auto", "fp32", "bf16", "fp16"] = "auto"
    compile: bool = False  # torch.compile the model for training (pays off on GPUs)


@dataclass
class DecodeConfig:
    """Translation: validation, `make eval`, translate and the service."""

    batch_size: int = 500  # sentences decoded together
    cache: bool = True  # keep keys/values between steps (false: rerun the whole prefix)
    beam_size: int = 1  # 1: greedy decoding | more: beam search with this many beams
    length_penalty: float = 1.0  # beam search: scores are divided by ((5 + length) / 6) ** this
    # an output stops after max_len_a * its source length + max_len_b pieces
    max_len_a: float = 2.0
    max_len_b: int = 10  # see max_len_a
    # auto: bf16 autocast on a GPU with bf16 tensor cores, fp16 on older GPUs, fp32 elsewhere
    # (seq2seq/support/device.py); fp32 gives CTranslate2's float32 outputs exactly
    precision: Literal["auto", "fp32", "bf16", "fp16"] = "auto"


@dataclass
class Language:
    """A language as LibreTranslate's API names it (seq2seq/service/libretranslate.py)."""

    code: str  # en, de, ... (BCP 47); not "auto", which asks for detection
    name: str  # English, German, ...


@dataclass
class ServeConfig:
    """python -m seq2seq.serve: where it listens, and what one request or batch may hold."""

    host: str = "127.0.0.1"  # this machine only; 0.0.0.0 serves every network interface
    port: int = 8000  # 0: any free port (the address is printed)
    max_sentences: int = 64  # sentences in one /translate request
    max_chars: int = 1000  # characters in one sentence
    max_body_bytes: int = 1_000_000  # a request body larger than this is refused unread
    max_beam_size: int = 8  # the largest beam_size and nbest a request may ask for
    # Requests that arrive within this window after the first are decoded in one batch of
    # at most max_batch_sentences sentences.
    batch_window_ms: float = 5.0
    max_batch_sentences: int = 256  # see batch_window_ms
    # Work waiting for the decoder, at most, counted as characters x beam size (what decoding
    # costs, roughly); a request that would pass this gets a 503 with Retry-After (and a
    # waiting request whose client hangs up is dropped).
    max_queue_work: int = 1_024_000
    # Seconds the service goes on decoding what waits after SIGTERM or Ctrl-C; then what
    # still waits gets a 503 and the process exits once the batch being decoded is done. A
    # second signal exits at once.
    drain_s: float = 10.0
    # Open connections at most. One more closes a connection still waiting for its request
    # (of the client holding the most), or, if every one is busy, gets a quick 503. Keep it
    # well under the process's file limit (ulimit -n).
    max_connections: int = 256
    # Open connections from one client address at most; more get a quick 503. Behind a
    # reverse proxy every connection is the proxy's: raise it to max_connections.
    max_client_connections: int = 64
    # Seconds a client has to send a request's headers (from connecting, or from its previous
    # answer: idle keep-alive connections close then), and again for its body (408).
    timeout_s: float = 10.0
    # Host names the service answers besides its own address and localhost, e.g.
    # [translate.example.org]; ["*"]: any. Others get a 400 (no DNS rebinding).
    allowed_hosts: list[str] = field(default_factory=list)
    # torch threads for decoding (0: torch's default, one per core). One leaves the other
    # cores to the HTTP side, and small batches gain little from more.
    threads: int = 1
    # LibreTranslate's API (seq2seq/service/libretranslate.py) and the Argos package (export argos):
    # the language the model reads and the one it writes, e.g. {code: fr, name: French}.
    # null: from the corpus (multi30k: corpus.src_lang and tgt_lang; numbers: en, English ->
    # digits, Digits; parallel: src, Source -> tgt, Target).
    source_language: Language | None = None
    target_language: Language | None = None  # see source_language
    # Where the API keys are (seq2seq/service/access.py): "" (none), a file of keys one a line, or
    # env:NAME, the environment variable NAME holding them separated by commas or spaces.
    # With keys, every POST needs one.
    api_keys: str = ""
    # POST requests one client address may make per minute, in bursts of as many; more get a
    # 429 with Retry-After. 0: no limit.
    requests_per_minute: int = 0
    # Addresses (or networks, 10.0.0.0/8) of the reverse proxies whose X-Forwarded-For header
    # names the client; from any other address the header is ignored. []: none, the
    # connection's own address is the client's (so no client can choose its address).
    trusted_proxies: list[str] = field(default_factory=list)
    # Origins (scheme://host:port) whose web pages may call the service from a browser: their
    # requests get CORS headers. A POST from any other origin (a form another site submits)
    # gets a 403. ["*"]: any. []: only the service's own page.
    cors_origins: list[str] = field(default_factory=list)


@dataclass
class Config:
    """One experiment: its corpus, vocabularies, model, training, decoding and service."""

    experiment: str = "numbers"  # outputs go to runs/<experiment>/
    corpus: CorpusConfig = field(default_factory=CorpusConfig)
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


LANGUAGE_NAMES = {"de": "German", "en": "English"}  # corpus.src_lang and tgt_lang's choices


def languages(config: Config, settings: ServeConfig) -> tuple[Language, Language]:
    """The model's source and target languages, as LibreTranslate's API and an Argos package
    name them: serve's settings, or else the corpus's."""
    corpus = config.corpus
    multi30k = (corpus.src_lang, corpus.tgt_lang)
    pair = {
        "multi30k": [Language(code, LANGUAGE_NAMES[code]) for code in multi30k],
        "numbers": [Language("en", "English"), Language("digits", "Digits")],
        "parallel": [Language("src", "Source"), Language("tgt", "Target")],
    }[corpus.type]
    source = settings.source_language or pair[0]
    target = settings.target_language or pair[1]
    if source.code == target.code:
        raise ConfigError(
            f"serve.source_language and target_language are both {source.code!r}: they must differ"
        )
    return source, target


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """The --config option and the key.sub=value overrides that every command accepts."""
    parser.add_argument("--config", default=DEFAULT_CONFIG, help="experiment config (YAML)")
    parser.add_argument(
        "overrides", nargs="*", metavar="key.sub=value", help="override config values"
    )


def load_config(path: str | Path = DEFAULT_CONFIG, overrides: list[str] = ()) -> Config:
    """Read a YAML config (on top of its base, if it names one), apply `key.sub=value`
    overrides, validate, return a Config."""
    raw = read_config_file(Path(path))
    for override in overrides:
        own: dict = {}
        apply_override(own, override)
        check_override(own, override)
        raw = merge(raw, own)
    config = config_from_dict(raw, source=str(path))
    config.file = str(path)
    return config


def read_config_file(path: Path, chain: tuple[Path, ...] = ()) -> dict:
    """The mapping in the YAML file `path`, merged on top of its `base:` file's. Each file's
    keys and types are checked on their own, so that an error names the file it is in."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file {path} not found") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML: {error}") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of keys to values")
    base = raw.pop("base", None)
    _build(Config, raw, str(path), prefix="")
    if base is None:
        return raw
    if not isinstance(base, str) or not base.strip():
        raise ConfigError(f"{path}: 'base' must be the path of another config file")
    chain = (*chain, path.resolve())
    base_path = path.parent / base
    if base_path.resolve() in chain:
        raise ConfigError(f"{path}: 'base: {base}' makes a cycle: {base_path} is already read")
    if not base_path.is_file():
        raise ConfigError(f"{path}: the base config file {base_path} is not found")
    return merge(read_config_file(base_path, chain), raw)


def merge(base: dict, own: dict) -> dict:
    """`own`'s keys on top of `base`'s: sections are merged key by key, values replaced."""
    merged = dict(base)
    for key, value in own.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            value = merge(merged[key], value)
        merged[key] = value
    return merged


def config_from_dict(raw: dict, source: str = "config") -> Config:
    config = _build(Config, raw, source, prefix="")
    _check(config, source)
    return config


def apply_override(raw: dict, override: str) -> None:
    """Set `a.b.c=value` in the nested dict `raw`; the value is parsed as YAML (200, 1e-3, true)."""
    key, sep, value = override.partition("=")
    if not sep or not key:
        raise ConfigError(f"override {override!r} is not of the form key.sub=value")
    *parents, leaf = key.strip().split(".")
    node = raw
    for part in parents:
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            raise ConfigError(f"override {override!r}: {part!r} is not a section")
        node = child
    node[leaf] = yaml.safe_load(value)


def check_override(own: dict, override: str) -> None:
    """The key, type and range of one override, in an error that names it (not the file)."""
    source = f"override {override}"
    partial = _build(Config, own, source, prefix="")
    key = override.partition("=")[0].strip()
    for problem in value_problems(partial, [key]):
        raise ConfigError(f"{source}: {problem}")


def is_override(text: str) -> bool:
    """Whether `text` (a command-line argument) sets a config option: `train.lr=1e-3`."""
    key, sep, _ = text.partition("=")
    cls = Config
    for part in key.strip().split(".") if sep else [""]:
        hints = typing.get_type_hints(cls) if dataclasses.is_dataclass(cls) else {}
        if part not in hints:
            return False
        options = typing.get_args(hints[part]) or (hints[part],)  # X | None: X
        cls = next((o for o in options if dataclasses.is_dataclass(o)), hints[part])
    return True


def _build(cls, raw, source: str, prefix: str):
    """Turn the dict `raw` into the dataclass `cls`, checking every key and type."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: {prefix.rstrip('.') or 'the top level'} must be a mapping")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    values = {}
    for key, value in raw.items():
        if key not in names:
            close = difflib.get_close_matches(str(key), names, n=1)
            hint = f" (did you mean '{prefix}{close[0]}'?)" if close else ""
            raise ConfigError(f"{source}: unknown key '{prefix}{key}'{hint}")
        values[key] = _convert(hints[key], value, source, f"{prefix}{key}")
    try:
        return cls(**values)
    except TypeError:
        missing = [f.name for f in dataclasses.fields(cls) if f.name not in values]
        raise ConfigError(f"{source}: '{prefix}' needs the keys {missing}") from None


def _convert(hint, value, source: str, key: str):
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return None
        (hint,) = [option for option in options if option is not type(None)]
        origin = typing.get_origin(hint)
    if dataclasses.is_dataclass(hint):
        return _build(hint, value, source, prefix=f"{key}.")
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(f"{source}: '{key}' must be a list, got {value!r}")
        (item,) = typing.get_args(hint)
        return [_convert(item, v, source, f"{key}[{i}]") for i, v in enumerate(value)]
    if origin is Literal:
        choices = typing.get_args(hint)
        if value not in choices:
            raise ConfigError(f"{source}: '{key}' is {value!r}; choose one of {list(choices)}")
        return value
    if hint is float and isinstance(value, str):
        with contextlib.suppress(ValueError):  # YAML reads 1e-3 (no dot) as a string
            value = float(value)
    wrong_type = (
        (hint is bool and not isinstance(value, bool))
        or (hint is int and (isinstance(value, bool) or not isinstance(value, int)))
        or (hint is float and (isinstance(value, bool) or not isinstance(value, int | float)))
        or (hint is str and not isinstance(value, str))
    )
    if wrong_type:
        raise ConfigError(f"{source}: '{key}' must be {hint.__name__}, got {value!r}")
    if hint is float and not math.isfinite(value):
        raise ConfigError(f"{source}: '{key}' must be a finite number, got {value!r}")
    return float(value) if hint is float else value


POSITIVE = (lambda value: value > 0, "positive")
AT_LEAST_1 = (lambda value: value >= 1, "at least 1")
NOT_NEGATIVE = (lambda value: value >= 0, ">= 0")
FRACTION = (lambda value: 0 <= value < 1, "in [0, 1)")
PROBABILITY = (lambda value: 0 <= value <= 1, "in [0, 1]")

# The range of each numeric option that has one: (test, what the error says it must be).
RANGES = {
    "corpus.same_prob": PROBABILITY,
    "corpus.zero_prob": PROBABILITY,
    "corpus.max_words": POSITIVE,
    "vocab.src_size": (lambda value: value >= 8, "at least 8"),
    "vocab.tgt_size": (lambda value: value >= 8, "at least 8"),
    "vocab.character_coverage": (lambda value: 0 < value <= 1, "in (0, 1]"),
    "vocab.sample_size": AT_LEAST_1,
    "model.d_model": POSITIVE,
    "model.n_heads": POSITIVE,
    "model.enc_layers": AT_LEAST_1,
    "model.dec_layers": AT_LEAST_1,
    "model.d_ff": POSITIVE,
    "model.dropout": FRACTION,
    "model.attention_dropout": FRACTION,
    "model.max_positions": (lambda value: value >= 2, "at least 2"),
    "train.batch_tokens": POSITIVE,
    "train.accumulate": AT_LEAST_1,
    "train.max_steps": POSITIVE,
    "train.lr": POSITIVE,
    "train.min_lr": NOT_NEGATIVE,
    "train.warmup_steps": NOT_NEGATIVE,
    "train.weight_decay": NOT_NEGATIVE,
    "train.label_smoothing": FRACTION,
    "train.clip_norm": POSITIVE,
    "train.eval_every": POSITIVE,
    "train.patience": NOT_NEGATIVE,
    "train.valid_beam_size": AT_LEAST_1,
    "train.threads": NOT_NEGATIVE,
    "decode.batch_size": POSITIVE,
    "decode.beam_size": AT_LEAST_1,
    "decode.length_penalty": NOT_NEGATIVE,
    "decode.max_len_a": NOT_NEGATIVE,
    "decode.max_len_b": NOT_NEGATIVE,
    "serve.port": (lambda value: 0 <= value <= 65535, "in [0, 65535]"),
    "serve.max_sentences": AT_LEAST_1,
    "serve.max_chars": AT_LEAST_1,
    "serve.max_body_bytes": AT_LEAST_1,
    "serve.max_beam_size": AT_LEAST_1,
    "serve.batch_window_ms": NOT_NEGATIVE,
    "serve.max_batch_sentences": AT_LEAST_1,
    "serve.max_queue_work": AT_LEAST_1,
    "serve.drain_s": NOT_NEGATIVE,
    "serve.max_connections": AT_LEAST_1,
    "serve.max_client_connections": AT_LEAST_1,
    "serve.timeout_s": POSITIVE,
    "serve.threads": NOT_NEGATIVE,
    "serve.requests_per_minute": NOT_NEGATIVE,
}


# The options that name a folder, which must stay where the docs say: a name, not a path.
FOLDER_NAMES = {"experiment": "runs/<experiment>/", "corpus.name": "data/<corpus.name>/"}


def value_problems(config: Config, keys: list[str]) -> Iterator[str]:
    """What is wrong with the values of these options on their own: a number out of its range
    (RANGES), a folder name that is a path (FOLDER_NAMES)."""
    for key in keys:
        value = config
        for part in key.split("."):
            value = getattr(value, part)
        if key in RANGES and not RANGES[key][0](value):
            yield f"'{key}' must be {RANGES[key][1]}, got {value}"
        if key in FOLDER_NAMES and (value.strip() in ("", ".", "..") or set("/\\\0") & set(value)):
            yield f"'{key}' names the folder {FOLDER_NAMES[key]}: a name, not a path, got {value!r}"


def is_network(text: str) -> bool:
    """An IP address or network: 10.0.0.1, 10.0.0.0/8, ::1."""
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return True


def _check(config: Config, source: str) -> None:
    """Each option's own value (value_problems), then the rules that involve several."""

    def require(condition: bool, message: str) -> None:
        if not condition:
            raise ConfigError(f"{source}: {message}")

    corpus, model, train = config.corpus, config.model, config.train
    for problem in value_problems(config, [*RANGES, *FOLDER_NAMES]):
        require(False, problem)
    if corpus.type == "parallel":
        for split in ("train", "valid", "test"):
            files = getattr(corpus, split)
            require(
                files is not None,
                f"'corpus.{split}' (src and tgt files, or a tsv file) is needed with "
                "corpus.type: parallel",
            )
            pair = files.src is not None and files.tgt is not None
            alone = files.tsv is not None and files.src is None and files.tgt is None
            require(
                (pair and files.tsv is None) or alone,
                f"'corpus.{split}' needs either both 'src' and 'tgt', or 'tsv' alone",
            )
    else:
        for split in ("train", "valid", "test"):
            require(
                getattr(corpus, split) is None,
                f"'corpus.{split}' is only used with corpus.type: parallel",
            )
    if corpus.type == "multi30k":
        require(corpus.src_lang != corpus.tgt_lang, "'corpus.src_lang' and 'tgt_lang' must differ")
    if corpus.type == "numbers":
        for key in ("train_size", "valid_size", "test_size"):
            require(getattr(corpus, key) > 0, f"'corpus.{key}' must be positive")
        held_out = corpus.valid_size + corpus.test_size
        require(
            held_out <= MAX_HELD_OUT,
            f"'corpus.valid_size' + 'corpus.test_size' is {held_out}; the numbers corpus holds "
            f"out at most {MAX_HELD_OUT:,} distinct numbers",
        )
    require(
        model.d_model % model.n_heads == 0,
        f"'model.d_model' ({model.d_model}) must be divisible by 'model.n_heads' ({model.n_heads})",
    )
    require(train.min_lr <= train.lr, f"'train.min_lr' ({train.min_lr}) must be <= 'train.lr'")
    serve = config.serve
    require(serve.host.strip() != "", "'serve.host' must not be empty")
    for proxy in serve.trusted_proxies:
        require(is_network(proxy), f"'serve.trusted_proxies': {proxy!r} is not an address")
    require(
        serve.max_queue_work >= serve.max_sentences * serve.max_chars * serve.max_beam_size,
        f"'serve.max_queue_work' ({serve.max_queue_work:,}) must be at least 'serve.max_sentences'"
        " x 'max_chars' x 'max_beam_size': the largest request must fit",
    )
    for side in ("source_language", "target_language"):
        language = getattr(serve, side)
        if language is not None:
            require(
                language.code.strip() not in ("", "auto"),
                f"'serve.{side}.code' must be a language code, not {language.code!r}",
            )
    require(
        serve.max_batch_sentences >= serve.max_sentences,
        f"'serve.max_batch_sentences' ({serve.max_batch_sentences}) must be at least "
        f"'serve.max_sentences' ({serve.max_sentences}): a request is never split",
    )
