"""A CTranslate2 model's folder read back: model.bin's variables as float32 tensors, by name
(read_model_bin); config.json (read_model_config); the vocabularies (model_vocabularies).

CTranslate2 (4.x, python/ctranslate2/specs/model_spec.py, src/models/model.cc) has no way to
read its weights back; the format is short enough to read here, with no CTranslate2 installed:

    uint32 binary version (4 to 6: each variable says its type)
    string spec name ("TransformerSpec"), uint32 its revision
    uint32 N, then N variables: string name, uint8 rank, uint32 dims[rank],
                                uint8 type (0 f32, 1 i8, 2 i16, 3 i32, 4 f16, 5 bf16),
                                uint32 byte count, the bytes (row-major)
    uint32 M, then M aliases: string alias, string name of the variable it is
    (a string: uint16 length with its NUL, the UTF-8 bytes, NUL)

A variable equal to another is stored once, under its alphabetically first name (shared
embeddings and output projection, the two position tables, equal biases): aliases read as
the same tensor. Quantized matrices (int8, int16) come with a `<name>_scale`, one float per
row for int8 (one for the whole matrix for int16): the weight is q / scale. Flags and
numbers (pre_norm, activation, num_heads) are rank-0 variables: `flags` keeps them apart.
"""

import json
import struct
from dataclasses import dataclass
from pathlib import Path

import torch

from seq2seq.support.errors import UserError

VERSIONS = range(4, 7)  # 4: each variable's type stored; 6: CTranslate2 3.0 and later
DTYPES = {0: torch.float32, 1: torch.int8, 2: torch.int16, 3: torch.int32, 4: torch.float16,
          5: torch.bfloat16}  # fmt: skip
QUANTIZED = (torch.int8, torch.int16)


@dataclass
class StoredModel:
    """What model.bin holds: `weights` float32 tensors (quantized ones restored), `flags` the
    rank-0 variables, `shared` for each alias the name of the variable it is, `types` the type
    each weight was stored in."""

    spec: str
    revision: int
    weights: dict[str, torch.Tensor]
    flags: dict[str, float]
    shared: dict[str, str]
    types: dict[str, torch.dtype]


class Reader:
    def __init__(self, data: bytes, path: Path):
        self.data, self.at, self.path = memoryview(data), 0, path

    def take(self, fmt: str):
        values = struct.unpack_from("<" + fmt, self.data, self.at)
        self.at += struct.calcsize("<" + fmt)
        return values if len(values) > 1 else values[0]

    def string(self) -> str:
        length = self.take("H")
        text = bytes(self.data[self.at : self.at + length - 1]).decode("utf-8")
        self.at += length
        return text

    def tensor(self) -> tuple[str, torch.Tensor]:
        name, rank = self.string(), self.take("B")
        dims = [self.take("I") for _ in range(rank)]
        type_id, size = self.take("B"), self.take("I")
        if type_id not in DTYPES:
            raise UserError(f"{self.path}: {name} has a type CTranslate2 4.x does not write")
        raw = bytearray(self.data[self.at : self.at + size])  # a copy torch may own
        self.at += size
        return name, torch.frombuffer(raw, dtype=DTYPES[type_id]).reshape(dims)


def read_model_bin(path: Path) -> StoredModel:
    """model.bin -> its variables, dequantized to float32 (see the module's docstring)."""
    reader = Reader(path.read_bytes(), path)
    try:
        version = reader.take("I")
        if version not in VERSIONS:
            raise UserError(f"{path}: binary version {version}, this reader knows 4 to 6")
        spec, revision = reader.string(), reader.take("I")
        stored = dict(reader.tensor() for _ in range(reader.take("I")))
        shared = dict((reader.string(), reader.string()) for _ in range(reader.take("I")))
    except (struct.error, RuntimeError, UnicodeDecodeError) as error:
        raise UserError(f"{path}: not a CTranslate2 model.bin, or cut short ({error})") from None
    flags = {name: t.item() for name, t in stored.items() if t.dim() == 0}
    types = {name: t.dtype for name, t in stored.items() if t.dim() > 0}
    weights = dequantized({name: t for name, t in stored.items() if t.dim() > 0})
    for alias, name in shared.items():
        if name in weights:
            weights[alias] = weights[name]
        elif name in flags:
            flags[alias] = flags[name]
    return StoredModel(spec, revision, weights, flags, shared, types)


def dequantized(stored: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Every tensor as float32; an int8 or int16 matrix divided by its `_scale`, which goes."""
    weights = {}
    for name, tensor in stored.items():
        if name.endswith("_scale") and name[: -len("_scale")] in stored:
            continue
        if tensor.dtype in QUANTIZED:
            scale = stored[f"{name}_scale"].float()
            tensor = tensor.float() / (scale[:, None] if scale.dim() == 1 else scale)
        weights[name] = tensor.float()
    return weights


def read_json(path: Path):
    try:
        return json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as error:
        raise UserError(f"{path}: not readable JSON ({error})") from None


def read_model_config(model_dir: Path) -> dict:
    """The model's config.json: its special tokens, epsilon, source </s> ({} if it has none)."""
    config = model_dir / "config.json"
    return read_json(config) if config.exists() else {}


def model_vocabularies(model_dir: Path) -> tuple[list[str], list[str]]:
    """The model's source and target pieces in row order: shared_vocabulary.json, or
    source_ and target_vocabulary.json (.txt, a piece a line, before CTranslate2 3.16)."""

    def one(name: str) -> list[str] | None:
        if (model_dir / f"{name}.json").exists():
            return read_json(model_dir / f"{name}.json")
        if (model_dir / f"{name}.txt").exists():
            return (model_dir / f"{name}.txt").read_text("utf-8").split("\n")[:-1]
        return None

    shared = one("shared_vocabulary")
    source, target = one("source_vocabulary"), one("target_vocabulary")
    if shared is None and (source is None or target is None):
        raise UserError(f"{model_dir}: no shared_vocabulary.json nor source_/target_vocabulary")
    return (shared, shared) if shared is not None else (source, target)
