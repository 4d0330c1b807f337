"""`make bench-adapt-import`: a real Argos package imported, against CTranslate2 on the same
package -> benchmarks/results/adapt_import.{json,md}.

    python -m benchmarks.adapt.exactness PACKAGE.argosmodel [PACKAGE_INT8.argosmodel]
        [--test DIR/test_2016_flickr] [--src en --tgt de]

Each package is imported (seq2seq/exports/importing.py) and both decode the test set (1,000
Multi30k sentences by default) at the same settings: greedy and beam 4, length penalty 0.2,
no n-gram rule, up to 200 pieces, PAD and BOS never output, an empty output allowed (our
decoding's; Argos Translate forbids an empty one). CTranslate2 gets the package's own
sentencepiece pieces, as Argos Translate gives them, and runs on the weights as stored (int8
for an int8 package, which our import restores to float32). Reported: how many outputs differ
and each side's BLEU (sacreBLEU, against the references).
"""

import json
import tempfile
import zipfile
from pathlib import Path

import sacrebleu
import sentencepiece as spm

from benchmarks.adapt.tuning import MULTI30K
from benchmarks.common import RESULTS, arguments, machine, markdown_table, save_results
from seq2seq.config import DecodeConfig
from seq2seq.decoding.batches import search_sources
from seq2seq.exports.importing import import_model
from seq2seq.support.errors import run_cli
from seq2seq.text.parallel import read_lines

OUT = RESULTS / "adapt_import"
LONGEST = 200  # output pieces, both sides
BEAMS = (1, 4)


def ctranslate2_outputs(folder: Path, sentences: list[str], beam: int) -> list[str]:
    """CTranslate2 on the package's model: its pieces, detokenized by its sentencepiece."""
    import ctranslate2

    sp = spm.SentencePieceProcessor(model_file=str(folder / "sentencepiece.model"))
    vocabulary = json.loads((folder / "model/shared_vocabulary.json").read_text("utf-8"))
    never = [[token] for token in ("<blank>", "<pad>", "<s>") if token in vocabulary]
    translator = ctranslate2.Translator(str(folder / "model"), device="cpu", intra_threads=2)
    results = translator.translate_batch(
        [sp.encode(s, out_type=str) for s in sentences], beam_size=beam, length_penalty=0.2,
        max_decoding_length=LONGEST, min_decoding_length=0, suppress_sequences=never,
        max_batch_size=64,
    )  # fmt: skip
    return [sp.decode(r.hypotheses[0]) for r in results]


def our_outputs(checkpoint, sentences: list[str], beam: int) -> list[str]:
    decoding = DecodeConfig(beam_size=beam, length_penalty=0.2, max_len_a=0, max_len_b=LONGEST,
                            no_repeat_ngram=0, precision="fp32", batch_size=64)  # fmt: skip
    outputs = search_sources(checkpoint.model, checkpoint.src_vocab.encode(sentences), decoding)
    return checkpoint.tgt_vocab.detokenize([output.ids for output in outputs])


def compare(package: Path, sentences: list[str], references: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as staging:
        with zipfile.ZipFile(package) as archive:
            archive.extractall(staging)
        [folder] = [p.parent for p in Path(staging).glob("*/metadata.json")]
        imported = import_model(folder)
        rows = {"package": package.name, "weights": imported.report["weights"]}
        for beam in BEAMS:
            theirs = ctranslate2_outputs(folder, sentences, beam)
            ours = our_outputs(imported.checkpoint, sentences, beam)
            rows[f"beam {beam}"] = {
                "differ": sum(o != t for o, t in zip(ours, theirs, strict=True)),
                "bleu_ctranslate2": round(sacrebleu.corpus_bleu(theirs, [references]).score, 2),
                "bleu_ours": round(sacrebleu.corpus_bleu(ours, [references]).score, 2),
            }
            print(package.name, beam, rows[f"beam {beam}"], flush=True)
    return rows


def table(results: dict) -> str:
    n, rows = results["sentences"], []
    for row in results["packages"]:
        weights = ", ".join(f"{count} {kind}" for kind, count in row["weights"].items())
        for beam in BEAMS:
            r, decoding = row[f"beam {beam}"], "greedy" if beam == 1 else f"beam {beam}"
            rows.append([row["package"], weights, decoding, f"{r['differ']} of {n:,}",
                         r["bleu_ctranslate2"], r["bleu_ours"]])  # fmt: skip
    header = ["package", "variables stored", "decoding", "outputs that differ",
              "BLEU CTranslate2", "BLEU ours"]  # fmt: skip
    m = results["machine"]
    note = (
        f"{results['test']}; {m['device_name']}, torch {m['torch']}, {m['date'][:10]} "
        "(`python -m benchmarks.adapt.exactness`)."
    )
    return markdown_table(header, rows, note) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = arguments(__doc__, out=OUT)
    parser.add_argument("packages", type=Path, nargs="+")
    default_test = MULTI30K / "test_2016_flickr"
    parser.add_argument("--test", type=Path, default=default_test, help="PREFIX of PREFIX.src.gz")
    parser.add_argument("--src", default="en")
    parser.add_argument("--tgt", default="de")
    args = parser.parse_args(argv)
    sentences = read_lines(args.test.with_name(f"{args.test.name}.{args.src}.gz"))
    references = read_lines(args.test.with_name(f"{args.test.name}.{args.tgt}.gz"))
    rows = [compare(package, sentences, references) for package in args.packages]
    results = {"machine": machine(), "test": f"{args.test.name} ({args.src} -> {args.tgt})",
               "sentences": len(sentences), "packages": rows}  # fmt: skip
    save_results(args.out, results, table(results))


if __name__ == "__main__":
    run_cli(main)
