"""CTranslate2 as an engine: a model exported by seq2seq/exports/ctranslate2.py (our weights in
its format), decoded by CTranslate2's C++ (an optional extra), with the members of every
engine (engines.py).

    CTranslate2Engine.load(folder, device, compute_type, why, split, catalogs)
        compute_types.py: which type; split: how many batches at once, on how many threads
        each (threads.py chooses a service's); catalogs: the vocabulary map made of them
        (vocab_map.py)
      -> translate(sentences, decoding): each sentence encoded once (engines.encoded), the
         non-empty ones searched in one call (greedy, or beam search: beam_searched), detokenized

CTranslate2's search is the reference ours follows step for step (seq2seq/decoding/beam.py),
so its greedy and beam outputs are ours (tested), up to the floating-point rounding of two
implementations; CTranslate2 takes one length limit a call, which `search` makes each
sentence's own (a beam search's again for the few that may reach it).
"""

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import ClassVar, NamedTuple

import torch

from seq2seq.config import Config, DecodeConfig, config_from_dict
from seq2seq.decoding.attention_maps import Attention
from seq2seq.decoding.beam import per_piece
from seq2seq.decoding.confidence import Calibration
from seq2seq.decoding.engines import Translations, encoded, model_languages, published
from seq2seq.decoding.greedy import length_limits
from seq2seq.exports.ctranslate2 import import_ctranslate2
from seq2seq.exports.vocab_map import VMAP, catalog_map
from seq2seq.support.errors import UserError
from seq2seq.support.paths import EXPORT_CONFIG, vocab_files
from seq2seq.tokens.special import MIN_OUTPUT_PIECES
from seq2seq.tokens.vocab import Vocab, read_vocab


def ctranslate2_device(name: str, cuda_devices: int) -> tuple[str, int]:
    """Our device names -> CTranslate2's (device, device_index), given how many CUDA devices
    CTranslate2 sees: 'auto' is the first GPU if there is one, 'cuda:1' is ("cuda", 1)."""
    if name == "auto":
        return ("cuda", 0) if cuda_devices else ("cpu", 0)
    try:
        device = torch.device(name)
    except RuntimeError:
        device = None
    if device is None or device.type not in ("cpu", "cuda"):
        raise UserError(f"device {name!r}: CTranslate2 runs on auto, cpu, cuda or cuda:N")
    index = device.index or 0
    if device.type == "cuda" and index >= cuda_devices:
        raise UserError(f"device {name!r} requested but CTranslate2 sees {cuda_devices} GPU(s)")
    return device.type, index


def texts_of(results: list, detokenize, ranked: bool) -> list:
    """CTranslate2's results (None: an empty source) as texts: the best of each, or (`ranked`)
    each one's hypotheses as (score, text) pairs, best first."""
    if not ranked:
        return [detokenize(r.hypotheses[0]) if r else "" for r in results]
    return [
        list(zip(r.scores, map(detokenize, r.hypotheses), strict=True)) if r else [(0.0, "")]
        for r in results
    ]


def signals_of(results: list, alpha: float) -> list[float]:
    """Each best hypothesis's mean log-probability a piece (beam.per_piece), from
    CTranslate2's score normalised at `alpha` (decode.length_penalty); 0 for an empty source."""
    return [per_piece(r.scores[0], len(r.hypotheses[0]), alpha) if r else 0.0 for r in results]


def search_options(decoding: DecodeConfig, nbest: int, limit: int) -> dict:
    """translate_batch's keyword arguments for a search as beam.py's at `decoding`'s settings:
    `nbest` hypotheses each, up to `limit` output pieces (the engine's, and CTranslate2
    alone's: benchmarks/common.py's ctranslate2_alone)."""
    return {
        "max_batch_size": decoding.batch_size,
        "beam_size": decoding.beam_size,
        "num_hypotheses": nbest,
        "length_penalty": decoding.length_penalty,
        "no_repeat_ngram_size": decoding.no_repeat_ngram,  # the rule of repeats.py
        "max_decoding_length": limit,
        "min_decoding_length": MIN_OUTPUT_PIECES,
        "suppress_sequences": [["<pad>"], ["<s>"]],  # never outputs, as in greedy.py
        "return_scores": True,  # the confidence's signal: nearly free
        "use_vmap": decoding.vmap,  # the export's vmap.txt, or its catalogs' (vocab_map.py)
    }


