"""The experiment config: read from YAML, checked key by key, one typed `Config`.

    config.yaml (+ its base: files) + overrides --read_mapping, merge--> dict
        --build--> Config (seq2seq/options.py: every key known, every value typed)
        --checks--> each option in its range, then each section's rules

`config.yaml` at the top of the repository is the default experiment; seq2seq/options.py
holds the options, each with its type, default, range and comment (config.yaml's comments and
docs/configuration.md are written from them: seq2seq/config_docs.py, `make config-docs`).
`load_config(path, overrides)` reads a config, applies command-line overrides such as
`train.max_steps=200`, and returns a `Config`. Anything unknown, of the wrong type or out of
range is a `ConfigError` that names the file and the key (and the nearest valid key for a
typo). A corpus type's own rules (a parallel corpus needs its files) are its entry's in
seq2seq/corpora/corpus_types.py.

A config file may start from another: `base: other.yaml` (a path relative to the file) reads
that file first, and the file's own keys override the base's, section by section; the base
may have a base too. configs/numbers_gpu.yaml, for example, holds only what the GPU recipe
changes in config.yaml.

Every path in a config file is relative to that file, `base:` as the others (anchor_paths);
on the command line (`train.init_from=...`), to the working directory. The two folders every
stage works in, data/<corpus.name>/ and runs/<experiment>/, are in the directory the commands
run from (the repository root when you use `make`); seq2seq/support/paths.py names the files
in them.
"""

import argparse
import dataclasses
import ipaddress
import itertools
import os
import re
import typing
from collections.abc import Iterator
from pathlib import Path

from seq2seq.corpora.corpus_types import corpus_languages, corpus_problems, corpus_type, is_language
from seq2seq.model.config import ModelConfig
from seq2seq.options import (
    DEFAULT_CONFIG,
    ComputeTypeName,
    Config,
    CorpusConfig,
    DecodeConfig,
    SplitFiles,
    TrainConfig,
    VocabConfig,
)
from seq2seq.serve_options import Language, ServeConfig
from seq2seq.support.dataclass_yaml import ConfigError, build, merge, read_mapping, set_key
from seq2seq.text.parallel import files_problem

# The config's whole interface, the options' dataclasses included: `from seq2seq.config import
# Config, TrainConfig` wherever the layers allow (seq2seq/text/ imports seq2seq/options.py).
__all__ = [
    "DEFAULT_CONFIG", "ComputeTypeName", "Config", "ConfigError", "CorpusConfig", "DecodeConfig",
    "Language", "ModelConfig", "ServeConfig", "SplitFiles", "TrainConfig", "VocabConfig",
    "add_config_arguments", "config_from_dict", "decode_overrides", "is_override", "load_config",
    "translation_pair",
]  # fmt: skip


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
        set_key(own, override)
        check_override(own, override)
        raw = merge(raw, own)
    config = config_from_dict(raw, source=str(path))
    config.file = str(path)
    return config


def read_config_file(path: Path, chain: tuple[Path, ...] = ()) -> dict:
    """The mapping in the YAML file `path`, merged on top of its `base:` file's. Each file's
    keys and types are checked on their own, so that an error names the file it is in."""
    raw = without_retired(read_mapping(path))
    base = raw.pop("base", None)
    build(Config, raw, str(path))
    anchor_paths(raw, path.parent)
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


def anchor_paths(raw: dict, folder: Path) -> None:
    """Make the relative paths of one config file's mapping (its files, its checkpoint, its
    keys file, its vocabulary map's catalogs) relative to the working directory, where the
    commands open them: joined to `folder`, the file's own."""
    corpus, train, serve, decode = (
        raw.get(section) or {} for section in ("corpus", "train", "serve", "decode")
    )
    named = [(train, "init_from"), (decode, "vmap_catalogs")]
    split_files = [corpus.get(split) for split in ("train", "valid", "test")]  # type parallel
    for files in (*split_files, train.get("keep_valid")):
        named += [(files, side) for side in ("src", "tgt", "tsv")]
    sources = [*(corpus.get("train_sources") or []), corpus.get("valid_source")]
    named += [
        (source, kind)
        for source in (*sources, corpus.get("test_source"))
        for kind in ("file", "suggestions")
    ]
    if not str(serve.get("api_keys", "")).startswith("env:"):
        named.append((serve, "api_keys"))
    for mapping, key in named:
        value = mapping.get(key) if isinstance(mapping, dict) else None
        if isinstance(value, str) and value and not Path(value).is_absolute():
            mapping[key] = os.path.normpath(folder / value)  # configs/../x.tsv: x.tsv


