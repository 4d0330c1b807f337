"""Vocabularies: one sentencepiece model for the source language and one for the target.

Both are trained on the training split only (or, with vocab.joint, one model on both sides,
saved under both names). Digits are always split into single pieces, so
a number never seen in training still has a spelling. Every model has the special ids of
seq2seq/tokens/special.py (PAD 0, UNK 1, BOS 2, EOS 3).

Source text can be normalised first (vocab.lowercase, vocab.hyphens_as_spaces): the source
Vocab applies it in `encode`, so training and translation see the same text. Programs that
load the sentencepiece model alone (Argos Translate, transformers) get a copy with that
normalisation compiled into the model's own rules: self_normalizing_model.

The models are saved beside the corpus (data/<name>/src.model, tgt.model) with a stamp file,
vocab.json, that records a hash of the training files and the vocabulary settings: `make data`
retrains them only when one of those changed. A fine-tuning run (train.init_from) keeps the
vocabularies of the checkpoint it starts from: `make data` copies them there instead
(copy_vocabs, the stamp recording their hashes) and reports how well they cover the new
text (coverage), since they cannot grow. Checkpoints carry the models' bytes, so a
trained model translates without the data directory. A model imported from a BPE package
carries its BPE codes and tokens instead (bpe.py's BPEVocab): read_vocab reads either.
"""

import hashlib
import io
import itertools
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict
from functools import partial

import sentencepiece as spm

from seq2seq.options import Config, VocabConfig
from seq2seq.support.files import atomic_write, file_hash, write_json
from seq2seq.support.paths import SIDES, VOCAB_STAMP, text_files, vocab_files
from seq2seq.text.parallel import CorpusError, iter_lines
from seq2seq.text.placeholders import MASKS
from seq2seq.tokens.bpe import MARK, BPEVocab
from seq2seq.tokens.special import BOS, EOS, PAD, UNK

IN_THREADS_FROM = 256  # sentences: from this many, sentencepiece's threads pay (Vocab.encode)


def normalize_source(text: str, vocab_config: VocabConfig) -> str:
    if vocab_config.hyphens_as_spaces:
        text = text.replace("-", " ")
    return text.lower() if vocab_config.lowercase else text


def read_vocab(model_bytes: bytes, normalization: VocabConfig | None = None):
    """A vocabulary from its bytes: a sentencepiece model (Vocab), or an imported BPE
    package's codes and tokens (bpe.py's BPEVocab, which has Vocab's members)."""
    if not model_bytes.startswith(MARK):
        return Vocab(model_bytes, normalization)
    normalize = partial(normalize_source, vocab_config=normalization) if normalization else None
    return BPEVocab.from_bytes(model_bytes, normalize)


class Vocab:
    """A sentencepiece model: text <-> piece ids, with the special ids above. A source
    vocabulary also normalises the text it encodes (`normalization`, see normalize_source)."""

    def __init__(
        self, model_bytes: bytes, normalization: VocabConfig | None = None, special_ids=True
    ):
        """`special_ids`: ours (special.py), asserted; False for another's model (an Argos
        package's), which has its own."""
        self.model_bytes = model_bytes
        self.normalization = normalization
        self.sp = spm.SentencePieceProcessor(model_proto=model_bytes)
        self.unk = self.sp.unk_id()
        ids = (self.sp.pad_id(), self.unk, self.sp.bos_id(), self.sp.eos_id())
        assert not special_ids or ids == (PAD, UNK, BOS, EOS), (
            "sentencepiece model trained with other special ids"
        )

    def __len__(self) -> int:
        return self.sp.get_piece_size()

    def normalize(self, sentence: str) -> str:
        return normalize_source(sentence, self.normalization) if self.normalization else sentence

    # sentencepiece's calls on a list start a pool of threads each time, ~70 us, while one
    # sentence takes ~3 us: a few sentences (a request to the service) go one at a time.
    def encode(self, sentences: list[str]) -> list[list[int]]:
        normalized = [self.normalize(s) for s in sentences]
        if len(normalized) >= IN_THREADS_FROM:
            return self.sp.encode(normalized)
        return [self.sp.encode(s) for s in normalized]

    def detokenize(self, ids: list[list[int]]) -> list[str]:
        """Id lists -> the texts they stand for (sentencepiece's decode)."""
        if len(ids) >= IN_THREADS_FROM:
            return self.sp.decode(ids)
        return [self.sp.decode(one) for one in ids]

    def pieces(self, ids: list[int]) -> list[str]:
        """Ids -> the pieces they stand for ("▁three", "▁is" ...)."""
        return [self.sp.id_to_piece(i) for i in ids]

    def all_pieces(self) -> list[str]:
        """Every piece in id order: <pad> <unk> <s> </s> first (seq2seq/tokens/special.py)."""
        return self.pieces(list(range(len(self))))

    def unknown(self, sentence: str) -> list[str]:
        """The words of `sentence` (normalised) that this vocabulary can only encode with UNK."""
        return [w for w in self.normalize(sentence).split() if self.is_unknown(w)]

    def is_unknown(self, word: str) -> bool:
        """Whether this vocabulary can only encode `word` (normalised) with UNK."""
        return self.unk in self.sp.encode(word)


