"""`make bench-confidence`: how well a translation's confidence (seq2seq/decoding/confidence.py)
tells the good translations from the bad, each signal tried, on three test sets, and what it
costs -> benchmarks/results/confidence.{json,md} and docs/confidence.png (beside --out's files
when --out is given).

    python -m benchmarks.adapt.confidence [--package PACKAGE] [--tuned CHECKPOINT]
        [--program-work DIR] [--catalogs DIR] [--strings 500] [--software 500] [--sentences N]

    the sets, each a model, a test and the validation set its calibration is fitted on:
      captions  the stand-in package (PACKAGE, make standin's int8 .argosmodel, decoded as Argos
                decodes it) on Multi30k's test_2016_flickr; fitted on Multi30k's val (the
                stand-in's validation split)
      held_out  the same package on STRINGS strings of the programs never seen (the `held_out`
                catalogs, as target.never_seen takes them: program.py's sample); the same
                calibration, fitted on captions: does it carry over to software strings?
      program   the stand-in fine-tuned on postgres-15's catalog (make bench-adapt's
                program.py: CHECKPOINT, in --program-work) on that program's newer strings
                (its test split, all of them, or --sentences of every set but held_out); fitted on
                its valid split
    each test and validation set, every string whole (translate_texts, as program.py), decoded
      greedy, beam 4 and beam 4's four best (the model's own length penalty) -> each signal
      (SIGNALS) of each translation, the greedy one's and the beam-4 one's:
        mean log-prob     the mean log-probability a piece, EOS counted (the engines' signal,
                          the one kept)
        sum log-prob      the same summed (pieces counted by encoding the output again)
        greedy-beam agreement   the greedy output's sentence chrF against beam 4's
        n-best agreement  the mean sentence chrF of beam 4's best against each of its others
      -> each signal mapped to a confidence by its own logistic fit on the validation set
         (confidence.fit, decoded alike), and measured against each translation's sentence
         chrF on the test (confidence.measured): Pearson, Spearman, ROC AUC for the
         translations below the bound (chrF 50), expected calibration error, the mean chrF of
         what is kept when the least sure 10/20/50% are withheld (withholding at random keeps
         the mean: chrF all)
    the kept signal's calibration fitted on other sets (CALIBRATIONS): captions; captions and
      SOFTWARE strings of the `user` programs other than the fine-tune's (neither the package's
      training programs nor the held-out ones); those strings alone -> its calibration error
      on each set, greedy and beam 4
    texts: consecutive test strings joined in pairs, each translated apart (as translate_texts
      translates a text's sentences) -> the text's confidence from its two: the lowest, or
      their mean weighted by each source's characters (the code's text_confidence), measured
      against the text's chrF
    CPU: the package's CTranslate2 translator on the captions' sources, one thread, alternating
      rounds (the process's CPU time): greedy and beam 4 with return_scores off and on, beam
      4's four best, and the n-best agreement's chrF in Python

No reverse model (a de -> en model scoring the source by forced decoding) exists here: none is
measured, as docs/confidence.md says.
"""

import dataclasses
import math
import random
import statistics
import time
from pathlib import Path

import torch

from benchmarks import common
from benchmarks.adapt.program import software
from benchmarks.adapt.target import never_seen, split_of, spread
from benchmarks.adapt.tuning import MULTI30K
from seq2seq.config import DecodeConfig, load_config
from seq2seq.decoding.argos_engine import ArgosEngine
from seq2seq.decoding.confidence import (
    ACCEPTABLE_CHRF,
    Calibration,
    calibration_error,
    fit,
    measured,
    pearson,
    sentence_chrfs,
    text_confidence,
)
from seq2seq.decoding.engine_choice import described, load_engine
from seq2seq.decoding.engines import translate_texts
from seq2seq.localization import catalogs
from seq2seq.plot import pyplot
from seq2seq.support.errors import UserError, run_cli
from seq2seq.text.sentences import Texts

