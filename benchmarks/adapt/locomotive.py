"""A real Argos Translate package for English -> German, made as LibreTranslate's Locomotive
makes them (its train.py and onmt_tools.py), with its settings scaled to 2 CPU cores: the
package that issue 53's import (part 1) is measured on and its fine-tuning starts from.

    multi30k train.{en,de}.gz --shuffled--> src-train.txt, tgt-train.txt (and the val split)
        --sentencepiece (unigram, coverage 1.0, one model for both sides)--> sentencepiece.model
        sentencepiece.vocab --Locomotive's sp_vocab_to_onmt_vocab--> opennmt/openmt.vocab
        config.yml --onmt_train (for --minutes, stopped with SIGTERM)--> openmt.model_step_<N>.pt
        last checkpoint --ct2-opennmt-py-converter [--quantization int8]--> ct2_int8/, ct2_float32/
        metadata.json, README.md, sentencepiece.model, model/ --zip--> en_de.argosmodel (int8),
                                                                       en_de_float32.argosmodel
        en_de.argosmodel --CTranslate2 as Argos decodes (beam 4, length_penalty 0.2)
            on Multi30k test_2016_flickr--> sacreBLEU, in locomotive.json

Run from the repository's root, with any Python that has sentencepiece, ctranslate2 and sacrebleu
(ours, or OpenNMT-py's); OpenNMT-py runs only as commands from its own venv (--onmt-venv), so
this module imports nothing of it:

    make bench-adapt-package     # nice -n 5 python -m benchmarks.adapt.locomotive [--minutes 45]
    python -m benchmarks.adapt.locomotive --toy       # 1+1 layers, 90 seconds: the path end to end

OpenNMT-py's venv is make bench-peers's (benchmarks/.venv-opennmt: OpenNMT-py 3.5.1 with
--no-deps on our torch pin, 2.13.0, though it pins torch<2.3, and what its commands import:
onmt/transforms imports spacy, fasttext, ahocorasick and rapidfuzz at load time; no spacy model
is needed); its pickled options need TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1 (torch >= 2.6), set for
its processes only.

Locomotive's settings are kept where not scaled below: those of sentencepiece in
train_sentencepiece, OpenNMT-py's in onmt_config (grouped as its train.py sets them). Of note:
learning_rate 0.15 with decay_method rsqrt and warmup_steps 16,000 is 1/sqrt(max(step, 16000)),
a constant 1.19e-3 for the whole run here, as for the first 16,000 steps of Locomotive's;
train_steps 100,000 is never reached; avg_checkpoints is its default, 1 (the last checkpoint is
converted, not an average); the converter gets a copy of the checkpoint whose options name the
attention scaled-dot (scaled_dot); the package is laid out as its train.py writes it (package).

Scaled (Locomotive's -> here), for 2 shared CPU cores and about 40 minutes: vocab_size 50,000
-> 8,000 (29,000 pairs; OpenNMT-py's 4 specials beside sentencepiece's 7,997 other pieces make
8,001, so its cut at 8,000 drops the rarest piece, as Locomotive's at 50,000 does); width
(hidden_size, word_vec_size) 512 -> 256, transformer_ff 2048 -> 1024, layers 6 + 6 -> 3 + 3
(--layers; 6 + 6 at batch 4,096 made 24 steps in 7 minutes on this shared machine); batch_size
8,192 tokens x accum_count 8 -> 2,048 x 1 (65,000 tokens a step would give a few dozen steps);
the run stopped at --minutes (SIGTERM) instead of at train_steps or early stopping, the last
checkpoint used; save_checkpoint_steps and valid_steps 2,500 -> 100 (little lost at the stop);
bucket_size 262,144 -> 32,768 pairs (a bucket larger than the corpus is filled by reading it
again and again before the first step: minutes here); model_dtype fp16 -> fp32 and no gpu_ranks
(a CPU: its train.py drops gpu_ranks there too); valid_metrics BLEU dropped (a translation of
the valid split at each validation, minutes on this CPU: validation reports loss and accuracy);
data: Multi30k instead of OPUS sources and Flores validation, no filters or augmenters, no stanza
model in the package (not downloadable here; Argos then splits sentences with MiniSBD).
"""

import argparse
import json
import os
import random
import re
import zipfile
from pathlib import Path

import ctranslate2
import sacrebleu
import sentencepiece as spm

