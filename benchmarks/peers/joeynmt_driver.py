"""Run by JoeyNMT's own Python (joeynmt_peer.py's decode_joey), not by ours: load
the model as `joeynmt translate` does and time joeynmt.prediction.predict alone (it batches,
searches and detokenizes), after a warm-up, at each batch size.

    python joeynmt_driver.py CONFIG SOURCE WARMUP_SENTENCES 64,1 > timings.json

Prints {"parameters", "src_vocab_size", "tgt_vocab_size", "<batch size>": {"seconds",
"hypotheses"}, ...} as JSON.
"""

import json
import sys
import time

from joeynmt.config import load_config, parse_global_args
from joeynmt.prediction import predict, prepare

config_path, source_path, warmup = sys.argv[1], sys.argv[2], int(sys.argv[3])
batch_sizes = [int(size) for size in sys.argv[4].split(",")]
args = parse_global_args(load_config(config_path), rank=0, mode="translate")
model, _, _, data = prepare(args, rank=0, mode="translate")
with open(source_path, encoding="utf-8") as file:
    lines = [line.rstrip("\n") for line in file]


def run(sentences, batch_size):
    data.reset_cache()
    for line in sentences:
        data.set_item(line)
    test_args = args.test._replace(batch_size=batch_size, batch_type="sentence")
    return predict(
        model=model,
        data=data,
        compute_loss=False,
        device=args.device,
        rank=0,
        n_gpu=args.n_gpu,
        normalization="none",
        num_workers=args.num_workers,
        args=test_args,
        autocast=args.autocast,
    )[2]


result = {
    "parameters": sum(p.numel() for p in model.parameters()),
    "src_vocab_size": len(model.src_vocab),
    "tgt_vocab_size": len(model.trg_vocab),
}
for batch_size in batch_sizes:
    run(lines[:warmup], batch_size)
    start = time.perf_counter()
    hypotheses = run(lines, batch_size)
    result[str(batch_size)] = {"seconds": time.perf_counter() - start, "hypotheses": hypotheses}
json.dump(result, sys.stdout)
