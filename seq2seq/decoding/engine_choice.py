"""Which engine decodes: by default the fastest installed one whose outputs are ours.

    --engine auto (the default of translate and serve)
      the checkpoint (runs/<experiment>/best.pt, or --checkpoint)
      -> CTranslate2 installed, on a device it runs on (a CPU, a CUDA GPU)?
           yes: Cached(torch engine, CTranslate2 engine on the export cached beside the
                checkpoint: runs/<experiment>/best.ct2/, made on first use, and again once
                the checkpoint changes)
           no, or the cache cannot be written: the torch engine (with a warning, for the cache)
    --engine torch          our own code decodes everything
    --engine ctranslate2    CTranslate2 decodes everything: the export in --model DIR, or the
                            cached one
    --model PATH            an export (a folder with seq2seq.json), or an Argos package (an
                            .argosmodel file or its folder: argos.py), decoded by CTranslate2;
                            serve takes several (load_models: configs, checkpoints, exports,
                            packages, folders of installed packages), each NAME=PATH or
                            named by its file: its experiment, a package's file name

The cached export is CTranslate2's copy of our weights (exports/ctranslate2.py), and beam.py's
search is CTranslate2's: a translation, greedy or beam search, is the same tokens in both
(tested), several times sooner on a CPU (benchmarks/results/bench.md, serve_latency.md). So
Cached sends translations to CTranslate2 and the attention pictures, which CTranslate2 does not
give, to the torch engine: every output stays what `--engine torch` gives.

The cache is known by the checkpoint's checksum, which the export keeps in checkpoint.sha256:
a new best.pt (training went on, another run) gets a new export, made in a folder beside it
and renamed into place, so that a process reading the old one never sees half a model.
"""

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

from seq2seq.checkpoint import Checkpoint, load_checkpoint, read_header
from seq2seq.config import (
    Config,
    DecodeConfig,
    Language,
    ServeConfig,
    config_from_dict,
    load_config,
)
from seq2seq.decoding.argos import ArgosEngine, package_folders
from seq2seq.decoding.attention_maps import Attention
from seq2seq.decoding.ctranslate2 import CTranslate2Engine, ctranslate2_device
from seq2seq.decoding.engines import (
    Engine,
    TorchEngine,
    Translations,
    languages_of,
    model_languages,
)
from seq2seq.exports.argos import package_languages, package_metadata
from seq2seq.exports.ctranslate2 import export_ctranslate2, import_ctranslate2
from seq2seq.support.device import pick_device
from seq2seq.support.errors import UserError, warn
from seq2seq.support.paths import EXPORT_CONFIG, EXPORT_SOURCE
from seq2seq.text.vocab import Vocab

ENGINES = ("auto", "torch", "ctranslate2")


@dataclass
class Cached:
    """A checkpoint's translations decoded by CTranslate2 from its cached export; its
    attention pictures by our own code."""

    torch: TorchEngine
    fast: CTranslate2Engine
    folder: Path  # the cached export
    shows_attention = True

    @property
    def config(self) -> Config:
        return self.torch.config

    @property
    def src_vocab(self) -> Vocab:
        return self.torch.src_vocab

    @property
    def tgt_vocab(self) -> Vocab:
        return self.torch.tgt_vocab

    @property
    def longest_source(self) -> int:
        return self.torch.longest_source

    def facts(self) -> dict:
        return {**self.torch.facts(), "engine": "ctranslate2 (translations), torch (attention)"}

    def translate(self, sentences: list[str], decoding: DecodeConfig) -> Translations:
        return self.fast.translate(sentences, decoding)

    def translate_nbest(self, sentences: list[str], decoding: DecodeConfig) -> Translations:
        return self.fast.translate_nbest(sentences, decoding)

    def attention(self, sentence: str) -> Attention:
        return self.torch.attention(sentence)


def cache_folder(checkpoint: Path) -> Path:
    """Where the export of a checkpoint is cached: runs/x/best.pt -> runs/x/best.ct2/."""
    return checkpoint.with_suffix(".ct2")


def cached_export(checkpoint: Checkpoint, path: Path) -> Path:
    """The folder of the CTranslate2 export of `checkpoint` (read from `path`), made now if it
    is missing or was made from another checkpoint."""
    folder = cache_folder(path)
    if made_from(folder) != checkpoint.sha256:
        try:
            export_ctranslate2(checkpoint, folder)
        except OSError:  # another process renaming its export into place at the same moment?
            if made_from(folder) != checkpoint.sha256:
                raise
    return folder


def made_from(folder: Path) -> str | None:
    """The checksum of the checkpoint an export was made from (None: no export there)."""
    try:
        return (folder / EXPORT_SOURCE).read_text()
    except OSError:
        return None


def load_engine(
    config: Config | None = None,
    checkpoint: str | Path | None = None,
    choice: str = "auto",
    model: str | Path | None = None,
    device: str = "auto",
    compute_type: str = "default",
) -> Engine:
    """The engine these settings name (the table above): `checkpoint` (default: the best
    checkpoint of `config`), or for choice="ctranslate2" the export in the folder `model`."""
    if model:
        if choice == "torch":
            raise UserError("--model is an export for --engine ctranslate2 (or auto), not torch")
        if is_argos_package(Path(model)):
            return ArgosEngine.load(model, device, compute_type)
        return CTranslate2Engine.load(model, device, compute_type)
    path = Path(checkpoint or config.checkpoint_path)
    where = "`make train`" if checkpoint else config.make_command("train")
    ours = TorchEngine(load_checkpoint(path, pick_device(device), where))
    if choice == "torch" or (choice == "auto" and not ctranslate2_runs_on(ours.device)):
        return ours
    try:
        folder = cached_export(ours.checkpoint, path)
    except (OSError, UserError) as error:
        if choice == "ctranslate2":
            raise
        warn(f"cannot cache the CTranslate2 export of {path} ({error}): the torch engine decodes")
        return ours
    fast = CTranslate2Engine.load(folder, ours.device, compute_type)
    return fast if choice == "ctranslate2" else Cached(ours, fast, folder)