from benchmarks.adapt.synthetic import METADATA
from benchmarks.adapt.tuning import MULTI30K
from benchmarks.common import ROOT, arguments, run, timed_translation
from benchmarks.peers.opennmt_peer import ENV as ONMT_ENV  # its checkpoints pickle its options
from benchmarks.peers.opennmt_peer import ONMT_PYTHON
from seq2seq.support.errors import UserError
from seq2seq.support.files import write_json
from seq2seq.text.parallel import read_lines

SRC, TGT = METADATA["from_code"], METADATA["to_code"]
ARGOS_DECODING = {"replace_unknowns": True, "max_batch_size": 32, "batch_type": "tokens",
                  "beam_size": 4, "num_hypotheses": 1, "length_penalty": 0.2}  # fmt: skip


def main() -> None:
    args = parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    os.environ.update(OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads))
    prepare_data(args.corpus, out / "data")
    sp_model = train_sentencepiece(out, args.vocab_size)
    write_onmt_vocab(out / "sentencepiece.vocab", out / "opennmt/openmt.vocab")
    config = onmt_config(out, args)
    (out / "config.yml").write_text(json.dumps(config, indent=2))  # JSON is YAML
    minutes = train(args, out / "config.yml", out / "train.log")
    checkpoint = last_checkpoint(out / "opennmt")
    for name, quantization in (("ct2_int8", "int8"), ("ct2_float32", None)):
        convert(args.onmt_venv, scaled_dot(args.onmt_venv, checkpoint), out / name, quantization)
    package(out / "ct2_int8", sp_model, out / "en_de.argosmodel", "translate-en_de-1_0")
    package(out / "ct2_float32", sp_model, out / "en_de_float32.argosmodel",
            "translate-en_de_float32-1_0")  # fmt: skip
    bleu = test_bleu(out / "ct2_int8", sp_model, args.corpus, args.threads)
    report = {
        "onmt_config": config,
        "steps": checkpoint_step(checkpoint),
        "checkpoint": str(checkpoint),
        "training_minutes": round(minutes, 1),
        "test_2016_flickr_bleu_int8": bleu,
        "decoding": "CTranslate2 beam 4, length_penalty 0.2, max_batch_size 32 tokens (Argos's)",
        "artifacts": {
            "sentencepiece_model": str(sp_model),
            "ct2_float32": str(out / "ct2_float32"),
            "ct2_int8": str(out / "ct2_int8"),
            "argos_int8": str(out / "en_de.argosmodel"),
            "argos_float32": str(out / "en_de_float32.argosmodel"),
        },
        "torch_in_onmt_venv": onmt_torch_version(args.onmt_venv),
    }
    write_json(out / "locomotive.json", report)
    print(json.dumps({k: report[k] for k in ("steps", "training_minutes")} | bleu))


def parse_args() -> argparse.Namespace:
    p = arguments(__doc__, out=ROOT / "runs/bench-adapt-package")
    p.add_argument("--corpus", type=Path, default=MULTI30K, help="Multi30k's folder (*.en.gz)")
    p.add_argument("--onmt-venv", type=Path, default=ONMT_PYTHON.parent.parent)
    p.add_argument("--minutes", type=float, default=45.0, help="onmt_train's time budget")
    p.add_argument("--layers", type=int, default=3, help="encoder and decoder layers each")
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--vocab-size", type=int, default=8000)
    p.add_argument("--batch-size", type=int, default=2048, help="tokens")
    p.add_argument("--checkpoint-steps", type=int, default=100)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--toy", action="store_true", help="1+1 layers for 90 seconds: a smoke test")
    args = p.parse_args()
    args.onmt_venv = args.onmt_venv.resolve()
    if args.toy:
        args.layers, args.minutes, args.checkpoint_steps = 1, 1.5, 10
    for name in ("train", "val", "test_2016_flickr"):
        for lang in (SRC, TGT):
            if not (args.corpus / f"{name}.{lang}.gz").is_file():
                raise UserError(f"{args.corpus / f'{name}.{lang}.gz'}: missing (--corpus)")
    if not (args.onmt_venv / "bin/onmt_train").is_file():
        raise UserError(f"{args.onmt_venv}/bin/onmt_train: missing (see this module's docstring)")
    return args


