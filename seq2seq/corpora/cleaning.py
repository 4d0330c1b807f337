"""Cleaning, counted: which sentence pairs of a corpus `make data` keeps, and why the others go.

    a split's pairs --> clean(pairs, rules, tally) --> the kept pairs --> data/<name>/<split>.*
                              |
                              +--> tally: read, removed by each filter, kept --> report.json

A rule is a test of one pair (True: drop it); `rules` makes a split's from the config's
`clean` section (seq2seq/options.py, where each is described). A dropped pair is counted once,
under the first rule it fails, in the report's order. `clean_corpus` writes the splits in the
order test, valid, train, so that each can drop the pairs of those before it: a test pair is
never dropped for being elsewhere, a training pair that is in valid or test always is. Pairs
are told apart by a 64-bit hash (Python's, of the pair): about 70 bytes of memory for each
distinct pair of a split, whatever the length of its sentences.

When the corpus gives no valid or test split, `split_off` takes corpus.valid_size and
test_size distinct pairs of the cleaned training split for them, those whose hash keyed by
corpus.seed is smallest (a seeded random sample, in one pass over a file of any size), and
writes the training split again without them, nor any copy of them.

A split mixed from several sources (corpus.type sources, seq2seq/corpora/sources.py) comes as
`Mixed`, its `Part`s in order, and each part is cleaned on its own, under its own tally (in
the report beside the split's), before its max_pairs and weight:

    a part's pairs --clean (the split's rules)--> the first max_pairs kept --> weight times
                          |                                                      |
          one duplicate rule for the split: a pair that an          the copies come after the
          earlier part gave goes; so does one in valid or test      rules: none is a duplicate
"""

import heapq
import itertools
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from seq2seq.options import Config
from seq2seq.support.errors import UserError
from seq2seq.support.files import write_json
from seq2seq.support.paths import REPORT, text_files
from seq2seq.text.parallel import SPLITS, CorpusError, iter_parallel, keyed_hash, write_pairs

Pair = tuple[str, str]
Rule = Callable[[str, str], bool]  # True: drop the pair

# Unicode's category Cc (C0, DEL and C1), less the tab, which is ordinary white space in text.
CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")


@dataclass
class Tally:
    """A split's counts, or a source's: pairs read, removed by each rule (its name), kept, the
    copies of those kept that a source's weight added, and a mixed split's sources' own; and
    the entries of a source's catalogs that are no pairs, by why (localization/catalogs.py)."""

    read: int = 0
    removed: dict[str, int] = field(default_factory=dict)
    kept: int = 0
    copies: int = 0
    sources: dict[str, "Tally"] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)

    @property
    def pairs(self) -> int:
        """The pairs written."""
        return self.kept + self.copies

    def add(self, other: "Tally") -> None:
        self.read, self.kept = self.read + other.read, self.kept + other.kept
        self.copies += other.copies
        for counts, others in ((self.removed, other.removed), (self.skipped, other.skipped)):
            for name, count in others.items():
                counts[name] = counts.get(name, 0) + count

    def line(self, split: str) -> str:
        drops = ", ".join(f"{count:,} {name}" for name, count in self.removed.items() if count)
        copies = f", {self.copies:,} copies (weight)" if self.copies else ""
        skips = ", ".join(f"{count:,} {why}" for why, count in self.skipped.items())
        skipped = f" ({sum(self.skipped.values()):,} entries skipped: {skips})" if skips else ""
        return (
            f"{split}: {self.read:,} pairs read{skipped}, {drops or 'none'} removed, "
            f"{self.kept:,} kept{copies}"
        )


@dataclass
class Part:
    """One source's pairs in a mixed split: cleaned, then the first `max_pairs` of those kept
    (None: all), `weight` times over."""

    label: str  # its config key and what it is, e.g. "train_sources[0] (opus Tatoeba)"
    pairs: Iterable[Pair]
    max_pairs: int | None = None
    weight: int = 1
    # a catalog's entries that are no pairs, by why, counted as `pairs` is read
    # (localization/catalogs.py)
    skipped: dict[str, int] = field(default_factory=dict)


