"""The languages, sentences and engines that the tests of a service of several models serve: the
numbers model relabelled for a pair, its translations by hand, a load counted."""

import copy
import dataclasses
import threading

from seq2seq.checkpoint import Checkpoint
from seq2seq.config import Language
from seq2seq.decoding.engines import TorchEngine
from seq2seq.serving.loaders import Loader

EN = Language("en", "English")
DE = Language("de", "German")


FR = Language("fr", "French")
ES = Language("es", "Spanish")


SENTENCES = ["three is three", "twenty one is five", "four hundred six is nine"]


# an imported model's (its checkpoint's info["origin"])
ORIGIN = {
    "name": "translate-en_de-1_9.argosmodel",
    "package_version": "1.9",
    "quantization": "int8",
}


def labelled(checkpoint: Checkpoint, source: Language, target: Language) -> TorchEngine:
    """The numbers model, said to translate `source` to `target` (its config's serve)."""
    config = copy.deepcopy(checkpoint.config)
    config.serve.source_language, config.serve.target_language = source, target
    return TorchEngine(dataclasses.replace(checkpoint, config=config))


def by_hand(engine: TorchEngine, texts: list[str]) -> list[str]:
    return engine.translate(texts, engine.config.decode).outputs


IT = Language("it", "Italian")


class Counted:
    """A model's loader that counts its loads, and (held) waits to be released first."""

    def __init__(self, engine: TorchEngine, held: bool = False):
        self.engine, self.loads = engine, 0
        self.release = threading.Event()
        if not held:
            self.release.set()

    def __call__(self) -> TorchEngine:
        self.release.wait()
        self.loads += 1
        return self.engine


def loader(engine: TorchEngine, mib: int, load: Counted) -> Loader:
    return dataclasses.replace(Loader.of(engine), weights_bytes=mib * 2**20, load=load)


PAIR = {"source": "en", "target": "digits"}
