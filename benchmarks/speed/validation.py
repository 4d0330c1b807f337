"""`make bench-validation`: what one validation of a training costs with each engine that can
decode it (train.valid_engine), on a checkpoint of the config: its seconds in alternating
rounds (loss and translations, as training validates), the valid BLEU each gives and how
many translations differ -> benchmarks/results/validation.{json,md}.

    python -m benchmarks.speed.validation --config configs/multi30k_de_en_hour.yaml \
        [--checkpoint runs/multi30k_de_en_hour/best.pt] [--rounds 3]
"""

import statistics
from dataclasses import replace
from pathlib import Path

import torch

from benchmarks import common
from seq2seq.checkpoint import load_checkpoint
from seq2seq.config import load_config
from seq2seq.support.errors import run_cli
from seq2seq.support.paths import vocab_files
from seq2seq.text.parallel import load_split
from seq2seq.tokens.dataset import TokenPairs
from seq2seq.training.validation import valid_translations, validate

OUT = common.RESULTS / "validation"
ENGINES = ("torch", "ctranslate2")
CPU = torch.device("cpu")


def main(argv: list[str] | None = None) -> None:
    parser = common.arguments(__doc__, out=OUT, config="configs/multi30k_de_en_hour.yaml")
    parser.add_argument("--checkpoint", type=Path, help="default: the config's best.pt")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    config = load_config(args.config)
    path = args.checkpoint or config.checkpoint_path
    checkpoint = load_checkpoint(path, CPU, config.make_command("train"))
    vocabs = checkpoint.src_vocab, checkpoint.tgt_vocab
    eos = config.model.source_eos
    valid = (
        TokenPairs(config.data_dir, "valid", vocab_files(config.data_dir), eos),
        load_split(config, "valid"),
    )
    settings = {engine: with_engine(config, engine) for engine in ENGINES}
    seconds: dict[str, list[float]] = {engine: [] for engine in ENGINES}
    scores = {}
    for _ in range(args.rounds):
        for engine, settings_of in settings.items():
            taken, scores[engine] = common.timed(
                validate, checkpoint.model, settings_of, vocabs, valid, CPU
            )
            seconds[engine].append(taken)
            print(f"{engine}: {seconds[engine][-1]:.1f} s", flush=True)
    sources = [s for s, _ in valid[1]]
    decoding = replace(config.decode, beam_size=config.train.valid_beam_size)
    outputs = [
        valid_translations(checkpoint.model, settings[e], vocabs, sources, decoding, CPU).outputs
        for e in ENGINES
    ]
    results = {
        "config": args.config, "checkpoint": str(path), "step": checkpoint.info.get("step"),
        "sentences": len(sources), "machine": common.machine(), "rounds": args.rounds,
        "engines": [
            {"engine": e, "seconds": seconds[e], "valid_bleu": scores[e]["valid_bleu"]}
            for e in ENGINES
        ],
        "differ": sum(a != b for a, b in zip(*outputs, strict=True)),
    }  # fmt: skip
    common.save_results(args.out, results, table(results))


def with_engine(config, engine: str):
    return replace(config, train=replace(config.train, valid_engine=engine))


def table(results: dict) -> str:
    info, engines = results["machine"], results["engines"]
    base = statistics.median(engines[0]["seconds"])
    header = ["engine", f"seconds a validation (median of {results['rounds']})", "rounds",
              f"x faster than {engines[0]['engine']}", "valid BLEU"]  # fmt: skip
    rows = []
    for e in engines:
        median, cells = common.median_and_rounds(e["seconds"], ".1f")
        rows.append([e["engine"], cells, f"{base / median:.1f}", f"{e['valid_bleu']:.2f}"])
    return common.markdown_table(header, rows) + (
        f"\n\n`{results['config']}`'s valid split ({results['sentences']:,} sentences: the loss, "
        f"and translations scored as training does), with its checkpoint of step "
        f"{results['step']:,}; "
        f"{results['differ']} of the translations differ between the engines; "
        f"{common.on_machine(info)}\n"
    )


if __name__ == "__main__":
    run_cli(main)
