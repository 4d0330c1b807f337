"""YAML into typed dataclasses, key by key: the machinery under seq2seq/config.py.

    read_mapping(path)            a YAML file -> dict, its errors naming the file
    set_key(raw, "a.b=value")     a command-line override, into that dict
    merge(base, own)              own's keys over base's, section by section
    build(cls, raw, source)       dict -> dataclass `cls`: every key known, every value typed

An unknown key names the nearest known one ("did you mean 'model.d_model'?"); a value of the
wrong type names its key and the file (or override) it came from. A field's `Annotated[...]`
extras are left to the caller (the config's ranges): only the type under them is checked.
"""

import contextlib
import dataclasses
import difflib
import math
import types
import typing
from pathlib import Path
from typing import Literal

import yaml

from seq2seq.support.errors import UserError


class ConfigError(UserError):
    pass


def read_mapping(path: Path) -> dict:
    """The mapping at the top of the YAML file `path` (an empty file is an empty mapping)."""
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
    return raw


def set_key(raw: dict, override: str) -> None:
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


def merge(base: dict, own: dict) -> dict:
    """`own`'s keys on top of `base`'s: sections are merged key by key, values replaced."""
    merged = dict(base)
    for key, value in own.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            value = merge(merged[key], value)
        merged[key] = value
    return merged


def build(cls, raw, source: str, prefix: str = ""):
    """Turn the dict `raw` into the dataclass `cls`, checking every key and type."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: {prefix.rstrip('.') or 'the top level'} must be a mapping")
    hints = typing.get_type_hints(cls)  # Annotated[int, ...] reads as int
    names = [f.name for f in dataclasses.fields(cls)]
    values = {}
    for key, value in raw.items():
        if key not in names:
            close = difflib.get_close_matches(str(key), names, n=1)
            hint = f" (did you mean '{prefix}{close[0]}'?)" if close else ""
            raise ConfigError(f"{source}: unknown key '{prefix}{key}'{hint}")
        values[key] = convert(hints[key], value, source, f"{prefix}{key}")
    try:
        return cls(**values)
    except TypeError:
        missing = [f.name for f in dataclasses.fields(cls) if f.name not in values]
        raise ConfigError(f"{source}: '{prefix}' needs the keys {missing}") from None


def convert(hint, value, source: str, key: str):
    """`value` as the type `hint` (a dataclass, X | None, list[X], Literal, bool, int, float,
    str), or an error naming `key`: an int is a float, nothing else changes type."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return None
        (hint,) = [option for option in options if option is not type(None)]
        origin = typing.get_origin(hint)
    if dataclasses.is_dataclass(hint):
        return build(hint, value, source, prefix=f"{key}.")
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(f"{source}: '{key}' must be a list, got {value!r}")
        (item,) = typing.get_args(hint)
        return [convert(item, v, source, f"{key}[{i}]") for i, v in enumerate(value)]
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