# Keys that an older seq2seq wrote into its checkpoints and config.yaml, and that mean nothing
# now: left out when a config is read, so that those checkpoints still load.
RETIRED = {"decode": ["allocator"]}  # a copy of train.allocator that nothing read


def without_retired(raw):
    """A config's mapping less the RETIRED keys."""
    if not isinstance(raw, dict):
        return raw  # build names the mistake
    return {
        section: {key: v for key, v in values.items() if key not in RETIRED.get(section, ())}
        if isinstance(values, dict) else values
        for section, values in raw.items()
    }  # fmt: skip


def config_from_dict(raw: dict, source: str = "config") -> Config:
    """A checked Config from a mapping (a file's, or the one a checkpoint holds)."""
    config = build(Config, without_retired(raw), source)
    for problem in problems(config):
        raise ConfigError(f"{source}: {problem}")
    return config


def check_override(own: dict, override: str) -> None:
    """The key, type and range of one override, in an error that names it (not the file)."""
    source = f"override {override}"
    partial = build(Config, own, source)
    key = override.partition("=")[0].strip()
    for problem in value_problems(partial, [key]):
        raise ConfigError(f"{source}: {problem}")


def decode_overrides(overrides: list[str]) -> dict:
    """The decode settings among command-line overrides, typed: ["decode.beam_size=1"] ->
    {"beam_size": 1}. What the user set explicitly replaces a loaded model's own decode
    section (engine_choice.py's decoding_in_force); config.yaml's decode section does not."""
    own: dict = {}
    for override in overrides:
        if override.partition("=")[0].strip().startswith("decode."):
            set_key(own, override)
    decode = build(Config, own, "overrides").decode
    return {key: getattr(decode, key) for key in own.get("decode", {})}


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


# What each range a field may carry means: `lr: Annotated[float, "positive"]` in options.py.
RANGE_TESTS = {
    "positive": lambda value: value > 0,
    ">= 0": lambda value: value >= 0,
    "at least 1": lambda value: value >= 1,
    "at least 2": lambda value: value >= 2,
    "at least 8": lambda value: value >= 8,
    "in [0, 1)": lambda value: 0 <= value < 1,
    "in [0, 1]": lambda value: 0 <= value <= 1,
    "in (0, 1]": lambda value: 0 < value <= 1,
    "in [0, 65535]": lambda value: 0 <= value <= 65535,
}

# The options that name a folder, which must stay where the docs say: a name, not a path.
FOLDER_NAMES = {"experiment": "runs/<experiment>/", "corpus.name": "data/<corpus.name>/"}


def ranges(cls=Config, prefix: str = "") -> dict[str, str]:
    """Each option that has a range, with it, from its field's type: {"train.lr": "positive"}."""
    found = {}
    for name, hint in typing.get_type_hints(cls, include_extras=True).items():
        if typing.get_origin(hint) is typing.Annotated:
            found[prefix + name] = hint.__metadata__[0]
        elif dataclasses.is_dataclass(hint):
            found.update(ranges(hint, f"{prefix}{name}."))
    return found


def value_problems(config: Config, keys: list[str]) -> Iterator[str]:
    """What is wrong with the values of these options on their own: a number out of its range,
    a folder name that is a path (FOLDER_NAMES)."""
    limits = ranges()
    for key in keys:
        value = config
        for part in key.split("."):
            value = getattr(value, part)
        if key in limits and not RANGE_TESTS[limits[key]](value):
            yield f"'{key}' must be {limits[key]}, got {value}"
        if key in FOLDER_NAMES and (value.strip() in ("", ".", "..") or set("/\\\0") & set(value)):
            yield f"'{key}' names the folder {FOLDER_NAMES[key]}: a name, not a path, got {value!r}"


def problems(config: Config) -> Iterator[str]:
    """Each option's own value (value_problems), then the rules that involve several, section
    by section (the corpus's are its type's: seq2seq/corpora/corpus_types.py)."""
    return itertools.chain(
        value_problems(config, [*ranges(), *FOLDER_NAMES]),
        corpus_problems(config.corpus),
        clean_problems(config),
        model_problems(config.model, config.vocab),
        train_problems(config),
        serve_problems(config.serve),
    )