@dataclass
class Mixed:
    """A split mixed from sources: its parts, in order."""

    parts: list[Part]


def clean(
    pairs: Iterable[Pair], rules: dict[str, Rule], tally: Tally, split: str
) -> Iterator[Pair]:
    """The pairs that pass every rule, counted in `tally`. A split left empty is an error."""
    tally.removed.update((name, 0) for name in rules if name not in tally.removed)
    for pair in pairs:
        tally.read += 1
        failed = next((name for name, rule in rules.items() if rule(*pair)), None)
        if failed is None:
            tally.kept += 1
            yield pair
        else:
            tally.removed[failed] += 1
    if not tally.kept:
        raise CorpusError(f"{split}: no sentence pairs left to use ({tally.line(split)})")


def clean_mixed(split: Mixed, split_rules: dict[str, Rule], tally: Tally) -> Iterator[Pair]:
    """A mixed split's pairs: each part cleaned with the split's rules under its own tally
    (in tally.sources), its first max_pairs, then its weight's copies of them."""
    for part in split.parts:
        counts = tally.sources[part.label] = Tally(skipped=part.skipped)
        kept = itertools.islice(clean(part.pairs, split_rules, counts, part.label), part.max_pairs)
        if part.weight == 1:
            yield from kept
        else:
            held = list(kept)
            counts.copies = len(held) * (part.weight - 1)
            for _ in range(part.weight):
                yield from held
        tally.add(counts)


def rules(config: Config, split: str, elsewhere: set[int], languages: tuple[str, str]) -> dict:
    """A split's rules, in the report's order. The test split's are the pairs no model can take
    only; `elsewhere` holds the hashes of the pairs of the splits written before this one."""
    clean, max_words = config.clean, config.corpus.max_words
    found: dict[str, Rule] = {}
    if clean.drop_empty:
        found["empty"] = lambda s, t: not s.strip() or not t.strip()
    found["too_long"] = lambda s, t: max(len(s.split()), len(t.split())) > max_words
    if split == "test":
        return found
    if clean.max_length_ratio:
        ratio = clean.max_length_ratio
        found["length_ratio"] = lambda s, t: (
            max(len(s), len(t)) > ratio * max(1, min(len(s), len(t)))
        )
    if clean.drop_identical:
        found["identical"] = lambda s, t: s == t
    if clean.drop_control_chars:
        found["control_chars"] = lambda s, t: bool(CONTROL.search(s) or CONTROL.search(t))
    if clean.language_id:
        found["language"] = language_rule(languages)
    if clean.drop_duplicates:
        seen: set[int] = set()
        found["duplicate"] = lambda s, t: (h := hash((s, t))) in seen or seen.add(h)
        found["in_other_split"] = lambda s, t: hash((s, t)) in elsewhere
    return found


def py3langid_identifier(needed_by: str, extra: str):
    """A py3langid identifier of its 97 languages (~0.3 s to load; its own: set_languages
    changes it), or a one-line error naming `needed_by` and the `extra` that installs it. The
    language rule's, and the service's detector's (seq2seq/documents/detection.py)."""
    try:
        from py3langid.langid import MODEL_FILE, LanguageIdentifier
    except ImportError:
        raise UserError(f"{needed_by} needs py3langid: pip install 'seq2seq[{extra}]'") from None
    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def primary(code: str) -> str:
    """en-US -> en: the subtag the language identifiers know (ISO 639-1)."""
    return code.split("-")[0].lower()


def language_rule(languages: tuple[str, str]) -> Rule:
    """Drop a pair whose source or target py3langid identifies as another language than the
    model's (BCP 47 codes; py3langid's are ISO 639-1, the primary subtag)."""
    identifier = py3langid_identifier("clean.language_id", "langid")
    src, tgt = (primary(code) for code in languages)
    for code in (src, tgt):
        if code not in identifier.labels:
            raise UserError(f"clean.language_id: py3langid does not know the language {code!r}")

    def wrong(s: str, t: str) -> bool:
        return identifier.classify(s)[0] != src or identifier.classify(t)[0] != tgt

    return wrong