class Split(NamedTuple):
    """How an engine's CTranslate2 decodes: `decoders` batches at once (replicas of the model,
    CTranslate2's inter_threads), `threads` threads each (intra_threads), and why."""

    decoders: int = 1
    threads: int = 1
    why: str = ""

    def fact(self) -> str:
        """What the engine's facts say of it."""
        batches = f"{self.decoders} batches at once" if self.decoders > 1 else "a batch at a time"
        said = f"{batches}, {self.threads} thread{'s' * (self.threads > 1)} each"
        return f"{said} ({self.why})" if self.why else said


ONE_BATCH = Split()  # a batch at a time, on one thread: what a command decodes with


def load_translator(
    directory: Path, device: str, compute_type: str, split: Split = ONE_BATCH,
    vmap: str | None = None,
):  # fmt: skip
    """CTranslate2's Translator of the model in `directory`, as `split` says: by default one
    batch at a time on one thread (on models this small, more threads on one batch only wait
    on each other, and on torch's own thread pool in the same process: 2 threads decoded 15x
    slower here); validation decodes as many batches at once as torch has threads, idle then,
    and a service as measured (threads.py). Creating
    it sets the OpenMP thread count of this thread, which torch shares, to 1: torch's count is
    put back after it. `vmap`: a vocabulary map's text (vocab_map.py's catalog_map), given
    with the model's files from memory in place of the folder's vmap.txt."""
    ct2 = import_ctranslate2()
    where, index = ctranslate2_device(device, ct2.get_cuda_device_count())
    torch_threads = torch.get_num_threads()
    files = None  # CTranslate2 reads the folder
    if vmap:
        files = {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}
        files[VMAP] = vmap.encode()
    try:
        return ct2.Translator(
            str(directory), where, device_index=index, compute_type=compute_type,
            intra_threads=split.threads, inter_threads=split.decoders, files=files,
        )  # fmt: skip
    except (RuntimeError, ValueError) as error:
        raise UserError(f"{directory}: CTranslate2 cannot load it ({error})") from None
    finally:
        torch.set_num_threads(torch_threads)


def export_map(catalogs: Path, config: Config, vocabs: tuple[Vocab, Vocab], directory: Path):
    """The vocabulary map of the export in `directory` made of the gettext catalogs under
    `catalogs` (vocab_map.py's catalog_map): its pair's, in its pieces."""
    pair = tuple(language.code for language in model_languages(config, None))
    return catalog_map(catalogs, pair, tuple(map(vocab_tokens, vocabs)), directory, directory)


def vocab_tokens(vocab: Vocab):
    """A vocabulary map's tokenizer of one side (vocab_map.py's Tokenize): texts -> each one's
    pieces in `vocab`, as the engine gives them CTranslate2."""
    return lambda texts: list(map(vocab.pieces, vocab.encode(texts)))


def compute_type_fact(translator, why: str) -> str:
    """What a CTranslate2 engine's facts say of its compute type: "int8 (why it is)"."""
    return f"{translator.compute_type} ({why})" if why else translator.compute_type


class Found(NamedTuple):
    """CTranslate2's answer for one sentence: its hypotheses (pieces), best first."""

    hypotheses: list[list[str]]
    scores: list[float]  # each hypothesis's (only when asked for: nbest)


