"""Run by OpenNMT-py's own Python (benchmarks/peers/opennmt_peer.py), not by ours: load each
checkpoint as `onmt_translate` does and time its greedy translation of SOURCE alone (its
InferenceEnginePY.infer_list, which batches, searches and joins the output tokens), after a
warm-up, at each batch size.

    python opennmt_driver.py SOURCE WARMUP 64,1 MAX_LENGTH CKPT [CKPT ...] > out.json

Prints {"parameters", "src_vocab_size", "tgt_vocab_size", "<checkpoint>": {"<batch size>":
{"seconds", "hypotheses"}}} as JSON (the sizes of the last checkpoint).
"""

import json
import sys
import time

from onmt.inference_engine import InferenceEnginePY
from onmt.opts import translate_opts
from onmt.utils.parse import ArgumentParser

source_path, warmup, sizes, max_length = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
with open(source_path, encoding="utf-8") as file:
    lines = [line.rstrip("\n") for line in file]


def engine(checkpoint: str, batch_size: int) -> InferenceEnginePY:
    """OpenNMT-py's translation engine, as `onmt_translate` builds it: greedy, on the CPU."""
    parser = ArgumentParser()
    translate_opts(parser)
    argv = ["-model", checkpoint, "-src", source_path, "-output", "/dev/null", "-gpu", "-1"]
    argv += ["-beam_size", "1", "-batch_size", str(batch_size), "-max_length", max_length]
    opt = parser.parse_args(argv)
    ArgumentParser.validate_translate_opts(opt)
    ArgumentParser._get_all_transform_translate(opt)
    ArgumentParser._validate_transforms_opts(opt)
    ArgumentParser.validate_translate_opts_dynamic(opt)
    return InferenceEnginePY(opt)


result: dict = {}
for checkpoint in sys.argv[5:]:
    result[checkpoint] = {}
    for batch_size in [int(size) for size in sizes.split(",")]:
        translator = engine(checkpoint, batch_size)
        translator.infer_list(lines[:warmup])
        start = time.perf_counter()
        _, predictions = translator.infer_list(lines)
        seconds = time.perf_counter() - start
        hypotheses = [best[0] for best in predictions]
        result[checkpoint][str(batch_size)] = {"seconds": seconds, "hypotheses": hypotheses}
    model = translator.translator.model
    vocabs = translator.translator.vocabs
    result["parameters"] = sum(p.numel() for p in model.parameters())
    result["src_vocab_size"], result["tgt_vocab_size"] = len(vocabs["src"]), len(vocabs["tgt"])
json.dump(result, sys.stdout)
