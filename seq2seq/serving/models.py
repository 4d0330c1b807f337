"""The models one service serves, by language pair, and the way between two languages.

    Models.load(loaders, settings)      each model (loaders.py's Loader) with its pair and
                                        its own batcher: a decoder thread per model, so that one
                                        pair's backlog never holds another pair's requests;
                                        loaded at start or (serve.lazy) at its first request, by
                                        its decoder thread, and dropped past serve.models_mib
    models.chain(source, target, name)  -> [model], the chain a request's texts go through:
                                        the pair's model of that name (else Invalid, naming
                                        the pair's); name None: its default (the first
                                        given); else the defaults of the fewest pairs that
                                        lead there, through languages between (pivots,
                                        English first, as Argos Translate chains its
                                        packages); else Invalid, naming the pairs it has;
                                        with `itself`, [] from a language into itself
    models.languages()                  LibreTranslate's /languages: every source with the
                                        targets it reaches, directly or through pivots
    models.default                      the first model: the page's, /attention's, and the pair
                                        of a request that names none

A model's pair: an Argos package's metadata; our models' config (serve.source_language and
target_language, else the corpus's), with the command's serve settings when it serves one
model, each model's own config when it serves several. Its name (serve --model NAME=PATH,
else its experiment or package's file name: loaders.py's load_models) tells a pair's
versions apart: the original and the fine-tuned one, side by side.
"""

import dataclasses
import json

from seq2seq.config import Language, ServeConfig
from seq2seq.decoding.engines import Engine
from seq2seq.serving.batcher import Batcher
from seq2seq.serving.loaders import Loader, Versions
from seq2seq.serving.refusals import Invalid
from seq2seq.support.errors import UserError
from seq2seq.support.paths import version_checkpoint

PIVOTS = ("en",)  # tried first, in this order, before any other shared language


@dataclasses.dataclass(frozen=True)
class Model:
    """One model of the service: the pair it translates, its name among the pair's models,
    what it is (the Loader's path and about), the bytes of its weights, its batcher, which
    holds its engine (None: not loaded, serve.lazy), the config it is served from (the
    Loader's: serve.improve_after's), and the experiment's versions it follows (loaders.py's
    Versions; None: none)."""

    source: Language
    target: Language
    name: str
    path: str
    about: dict
    weights_bytes: int
    batcher: Batcher
    config: str = ""
    versions: Versions | None = None

    @property
    def pair(self) -> str:
        return f"{self.source.code}-{self.target.code}"

    @property
    def engine(self) -> Engine | None:
        return self.batcher.engine

    @property
    def version(self) -> str | None:
        """The version of its experiment served now (versions.py; None: its own best.pt)."""
        return self.batcher.version

    @property
    def served(self) -> str:
        """The file served now: the checkpoint of the version served, else `path`."""
        if self.versions is None:
            return self.path
        return str(version_checkpoint(self.versions.run_dir, self.version))


def refuse_twice_named(loaders: list[Loader], pairs: list[tuple[Language, Language]]) -> None:
    """A UserError if two models of one pair have one name (a request could not choose)."""
    named = [
        f"{loader.name} ({source.code}-{target.code})"
        for loader, (source, target) in zip(loaders, pairs, strict=True)
    ]
    if twice := sorted({name for name in named if named.count(name) > 1}):
        raise UserError(
            f"two models of one pair named {', '.join(twice)}: --model NAME=PATH names each"
        )


def pivot_order(code: str) -> tuple[int, str]:
    """PIVOTS first, in their order; then the others by code."""
    return (PIVOTS.index(code) if code in PIVOTS else len(PIVOTS), code)


