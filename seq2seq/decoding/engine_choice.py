"""Which engine decodes: by default the fastest installed one whose outputs are ours.

    --engine auto (the default of translate and serve)
      the checkpoint (runs/<experiment>/best.pt, or --checkpoint)
      -> CTranslate2 installed, on a device it runs on (a CPU, a CUDA GPU)?
           yes: Exported(the checkpoint, CTranslate2 engine on the export kept beside the
                checkpoint: runs/<experiment>/best.ct2/; exported.py)
           no, or the export cannot be written: the torch engine (with a warning)
    --engine torch          our own code decodes everything
    --engine ctranslate2    CTranslate2 decodes everything: the export in --model DIR, or the
                            cached one
    --model PATH            an export (a folder with seq2seq.json), or an Argos package (an
                            .argosmodel file or its folder: argos_engine.py), decoded by
                            CTranslate2; serve takes several (seq2seq/serving/loaders.py)
    prepare(checkpoint)     what auto makes of a checkpoint on its first load (the export,
                            the compute types measured) made ahead: seq2seq.improve's versions

CTranslate2 decodes in decode.compute_type (--compute-type in its place): auto, the default,
measures which type is fastest at float32's score, for a checkpoint (compute_types.py). With
decode.vmap and decode.vmap_catalogs (translate --vmap DIR) its vocabulary map is made of
those catalogs, for an export or a package (map_catalogs; exports/vocab_map.py).
translate, serve and eval say which engine decodes at start, and in which type (described).

The decode settings it decodes with (engine.config.decode, what /info shows) are the model's
own (its checkpoint's or export's decode section; Argos Translate's for a package: argos_engine.py),
with those the command line set explicitly (config.py's decode_overrides; translate's
--beam-size ...) in their place: decoding_in_force, for every kind of model. A setting the
engine has no use for (its `unused`) is a one-line error naming it and the model.
"""

import dataclasses
import typing
from functools import partial
from pathlib import Path

from seq2seq.checkpoint import load_checkpoint
from seq2seq.config import ComputeTypeName, Config, DecodeConfig, ServeConfig
from seq2seq.decoding.argos_engine import ArgosEngine
from seq2seq.decoding.compute_types import checkpoint_type, given_type
from seq2seq.decoding.ctranslate2_engine import ONE_BATCH, CTranslate2Engine, ctranslate2_device
from seq2seq.decoding.engines import Engine, TorchEngine
from seq2seq.decoding.exported import Exported, export_beside
from seq2seq.decoding.threads import checkpoint_split, service_split
from seq2seq.exports.argos_package import is_package
from seq2seq.exports.ctranslate2 import import_ctranslate2
from seq2seq.support.device import pick_device
from seq2seq.support.errors import UserError, warn

ENGINES = ("auto", "torch", "ctranslate2")


def load_engine(
    config: Config | None = None,
    checkpoint: str | Path | None = None,
    choice: str = "auto",
    model: str | Path | None = None,
    device: str = "auto",
    decode: dict | None = None,
    serve: ServeConfig | None = None,
) -> Engine:
    """The engine these settings name (the table above): `checkpoint` (default: the best
    checkpoint of `config`), or for choice="ctranslate2" the export in the folder `model`;
    decoding with the settings `decode` sets (decoding_in_force), else the model's own; a
    service's (`serve`: its settings) decoding on its share of the cores (threads.py)."""
    path = Path(model or checkpoint or config.checkpoint_path)
    refuse_unused(decode, choice, path)  # before the model loads
    engine = engine_of(config, checkpoint, choice, model, device, decode or {}, serve)
    engine.config.decode = decoding_in_force(engine.config.decode, decode, choice, path)
    return engine


def prepare(checkpoint: Path) -> None:
    """What the engine auto makes the first time it loads `checkpoint`, made now: its
    CTranslate2 export beside it, and the compute types measured (nothing where CTranslate2
    does not run). A service that swaps to it (python -m seq2seq.improve's versions) then
    only loads it."""
    load_engine(checkpoint=checkpoint)


def engine_of(
    config: Config | None, checkpoint: str | Path | None, choice: str,
    model: str | Path | None, device: str, decode: dict, serve: ServeConfig | None = None,
) -> Engine:  # fmt: skip
    """load_engine's engine, decoding with its model's own settings, in the compute type of
    the decode settings in force (compute_types.py), a service's on its cores (threads.py)."""
    if model:
        if choice == "torch":
            raise UserError("--model is an export for --engine ctranslate2 (or auto), not torch")
        kind = given_type(decode.get("compute_type", "auto"))
        catalogs = map_catalogs(decode.get("vmap", False), decode.get("vmap_catalogs", ""))
        split = service_split(serve) if serve else ONE_BATCH
        if is_package(Path(model)):
            return ArgosEngine.load(model, device, *kind, catalogs=catalogs, split=split)
        return CTranslate2Engine.load(model, device, *kind, catalogs=catalogs, split=split)
    path = Path(checkpoint or config.checkpoint_path)
    where = "`make train`" if checkpoint else config.make_command("train")
    ours = TorchEngine(load_checkpoint(path, pick_device(device), where))
    if choice == "torch" or (choice == "auto" and not ctranslate2_runs_on(ours.device)):
        return ours
    try:
        folder = export_beside(ours.checkpoint, path)
    except (OSError, UserError) as error:
        if choice == "ctranslate2":
            raise
        warn(f"cannot cache the CTranslate2 export of {path} ({error}): the torch engine decodes")
        return ours
    decoding = decoding_in_force(ours.config.decode, decode, choice, path)
    origin = ours.checkpoint.info.get("origin", {})
    kind = checkpoint_type(folder, ours.config, decoding, ours.device, origin)
    catalogs = map_catalogs(decoding.vmap, decoding.vmap_catalogs)
    split = ONE_BATCH
    if serve:  # measured on a CPU (a GPU's batches are one stream)
        on_cpu = str(ours.device) == "cpu"
        measure = partial(checkpoint_split, folder, ours.config, kind.name) if on_cpu else None
        split = service_split(serve, measure)
    fast = CTranslate2Engine.load(folder, ours.device, *kind, catalogs=catalogs, split=split)
    return fast if choice == "ctranslate2" else Exported(ours.checkpoint, fast, folder)