def is_argos_package(path: Path) -> bool:
    return path.suffix == ".argosmodel" or (path / "metadata.json").exists()


@dataclass(frozen=True)
class Loader:
    """A model to serve, before it is loaded (serve.lazy): its name (one of its pair's
    models), what it is (`path`; `about`: an imported model's origin, a package's version),
    what it translates (`languages(settings)`: with these serve settings; None: its config's
    own), the bytes of its weights on disk, and `load()`, its engine."""

    name: str
    path: str
    languages: Callable[[ServeConfig | None], tuple[Language, Language]]
    weights_bytes: int
    load: Callable[[], Engine]
    about: dict = field(default_factory=dict)

    @classmethod
    def of(cls, engine: Engine, path: str = "") -> "Loader":
        """An engine loaded already (from `path`): named as load_models names its file's."""
        facts = engine.facts()
        name = package_name(Path(facts["package"])) if "package" in facts else None
        origin = facts["checkpoint"].get("origin")
        about = {"origin": origin} if origin else {}
        pair = partial(languages_of, engine)
        return cls(name or engine.config.experiment, path, pair, 0, lambda: engine, about)


# --model NAME=PATH: a name of letters, digits, "_", "-" and "."
NAMED = re.compile(r"([\w.-]+)=(.+)")


def load_models(
    arguments: list[str], config: Config, choice: str, device: str, compute_type: str
) -> list[Loader]:
    """The models `arguments` name, in order (serve --model [NAME=]PATH, several times); each
    named NAME, else by its file (models_at)."""
    loaders: list[Loader] = []
    for argument in arguments:
        match = NAMED.fullmatch(argument)
        name, path = (None, argument) if not match or Path(argument).exists() else match.groups()
        found = models_at(Path(path), argument, config, choice, device, compute_type)
        if name and len(found) > 1:
            raise UserError(f"--model {argument}: one name for {len(found)} packages in {path}")
        loaders += [replace(found[0], name=name)] if name else found
    return loaders


def models_at(
    path: Path, argument: str, config: Config, choice: str, device: str, compute_type: str
) -> list[Loader]:
    """The models at `path`: a config (.yaml: its best checkpoint), a checkpoint (.pt), an
    export (seq2seq.json in it), an Argos package (.argosmodel, or its folder) or a folder of
    installed packages (each); each known from its config or metadata alone, its weights left
    on disk until it is loaded. Named by its experiment, a package by its file's name."""
    ours = partial(load_engine, choice=choice, device=device, compute_type=compute_type)
    if path.suffix in (".yaml", ".yml"):
        named = load_config(path)
        return [checkpoint_loader(named.checkpoint_path, partial(ours, named))]
    if path.suffix == ".pt":
        return [checkpoint_loader(path, partial(ours, config, path))]
    if is_argos_package(path):  # decoded as Argos Translate does, whatever --engine
        return [argos_loader(path, device, compute_type)]
    if (path / EXPORT_CONFIG).exists():
        return [export_loader(path, partial(ours, config, model=path))]
    if path.is_dir() and (packages := package_folders(path)):
        return [argos_loader(package, device, compute_type) for package in packages]
    raise UserError(
        f"--model {argument}: not a config (.yaml), a checkpoint (.pt), an export (a folder "
        "with seq2seq.json), an Argos package (.argosmodel or its folder) or a folder of "
        "installed packages"
    )


def checkpoint_loader(path: Path, load: Callable[[], Engine]) -> Loader:
    config, info = read_header(path)
    pair = partial(model_languages, config, None)
    about = {"origin": info["origin"]} if info.get("origin") else {}
    return Loader(config.experiment, str(path), pair, path.stat().st_size, load, about)


def export_loader(folder: Path, load: Callable[[], Engine]) -> Loader:
    saved = folder / EXPORT_CONFIG
    config = config_from_dict(json.loads(saved.read_text()), source=str(saved))
    pair = partial(model_languages, config, None)
    size = (folder / "model.bin").stat().st_size
    return Loader(config.experiment, str(folder), pair, size, load)


def argos_loader(path: Path, device: str, compute_type: str) -> Loader:
    metadata = package_metadata(path)
    pair = partial(model_languages, None, package_languages(metadata))
    size = path.stat().st_size if path.is_file() else (path / "model/model.bin").stat().st_size
    load = partial(ArgosEngine.load, path, device, compute_type)
    version = metadata.get("package_version")
    about = {"package_version": version} if version else {}
    return Loader(package_name(path), str(path), pair, size, load, about)


def package_name(path: Path) -> str:
    """A package's name: its file's without .argosmodel, or its folder's."""
    return path.name.removesuffix(".argosmodel")


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
        "--compute-type", default="default", help="CTranslate2's: float32, int8, ..."
    )