class Models:
    """Every model of the service, by pair: `by_pair` the default of each (its first),
    `versions` all of each by name."""

    def __init__(self, models: list[Model], settings: ServeConfig):
        self.all, self.settings = models, settings
        self.versions: dict[tuple[str, str], dict[str, Model]] = {}
        for model in models:
            self.versions.setdefault((model.source.code, model.target.code), {})[model.name] = model
        self.by_pair = {pair: next(iter(named.values())) for pair, named in self.versions.items()}
        self.reach = {code: self.paths(code) for code in self.names()}  # by source language

    @classmethod
    def load(cls, loaders: list[Loader], settings: ServeConfig) -> "Models":
        """Each model with its batcher; loaded now, or (serve.lazy) the first alone. Two
        models of one pair with one name: a UserError, before any is loaded."""
        several = len(loaders) > 1
        pairs = [loader.languages(None if several else settings) for loader in loaders]
        refuse_twice_named(loaders, pairs)
        models = []
        for number, (loader, (source, target)) in enumerate(zip(loaders, pairs, strict=True)):
            engine = loader.load() if number == 0 or not settings.lazy else None
            version = loader.versions.first if loader.versions else None
            batcher = Batcher(
                engine, settings, loader.load, lambda b: served.fit(keep=b), loader.beam_size,
                version,
            )  # fmt: skip
            models.append(
                Model(source, target, loader.name, loader.path, loader.about,
                      loader.weights_bytes, batcher, loader.config, loader.versions)
            )  # fmt: skip
        served = cls(models, settings)
        served.fit()
        return served

    def loaded_bytes(self) -> int:
        return sum(model.weights_bytes for model in self.all if model.engine is not None)

    def fit(self, keep: Batcher | None = None) -> None:
        """Past serve.models_mib, drop the least recently used idle models, but the first and
        the one `keep` (just loaded); each is loaded again when asked."""
        budget = self.settings.models_mib * 2**20
        others = [m for m in self.all[1:] if m.engine is not None and m.batcher is not keep]
        for model in sorted(others, key=lambda m: m.batcher.last_used):
            if not budget or self.loaded_bytes() <= budget:
                return
            model.batcher.unload()

    @property
    def default(self) -> Model:
        return self.all[0]

    @property
    def sources(self) -> list[str]:
        """The languages the service translates from, in the models' order."""
        return list(dict.fromkeys(model.source.code for model in self.all))

    def names(self) -> dict[str, Language]:
        """Every language of the service, by code."""
        return {m.source.code: m.source for m in self.all} | {
            m.target.code: m.target for m in self.all
        }

    def chain(
        self, source: str, target: str, name: str | None = None, itself: bool = False
    ) -> list[Model]:
        """The model of source -> target named `name` (None: the pair's default), else the
        defaults of the fewest pairs that lead there (paths); else Invalid. `itself`: a
        language of the service into itself is no model at all, [] (LibreTranslate's API:
        each text given back as it is, as Argos Translate does)."""
        if itself and source == target and source in self.names():
            return []
        if name is not None:
            return [self.named(source, target, name)]
        if (path := self.reach.get(source, {}).get(target)) is not None:
            return [self.by_pair[pair] for pair in path]
        pairs = ", ".join(
            f"{m.source.code} ({m.source.name}) to {m.target.code} ({m.target.name})"
            for m in self.all
        )
        raise Invalid(f"{source} to {target} is not available: this service translates {pairs}")

    def paths(self, source: str) -> dict[str, list[tuple[str, str]]]:
        """Each language `source` reaches (not itself), with the fewest pairs that lead there,
        as Argos Translate chains its packages through languages between: breadth first, each
        language's next ones in pivot_order (English first). Found once: Models.reach."""
        paths: dict[str, list[tuple[str, str]]] = {source: []}
        frontier = [source]
        while frontier:
            reached = []
            for language in frontier:
                pairs = sorted(
                    (p for p in self.by_pair if p[0] == language), key=lambda p: pivot_order(p[1])
                )
                for pair in pairs:
                    if pair[1] not in paths:
                        paths[pair[1]] = [*paths[language], pair]
                        reached.append(pair[1])
            frontier = reached
        del paths[source]
        return paths

    def named(self, source: str, target: str, name: str) -> Model:
        """The model of source -> target named `name`; else Invalid, naming the pair's models."""
        if (source, target) not in self.versions:
            pivot = self.chain(source, target)[0].target.code  # Invalid if not reached at all
            raise Invalid(
                f"{source} to {target} goes through {pivot}: a request names a model only of a "
                "pair that has its own"
            )
        versions = self.versions[source, target]
        if name not in versions:
            raise Invalid(
                f"no model named {json.dumps(name)} translates {source} to {target}: its models "
                f"are {', '.join(versions)}"
            )
        return versions[name]

    def targets(self, source: str) -> list[str]:
        """The languages `source` reaches, directly or through others, nearest first."""
        return list(self.reach.get(source, {}))

    @property
    def reached(self) -> list[str]:
        """Every language some source reaches, in the sources' order, each once."""
        return list(dict.fromkeys(t for source in self.sources for t in self.targets(source)))

    def languages(self) -> list[dict]:
        """LibreTranslate's /languages: each language with the targets it reaches, itself
        among them (as Argos Translate, each language translates into itself unchanged),
        sorted as LibreTranslate sorts them."""
        return [
            {"code": code, "name": language.name, "targets": sorted({code, *self.targets(code)})}
            for code, language in self.names().items()
        ]

    def pivoted(self) -> list[dict]:
        """The pairs the service translates through other languages, and those languages, in
        order (/info)."""
        return [
            {"pair": f"{source}-{target}", "through": [pair[1] for pair in path[:-1]]}
            for source in self.names()
            for target, path in self.reach[source].items()
            if len(path) > 1
        ]
