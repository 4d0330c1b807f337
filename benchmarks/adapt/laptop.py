"""`make bench-adapt-laptop`: fine-tuning a Transformer-base Argos package on this machine (2
CPU cores are the aim): tokens/s and peak resident memory, for each way of keeping what the
model knew -> benchmarks/results/adapt_laptop.{json,md}.

    python -m benchmarks.adapt.laptop [--steps 30] [--batch-tokens 1000 2000] [--out DIR]

The package is Locomotive's shape (6 + 6 layers, width 512, 8 heads, FFN 2048, one vocabulary
of 50,000 pieces, shared embeddings, int8 weights), random weights written by CTranslate2's
own OpenNMT-py converter (synthetic.py): speed and memory do not depend on what the weights
know. It is imported (python -m seq2seq.import_model) and fine-tuned on Multi30k's English
-> German pairs (../shared/corpora/multi30k, or --multi30k) for --steps steps with the
machine's precision (train.precision auto: bf16 where the CPU computes it), each setting in
a process of its own (tuning.py): the whole run's wall time and peak RSS (validation
included: 20 sentences), and the training's tokens/s (source and target tokens, the training
log's).
"""

import io
from pathlib import Path

import numpy as np
import sentencepiece as spm

from benchmarks import common
from benchmarks.adapt.synthetic import BASE, Shape, opennmt_checkpoint, package
from benchmarks.adapt.tuning import MULTI30K, fine_tuning, fresh, prepare, train
from seq2seq.support.errors import UserError, run_cli
from seq2seq.text.parallel import read_lines

OUT = common.RESULTS / "adapt_laptop"
PIECES = 50_000  # Locomotive's sentencepiece vocabulary
KEEPS = [  # a setting's name and the train section's overrides
    ("no keeping", {}),
    ("keep_teacher 0.5", {"keep_teacher": 0.5}),
    ("keep_weights 1", {"keep_weights": 1.0}),
]
CORPUS = {"type": "sources", "name": "multi30k_en_de", "train_sources": [{"file": "pairs.tsv"}],
          "valid_size": 20}  # fmt: skip


def multi30k_pairs(folder: Path) -> list[str]:
    """English -> German training pairs of Multi30k, as TSV lines."""
    en, de = (read_lines(folder / f"train.{lang}.gz") for lang in ("en", "de"))
    return [f"{' '.join(a.split())}\t{' '.join(b.split())}" for a, b in zip(en, de, strict=True)]


def base_package(work: Path, pairs: list[str]) -> Path:
    """A Transformer-base package of PIECES pieces: a sentencepiece model of the pairs' text
    (as many pieces as it holds), the rest of the vocabulary entries it never makes."""
    from ctranslate2.converters import OpenNMTPyConverter

    model = io.BytesIO()
    text = [half for pair in pairs for half in pair.split("\t")]
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(text), model_writer=model, vocab_size=16_000,
        model_type="unigram", hard_vocab_limit=False, minloglevel=2,
    )  # fmt: skip
    sp_bytes = model.getvalue()
    real = spm.SentencePieceProcessor(model_proto=sp_bytes).get_piece_size()
    shape = Shape(**{**vars(BASE), "extra_pieces": PIECES - real - 1})  # + <blank>
    opennmt_checkpoint(work / "model.pt", sp_bytes, False, np.random.default_rng(0), shape)
    converter = OpenNMTPyConverter(str(work / "model.pt"), unsafe_deserialization=True)
    return package(work / "en_de", converter, sp_bytes, quantization="int8")


def config(steps: int, batch_tokens: int, keep: dict) -> dict:
    train = {"max_steps": steps, "eval_every": steps, "warmup_steps": 10, "lr": 1e-4,
             "min_lr": 1e-5, "batch_tokens": batch_tokens, "average_last": 0, **keep}  # fmt: skip
    return fine_tuning(CORPUS, train)


def measure(work: Path, steps: int, batch_tokens: int, keep: dict) -> dict:
    """One fine-tuning run in its own process: wall seconds, peak RSS, tokens/s."""
    trained = train(work, "tuned", config(steps, batch_tokens, keep))
    return {"wall_s": round(trained.ran.seconds, 1), "peak_rss_mib": round(trained.ran.peak_mib),
            "tokens_per_s": round(trained.metrics[-1]["tokens_per_s"])}  # fmt: skip


def table(results: dict) -> str:
    rows = [
        [row["setting"], f"{row['batch_tokens']:,}", f"{row['tokens_per_s']:,}",
         f"{row['peak_rss_mib'] / 1024:.2f} GiB", row["wall_s"]]
        for row in results["runs"]
    ]  # fmt: skip
    header = ["setting", "batch tokens", "tokens/s", "peak RSS", "wall (s)"]
    machine_line = common.on_machine(results["machine"], "make bench-adapt-laptop")
    note = f"{results['steps']} steps each; {machine_line}"
    return common.markdown_table(header, rows, note) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = common.arguments(__doc__, out=OUT)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch-tokens", type=int, nargs="+", default=[1000, 2000])
    parser.add_argument("--multi30k", type=Path, default=MULTI30K)
    parser.add_argument("--work", type=Path, default=common.ROOT / "runs/bench-adapt-laptop")
    args = parser.parse_args(argv)
    if not (args.multi30k / "train.en.gz").exists():
        raise UserError(f"{args.multi30k}: no train.en.gz (Multi30k's files: --multi30k DIR)")
    work, pairs = fresh(args.work.resolve()), multi30k_pairs(args.multi30k)
    (work / "pairs.tsv").write_text("\n".join(pairs) + "\n", "utf-8")
    prepare(work, base_package(work, pairs), config(1, 2000, {}))  # only its corpus counts
    runs = []
    for batch_tokens in args.batch_tokens:
        for name, keep in KEEPS:
            runs.append({"setting": name, "batch_tokens": batch_tokens,
                         **measure(work, args.steps, batch_tokens, keep)})  # fmt: skip
            print(runs[-1], flush=True)
    results = {"machine": common.machine(), "steps": args.steps, "pieces": PIECES, "runs": runs}
    common.save_results(args.out, results, table(results))


if __name__ == "__main__":
    run_cli(main)