def map_catalogs(vmap: bool, catalogs: str) -> Path | None:
    """The folder of catalogs the vocabulary map is made of (decode.vmap_catalogs), where the
    map is used (decode.vmap); None: the model's own map, or none."""
    return Path(catalogs) if vmap and catalogs else None


def decoding_in_force(
    saved: DecodeConfig, overrides: dict | None, choice: str, path: Path
) -> DecodeConfig:
    """The decode settings of the model at `path` with --engine `choice`: its own (`saved`:
    its checkpoint's, its export's, Argos Translate's for a package) with `overrides` (what
    the command line set explicitly: config.py's decode_overrides) in their place. One its
    engine has no use for is a UserError (refuse_unused)."""
    refuse_unused(overrides, choice, path)
    return dataclasses.replace(saved, **(overrides or {}))


def refuse_unused(overrides: dict | None, choice: str, path: Path) -> None:
    """A UserError naming the first of `overrides` that the engine decoding the model at
    `path` has no use for (its class's `unused`), the model, and why; or decode.vmap for a
    package without decode.vmap_catalogs, the map it has none of."""
    overrides, unused = overrides or {}, decoder(choice, path).unused
    for key in sorted(overrides.keys() & unused.keys()):
        raise UserError(f"decode.{key}: not for {path}: {unused[key]}")
    if is_package(path) and overrides.get("vmap") and not overrides.get("vmap_catalogs"):
        raise UserError(
            f"decode.vmap: not for {path} alone: a package holds no vocabulary map; make it "
            "one of your gettext catalogs: decode.vmap_catalogs=DIR (translate --vmap DIR)"
        )


def decoder(choice: str, path: Path) -> type:
    """The class of the engine that decodes the translations of the model at `path` with
    --engine `choice`, known before it loads: a package's, else torch's with --engine torch,
    else CTranslate2's (an export's; a checkpoint's cached export, as --engine auto has it
    wherever CTranslate2 runs)."""
    if is_package(path):
        return ArgosEngine
    return TorchEngine if choice == "torch" else CTranslate2Engine


def described(engine: Engine) -> str:
    """Which engine decodes, on which device, in which compute type and on how many threads
    (CTranslate2's): what translate, serve and eval say at start."""
    facts = engine.facts()
    said = f"{facts['engine']} on {facts['device']}"
    said = f"{said} in {facts['compute_type']}" if "compute_type" in facts else said
    return f"{said}, {facts['threads']}" if "threads" in facts else said


def ctranslate2_runs_on(device: str) -> bool:
    """Whether CTranslate2 is installed and runs on `device` (a torch engine's, a training's)."""
    try:
        ctranslate2 = import_ctranslate2()
        ctranslate2_device(device, ctranslate2.get_cuda_device_count())
    except UserError:  # not installed; or mps, or a GPU CTranslate2 does not see
        return False
    return True


def add_engine_arguments(parser, several: bool = False) -> None:
    """The command-line options that choose an engine (translate), or the engines of several
    models (`several`: serve's --model, given again for each): load_engine's, load_models'."""
    parser.add_argument("--checkpoint", help="model file (default: the config's best.pt)")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps")
    parser.add_argument(
        "--engine", choices=ENGINES, default="auto",
        help="who decodes (auto: CTranslate2 where installed, from an export cached beside "
        "the checkpoint; our torch code for attention pictures)",
    )  # fmt: skip
    if several:
        parser.add_argument(
            "--model", action="append", default=[], metavar="[NAME=]PATH",
            help="a model to serve, again for each: a config, a checkpoint, an export, an "
            "Argos package (.argosmodel or its folder), a folder of installed packages; "
            "NAME=PATH names it (default: its experiment, or the package's file name)",
        )  # fmt: skip
    else:
        parser.add_argument(
            "--model", help="an export's folder, or an Argos package (.argosmodel or its folder)"
        )
    parser.add_argument(
        "--compute-type", choices=typing.get_args(ComputeTypeName),
        help="CTranslate2's type for the weights (default: decode.compute_type, auto)",
    )  # fmt: skip


def compute_type_set(args) -> dict:
    """--compute-type as a decode setting the command line sets (decode.compute_type's place)."""
    return {"compute_type": args.compute_type} if args.compute_type else {}
