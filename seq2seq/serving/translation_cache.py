"""serve.translation_cache: each text's translation kept, so that a text asked again is not
decoded again (LibreTranslate's --translation-cache, but per text and for every client).

    TranslationCache(size)                   the size latest used texts' translations (0: off)
    cache.lookup(chain, options, texts)      -> Lookup: each text's entry found, or None; the
                                             texts missing (Core.translate decodes those
                                             alone) and the sentences of those found
    lookup.answer(decoded)                   the missing texts' Decoded, kept, and put back
                                             in order among those found: the request's

A text's key is what changes its translation, and nothing else: its chain's models in order
(pair, name and version: another model of the pair, or the version swapped in for it while
serving (versions.py), is another key), the text, and the request's
decoding Options (batcher.py: beam_size, nbest, placeholders). Its entry is what
decoding gave: the translation (or the n best with their scores, through every pivot), its
warnings, and its sentences (confidences.py's Sentences: the source's, their translations and
confidences; how many it counts against serve.max_sentences, so that a request is refused as
it would be without the cache). The engines are deterministic: an entry is what
decoding the text again would give, so the cache never changes an answer; a model loaded
again (serve.lazy, serve.models_mib) is the same file.

Past `size` entries, the least recently used goes. Core.translate calls this on the event
loop alone (never from the worker threads of api.off_the_loop): one thread, so an OrderedDict
needs no lock. Each worker process (serve.workers) has its own.
"""

from collections import OrderedDict
from typing import NamedTuple

from seq2seq.serving.batcher import Options
from seq2seq.serving.confidences import Sentences
from seq2seq.serving.models import Model


class Decoded(NamedTuple):
    """What decoding gave a request's texts (core.py's Core.decode), for each text in order."""

    translations: list  # a text each, or (nbest) its n best (score, text) pairs, best first
    warnings: list[list[str]]  # each text's, unnumbered
    sentences: list[Sentences]  # each text's, with their confidences


class Entry(NamedTuple):
    """A text's translation as decoding gave it."""

    translation: str | tuple[tuple[float, str], ...]  # the best, or the n best (score, text)
    warnings: tuple[str, ...]
    sentences: Sentences  # as its first model's job held them: what it counts (max_sentences)


class TranslationCache:
    """The `size` latest used texts' translations (0: off, nothing kept or counted), and the
    hits and misses so far (GET /health)."""

    def __init__(self, size: int):
        self.size = size
        self.entries: OrderedDict[tuple, Entry] = OrderedDict()  # least recently used first
        self.hits = self.misses = 0

    def lookup(self, chain: list[Model], options: Options, texts: list[str]) -> "Lookup":
        """Each text's entry, or None; those found become the most recently used."""
        models = tuple((model.pair, model.name, model.version) for model in chain)
        keys = [(models, options, text) for text in texts]
        if not self.size:
            return Lookup(self, keys, [None] * len(texts), texts)
        found = [self.entries.get(key) for key in keys]
        for key, entry in zip(keys, found, strict=True):
            if entry is not None:
                self.entries.move_to_end(key)
        missing = [text for text, entry in zip(texts, found, strict=True) if entry is None]
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        return Lookup(self, keys, found, missing)

    def put(self, key: tuple, entry: Entry) -> None:
        self.entries[key] = entry
        self.entries.move_to_end(key)
        while len(self.entries) > self.size:
            self.entries.popitem(last=False)

    def figures(self) -> dict[str, int]:
        """GET /health's "cache"."""
        return {"entries": len(self.entries), "hits": self.hits, "misses": self.misses}


class Lookup:
    """One request's texts in the cache: `missing`, those to decode (in order, repeats kept);
    `sentences`, the number of sentences of those found (serve.max_sentences counts them)."""

    def __init__(self, cache: TranslationCache, keys: list, found: list, missing: list[str]):
        self.cache, self.keys, self.found, self.missing = cache, keys, found, missing
        self.sentences = sum(len(entry.sentences.lines) for entry in found if entry is not None)

    @property
    def complete(self) -> bool:
        """Every text found (and there is one): nothing to decode."""
        return bool(self.found) and not self.missing

    def answer(self, decoded: Decoded) -> Decoded:
        """The missing texts' `decoded` kept, and put back in order among those found: the
        request's answer. With the cache off, `decoded` as it is."""
        if not self.cache.size:
            return decoded
        fresh = iter(zip(*decoded, strict=True))
        translations, warnings, sentences = [], [], []
        for key, entry in zip(self.keys, self.found, strict=True):
            if entry is None:
                translation, said, each = next(fresh)
                kept = tuple(translation) if isinstance(translation, list) else translation
                entry = Entry(kept, tuple(said), each)
                self.cache.put(key, entry)
            is_list = isinstance(entry.translation, tuple)
            translations.append(list(entry.translation) if is_list else entry.translation)
            warnings.append(list(entry.warnings))
            sentences.append(entry.sentences)
        return Decoded(translations, warnings, sentences)