@dataclass
class CTranslate2Engine:
    """A model exported by seq2seq/exports/ctranslate2.py, decoded by CTranslate2."""

    config: Config
    src_vocab: Vocab
    tgt_vocab: Vocab
    translator: object  # ctranslate2.Translator
    why: str = ""  # how its compute type was chosen (compute_types.py)
    calibration: Calibration | None = None  # the export's (confidence.py)
    split: Split = ONE_BATCH  # batches decoded at once, threads each (load_translator)
    shows_attention = False
    unused: ClassVar[dict[str, str]] = {
        "cache": "CTranslate2 decodes it, keeping keys and values always (--engine torch "
        "decodes a checkpoint with it)",
        "precision": "CTranslate2 decodes it, in decode.compute_type (--engine torch "
        "decodes a checkpoint with it)",
    }

    @classmethod
    def load(
        cls, directory: str | Path, device: str = "auto", compute_type: str = "default",
        why: str = "", split: Split = ONE_BATCH, catalogs: Path | None = None,
    ):  # fmt: skip
        """`device`: auto, cpu, cuda or cuda:N; `compute_type`: float32, int8, ... (default:
        as saved, float32), chosen as `why` says; `split`: batches decoded at once and the
        threads of each (load_translator); `catalogs`: a folder of gettext catalogs its
        vocabulary map is made of, in place of its own (vocab_map.py's catalog_map)."""
        import_ctranslate2()  # its one-line error first, if it is missing
        directory = Path(directory)
        if not (directory / EXPORT_CONFIG).exists():
            raise UserError(
                f"{directory} is not an exported model (no {EXPORT_CONFIG}): "
                "run `python -m seq2seq.export ctranslate2 --checkpoint ... OUT_DIR` first"
            )
        saved = directory / EXPORT_CONFIG
        config = config_from_dict(json.loads(saved.read_text()), source=str(saved))
        src_path, tgt_path = vocab_files(directory)
        src_vocab = read_vocab(src_path.read_bytes(), config.vocab)
        tgt_vocab = read_vocab(tgt_path.read_bytes())
        vmap = catalogs and export_map(catalogs, config, (src_vocab, tgt_vocab), directory)
        translator = load_translator(directory, device, compute_type, split, vmap)
        calibration = Calibration.load(directory)
        return cls(config, src_vocab, tgt_vocab, translator, why, calibration, split)

    @property
    def longest_source(self) -> int:
        """Source pieces the model takes (ModelConfig.longest_source)."""
        return self.config.model.longest_source

    @property
    def replicas(self) -> int:
        """Batches it decodes at once: a service's decoder threads (batcher.py)."""
        return self.split.decoders

    def facts(self) -> dict:
        return {"engine": "ctranslate2", "checkpoint": {}, "device": self.translator.device,
                "compute_type": compute_type_fact(self.translator, self.why),
                "threads": self.split.fact(), "config": published(self.config)}  # fmt: skip

    def search(
        self, sources: list[list[int]], decoding: DecodeConfig, nbest: int
    ) -> list[Found | None]:
        """CTranslate2's results for the non-empty sources (None for the empty ones), each
        searched up to its own length limit (greedy.py's length_limits), as ours are.

        CTranslate2 takes one length limit per call. A greedy output is the same tokens
        whatever the limit, up to it: one call at the longest limit, each output cut to its
        own. A beam search: beam_searched."""
        tokens, limits = self.pieces_and_limits(sources, decoding)
        if decoding.beam_size == 1:
            results = self.translate_batch(tokens, decoding, nbest, max(limits, default=1))
            found = [
                Found([h[:limit] for h in r.hypotheses], r.scores)
                for r, limit in zip(results, limits, strict=True)
            ]
        else:
            found = self.beam_searched(tokens, limits, decoding, nbest)
        each = iter(found)
        return [next(each) if ids else None for ids in sources]

    def beam_searched(
        self, tokens: list[list[str]], limits: list[int], decoding: DecodeConfig, nbest: int
    ) -> list[Found]:
        """Each of `tokens` beam-searched as if alone up to its own limit, in one call at the
        longest where that is the same.

        A sentence's search reads its limit at its last step alone (beam.py). With a length
        penalty, a search ends once K hypotheses have finished (K: the beams), so of the K it
        returns, one finished at the last step it took: if none is as long as its own limit
        less one, it ended before that limit's last step, as it would have with it. The
        others (outputs that run long: few) are searched again at their own limits. Without
        a length penalty a search ends by another rule, which asking for K changes: one call
        a limit."""
        if decoding.length_penalty == 0:
            return self.by_limit(tokens, limits, decoding, nbest)
        k = decoding.beam_size
        results = self.translate_batch(tokens, decoding, k, max(limits, default=1))
        found = [Found(r.hypotheses[:nbest], r.scores[:nbest]) for r in results]
        again = [
            i for i, (r, limit) in enumerate(zip(results, limits, strict=True))
            if max(map(len, r.hypotheses)) >= limit - 1
        ]  # fmt: skip
        redone = self.by_limit([tokens[i] for i in again], [limits[i] for i in again],
                               decoding, nbest)  # fmt: skip
        for i, one in zip(again, redone, strict=True):
            found[i] = one
        return found

    def by_limit(
        self, tokens: list[list[str]], limits: list[int], decoding: DecodeConfig, nbest: int
    ) -> list[Found]:
        """Each of `tokens` searched up to its own limit: one call a limit."""
        found = [None] * len(tokens)
        for limit in sorted(set(limits)):
            group = [i for i, own in enumerate(limits) if own == limit]
            results = self.translate_batch([tokens[i] for i in group], decoding, nbest, limit)
            for i, r in zip(group, results, strict=True):
                found[i] = Found(r.hypotheses, r.scores)
        return found

    def pieces_and_limits(
        self, sources: list[list[int]], decoding: DecodeConfig
    ) -> tuple[list[list[str]], list[int]]:
        """The non-empty sources as CTranslate2 takes them (their pieces, and </s> where the
        model was trained with it) and each one's length limit (greedy.py's length_limits)."""
        eos = ["</s>"] if self.config.model.source_eos else []
        tokens = [self.src_vocab.pieces(ids) + eos for ids in sources if ids]
        longest = self.config.model.longest_output
        limits = length_limits(torch.tensor([len(t) for t in tokens]), decoding, longest).tolist()
        return tokens, limits

    def translate_batch(self, tokens: list[list[str]], decoding: DecodeConfig, nbest: int, limit):
        """CTranslate2's search of `tokens`, each up to `limit` output pieces, as beam.py's."""
        return self.translator.translate_batch(tokens, **search_options(decoding, nbest, limit))

    @cached_property
    def target_ids(self) -> dict[str, int]:
        """Each target piece's id: CTranslate2 answers in pieces (its vocabulary's, ours)."""
        return {piece: i for i, piece in enumerate(self.tgt_vocab.all_pieces())}

    def detokenize(self, hypothesis: list[str]) -> str:
        ids = [self.target_ids[piece] for piece in hypothesis]
        return self.tgt_vocab.detokenize([ids])[0]

    def translate(self, sentences: list[str], decoding: DecodeConfig) -> Translations:
        sources, warnings = encoded(self, sentences)
        results = self.search(sources, decoding, 1)
        texts = texts_of(results, self.detokenize, ranked=False)
        return Translations(texts, warnings, signals_of(results, decoding.length_penalty))

    def translate_nbest(self, sentences: list[str], decoding: DecodeConfig) -> Translations:
        sources, warnings = encoded(self, sentences)
        results = self.search(sources, decoding, decoding.beam_size)
        texts = texts_of(results, self.detokenize, ranked=True)
        return Translations(texts, warnings, signals_of(results, decoding.length_penalty))

    def attention(self, sentence: str) -> Attention:
        raise UserError("attention maps need the torch engine (--engine torch)")