def clean_problems(config: Config) -> Iterator[str]:
    if not config.clean.language_id:
        return
    if not corpus_type(config.corpus).cleaned:
        yield f"'clean.language_id': corpus.type {config.corpus.type} is not cleaned"
    elif not all(map(is_language, corpus_languages(config.corpus, config.serve))):
        yield (
            f"'clean.language_id' needs the languages, which corpus.type {config.corpus.type} "
            "does not name: set serve.source_language and target_language"
        )


def model_problems(model: ModelConfig, vocab: VocabConfig) -> Iterator[str]:
    if model.d_model % model.n_heads:
        yield (
            f"'model.d_model' ({model.d_model}) must be divisible by 'model.n_heads' "
            f"({model.n_heads})"
        )
    if model.share_embeddings and not vocab.joint:
        yield (
            "'model.share_embeddings: true' needs 'vocab.joint: true' (one vocabulary for both "
            "languages); 'vocab.joint' is false"
        )


def train_problems(config: Config) -> Iterator[str]:
    train_cfg = config.train
    if train_cfg.min_lr > train_cfg.lr:
        yield f"'train.min_lr' ({train_cfg.min_lr}) must be <= 'train.lr'"
    keeping = {"keep_teacher": train_cfg.keep_teacher, "keep_weights": train_cfg.keep_weights,
               "keep_valid": train_cfg.keep_valid}  # fmt: skip
    if (asked := [key for key, value in keeping.items() if value]) and train_cfg.init_from is None:
        yield f"'train.{asked[0]}' needs a start to keep: train.init_from"
    keep_valid = train_cfg.keep_valid
    if keep_valid and (problem := files_problem(keep_valid, "train.keep_valid")):
        yield problem
    if train_cfg.init_from is not None:
        source = Path(train_cfg.init_from)
        if not train_cfg.init_from.strip():
            yield "'train.init_from' must be a checkpoint's path, or null"
        elif source.resolve().parent == config.run_dir.resolve():
            yield (
                f"'train.init_from' ({source}) is in runs/{config.experiment}/, which this run "
                "writes: give the fine-tuning run its own 'experiment'"
            )


def serve_problems(settings: ServeConfig) -> Iterator[str]:
    if not settings.host.strip():
        yield "'serve.host' must not be empty"
    if settings.improve_after and not settings.suggestions:
        yield "'serve.improve_after' learns from suggestions: it needs 'serve.suggestions: true'"
    if settings.url_prefix and not re.fullmatch(r"(/[\w.~-]+)+", settings.url_prefix, re.ASCII):
        yield (
            "'serve.url_prefix' must be empty or a path such as /translate-api (no / at its "
            f"end; letters, digits, . _ ~ - between the /), got {settings.url_prefix!r}"
        )
    for proxy in settings.trusted_proxies:
        if not is_network(proxy):
            yield f"'serve.trusted_proxies': {proxy!r} is not an address"
    largest = settings.max_sentences * settings.max_chars * settings.max_beam_size
    if settings.max_queue_work < largest:
        yield (
            f"'serve.max_queue_work' ({settings.max_queue_work:,}) must be at least "
            "'serve.max_sentences' x 'max_chars' x 'max_beam_size': the largest request must fit"
        )
    for side in ("source_language", "target_language"):
        language = getattr(settings, side)
        if language is not None and language.code.strip() in ("", "auto"):
            yield f"'serve.{side}.code' must be a language code, not {language.code!r}"
    if settings.max_batch_sentences < settings.max_sentences:
        yield (
            f"'serve.max_batch_sentences' ({settings.max_batch_sentences}) must be at least "
            f"'serve.max_sentences' ({settings.max_sentences}): a request is never split"
        )


def is_network(text: str) -> bool:
    """An IP address or network: 10.0.0.1, 10.0.0.0/8, ::1."""
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return True


def translation_pair(config: Config, settings: ServeConfig) -> tuple[Language, Language]:
    """What the model translates from and to, as LibreTranslate's API, an Argos package and a
    Hugging Face model card name them: serve's settings, else its corpus type's."""
    source, target = corpus_languages(config.corpus, settings)
    if source.code == target.code:
        raise ConfigError(
            f"serve.source_language and target_language are both {source.code!r}: they must differ"
        )
    return source, target
