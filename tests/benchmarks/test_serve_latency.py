"""The latency benchmark's quick mode on the seed model, without LibreTranslate, by each
harness (wrk where it is installed): every server, by each API it is asked by (ours with torch:
our API, LibreTranslate's and DeepL's), answers its check as `translate --engine torch` does,
and is measured at every number of clients."""

import json
import shutil
import subprocess
import sys

import pytest

from helpers import ENV, HANG


@pytest.mark.slow
@pytest.mark.parametrize("harness", ["python", "wrk"])
def test_quick_latency_benchmark_measures_every_server_at_every_load(seed_run, tmp_path, harness):
    if harness == "wrk" and shutil.which("wrk") is None:
        pytest.skip("no wrk (apt-get install wrk)")
    work = seed_run.parent.parent  # the folder of the seed run's config.yaml and data/
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.service.latency", "--quick", "--harness", harness,
         "--no-libretranslate", "--out", str(tmp_path)],
        cwd=work, env=ENV, capture_output=True, text=True, timeout=HANG,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads((tmp_path / "serve_latency.json").read_text())
    servers = results["servers"]
    assert list(servers) == ["ours, torch", "ours, CTranslate2", "ours, CTranslate2, 2 workers"]
    assert list(servers["ours, torch"]) == ["ours", "libretranslate", "deepl"]
    for label, apis in servers.items():
        for api, points in apis.items():
            checked = results["checked"][label][api]
            assert checked["requests"] > 0 and checked["unlike"] == checked["failed"] == 0, label
            assert list(points) == ["1", "4", "16", "32", "64"], label
            for point in points.values():
                assert point["failed"] == 0, (label, api, point["counts"])
                assert point["requests_per_s"] > 0 and point["p99_ms"] >= point["p50_ms"] > 0
    for label in ("ours, torch", "ours, CTranslate2"):
        assert servers[label]["libretranslate"]["1"]["sentences_per_batch"] == 1.0  # alone
        assert servers[label]["libretranslate"]["64"]["share_of_engine"] > 0
    table = (tmp_path / "serve_latency.md").read_text()
    assert "| ours, CTranslate2 | LibreTranslate's | 16 |" in table
    assert "| ours, torch | DeepL's | 16 |" in table  # beside ours, its CPU over ours'
