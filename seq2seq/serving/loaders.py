"""The models a service is given (serve --model, several times), each known before it is
loaded: its name, its pair, the size of its weights, its beam size, and how to load it (at
start, or at its first request with serve.lazy: models.py).

    load_models(["tuned=runs/x/best.pt", "packages/", ...], ..., decode)  -> [Loader], in order
      NAME=PATH, else named by its file (its experiment, a package's file name); each PATH:
        a config (.yaml)        its best checkpoint     }  decoded by the engine --engine
        a checkpoint (.pt)                              }  picks (engine_choice.py)
          (an experiment's best.pt: as `served`)        }
        an export (a folder with seq2seq.json)          }
        an Argos package (.argosmodel, or its folder)      decoded as Argos Translate does
        a folder of installed packages                     each of them
    Loader.of(engine)   an engine loaded already (serve's one checkpoint; tests)
    served(checkpoint)  -> the checkpoint served for it, and its experiment's Versions: an
                        experiment's best.pt (a config's) is served as the version its
                        versions/current names (seq2seq/support/paths.py), which the service
                        follows while it serves (versions.py); any other checkpoint as it is
      first_version(run_dir): at start, the version named if it reads whole (not missing,
                        cut short or damaged: checkpoint.read_state's checks); else, said in a
                        line each, the newest before it that its gate served and that does,
                        else the original: a broken version does not keep the service down

Each decodes with its own decode settings, but those the command line set (`decode`: config.py's
decode_overrides): engine_choice.py's decoding_in_force, applied when it loads and, for its
beam size and the settings it has no use for (refused), when it is known: at start.
"""

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

from seq2seq.checkpoint import read_header, read_state
from seq2seq.config import (
    Config,
    DecodeConfig,
    Language,
    ServeConfig,
    config_from_dict,
    load_config,
)
from seq2seq.decoding.argos_engine import OWN_DECODE
from seq2seq.decoding.engine_choice import decoding_in_force, load_engine
from seq2seq.decoding.engines import Engine, languages_of, model_languages
from seq2seq.exports.argos_package import (
    is_package,
    package_folders,
    package_languages,
    package_metadata,
    package_name,
    weights_bytes,
)
from seq2seq.support.errors import UserError, say
from seq2seq.support.paths import (
    BEST,
    EXPORT_CONFIG,
    experiment_of,
    served_version,
    version_checkpoint,
)
from seq2seq.training.versions import SERVED, versions


@dataclass(frozen=True)
class Versions:
    """The versions of an experiment a model follows (serve.watch_versions_s: versions.py):
    its run folder, the version served at start (None: the experiment's own best.pt), and
    `load(checkpoint)`, a version's engine, decoded as the model's."""

    run_dir: Path
    first: str | None
    load: Callable[[Path], Engine]


def served(checkpoint: Path, load: Callable[[Path], Engine]) -> tuple[Path, Versions | None]:
    """The checkpoint served for `checkpoint`: an experiment's own best.pt, the version its
    versions/current names, with the experiment's Versions (`load`: a version's engine);
    any other checkpoint itself, and None."""
    run_dir = experiment_of(checkpoint)
    if run_dir is None:
        return checkpoint, None
    version = first_version(run_dir)
    return version_checkpoint(run_dir, version), Versions(run_dir, version, load)


def first_version(run_dir: Path) -> str | None:
    """The version served at start (None: the original, the experiment's own best.pt): the
    one versions/current names if its checkpoint reads whole; else the newest version before
    it that its gate served and whose checkpoint does (not a later one: a roll back went
    back from those), else the original; each passed over said in a line, and the one served
    instead."""
    named = served_version(run_dir)
    if named is None:
        return None
    for version in [named, *served_before(run_dir, named)]:
        try:
            read_state(version_checkpoint(run_dir, version), trained_by="python -m seq2seq.improve")
        except UserError as error:
            say(f"warning: {run_dir}: version {version} cannot be served: {error}")
            continue
        if version != named:
            say(f"warning: {run_dir}: serving version {version}, the newest served before it")
        return version
    say(f"warning: {run_dir}: serving the original, {run_dir / BEST}")
    return None


def served_before(run_dir: Path, named: str) -> list[str]:
    """The versions before `named` that their gate served, newest first (none if their
    records do not read)."""
    try:
        known = versions(run_dir)
    except UserError as error:
        say(f"warning: {error}")
        return []
    served = [name for name, about in known.items() if about.get("verdict") == SERVED]
    return [name for name in reversed(served) if name < named]


