"""One trained model through each exported form, in the same run: raw test sentences to text,
greedy, sentences per second and the share of outputs equal to ours.

    python -m benchmarks.speed.exports --checkpoint runs/numbers/best.pt [--sentences 1000]

    ours                       seq2seq.decoding.engines.TorchEngine (PyTorch)
    ctranslate2_float32, _int8 our CTranslate2 engine on the CTranslate2 export
    transformers_float32       AutoModelForSeq2SeqLM.generate on the Hugging Face export, with
                               its MarianTokenizer
    argos                      Argos Translate's translate() on the installed package: one
                               text a call (its API), float32, in a child process

The first three at batch 64 and at batch 1; Argos, one text a call, is compared with ours at
batch 1.

`make bench` runs it on the default experiment's model (benchmarks/speed/bench.py). A form whose
package is not installed is skipped with a note; so is Argos for a model with two
vocabularies, which a package cannot hold.
"""

import dataclasses
import importlib.util
import json
import sys
import tempfile
from pathlib import Path

import torch

from benchmarks.common import arguments, private_home, run_json, timed_translation
from seq2seq.checkpoint import Checkpoint, load_checkpoint
from seq2seq.config import DecodeConfig, translation_pair
from seq2seq.decoding.ctranslate2_engine import CTranslate2Engine
from seq2seq.decoding.engines import TorchEngine
from seq2seq.exports.argos import check_exportable, export_argos
from seq2seq.exports.ctranslate2 import export_ctranslate2
from seq2seq.exports.huggingface import export_huggingface
from seq2seq.support.errors import UserError
from seq2seq.text.parallel import load_split

# Argos Translate runs in a child process, because importing it creates its folders under the
# home directory and reads its settings once. Its sentence splitter (MiniSBD) downloads a model
# the first time it splits, which cannot happen offline: the test sentences are one sentence
# each, so the splitter is replaced by one that returns the text whole. Everything else is
# Argos's own: install_from_path, its package loader, tokenizer, CTranslate2 call, detokenizer.
ARGOS = """
import json, sys, time
import argostranslate.package, argostranslate.settings, argostranslate.translate as translate

class OneSentence:
    def split_sentences(self, text):
        return [text]

package, source, target, beams = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
sentences = json.load(sys.stdin)
argostranslate.package.install_from_path(package)
installed = argostranslate.package.get_installed_packages()
language = translate.get_language_from_code(source)
translation = language.get_translation(translate.get_language_from_code(target))
translation.underlying.sentencizer = OneSentence()
results = {"readme": installed[0].get_readme(), "to_code": installed[0].to_code, "seconds": {}}
for beam in beams:
    argostranslate.settings.beam_size = int(beam)
    translate.translate(sentences[0], source, target)  # loads the model
    start = time.perf_counter()
    results[beam] = [translate.translate(s, source, target) for s in sentences]
    results["seconds"][beam] = time.perf_counter() - start
json.dump(results, sys.stdout)
"""


def run_argos(
    package: Path, codes: tuple[str, str], sentences: list[str], home: Path, beams=(1,), threads=0
):
    """Install `package` into a fresh Argos Translate home and translate `sentences` at each
    beam size: {"1": outputs, ..., "seconds": {"1": s}, "readme": ..., "to_code": ...}.
    `threads`: CTranslate2's intra_threads (Argos's default, 0: as many as the machine has)."""
    env = {
        "ARGOS_INTRA_THREADS": str(threads),
        **private_home(home),
        "ARGOS_DEVICE_TYPE": "cpu",
        "ARGOS_COMPUTE_TYPE": "float32",  # its default, "auto", may quantize to int8
    }
    command = [sys.executable, "-c", ARGOS, str(package), *codes, *map(str, beams)]
    return run_json(command, sentences, env=env, budget=1800)


def transformers_engine(folder: Path, max_positions: int):
    """translate(sentences, decoding) with transformers alone on the exported folder: greedy,
    float32, in batches of decoding.batch_size; each batch's length limit is ours for its
    longest source (generate takes one limit a batch)."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSeq2SeqLM.from_pretrained(folder).eval()

    def translate(sentences: list[str], decoding: DecodeConfig) -> list[str]:
        outputs = []
        for start in range(0, len(sentences), decoding.batch_size):
            batch = tokenizer(sentences[start : start + decoding.batch_size], return_tensors="pt",
                              padding=True, truncation=True)  # fmt: skip
            source = batch["input_ids"].shape[1]  # (B, S): the longest source, EOS included
            limit = int(decoding.max_len_a * source + decoding.max_len_b)
            longest = min(limit, max_positions - 1) + 1  # max_length counts the start token
            with torch.inference_mode():
                ids = model.generate(**batch, num_beams=1, do_sample=False, max_length=longest)
            outputs += tokenizer.batch_decode(ids, skip_special_tokens=True)
        return outputs

    return translate


def outputs_of(engine):
    """An engine's translate(sentences, decoding) -> its texts only."""
    return lambda sentences, decoding: engine.translate(sentences, decoding).outputs