def prepare_data(corpus: Path, data: Path) -> None:
    """Locomotive's merge_shuffle for one source: the pairs shuffled, as src-/tgt-*.txt."""
    data.mkdir(parents=True, exist_ok=True)
    for split in ("train", "val"):
        sides = (read_lines(corpus / f"{split}.{lang}.gz") for lang in (SRC, TGT))
        pairs = list(zip(*sides, strict=True))
        random.Random(1).shuffle(pairs)
        for side, lines in zip(("src", "tgt"), zip(*pairs, strict=True), strict=True):
            (data / f"{side}-{split}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def train_sentencepiece(out: Path, vocab_size: int) -> Path:
    data = out / "data"
    spm.SentencePieceTrainer.train(
        input=[str(data / "src-train.txt"), str(data / "tgt-train.txt")],
        model_prefix=str(out / "sentencepiece"),
        vocab_size=vocab_size,
        character_coverage=1.0,
        input_sentence_size=1000000,
        shuffle_input_sentence=True,
        minloglevel=2,
    )
    return out / "sentencepiece.model"


def write_onmt_vocab(sp_vocab: Path, onmt_vocab: Path) -> None:
    """Locomotive's sp_vocab_to_onmt_vocab: each piece with exp(log-probability) x 1e6 + 1 as
    its count, sentencepiece's <unk> <s> </s> left out (OpenNMT-py adds its own)."""
    onmt_vocab.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for line in sp_vocab.read_text(encoding="utf-8").splitlines():
        fields = line.split(None, 1)
        if len(fields) == 2 and fields[0] not in ("<unk>", "<s>", "</s>"):
            lines.append(f"{fields[0]}\t{int(2.718281828459045 ** float(fields[1]) * 1e6) + 1}\n")
    onmt_vocab.write_text("".join(lines), encoding="utf-8")


def onmt_config(out: Path, args: argparse.Namespace) -> dict:
    """Locomotive's OpenNMT-py config (its train.py), scaled as the module docstring says."""
    data, onmt, sp = out / "data", out / "opennmt", str(out / "sentencepiece.model")
    transforms = ["sentencepiece", "filtertoolong"]
    corpora = {
        "corpus_1": {"path_src": str(data / "src-train.txt"), "weight": 1,
                     "path_tgt": str(data / "tgt-train.txt"), "transforms": transforms},
        "valid": {"path_src": str(data / "src-val.txt"), "path_tgt": str(data / "tgt-val.txt"),
                  "transforms": transforms},
    }  # fmt: skip
    vocab, steps = str(onmt / "openmt.vocab"), args.checkpoint_steps
    return {
        # data, vocabulary and pieces
        "save_data": str(onmt), "src_vocab": vocab, "tgt_vocab": vocab,
        "src_vocab_size": args.vocab_size, "tgt_vocab_size": args.vocab_size, "share_vocab": True,
        "data": corpora, "src_subword_type": "sentencepiece", "tgt_subword_type": "sentencepiece",
        "src_onmttok_kwargs": {"mode": "none", "lang": SRC},
        "tgt_onmttok_kwargs": {"mode": "none", "lang": TGT},
        "src_subword_model": sp, "tgt_subword_model": sp,
        "src_subword_nbest": 1, "src_subword_alpha": 0.0,
        "tgt_subword_nbest": 1, "tgt_subword_alpha": 0.0,
        "src_seq_length": 150, "tgt_seq_length": 150, "skip_empty_level": "silent",
        # checkpoints, batches
        "save_model": str(onmt / "openmt.model"), "save_checkpoint_steps": steps,
        "keep_checkpoint": 10, "valid_steps": steps, "train_steps": 100000, "early_stopping": 4,
        "bucket_size": 32768, "num_worker": 2, "world_size": 1, "batch_type": "tokens",
        "queue_size": 10000, "batch_size": args.batch_size, "valid_batch_size": 2048,
        "max_generator_batches": 2, "accum_count": [1], "accum_steps": [0], "model_dtype": "fp32",
        # optimizer
        "optim": "adam", "learning_rate": 0.15, "warmup_steps": 16000, "decay_method": "rsqrt",
        "adam_beta2": 0.998, "max_grad_norm": 0, "label_smoothing": 0.1, "param_init": 0,
        "param_init_glorot": True, "normalization": "tokens",
        # model
        "encoder_type": "transformer", "decoder_type": "transformer", "position_encoding": True,
        "enc_layers": args.layers, "dec_layers": args.layers, "heads": args.heads,
        "hidden_size": args.width, "word_vec_size": args.width, "transformer_ff": 4 * args.width,
        "dropout_steps": [0], "dropout": [0.1], "attention_dropout": [0.1],
        "share_decoder_embeddings": True, "share_embeddings": True, "seed": 1,
    }  # fmt: skip


def train(args: argparse.Namespace, config: Path, log: Path) -> float:
    """onmt_train until it ends or --minutes pass (then SIGTERM); returns the minutes it ran."""
    command = [str(args.onmt_venv / "bin/onmt_train"), "-config", str(config)]
    ran = run(command, log=log, env=ONMT_ENV, budget=args.minutes * 60, allowed=None)
    return ran.seconds / 60  # its exit code: a checkpoint saved or not (last_checkpoint)


def checkpoint_step(path: Path) -> int:
    return int(re.search(r"_step_(\d+)\.pt$", path.name).group(1))


def last_checkpoint(onmt: Path) -> Path:
    checkpoints = sorted(onmt.glob("openmt.model_step_*.pt"), key=checkpoint_step)
    if not checkpoints:
        raise UserError(f"{onmt}: no checkpoint was saved; see train.log beside it")
    return checkpoints[-1]


def scaled_dot(onmt_venv: Path, checkpoint: Path) -> Path:
    """A copy of the checkpoint whose options say self_attn_type scaled-dot: OpenNMT-py 3.5.1's
    default, scaled-dot-flash, is the same attention computed by torch's
    scaled_dot_product_attention, which CTranslate2 4.x's converter refuses by name."""
    copy = checkpoint.with_name(checkpoint.stem + ".scaled_dot.pt")
    code = (
        "import sys, torch; c = torch.load(sys.argv[1], map_location='cpu', weights_only=False); "
        "c['opt'].self_attn_type = 'scaled-dot'; torch.save(c, sys.argv[2])"
    )
    command = [str(onmt_venv / "bin/python"), "-c", code, str(checkpoint), str(copy)]
    run(command)
    return copy


def convert(onmt_venv: Path, checkpoint: Path, output: Path, quantization: str | None) -> None:
    command = [str(onmt_venv / "bin/ct2-opennmt-py-converter"), "--model_path", str(checkpoint),
               "--output_dir", str(output), "--force", "--unsafe_deserialization"]  # fmt: skip
    if quantization:
        command += ["--quantization", quantization]
    run(command, env=ONMT_ENV)


def package(model: Path, sp_model: Path, archive: Path, top: str) -> None:
    """Locomotive's package: one top folder with metadata.json, README.md, sentencepiece.model
    and model/, zipped file by file (no folder entries), named .argosmodel."""
    name = (
        f"# {METADATA['from_name']} - {METADATA['to_name']} version {METADATA['package_version']}"
    )
    partial = archive.with_suffix(".zip.partial")
    with zipfile.ZipFile(partial, "w") as z:
        z.writestr(f"{top}/README.md", name)
        z.writestr(f"{top}/metadata.json", json.dumps(METADATA))
        z.write(sp_model, f"{top}/sentencepiece.model")
        for file in sorted(model.rglob("*")):
            if file.is_file():
                z.write(file, f"{top}/model/{file.relative_to(model)}")
    partial.replace(archive)


def test_bleu(model: Path, sp_model: Path, corpus: Path, threads: int) -> dict:
    """The int8 model on test_2016_flickr as Argos decodes one sentence: pieces from
    sentencepiece, beam 4, length_penalty 0.2, unknowns replaced, decoded by sentencepiece,
    a leading space removed (no sentence splitting: Multi30k's lines are one sentence each);
    the seconds of that decoding, after a warm-up."""
    sp = spm.SentencePieceProcessor(model_file=str(sp_model))
    sources = read_lines(corpus / f"test_2016_flickr.{SRC}.gz")
    references = read_lines(corpus / f"test_2016_flickr.{TGT}.gz")
    translator = ctranslate2.Translator(str(model), device="cpu", intra_threads=threads)
    seconds, results = timed_translation(
        lambda pieces, options: translator.translate_batch(pieces, **options),
        [sp.encode(s, out_type=str) for s in sources], ARGOS_DECODING,
    )  # fmt: skip
    hypotheses = [sp.decode(r.hypotheses[0]).removeprefix(" ") for r in results]
    (model.parent / "test_2016_flickr.int8.de").write_text("\n".join(hypotheses) + "\n")
    metric = sacrebleu.BLEU()
    bleu = metric.corpus_score(hypotheses, [references])
    return {"bleu": round(bleu.score, 2), "signature": str(metric.get_signature()),
            "sentences": len(sources), "decode_seconds": round(seconds, 1)}  # fmt: skip


def onmt_torch_version(onmt_venv: Path) -> str:
    command = [str(onmt_venv / "bin/python"), "-c", "import torch; print(torch.__version__)"]
    return run(command).stdout.strip()


if __name__ == "__main__":
    main()