def clean_corpus(
    config: Config, splits: dict[str, Iterable[Pair] | Mixed], languages: tuple[str, str]
) -> dict[str, Tally]:
    """Write each split the corpus gives to data/<corpus.name>/, cleaned (test, then valid,
    then train), then split off the ones it does not give; returns their tallies."""
    tallies: dict[str, Tally] = {}
    written: set[int] = set()  # the hashes of the test and validation pairs
    for split in reversed(SPLITS):
        if split in splits:
            tally = tallies[split] = Tally()
            given, split_rules = splits[split], rules(config, split, written, languages)
            if isinstance(given, Mixed):
                kept = clean_mixed(given, split_rules, tally)
            else:
                kept = clean(given, split_rules, tally, split)
            if split != "train":
                kept = noting(kept, written)
            write_pairs(config.data_dir, split, kept)
    missing = [split for split in SPLITS if split not in splits]
    if missing:
        split_off(config, missing, tallies)
    return {split: tallies[split] for split in SPLITS}


def noting(pairs: Iterable[Pair], hashes: set[int]) -> Iterator[Pair]:
    for pair in pairs:
        hashes.add(hash(pair))
        yield pair


def split_off(config: Config, missing: list[str], tallies: dict[str, Tally]) -> None:
    """Take the `missing` splits (valid, test or both) out of the written training split."""
    corpus, train_files = config.corpus, text_files(config.data_dir, "train")
    sizes = {split: getattr(corpus, f"{split}_size") for split in missing}
    chosen = sample(iter_parallel(*train_files), sum(sizes.values()), corpus.seed)
    if len(chosen) < sum(sizes.values()):
        wanted = " + ".join(f"corpus.{split}_size" for split in missing)
        raise CorpusError(
            f"train has {len(chosen):,} distinct pairs after cleaning, too few to split off "
            f"{wanted} ({sum(sizes.values()):,}) and train on the rest"
        )
    held = {hash(pair) for pair in chosen}
    rest = Tally()
    held_out = {"held_out": lambda s, t: hash((s, t)) in held}
    write_pairs(
        config.data_dir, "train", clean(iter_parallel(*train_files), held_out, rest, "train")
    )
    tallies["train"].removed.update(rest.removed)
    tallies["train"].kept = rest.kept
    for split, size in sizes.items():
        part, chosen = chosen[:size], chosen[size:]
        tallies[split] = Tally(read=size, kept=write_pairs(config.data_dir, split, part))


def sample(pairs: Iterable[Pair], size: int, seed: int) -> list[Pair]:
    """The `size` distinct pairs whose hash keyed by `seed` is smallest, in that order: a
    uniform random sample that depends on the seed and the set of pairs only."""
    heap: list[tuple[int, Pair]] = []  # (-hash, pair): the largest hash kept is on top
    kept: set[int] = set()
    for pair in pairs:
        value = keyed_hash("\n".join(pair), seed)
        if value in kept:
            continue
        if len(heap) < size:
            heapq.heappush(heap, (-value, pair))
        elif value < -heap[0][0]:
            kept.discard(-heapq.heappushpop(heap, (-value, pair))[0])
        else:
            continue
        kept.add(value)
    return [pair for _, pair in sorted(heap, reverse=True)]


def write_report(config: Config, tallies: dict[str, Tally]) -> None:
    """Print each split's counts (a mixed split's sources' first) and write them to
    data/<corpus.name>/report.json."""
    for split, tally in tallies.items():
        for label, counts in tally.sources.items():
            print(counts.line(label))
        print(tally.line(split))
    report = {split: asdict(tally) for split, tally in tallies.items()}
    write_json(config.data_dir / REPORT, report)


def add_to_report(data_dir: Path, key: str, counts: dict[str, dict]) -> None:
    """Add each split's `counts` under `key` to data/<corpus.name>/report.json: what is
    counted after the text is written (the pairs too long for the model, tokens/dataset.py)."""
    report = json.loads((data_dir / REPORT).read_text("utf-8"))
    for split, split_counts in counts.items():
        report[split][key] = split_counts
    write_json(data_dir / REPORT, report)