OUT = common.RESULTS / "confidence"
PICTURE = common.ROOT / "docs/confidence.png"
STANDIN = common.ROOT / "runs/standin_en_de/en_de.int8.argosmodel"  # make standin's
STANDIN_CONFIG = common.ROOT / "configs/standin_en_de.yaml"
PROGRAM = "postgres-15"  # the program the fine-tune learnt (program.py's default)
PROGRAM_WORK = common.ROOT / "runs/bench-adapt-program"  # program.py's --work
TUNED = "runs/as_docs_adapt_md_said_dropout_0_caption_replay/best.pt"  # in PROGRAM_WORK
CATALOGS = Path("/usr/share/locale/de/LC_MESSAGES")
BEAM, NBEST = 4, 4
KEPT = "mean log-prob"  # the signal the engines give (confidence.SIGNAL)
SIGNALS = {  # the translations -> the signals of each
    "greedy": (KEPT, "sum log-prob", "greedy-beam agreement"),
    "beam 4": (KEPT, "sum log-prob", "n-best agreement"),
}
CALIBRATIONS = ("captions", "captions + software", "software")  # the kept signal's, fitted on
SHARES = (10, 20, 50)  # the least sure withheld, %
ROUNDS = 3  # of each CPU measurement, alternating
TARGETS = {"spearman": 0.5, "gain_20": 8.0, "calibration_error": 0.05}  # issue 83, held_out
DRAWS = 1000  # bootstrap resamples of the held-out strings, for the targets' 90% intervals


@dataclasses.dataclass
class Decoded:
    """A set's strings decoded greedy, beam 4 and into beam 4's NBEST best."""

    sources: list[str]
    references: list[str]
    outputs: dict[str, list[str]]  # greedy, beam 4 -> a translation a string
    means: dict[str, list[float]]  # -> each translation's mean log-prob a piece
    pieces: dict[str, list[int]]  # -> each translation's pieces
    nbest: list[list[str]]  # beam 4's NBEST best of each string, best first
    seconds: float


def decoded(engine, test: dict, decoding: DecodeConfig) -> Decoded:
    """`test`'s sources decoded each way (every source whole: one sentence)."""
    texts = Texts(test["sources"])
    ways = {"greedy": 1, "beam 4": BEAM}
    outputs, means, pieces = {}, {}, {}
    start = time.perf_counter()
    for way, beam in ways.items():
        done = translate_texts(engine, texts, dataclasses.replace(decoding, beam_size=beam))
        outputs[way] = done.translations
        means[way] = [each[0] for each in done.signals]
        pieces[way] = [len(ids) for ids in engine.tgt_vocab.encode(done.translations)]
    ranked = translate_texts(engine, texts, dataclasses.replace(decoding, beam_size=BEAM), NBEST)
    nbest = [[text for _, text in best] for best in ranked.translations]
    seconds = time.perf_counter() - start
    return Decoded(test["sources"], test["references"], outputs, means, pieces, nbest, seconds)


def summed(means: list[float], pieces: list[int]) -> list[float]:
    """Each translation's log-probability, from its mean a piece and its pieces (EOS counted:
    beam.per_piece's)."""
    return [mean * (n + 1) for mean, n in zip(means, pieces, strict=True)]


def agreement(best: str, others: list[str]) -> float:
    """The mean sentence chrF of `best` against each of `others` (100: none to disagree)."""
    if not others:
        return 100.0
    return statistics.fmean(sentence_chrfs(others, [best] * len(others)))


def signals(d: Decoded) -> dict[str, dict[str, list[float]]]:
    """Each way's translations -> each of its SIGNALS, a value a translation."""
    agree = sentence_chrfs(d.outputs["greedy"], d.outputs["beam 4"])
    nbest = [agreement(best[0], best[1:]) if best else 0.0 for best in d.nbest]
    found = {}
    for way in SIGNALS:
        found[way] = {KEPT: d.means[way], "sum log-prob": summed(d.means[way], d.pieces[way])}
    found["greedy"]["greedy-beam agreement"] = agree
    found["beam 4"]["n-best agreement"] = nbest
    return found


