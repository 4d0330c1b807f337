"""An Argos Translate package's layout: the one place that knows it, for the export that
writes one (argos.py), the engine that decodes one (seq2seq/decoding/argos_engine.py, its
tokenizers argos_tokenizers.py), the import (importing.py) and the service's loaders.

    NAME.argosmodel      a zip archive of one top folder (or that folder, installed):
      metadata.json      from_code, from_name -> to_code, to_name, package_version,
                         argos_version, (type: translate), (target_prefix)
      model/             the CTranslate2 model: model.bin, config.json, the vocabularies
      sentencepiece.model  ONE sentencepiece model that splits the source and joins the output
      or bpe.model       BPE codes (subword-nmt's), with Moses's tokenization: the first of the
                         two that a package has is its tokenizer, as Argos chooses
      README.md          (ours: the model card; checkpoint.sha256: the checkpoint it was made of)
      stanza/, LICENSE, ...  what else a published package holds, not read
    a folder of installed packages: one folder each, as Argos keeps them

    is_package(path)        an .argosmodel file, or a folder with metadata.json
    package_metadata(path)  its metadata.json, checked (a folder, or in the zip)
    package_languages(...)  its pair, as two Languages
    unpacked(path)          its folder (an .argosmodel extracted for the time of a block)
    tokenizer_file(folder)  sentencepiece.model, else bpe.model
    package_folders(folder) the packages in a folder of installed ones

Argos Translate (1.11) decodes a package with CTranslate2 at BEAM_SIZE and LENGTH_PENALTY,
sources cut at LONGEST_INPUT pieces and outputs at LONGEST_OUTPUT.
"""

import json
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

from seq2seq.config import Language
from seq2seq.support.errors import UserError

SUFFIX = ".argosmodel"
METADATA = "metadata.json"
MODEL = "model"  # the CTranslate2 model's folder
SENTENCEPIECE = "sentencepiece.model"
BPE = "bpe.model"
README = "README.md"

BEAM_SIZE = 4  # Argos Translate's default (ARGOS_BEAM_SIZE)
LENGTH_PENALTY = 0.2  # what it always passes: CTranslate2's score / length ** 0.2
LONGEST_INPUT = 1024  # CTranslate2's default max_input_length, which Argos keeps
LONGEST_OUTPUT = 256  # CTranslate2's default max_decoding_length, which Argos keeps


def is_package(path: Path) -> bool:
    return path.suffix == SUFFIX or (path / METADATA).exists()


def package_name(path: Path) -> str:
    """A package's name: its file's without .argosmodel, or its folder's."""
    return path.name.removesuffix(SUFFIX)


def archive_name(from_code: str, to_code: str, version: str) -> str:
    """The top folder of a package's zip, as Argos names its own: translate-en_de-1_0."""
    return f"translate-{from_code}_{to_code}-{version.replace('.', '_')}"


def weights_bytes(path: Path) -> int:
    """The bytes of a package on disk: the .argosmodel file's, or its model.bin's."""
    return path.stat().st_size if path.is_file() else (path / MODEL / "model.bin").stat().st_size


def package_folders(folder: Path) -> list[Path]:
    """The packages installed in `folder` (each a folder with its metadata.json), by name."""
    return sorted(path.parent for path in folder.glob(f"*/{METADATA}"))


def tokenizer_file(folder: Path) -> Path:
    """The package's tokenizer, chosen as Argos Translate chooses: sentencepiece.model first,
    else bpe.model."""
    for name in (SENTENCEPIECE, BPE):
        if (folder / name).exists():
            return folder / name
    raise UserError(f"{folder}: no {SENTENCEPIECE} nor {BPE}")


def package_metadata(path: Path) -> dict:
    """The metadata.json of a package: its folder's, or (an .argosmodel) the one in the zip."""
    if path.is_dir():
        where, read = path / METADATA, lambda: (path / METADATA).read_bytes()
    else:
        where, read = path, partial(metadata_in_zip, path)
    try:
        metadata = json.loads(read())
    except (OSError, ValueError, zipfile.BadZipFile) as error:
        raise UserError(f"{where}: not an Argos package's metadata ({error})") from None
    if metadata.get("type", "translate") != "translate":
        raise UserError(f"{where}: a package of type {metadata['type']!r}, not a translation")
    for key in ("from_code", "to_code"):
        if not isinstance(metadata.get(key), str) or not metadata[key]:
            raise UserError(f"{where}: no {key}")
    return metadata


def metadata_in_zip(path: Path) -> bytes:
    with zipfile.ZipFile(path) as archive:
        return archive.read(top_folder(archive) + METADATA)


def top_folder(archive: zipfile.ZipFile) -> str:
    """The one top folder of a package's zip ("name/"): the one with a metadata.json."""
    names = [n for n in archive.namelist() if n.count("/") == 1 and n.endswith(f"/{METADATA}")]
    if len(names) != 1:
        raise ValueError(f"not one folder with a {METADATA} in it")
    return names[0].removesuffix(METADATA)


def package_languages(metadata: dict) -> tuple[Language, Language]:
    """from_code, from_name -> to_code, to_name (a name missing: its code)."""
    return tuple(
        Language(metadata[f"{side}_code"], metadata.get(f"{side}_name") or metadata[f"{side}_code"])
        for side in ("from", "to")
    )


@contextmanager
def unpacked(path: Path) -> Iterator[Path]:
    """The folder of the package at `path`: the folder itself, or (an .argosmodel) its one
    top folder, extracted into a temporary folder that goes when the block ends."""
    if path.is_dir():
        yield path
        return
    try:
        with tempfile.TemporaryDirectory() as staging, zipfile.ZipFile(path) as archive:
            folder = top_folder(archive)
            archive.extractall(staging)  # names with .. or a leading / are made safe
            yield Path(staging) / folder
    except (OSError, ValueError, zipfile.BadZipFile) as error:
        raise UserError(f"{path}: not an Argos package (a zip file): {error}") from None
