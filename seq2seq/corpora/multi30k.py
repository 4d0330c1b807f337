"""Multi30k (task 1): download the raw German-English files and check them against SHA-256 sums.

Multi30k (Elliott et al., 2016) is 31,014 image descriptions in English with German
translations: train (29,000), val (1,014), test_2016_flickr and test_2017_flickr (1,000 each).
`download` fetches the gzip files of one language pair from `corpus.base_url` (the dataset's
public repository by default; a mirror, or a local folder as a file:// URL, works the same)
through seq2seq/corpora/download.py, which checks each against the SHA-256 sum below and caches
it in data/<corpus.name>/raw/. A file whose sum does not match is an error, and nothing of it
is kept.

The sums are those of the files in the dataset's data/task1/raw folder.
"""

from collections.abc import Iterator
from pathlib import Path

from seq2seq.corpora.download import Downloads, url_problems
from seq2seq.options import Config, CorpusConfig
from seq2seq.support.paths import RAW
from seq2seq.text.parallel import iter_parallel

SHA256 = {
    "train.de.gz": "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6",
    "train.en.gz": "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f",
    "val.de.gz": "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a",
    "val.en.gz": "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28",
    "test_2016_flickr.de.gz": "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8",
    "test_2016_flickr.en.gz": "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9",
    "test_2017_flickr.de.gz": "a2c89666db00c495cd8513b9d708d5a3acc205d7de312ef2bf5fb7ebc1540aee",
    "test_2017_flickr.en.gz": "76a444ee25172e72695cddb13ae4a3bda59430617be88e0bb46b60504f054074",
}

# Our split names -> the dataset's file stems.
SPLIT_FILES = {"train": "train", "valid": "val"}


def download(corpus: CorpusConfig, cache_dir: Path) -> dict[str, tuple[Path, Path]]:
    """{"train" | "valid" | "test": (source file, target file)}, fetched and verified."""
    downloads = Downloads(cache_dir)
    base_url = corpus.base_url.rstrip("/")

    def fetch(name: str) -> Path:
        return downloads.fetch(f"{base_url}/{name}", name, sha256=SHA256[name])

    stems = {**SPLIT_FILES, "test": corpus.test_set}
    return {
        split: (fetch(f"{stem}.{corpus.src_lang}.gz"), fetch(f"{stem}.{corpus.tgt_lang}.gz"))
        for split, stem in stems.items()
    }


def splits(config: Config) -> dict[str, Iterator[tuple[str, str]]]:
    """Each split's pairs, from the files downloaded to data/<corpus.name>/raw/."""
    files = download(config.corpus, config.data_dir / RAW)
    return {split: iter_parallel(src, tgt) for split, (src, tgt) in files.items()}


# corpus.src_lang and tgt_lang's choices, as LibreTranslate's API and Argos Translate name them
LANGUAGE_NAMES = {"de": "German", "en": "English"}


def problems(corpus: CorpusConfig) -> Iterator[str]:
    for side in ("src_lang", "tgt_lang"):
        if getattr(corpus, side) not in LANGUAGE_NAMES:
            yield (
                f"'corpus.{side}' is {getattr(corpus, side)!r}; Multi30k has {list(LANGUAGE_NAMES)}"
            )
    if corpus.src_lang == corpus.tgt_lang:
        yield "'corpus.src_lang' and 'tgt_lang' must differ"
    yield from url_problems("corpus.base_url", corpus.base_url)