def chrfs(d: Decoded) -> dict[str, list[float]]:
    """Each way's translations' sentence chrF against the references."""
    return {way: sentence_chrfs(d.outputs[way], d.references) for way in SIGNALS}


def confidences(calibration: Calibration, values: list[float]) -> list[float]:
    return [calibration.probability(value) for value in values]


def rounded(figures: dict) -> dict:
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in figures.items()}


def judged(valid: Decoded, test: Decoded) -> tuple[list[dict], dict]:
    """Each way's each signal, fitted on `valid` and measured on `test` -> the rows, and each
    way's calibration of the kept signal."""
    rows, kept = [], {}
    fitted_on, scored = (signals(valid), chrfs(valid)), (signals(test), chrfs(test))
    for way, names in SIGNALS.items():
        for name in names:
            calibration = fit(fitted_on[0][way][name], fitted_on[1][way])
            sure = confidences(calibration, scored[0][way][name])
            figures = measured(sure, scored[1][way], calibration.bound)
            finite = [(v, c) for v, c in zip(scored[0][way][name], scored[1][way], strict=True)
                      if math.isfinite(v)]  # fmt: skip
            raw = pearson(*zip(*finite, strict=True)) if len(finite) > 1 else 0.0
            rows.append(rounded({"translations": way, "signal": name, **figures,
                                 "chrf_kept_oracle_20": oracle(scored[1][way], 20),
                                 "pearson_signal": raw, "slope": calibration.slope}))  # fmt: skip
            if name == KEPT:
                kept[way] = calibration
    return rows, kept


