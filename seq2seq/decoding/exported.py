"""A checkpoint decoded by CTranslate2 from its export, kept beside it, and our own code for
what CTranslate2 cannot give (engine_choice.py picks it by default where CTranslate2 runs).

    Exported(checkpoint, CTranslate2 engine, folder)   a TorchEngine but for its translations
      translations (greedy, beam search, n-best)  -> CTranslate2 on the export
      attention pictures                           -> our torch engine
    export_beside(checkpoint, path)   runs/<experiment>/best.pt -> runs/<experiment>/best.ct2/,
                                      made if missing or made from another checkpoint

The export is CTranslate2's copy of our weights (exports/ctranslate2.py), and beam.py's
search is CTranslate2's: a translation, greedy or beam search, is the same tokens in both
(tested), several times sooner on a CPU (benchmarks/results/bench.md, serve_latency.md): in
float32 every output stays what `--engine torch` gives. decode.compute_type auto may have it
decoded in int8 instead, where that costs at most decode.compute_type_bleu_loss BLEU on the
validation split (compute_types.py: measured once, kept in the export's folder).

The export is known by the checkpoint's checksum, which the export keeps in checkpoint.sha256:
a new best.pt (training went on, another run) gets a new export, made in a folder beside it
and renamed into place, so that a process reading the old one never sees half a model.
"""

from dataclasses import dataclass
from pathlib import Path

from seq2seq.checkpoint import Checkpoint
from seq2seq.config import DecodeConfig
from seq2seq.decoding.ctranslate2_engine import CTranslate2Engine
from seq2seq.decoding.engines import TorchEngine, Translations
from seq2seq.exports.ctranslate2 import export_ctranslate2
from seq2seq.support.paths import EXPORT_SOURCE


@dataclass
class Exported(TorchEngine):
    """A checkpoint's translations decoded by CTranslate2 from its export; the rest (its
    config, vocabularies, attention pictures) by our own code, as TorchEngine's."""

    fast: CTranslate2Engine
    folder: Path  # the export, beside the checkpoint
    unused = CTranslate2Engine.unused  # of the translations' settings (the pictures are torch's)

    @property
    def replicas(self) -> int:
        return self.fast.replicas

    def facts(self) -> dict:
        engine = "ctranslate2 (translations), torch (attention)"
        fast = self.fast.facts()
        return {
            **super().facts(),
            "engine": engine,
            "compute_type": fast["compute_type"],
            "threads": fast["threads"],
        }

    def translate(self, sentences: list[str], decoding: DecodeConfig) -> Translations:
        return self.fast.translate(sentences, decoding)

    def translate_nbest(self, sentences: list[str], decoding: DecodeConfig) -> Translations:
        return self.fast.translate_nbest(sentences, decoding)


def export_folder(checkpoint: Path) -> Path:
    """Where the export of a checkpoint is kept: runs/x/best.pt -> runs/x/best.ct2/."""
    return checkpoint.with_suffix(".ct2")


def export_beside(checkpoint: Checkpoint, path: Path) -> Path:
    """The folder of the CTranslate2 export of `checkpoint` (read from `path`), made now if it
    is missing or was made from another checkpoint."""
    folder = export_folder(path)
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