def installed(package: str) -> bool:
    """Whether `package` can be imported; a note that its figures are skipped where not."""
    if importlib.util.find_spec(package) is None:
        print(f"{package} not installed: its figures are skipped", flush=True)
        return False
    return True


def engines(checkpoint: Checkpoint, folder: Path) -> dict:
    """Each installed form's translate(sentences, decoding), ours first."""
    found = {"ours": outputs_of(TorchEngine(checkpoint))}
    if installed("ctranslate2"):
        export_ctranslate2(checkpoint, folder / "ct2")
        for compute in ("float32", "int8"):
            model = CTranslate2Engine.load(folder / "ct2", "cpu", compute)
            found[f"ctranslate2_{compute}"] = outputs_of(model)
    if installed("transformers"):
        export_huggingface(checkpoint, folder / "hf")
        max_positions = checkpoint.model.cfg.max_positions
        found["transformers_float32"] = transformers_engine(folder / "hf", max_positions)
    return found


def same(outputs: list[str], ours: list[str]) -> float:
    """The share of outputs equal to ours (spaces at either end aside: transformers' tokenizer
    and Argos strip them)."""
    return sum(a.strip() == b.strip() for a, b in zip(outputs, ours, strict=True)) / len(ours)


def argos_figures(checkpoint: Checkpoint, sentences: list[str], folder: Path) -> dict:
    """Argos Translate's sentences per second (one text a call, greedy) and its outputs."""
    try:
        check_exportable(checkpoint)
        import argostranslate  # noqa: F401
    except (UserError, ImportError) as reason:
        print(f"Argos Translate skipped: {reason}", flush=True)
        return {}
    export_argos(checkpoint, folder / "model.argosmodel")
    codes = [
        language.code for language in translation_pair(checkpoint.config, checkpoint.config.serve)
    ]
    done = run_argos(folder / "model.argosmodel", codes, sentences, folder / "argos-home")
    return {"outputs": done["1"], "per_s": len(sentences) / done["seconds"]["1"]}


def exports_decoding(checkpoint_path: Path, sentences: list[str]) -> dict:
    """Raw sentences to text through every form, greedy, at batch 64 and 1 (Argos: one text a
    call): sentences per second, the ratio to ours measured in the same run, and the share of
    outputs equal to ours."""
    checkpoint = load_checkpoint(checkpoint_path)
    result: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        found = engines(checkpoint, Path(tmp))
        for batch_size in (64, 1):
            decoding = dataclasses.replace(
                checkpoint.config.decode, batch_size=batch_size, beam_size=1
            )
            outputs = {}
            for name, translate in found.items():
                seconds, outputs[name] = timed_translation(translate, sentences, decoding)
                rate = len(sentences) / seconds
                result[f"translate_sentences_per_s_{name}_batch{batch_size}"] = rate
                ours = result[f"translate_sentences_per_s_ours_batch{batch_size}"]
                if name != "ours":
                    result[f"{name}_vs_ours_batch{batch_size}"] = rate / ours
                    result[f"{name}_same_outputs_as_ours"] = same(outputs[name], outputs["ours"])
        argos = argos_figures(checkpoint, sentences, Path(tmp))
        if argos:
            result["translate_sentences_per_s_argos"] = argos["per_s"]
            ours = result["translate_sentences_per_s_ours_batch1"]  # Argos: one text a call
            result["argos_vs_ours_batch1"] = argos["per_s"] / ours
            result["argos_same_outputs_as_ours"] = same(argos["outputs"], outputs["ours"])
    return result


def main() -> None:
    parser = arguments(__doc__)
    parser.add_argument("--checkpoint", required=True, help="e.g. runs/numbers/best.pt")
    parser.add_argument("--sentences", type=int, default=1000, help="test sentences to use")
    args = parser.parse_args()
    checkpoint = load_checkpoint(args.checkpoint)
    test = load_split(checkpoint.config, "test")[: args.sentences]
    print(json.dumps(exports_decoding(Path(args.checkpoint), [s for s, _ in test]), indent=2))


if __name__ == "__main__":
    main()