def self_normalizing_model(vocab: Vocab) -> bytes:
    """The vocabulary's sentencepiece model with our normalisation (normalize_source) compiled
    into its own normalisation rules, so that sentencepiece alone encodes a sentence exactly as
    `vocab.encode` does.

    Sentencepiece normalises with a table of rules (string -> replacement, longest match
    first; by default NFKC, "nmt_nfkc"). The new table maps every code point, and every
    sequence the old table had a rule for, to what ours-then-the-old-table makes of it: "A" ->
    "a", "-" -> " ", "É" (as E + U+0301) -> "é". The one difference left: Python's lower()
    writes a capital sigma at the end of a word as ς, a rule per character cannot see the end
    of a word, and it writes σ. Needs protobuf (the model file format).
    """
    rules = vocab.normalization
    if not rules or not (rules.lowercase or rules.hyphens_as_spaces):
        return vocab.model_bytes
    from sentencepiece import sentencepiece_model_pb2  # needs protobuf

    rules_only = dict(
        add_dummy_prefix=False, escape_whitespaces=False, remove_extra_whitespaces=False
    )
    old = spm.SentencePieceNormalizer(model_proto=vocab.model_bytes, **rules_only)
    code_points = (chr(c) for c in range(1, 0x110000) if not 0xD800 <= c < 0xE000)  # no surrogates
    keys = sorted({*code_points, *(key for key, _ in old.Decompile())})
    values = old.Normalize([vocab.normalize(key) for key in keys])
    rules = [(key, value) for key, value in zip(keys, values, strict=True) if value != key]
    spm.set_min_log_level(2)  # warnings and errors only: not the table builder's progress
    compiled = sentencepiece_model_pb2.NormalizerSpec.FromString(
        spm.SentencePieceNormalizer(norm_map=rules).serialized_normalizer_spec()
    )
    model = sentencepiece_model_pb2.ModelProto.FromString(vocab.model_bytes)
    model.normalizer_spec.precompiled_charsmap = compiled.precompiled_charsmap
    model.normalizer_spec.name += "+seq2seq"  # a name for people: the table is what counts
    return model.SerializeToString()


def train_vocab(sentences: Iterable[str], size: int, vocab_config: VocabConfig) -> Vocab:
    """A sentencepiece model of at most `size` pieces, learnt from a random sample of at most
    vocab_config.sample_size of the sentences (read one at a time: any number of them)."""
    model = io.BytesIO()
    spm.set_random_generator_seed(0)  # the same sample, and so the same model, every time
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences),
        input_sentence_size=vocab_config.sample_size,
        shuffle_input_sentence=True,
        model_writer=model,
        model_type=vocab_config.model_type,
        vocab_size=size,
        hard_vocab_limit=False,  # a small corpus gets fewer pieces instead of an error
        character_coverage=vocab_config.character_coverage,
        split_digits=True,
        pad_id=PAD,
        unk_id=UNK,
        bos_id=BOS,
        eos_id=EOS,
        minloglevel=2,  # warnings and errors only
    )
    return Vocab(model.getvalue())


