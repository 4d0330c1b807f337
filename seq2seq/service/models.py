"""The models one service serves, by language pair, and the way between two languages.

    Models.load(loaders, settings)      each model (engine_choice.py's Loader) with its pair and
                                        its own batcher: a decoder thread per model, so that one
                                        pair's backlog never holds another pair's requests;
                                        loaded at start or (serve.lazy) at its first request, by
                                        its decoder thread, and dropped past serve.models_mib
    models.route(source, target)        -> [model]: the model of that pair; else two, through
                                        a language one translates into and the other from (a
                                        pivot, English first, as Argos Translate does); else a
                                        400 that names the pairs the service has
    models.languages()                  LibreTranslate's /languages: every source with the
                                        targets it reaches, directly or through a pivot
    models.default                      the first model: the page's, /attention's, and the pair
                                        of a request that names none

A model's pair: an Argos package's metadata; our models' config (serve.source_language and
target_language, else the corpus's), with the command's serve settings when it serves one
model, each model's own config when it serves several.
"""

import dataclasses

from seq2seq.config import Language, ServeConfig
from seq2seq.decoding.engine_choice import Loader
from seq2seq.decoding.engines import Engine
from seq2seq.service.api import HTTPError
from seq2seq.service.batcher import Batcher
from seq2seq.support.errors import UserError

PIVOTS = ("en",)  # tried first, in this order, before any other shared language


@dataclasses.dataclass(frozen=True)
class Model:
    """One model of the service: the pair it translates, where it came from, the bytes of its
    weights, and its batcher, which holds its engine (None: not loaded, serve.lazy)."""

    source: Language
    target: Language
    name: str
    weights_bytes: int
    batcher: Batcher

    @property
    def pair(self) -> str:
        return f"{self.source.code}-{self.target.code}"

    @property
    def engine(self) -> Engine | None:
        return self.batcher.engine


def pivot_order(code: str) -> tuple[int, str]:
    """PIVOTS first, in their order; then the others by code."""
    return (PIVOTS.index(code) if code in PIVOTS else len(PIVOTS), code)


class Models:
    """Every model of the service, by pair."""

    def __init__(self, models: list[Model], settings: ServeConfig):
        self.all, self.settings = models, settings
        self.by_pair = {(model.source.code, model.target.code): model for model in models}

    @classmethod
    def load(cls, loaders: list[Loader], settings: ServeConfig) -> "Models":
        """Each model with its batcher; loaded now, or (serve.lazy) the first alone. Two
        models of one pair: a UserError, before any is loaded."""
        several = len(loaders) > 1
        pairs = [loader.languages(None if several else settings) for loader in loaders]
        named = [f"{source.code}-{target.code}" for source, target in pairs]
        if twice := sorted({pair for pair in named if named.count(pair) > 1}):
            raise UserError(f"two models translate {', '.join(twice)}: serve one of each")
        models = []
        for number, (loader, (source, target)) in enumerate(zip(loaders, pairs, strict=True)):
            engine = loader.load() if number == 0 or not settings.lazy else None
            batcher = Batcher(engine, settings, loader.load, lambda b: served.fit(keep=b))
            models.append(Model(source, target, loader.name, loader.weights_bytes, batcher))
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

    def route(self, source: str, target: str) -> list[Model]:
        """The model of source -> target, else two through a pivot; else a 400."""
        if (source, target) in self.by_pair:
            return [self.by_pair[source, target]]
        shared = [code for code in self.names() if (source, code) in self.by_pair]
        shared = [code for code in shared if (code, target) in self.by_pair and source != target]
        if shared:
            pivot = min(shared, key=pivot_order)
            return [self.by_pair[source, pivot], self.by_pair[pivot, target]]
        pairs = ", ".join(
            f"{m.source.code} ({m.source.name}) to {m.target.code} ({m.target.name})"
            for m in self.all
        )
        raise HTTPError(
            400, f"{source} to {target} is not available: this service translates {pairs}"
        )

    def targets(self, source: str) -> list[str]:
        """The languages `source` reaches, directly or through one pivot."""
        direct = [t for s, t in self.by_pair if s == source]
        pivoted = [t for p in direct for s, t in self.by_pair if s == p and t != source]
        return list(dict.fromkeys(direct + pivoted))

    def languages(self) -> list[dict]:
        """LibreTranslate's /languages: each language with the targets it reaches."""
        return [
            {"code": code, "name": language.name, "targets": self.targets(code)}
            for code, language in self.names().items()
        ]

    def pivoted(self) -> list[dict]:
        """The pairs the service translates through a pivot, and the pivot of each (/info)."""
        return [
            {"pair": f"{source}-{target}", "through": route[0].target.code}
            for source in self.names()
            for target in self.targets(source)
            if len(route := self.route(source, target)) > 1
        ]
