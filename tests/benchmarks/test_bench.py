"""The benchmark's quick mode, as a smoke test: every figure is produced and sane; and every
committed table is what its script writes from its committed JSON."""

import json
import re
import shutil
import subprocess
import sys

import pytest

from benchmarks.adapt import (
    catalog_map,
    confidence,
    exactness,
    laptop,
    learn,
    program,
    target,
    terms,
)
from benchmarks.checks import gpu_check, install_sizes
from benchmarks.common import RESULTS, private_home, run_json
from benchmarks.peers import report
from benchmarks.service import detection, documents, latency, model_memory, pairs, profile, swap
from benchmarks.speed import bench, scale, speed_quality, train_speed, validation

from helpers import ENV, HANG, ROOT, command

SMALL = ["corpus.train_size=2000", "corpus.valid_size=100", "corpus.test_size=200"]


@pytest.mark.slow
@pytest.mark.long  # make test-all
def test_quick_benchmark_writes_every_figure(tmp_path):
    shutil.copy(ROOT / "config.yaml", tmp_path / "config.yaml")

    def run(*args):
        done = subprocess.run(
            args, cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=HANG
        )
        assert done.returncode == 0, done.stderr[-2000:]

    run(*command("seq2seq.data", *SMALL))
    run(sys.executable, "-m", "benchmarks.speed.bench", "--quick", "--out", "out", *SMALL)
    results = json.loads((tmp_path / "out/bench.json").read_text())
    figures = results["figures"]
    assert results["mode"] == "quick" and results["machine"]["torch"]
    assert results["machine"]["matmul_2048_gflops"] > 0  # to relate the figures to a machine
    assert results["machine"]["import_torch_seconds"] > 0
    for key in (
        "train_tokens_per_s",
        "nn_transformer_train_tokens_per_s",
        "train_speed_vs_nn_transformer",
        "decode_sentences_per_s_cached_batch1",
        "decode_sentences_per_s_recompute_batch64",
        "decode_speedup_cached_vs_recompute",
        "long_decode_speedup_cached_vs_recompute",
        "train_flops_fraction_of_matmul_peak",
        "train_peak_memory_mib",
        "decode_peak_memory_mib",
        "translate_sentences_per_s_ctranslate2_int8_batch1",
        "ctranslate2_int8_vs_ours_batch64",
        "transformers_float32_vs_ours_batch1",
        "argos_vs_ours_batch1",
        "serve_torch_requests_per_s",
        "serve_torch_p99_ms",
        "serve_torch_attack_requests_per_s",
        "serve_torch_attack_p99_ms",
        "serve_torch_p99_attack_vs_calm",
        "serve_torch_attack_poison_as_expected",
        "serve_ctranslate2_requests_per_s",
        "serve_ctranslate2_attack_p99_ms",
        "serve_ctranslate2_p99_attack_vs_calm",
        "serve_ctranslate2_vs_torch",
        "serve_vs_translate_command",
    ):
        assert figures[key] > 0, key
    # every well-formed request answered, under attack too; the torch service's answers
    # are the translate command's
    assert figures["serve_failed"] == figures["serve_unlike"] == 0
    for engine in ("torch", "ctranslate2"):
        assert figures[f"serve_{engine}_failed"] == figures[f"serve_{engine}_attack_failed"] == 0
        assert figures[f"serve_{engine}_attack_poison_otherwise"] == 0  # each got its 4xx
    assert figures["serve_torch_unlike"] == figures["serve_torch_attack_unlike"] == 0
    assert figures["serve_torch_libretranslate_failed"] == 0  # LibreTranslate's requests
    assert figures["serve_torch_libretranslate_unlike"] == 0
    for phase in ("", "_attack"):  # each output cut to its own length limit, as ours
        assert figures[f"serve_ctranslate2{phase}_unlike"] == 0
    for form in ("ctranslate2_float32", "transformers_float32", "argos"):
        assert 0 < figures[f"{form}_same_outputs_as_ours"] <= 1, form
    assert figures["train_parameters"] == figures["nn_transformer_parameters"]
    assert "seconds_to_99_exact_match" in figures  # None: a quick run stops before 99%
    assert "| `train_speed_vs_nn_transformer` |" in (tmp_path / "out/bench.md").read_text()


def committed(stem: str) -> dict:
    return json.loads((RESULTS / f"{stem}.json").read_text("utf-8"))


TABLES = {  # results/<stem>.md: the function that wrote it from results/<stem>.json
    "bench": bench.markdown,
    "scale": scale.markdown,
    "validation": validation.table,
    "speed_quality": speed_quality.table,
    "train_speed": train_speed.table,
    "train_bleu": train_speed.bleu_table,
    "gpu": gpu_check.markdown,
    "install": lambda results: (
        f"# What each make target installs\n\n{install_sizes.table(results)}\n"
    ),
    "peers": report.markdown,
    "peers_multi30k_de_en": report.markdown,
    "adapt": target.table,
    "adapt_program": program.table,
    "adapt_laptop": laptop.table,
    "adapt_import": exactness.table,
    "terms": terms.table,
    "learn": learn.table,
    "confidence": confidence.table,
    "catalog_map": catalog_map.table,
    "serve_latency": latency.markdown,
    "detection": detection.markdown,
    "files": documents.markdown,
    "model_memory": model_memory.markdown,
    "swap": swap.markdown,
    "pairs": pairs.markdown,
    "pairs_numbers": pairs.markdown,
    "pairs_numbers_python": pairs.markdown,
    "pairs_standin_int8": pairs.markdown,
    "pairs_standin_float32": pairs.markdown,
    "profile": profile.markdown,
    "profile_standin_int8": profile.markdown,
}


@pytest.mark.parametrize("stem", TABLES)
def test_each_committed_table_is_written_from_its_json(stem):
    """The tables of benchmarks/results/, written again from their JSON, as they were written
    by their run (common.markdown_table and its neighbours keep every column and row)."""
    expected = (RESULTS / f"{stem}.md").read_text("utf-8")
    assert TABLES[stem](committed(stem)) == expected


def test_every_make_target_of_a_benchmark_has_its_row_in_the_readme():
    """benchmarks/README.md's table lists each target of the Makefile that runs a script of
    benchmarks/, and no other (so that no count or list of them can drift)."""
    makefile = (ROOT / "Makefile").read_text("utf-8")
    rules = re.findall(r"^([\w-]+):[^=\n]*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    targets = {target for target, recipe in rules if "-m benchmarks." in recipe}
    readme = (ROOT / "benchmarks/README.md").read_text("utf-8")
    rows = set(re.findall(r"^\| `make ([\w-]+)`", readme, re.MULTILINE))
    assert targets == rows and len(rows) > 15


def test_a_child_script_gets_its_json_and_a_home_of_its_own(tmp_path):
    """common.run_json gives a child its JSON on stdin and reads what it prints; private_home
    makes its home's folders, and the child sees them, not this user's."""
    child = "import json, os, sys; json.dump([json.load(sys.stdin), os.getenv('HOME')], sys.stdout)"
    home = tmp_path / "home"
    got = run_json([sys.executable, "-c", child], {"ä": [1]}, env=private_home(home))
    assert got == [{"ä": [1]}, str(home)]
    assert sorted(p.name for p in home.iterdir()) == ["cache", "config", "data", "tmp"]