@dataclass(frozen=True)
class Loader:
    """A model to serve, before it is loaded (serve.lazy): its name (one of its pair's
    models), what it is (`path`; `about`: an imported model's origin, a package's version),
    what it translates (`languages(settings)`: with these serve settings; None: its config's
    own), the bytes of its weights on disk, the beam size it decodes with (its config's
    decode.beam_size, Argos Translate's for a package, unless the command line set one),
    `load()`, its engine, the config it is served from (`config`: a --model CONFIG.yaml, or
    serve's own --config; "": none), which serve.improve_after improves, and the experiment's
    Versions it follows (None: it follows none)."""

    name: str
    path: str
    languages: Callable[[ServeConfig | None], tuple[Language, Language]]
    weights_bytes: int
    beam_size: int
    load: Callable[[], Engine]
    about: dict = field(default_factory=dict)
    config: str = ""
    versions: Versions | None = None

    @classmethod
    def of(cls, engine: Engine, path: str = "", versions: Versions | None = None) -> "Loader":
        """An engine loaded already (from `path`, of `versions`): named as load_models names
        its file's."""
        facts = engine.facts()
        name = package_name(Path(facts["package"])) if "package" in facts else None
        origin = facts["checkpoint"].get("origin")
        about = {"origin": origin} if origin else {}
        pair = partial(languages_of, engine)
        beams = engine.config.decode.beam_size
        name = name or engine.config.experiment
        return cls(name, path, pair, 0, beams, lambda: engine, about, versions=versions)


# --model NAME=PATH: a name of letters, digits, "_", "-" and "."
NAMED = re.compile(r"([\w.-]+)=(.+)")


def load_models(
    arguments: list[str], config: Config, choice: str, device: str, decode: dict | None = None,
) -> list[Loader]:  # fmt: skip
    """The models `arguments` name, in order (serve --model [NAME=]PATH, several times); each
    named NAME, else by its file (models_at); each decoding with the settings `decode` sets,
    else its own, on the service's cores (config.serve: threads.py)."""
    loaders: list[Loader] = []
    engines = partial(load_engine, device=device, decode=decode, serve=config.serve)
    in_force = partial(decoding_in_force, overrides=decode)
    for argument in arguments:
        match = NAMED.fullmatch(argument)
        name, path = (None, argument) if not match or Path(argument).exists() else match.groups()
        found = models_at(Path(path), argument, config, choice, engines, in_force)
        if name and len(found) > 1:
            raise UserError(f"--model {argument}: one name for {len(found)} packages in {path}")
        loaders += [replace(found[0], name=name)] if name else found
    return loaders


def models_at(
    path: Path, argument: str, config: Config, choice: str, engines: Callable,
    in_force: Callable,
) -> list[Loader]:  # fmt: skip
    """The models at `path`: a config (.yaml: its experiment's served checkpoint), a
    checkpoint (.pt: an experiment's best.pt, its served one: `served`), an
    export (seq2seq.json in it), an Argos package (.argosmodel, or its folder) or a folder of
    installed packages (each); each known from its config or metadata alone, its weights left
    on disk until it is loaded. Named by its experiment, a package by its file's name.
    `engines`: load_engine with the device and decode settings; `in_force`:
    decoding_in_force with those settings. A package is decoded as Argos Translate decodes
    it, whatever --engine (`choice`)."""
    ours, settled = partial(engines, choice=choice), partial(in_force, choice=choice)
    if path.suffix in (".yaml", ".yml"):
        named = load_config(path)
        loader = checkpoint_loader(named.checkpoint_path, partial(ours, named), settled)
        return [replace(loader, config=str(path))]
    if path.suffix == ".pt":
        return [checkpoint_loader(path, partial(ours, config), settled)]
    if is_package(path):
        return [argos_loader(path, partial(engines, model=path), settled)]
    if (path / EXPORT_CONFIG).exists():
        return [export_loader(path, partial(ours, config, model=path), settled)]
    if path.is_dir() and (found := package_folders(path)):
        return [argos_loader(one, partial(engines, model=one), settled) for one in found]
    raise UserError(
        f"--model {argument}: not a config (.yaml), a checkpoint (.pt), an export (a folder "
        "with seq2seq.json), an Argos package (.argosmodel or its folder) or a folder of "
        "installed packages"
    )


def checkpoint_loader(given: Path, load: Callable[[Path], Engine], in_force: Callable) -> Loader:
    """The checkpoint served for `given` (`served`), `load(checkpoint)` its engine."""
    path, versions = served(given, load)
    config, info = read_header(path)
    pair = partial(model_languages, config, None)
    about = {"origin": info["origin"]} if info.get("origin") else {}
    size, beams = path.stat().st_size, in_force(config.decode, path=path).beam_size
    loader = partial(load, path)
    return Loader(config.experiment, str(path), pair, size, beams, loader, about, versions=versions)


def export_loader(folder: Path, load: Callable[[], Engine], in_force: Callable) -> Loader:
    saved = folder / EXPORT_CONFIG
    config = config_from_dict(json.loads(saved.read_text()), source=str(saved))
    pair = partial(model_languages, config, None)
    size = (folder / "model.bin").stat().st_size
    beams = in_force(config.decode, path=folder).beam_size
    return Loader(config.experiment, str(folder), pair, size, beams, load)


def argos_loader(path: Path, load: Callable[[], Engine], in_force: Callable) -> Loader:
    metadata = package_metadata(path)
    pair = partial(model_languages, None, package_languages(metadata))
    beams = in_force(DecodeConfig(**OWN_DECODE), path=path).beam_size
    version = metadata.get("package_version")
    about = {"package_version": version} if version else {}
    return Loader(package_name(path), str(path), pair, weights_bytes(path), beams, load, about)