def build_vocabs(config: Config) -> bool:
    """Train data/<name>/{src,tgt}.model unless they are up to date; True if (re)trained."""
    data_dir = config.data_dir
    train_files = text_files(data_dir, "train")
    stamp = {
        "settings": asdict(config.vocab),
        "train_sha256": [file_hash(path) for path in train_files],
    }
    if up_to_date(config, stamp):
        return False
    src_path, tgt_path = train_files
    src_lines = (normalize_source(line, config.vocab) for line in iter_lines(src_path))
    tgt_lines = iter_lines(tgt_path)
    if config.vocab.joint:  # one model for both sides, saved under both names
        both = itertools.chain(src_lines, tgt_lines)
        joint = train_vocab(both, config.vocab.src_size, config.vocab)
        vocabs = {"src": joint, "tgt": joint}
    else:
        vocabs = {
            "src": train_vocab(src_lines, config.vocab.src_size, config.vocab),
            "tgt": train_vocab(tgt_lines, config.vocab.tgt_size, config.vocab),
        }
    save_vocabs(config, [vocab.model_bytes for vocab in vocabs.values()], stamp)
    return True


def copy_vocabs(config: Config, models: tuple[bytes, bytes]) -> bool:
    """Write `models`, the source and target sentencepiece models of a checkpoint (fine-tuning:
    train.init_from), as data/<name>/{src,tgt}.model instead of training new ones, unless they
    are there already; True if written."""
    stamp = {
        "settings": asdict(config.vocab),
        "copied_sha256": [hashlib.sha256(model).hexdigest() for model in models],
    }
    if up_to_date(config, stamp):
        return False
    save_vocabs(config, list(models), stamp)
    return True


def up_to_date(config: Config, stamp: dict) -> bool:
    """Whether data/<name>/ holds both vocabularies, made as `stamp` says."""
    stamp_path = config.data_dir / VOCAB_STAMP
    models_exist = all(path.exists() for path in vocab_files(config.data_dir))
    return (
        models_exist and stamp_path.exists() and json.loads(stamp_path.read_text("utf-8")) == stamp
    )


def save_vocabs(config: Config, models: list[bytes], stamp: dict) -> None:
    """The source and target models to data/<name>/, then the stamp saying how they were made."""
    for path, model in zip(vocab_files(config.data_dir), models, strict=True):
        with atomic_write(path, "wb") as file:
            file.write(model)
    write_json(config.data_dir / VOCAB_STAMP, stamp)


def coverage(vocab: Vocab, sentences: Iterable[str]) -> tuple[int, Counter]:
    """How well a vocabulary covers a text: the number of words in `sentences` (normalised as
    `vocab.encode` does), and a count of those it can only encode with UNK."""
    words = Counter(word for sentence in sentences for word in vocab.normalize(sentence).split())
    unknown = Counter({word: n for word, n in words.items() if vocab.is_unknown(word)})
    return words.total(), unknown


def load_vocabs(config: Config) -> tuple[Vocab, Vocab]:
    """The source and target vocabularies saved by `make data`, if built with config.vocab."""
    stamp_path = config.data_dir / VOCAB_STAMP
    if stamp_path.exists():
        built = json.loads(stamp_path.read_text("utf-8"))["settings"]
        wanted = asdict(config.vocab)
        changed = [key for key in wanted if built.get(key) != wanted[key]]
        if changed:
            key = changed[0]
            raise CorpusError(
                f"{stamp_path}: the vocabularies were built with vocab.{key} = "
                f"{built.get(key)!r}, the config says {wanted[key]!r}: "
                f"run {config.make_command('data')}"
            )
    vocabs = []
    for side, path in zip(SIDES, vocab_files(config.data_dir), strict=True):
        if not path.exists():
            raise CorpusError(f"no vocabulary {path}: run {config.make_command('data')} first")
        vocabs.append(read_vocab(path.read_bytes(), config.vocab if side == "src" else None))
    return vocabs[0], vocabs[1]


def mask_for(src_vocab: Vocab, tgt_vocab: Vocab) -> str | None:
    """The first of MASKS that both vocabularies spell without UNK (so the model can read and
    write it), or None: the runs are lifted out instead."""
    for mask in MASKS:
        spelled = " ".join(mask.format(n) for n in range(10))
        if not (src_vocab.unknown(spelled) or tgt_vocab.unknown(spelled)):
            return mask
    return None