def oracle(scores: list[float], share: int) -> float:
    """The mean chrF kept when the `share`% with the lowest chrF are withheld: what a
    confidence that knew the reference would keep."""
    ranked = sorted(scores)
    rest = ranked[len(ranked) * share // 100 :]
    return sum(rest) / max(len(rest), 1)


def intervals(sure: list[float], scores: list[float], bound: float) -> dict[str, list[float]]:
    """The targets' figures on DRAWS resamples of the strings (with replacement, a fixed seed):
    each one's 5th and 95th percentile, the spread that the sample alone makes."""
    draw = random.Random(0)
    found: dict[str, list[float]] = {key: [] for key in TARGETS}
    for _ in range(DRAWS):
        pick = [draw.randrange(len(sure)) for _ in sure]
        figures = measured([sure[i] for i in pick], [scores[i] for i in pick], bound)
        found["spearman"].append(figures["spearman"])
        found["gain_20"].append(figures["chrf_kept_withholding_20"] - figures["chrf_all"])
        found["calibration_error"].append(figures["calibration_error"])
    return {key: [round(v, 3) for v in statistics.quantiles(values, n=20)[::18]]
            for key, values in found.items()}  # fmt: skip


def text_level(test: Decoded, calibration: Calibration) -> dict:
    """Consecutive strings joined in pairs (greedy translations, the kept signal): the text's
    confidence as the lowest of its two and as their mean weighted by each source's
    characters (text_confidence, the code's), against the text's chrF."""
    sure = confidences(calibration, test.means["greedy"])
    outputs, references = test.outputs["greedy"], test.references
    pairs = [(i, i + 1) for i in range(0, len(outputs) - 1, 2)]
    text_chrfs = sentence_chrfs([f"{outputs[i]} {outputs[j]}" for i, j in pairs],
                                [f"{references[i]} {references[j]}" for i, j in pairs])  # fmt: skip
    lowest = [min(sure[i], sure[j]) for i, j in pairs]
    sources = test.sources
    mean = [text_confidence([sure[i], sure[j]], [sources[i], sources[j]]) for i, j in pairs]
    return {
        "texts": len(pairs),
        "lowest": rounded(measured(lowest, text_chrfs, calibration.bound)),
        "weighted mean": rounded(measured(mean, text_chrfs, calibration.bound)),
    }


def transfer(valids: dict[str, Decoded], tests: dict[str, Decoded]) -> list[dict]:
    """The kept signal's calibration fitted on each of CALIBRATIONS, on greedy translations
    (what evaluate --calibrate and validation fit: applied to greedy's and to beam 4's) and on
    beam 4's (applied to beam 4's) -> its calibration error, mean confidence and the share
    acceptable on the package's two test sets."""
    fitted_sets = {"captions": [valids["captions"]],
                   "captions + software": [valids["captions"], valids["software"]],
                   "software": [valids["software"]]}  # fmt: skip
    rows = []
    for name in CALIBRATIONS:
        for fitted_way in SIGNALS:
            values = [v for d in fitted_sets[name] for v in d.means[fitted_way]]
            scores = [c for d in fitted_sets[name] for c in chrfs(d)[fitted_way]]
            calibration = fit(values, scores)
            for way in SIGNALS:
                if fitted_way == "greedy" or way == fitted_way:
                    row = {"calibration": name, "fitted_on": fitted_way, "translations": way,
                           "sentences": calibration.sentences}  # fmt: skip
                    for set_name in ("captions", "held_out"):
                        d = tests[set_name]
                        sure = confidences(calibration, d.means[way])
                        good = [c >= calibration.bound for c in chrfs(d)[way]]
                        row[f"error_{set_name}"] = round(calibration_error(sure, good), 4)
                        row[f"confidence_{set_name}"] = round(statistics.fmean(sure), 4)
                        row[f"acceptable_{set_name}"] = round(statistics.fmean(good), 4)
                    rows.append(row)
    return rows


def cpu_costs(engine: ArgosEngine, sources: list[str], decoding: DecodeConfig) -> dict:
    """CPU ms a sentence of the package's translator on `sources`: greedy and beam 4 with
    return_scores off and on, beam 4's NBEST best (scores on), and the n-best agreement's
    chrF; the median of ROUNDS alternating rounds."""
    tokens, _ = engine.encoded(sources)
    tokens = [t for t in tokens if t]

    def search(beam: int, hypotheses: int, scores: bool):
        return engine.translator.translate_batch(
            tokens, beam_size=beam, num_hypotheses=hypotheses, return_scores=scores,
            length_penalty=decoding.length_penalty, replace_unknowns=True,
            max_batch_size=decoding.batch_size,
        )  # fmt: skip

    settings = {"greedy, no scores": (1, 1, False), "greedy, scores": (1, 1, True),
                "beam 4, no scores": (BEAM, 1, False), "beam 4, scores": (BEAM, 1, True),
                f"beam 4, {NBEST} best": (BEAM, NBEST, True)}  # fmt: skip
    search(1, 1, True)  # warm-up
    times: dict[str, list[float]] = {name: [] for name in settings}
    times["n-best agreement's chrF"] = []
    for _ in range(ROUNDS):
        for name, setting in settings.items():
            start = time.process_time()
            results = search(*setting)
            times[name].append(time.process_time() - start)
        texts = [[engine.detokenize(h) for h in r.hypotheses] for r in results]
        start = time.process_time()
        for best in texts:
            agreement(best[0], best[1:])
        times["n-best agreement's chrF"].append(time.process_time() - start)
    return {name: round(1000 * statistics.median(each) / len(tokens), 3)
            for name, each in times.items()}  # fmt: skip


def table(results: dict) -> str:
    """The results page: the signals, the calibrations, the texts, the costs, the targets."""
    parts = [signal_table(results), calibration_table(results), text_table(results),
             cost_table(results), targets_line(results)]  # fmt: skip
    return common.page("Confidence: how sure a translation is", *parts)


def signal_table(results: dict) -> str:
    header = ["set", "translations", "signal", "Pearson", "Spearman", "ROC AUC",
              "calibration error", "chrF all (= withholding at random)",
              *(f"kept, {s}% withheld" for s in SHARES), "gain at 20%",
              "gain at 20%, knowing the references"]  # fmt: skip
    rows = []
    for name, measure in results["sets"].items():
        for r in measure["rows"]:
            kept = [r[f"chrf_kept_withholding_{s}"] for s in SHARES]
            gains = [r[key] - r["chrf_all"] for key in ("chrf_kept_withholding_20",
                                                        "chrf_kept_oracle_20")]  # fmt: skip
            signal = f"**{r['signal']}** (kept)" if r["signal"] == KEPT else r["signal"]
            rows.append([name, r["translations"], signal, f"{r['pearson']:.2f}",
                         f"{r['spearman']:.2f}", f"{r['auroc']:.2f}",
                         f"{r['calibration_error']:.3f}", f"{r['chrf_all']:.1f}",
                         *(f"{k:.1f}" for k in kept), *(f"{g:+.1f}" for g in gains)])  # fmt: skip
    sets = results["sets"]
    each = "; ".join(
        f"{name}: {m['about']} ({m['test']:,} test strings; calibration fitted on "
        f"{m['valid']:,}, {m['fitted_on']})"
        for name, m in sets.items()
    )
    shares = ", ".join(f"{n} {m['rows'][0]['acceptable']:.0%}" for n, m in sets.items())
    note = (
        f"{each}. Acceptable: sentence chrF {results['bound']:g} or above (greedy: "
        f"{shares}). Every signal is mapped to a confidence by its own logistic fit on its "
        "set's validation strings, decoded alike, and every figure is the confidence's (the "
        "signal's order where the fit's slope is positive); knowing the references: the 20% "
        f"with the lowest chrF withheld. Beam {BEAM}: the model's own length penalty "
        f"({results['length_penalty']}); n-best agreement: its {NBEST} best."
    )
    return common.markdown_table(header, rows, note)


def calibration_table(results: dict) -> str:
    header = ["calibration fitted on", "fitted on translations", "applied to",
              "sentences", "captions: error", "mean confidence / acceptable",
              "held_out: error", "mean confidence / acceptable"]  # fmt: skip
    rows = [[r["calibration"], r["fitted_on"], r["translations"], f"{r['sentences']:,}",
             f"{r['error_captions']:.3f}",
             f"{r['confidence_captions']:.2f} / {r['acceptable_captions']:.2f}",
             f"{r['error_held_out']:.3f}",
             f"{r['confidence_held_out']:.2f} / {r['acceptable_held_out']:.2f}"]
            for r in results["calibrations"]]  # fmt: skip
    c = results["calibration_sets"]
    note = (
        f"The kept signal's calibration fitted on captions (Multi30k's val, {c['captions']:,} "
        f"captions), on captions and software ({c['captions']:,} and {c['software']:,} "
        f"strings of the {c['software_programs']} `user` programs other than "
        f"{results['program']}: none that the package or the held-out tests read), or on "
        "the software strings alone; its expected calibration error (10 bins) on the "
        "package's two test sets, with the mean confidence against the share acceptable."
    )
    return common.markdown_table(header, rows, note)


def text_table(results: dict) -> str:
    header = ["set", "texts", "text confidence", "Pearson", "Spearman", "ROC AUC",
              "calibration error", "kept, 20% withheld", "chrF all"]  # fmt: skip
    rows = [[name, m["texts"]["texts"], way, f"{f['pearson']:.2f}", f"{f['spearman']:.2f}",
             f"{f['auroc']:.2f}", f"{f['calibration_error']:.3f}",
             f"{f['chrf_kept_withholding_20']:.1f}", f"{f['chrf_all']:.1f}"]
            for name, m in results["sets"].items() for way in ("lowest", "weighted mean")
            for f in [m["texts"][way]]]  # fmt: skip
    note = (
        "Texts of two: each set's consecutive test strings joined in pairs, each translated "
        "apart (greedy), as translate_texts translates a text's sentences; the text's "
        "confidence the lowest of its two or their mean weighted by each source's "
        "characters (the code's: text_confidence); against the joined translation's chrF."
    )
    return common.markdown_table(header, rows, note)


def cost_table(results: dict) -> str:
    cost = results["cpu"]
    base = {"greedy": cost["greedy, no scores"], "beam": cost["beam 4, no scores"]}
    rows = [[name, f"{ms:.2f}", "-" if "chrF" in name else
             f"{ms / base['beam' if 'beam' in name else 'greedy']:.2f}x"]
            for name, ms in cost.items()]  # fmt: skip
    agreeing = cost[f"beam 4, {NBEST} best"] + cost["n-best agreement's chrF"]
    note = (
        f"The package's CTranslate2 translator (one thread, int8) on the "
        f"{results['cpu_sentences']:,} captions, the median of {ROUNDS} alternating rounds "
        f"(the process's CPU time), on {results['machine']['device_name']}. The n-best "
        f"agreement costs {agreeing:.2f} ms a sentence (its search and its chrF), "
        f"{agreeing / cost['greedy, scores']:.1f}x greedy with the kept signal."
    )
    return common.markdown_table(["decoding", "CPU ms a sentence", "against no scores"],
                                 rows, note)  # fmt: skip


def targets_line(results: dict) -> str:
    t = results["targets"]
    return (
        "Targets (issue 83), held_out, the kept signal (greedy, captions' calibration; in "
        f"brackets the 5th and 95th percentile of {DRAWS:,} bootstrap resamples of its "
        f"strings): Spearman {t['spearman']:.2f} {spread_of(t, 'spearman', '.2f')} (>= "
        f"{TARGETS['spearman']}: {yes(t['spearman'] >= TARGETS['spearman'])}); withholding "
        f"the least sure 20% raises chrF by {t['gain_20']:+.1f} "
        f"{spread_of(t, 'gain_20', '+.1f')} (>= {TARGETS['gain_20']:g}: "
        f"{yes(t['gain_20'] >= TARGETS['gain_20'])}; knowing the references, "
        f"{t['gain_20_knowing']:+.1f}); calibration error {t['calibration_error']:.3f} "
        f"{spread_of(t, 'calibration_error', '.3f')} (<= {TARGETS['calibration_error']}: "
        f"{yes(t['calibration_error'] <= TARGETS['calibration_error'])}), "
        f"{t['calibration_error_mixed']:.3f} with the captions + software calibration. "
        + common.on_machine(results["machine"], "make bench-confidence")
    )


def spread_of(targets: dict, key: str, form: str) -> str:
    low, high = targets["intervals"][key]
    return f"[{low:{form}}, {high:{form}}]"


def yes(met: bool) -> str:
    return "met" if met else "not met"


def targets(results: dict, sure: list[float], scores: list[float]) -> dict:
    """The issue's targets on the held-out strings (greedy, the kept signal, the captions'
    calibration), with their bootstrap intervals and what a perfect confidence would gain."""
    row = next(r for r in results["sets"]["held_out"]["rows"]
               if r["translations"] == "greedy" and r["signal"] == KEPT)  # fmt: skip
    mixed = next(r for r in results["calibrations"] if r["calibration"] == "captions + software"
                 and r["fitted_on"] == r["translations"] == "greedy")  # fmt: skip
    return {"spearman": row["spearman"],
            "gain_20": round(row["chrf_kept_withholding_20"] - row["chrf_all"], 2),
            "calibration_error": row["calibration_error"],
            "calibration_error_mixed": mixed["error_held_out"],
            "gain_20_knowing": round(row["chrf_kept_oracle_20"] - row["chrf_all"], 2),
            "intervals": intervals(sure, scores, results["bound"])}  # fmt: skip


def draw(results: dict, points: dict, path: Path) -> None:
    """A column a set: sentence chrF against the kept signal's confidence (greedy), each
    string a dot; under it, the reliability of the confidence: in 10 bins, the share
    acceptable against the mean confidence (the diagonal: calibrated), each bin's strings."""
    plt = pyplot()
    figure, panels = plt.subplots(2, len(points), figsize=(4.2 * len(points), 7.5),
                                  squeeze=False)  # fmt: skip
    bound = results["bound"]
    for column, (name, (sure, scores)) in enumerate(points.items()):
        top, bottom = panels[0][column], panels[1][column]
        top.scatter(sure, scores, s=5, alpha=0.35)
        top.axhline(bound, color="C3", lw=0.8, ls="--")
        top.set_title(f"{name}: {results['sets'][name]['short']}", fontsize=9)
        top.set_xlabel("confidence")
        top.set_ylabel("sentence chrF")
        top.set_xlim(0, 1)
        top.grid(alpha=0.3)
        bins = [[i for i, c in enumerate(sure) if k / 10 <= c < (k + 1) / 10 or (k == 9 and c == 1)]
                for k in range(10)]  # fmt: skip
        filled = [b for b in bins if b]
        means = [statistics.fmean(sure[i] for i in b) for b in filled]
        shares = [statistics.fmean(scores[i] >= bound for i in b) for b in filled]
        bottom.plot([0, 1], [0, 1], color="grey", lw=0.8, ls=":")
        bottom.plot(means, shares, marker="o")
        for x, y, b in zip(means, shares, filled, strict=True):
            bottom.annotate(str(len(b)), (x, y), fontsize=6, xytext=(3, -9),
                            textcoords="offset points")  # fmt: skip
        error = next(r for r in results["sets"][name]["rows"]
                     if r["translations"] == "greedy" and r["signal"] == KEPT)  # fmt: skip
        bottom.set_title(f"calibration error {error['calibration_error']:.3f}", fontsize=9)
        bottom.set_xlabel("mean confidence of the bin")
        bottom.set_ylabel(f"share at chrF {bound:g} or above")
        bottom.set_xlim(0, 1)
        bottom.set_ylim(0, 1)
        bottom.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def cut(test: dict, count: int) -> dict:
    """`count` of a set's pairs spread over it (0: all)."""
    return {key: spread(test[key], count) for key in ("sources", "references")}


def main(argv: list[str] | None = None) -> None:
    parser = common.arguments(__doc__, out=OUT)
    parser.add_argument("--package", type=Path, default=STANDIN)
    parser.add_argument("--program-work", type=Path, default=PROGRAM_WORK,
                        help="make bench-adapt's program.py work folder")  # fmt: skip
    parser.add_argument("--tuned", type=Path, help=f"default: PROGRAM_WORK/{TUNED}")
    parser.add_argument("--catalogs", type=Path, default=CATALOGS)
    parser.add_argument("--multi30k", type=Path, default=MULTI30K)
    parser.add_argument("--strings", type=int, default=500, help="of the held-out programs")
    parser.add_argument(
        "--software",
        type=int,
        default=500,
        help="strings of the other user programs, for a mixed calibration",
    )
    parser.add_argument(
        "--sentences",
        type=int,
        default=0,
        help="at most this many strings of every other set (0: all)",
    )
    args = parser.parse_args(argv)
    work = args.program_work.resolve()
    tuned = (args.tuned or work / TUNED).resolve()
    needed = {
        args.package: "make standin",
        tuned: "make bench-adapt (program.py)",
        work / "data/catalogs/test.src": "make bench-adapt (program.py)",
        args.multi30k / "val.en.gz": "../shared/corpora/multi30k",
        args.catalogs: "-",
    }
    for path, made in needed.items():
        if not path.exists():
            raise UserError(f"{path}: not found (made by {made})")
    torch.set_num_threads(1)
    config = load_config(str(STANDIN_CONFIG))
    languages = (config.corpus.src_lang, config.corpus.tgt_lang)
    multi30k = {split: split_of(*(args.multi30k / f"{split}.{lang}.gz" for lang in languages))
                for split in ("val", "test_2016_flickr")}  # fmt: skip
    others = [p for p in catalogs.catalog_files(args.catalogs, "user") if p.stem != PROGRAM]
    held = never_seen(args.catalogs.resolve(), config, args.strings)
    program = {split: split_of(*(work / f"data/catalogs/{split}.{side}" for side in ("src", "tgt")))
               for split in ("valid", "test")}  # fmt: skip
    package = ArgosEngine.load(args.package, "cpu")
    fine_tune = load_engine(checkpoint=tuned, choice="auto", device="cpu")
    print(f"package: {described(package)}; fine-tune: {described(fine_tune)}", flush=True)
    own = package.config.decode
    valids, tests = {}, {}
    for name, test in (("captions", multi30k["val"]),
                       ("software", software(others, languages, args.software))):  # fmt: skip
        valids[name] = decoded(package, cut(test, args.sentences), own)
    tests["captions"] = decoded(package, cut(multi30k["test_2016_flickr"], args.sentences), own)
    tests["held_out"] = decoded(package, held, own)
    tuned_decode = fine_tune.config.decode
    valids["program"] = decoded(fine_tune, cut(program["valid"], args.sentences), tuned_decode)
    tests["program"] = decoded(fine_tune, cut(program["test"], args.sentences), tuned_decode)
    for name, d in {**valids, **tests}.items():
        print(f"decoded {name}: {len(d.references):,} strings, {d.seconds:.0f} s", flush=True)
    fitted = {"captions": "captions", "held_out": "captions", "program": "program"}
    about = {
        "captions": "the stand-in package on Multi30k's test_2016_flickr",
        "held_out": f"the stand-in package on {len(held['sources']):,} strings of the "
        f"{len(held['programs'])} held-out programs",
        "program": f"the stand-in fine-tuned on {PROGRAM} on its newer strings",
    }
    short = {
        "captions": "the stand-in, Multi30k's test",
        "held_out": "the stand-in, programs never seen",
        "program": f"its fine-tune, {PROGRAM}'s newer strings",
    }
    fitted_on = {"captions": "Multi30k's val", "held_out": "Multi30k's val (captions)",
                 "program": f"{PROGRAM}'s valid split"}  # fmt: skip
    sets, points = {}, {}
    for name, test in tests.items():
        rows, kept = judged(valids[fitted[name]], test)
        sets[name] = {"about": about[name], "short": short[name], "test": len(test.references),
                      "valid": len(valids[fitted[name]].references), "fitted_on": fitted_on[name],
                      "rows": rows, "calibration": kept["greedy"].to_dict(),
                      "texts": text_level(test, kept["greedy"])}  # fmt: skip
        points[name] = (confidences(kept["greedy"], test.means["greedy"]), chrfs(test)["greedy"])
        print(name, rows[0], flush=True)
    shown = {"package": args.package, "tuned": tuned}
    cpu_sources = cut(multi30k["test_2016_flickr"], args.sentences)["sources"]
    results = {
        "machine": common.machine(), "bound": ACCEPTABLE_CHRF,
        "length_penalty": own.length_penalty, "program": PROGRAM,
        "length_penalty_tuned": tuned_decode.length_penalty,
        "models": {k: str(p.relative_to(common.ROOT) if p.is_relative_to(common.ROOT) else p)
                   for k, p in ((k, Path(v).resolve()) for k, v in shown.items())},
        "sets": sets, "calibrations": transfer(valids, tests),
        "calibration_sets": {"captions": len(valids["captions"].references),
                             "software": len(valids["software"].references),
                             "software_programs": len(others)},
        "cpu": cpu_costs(package, cpu_sources, own), "cpu_sentences": len(cpu_sources),
    }  # fmt: skip
    results["targets"] = targets(results, *points["held_out"])
    common.save_results(args.out, results, table(results))
    draw(results, points, PICTURE if args.out == OUT else args.out.with_suffix(".png"))


if __name__ == "__main__":
    run_cli(main)
