"""The server profile's bookkeeping (benchmarks/service/profile.py): a py-spy sample's step is
its innermost frame that a step names, a sample where its thread waits counts for nothing, and
each thread's CPU is split over its samples' steps, the threads py-spy does not see counted as
CTranslate2's. Then, where wrk and py-spy are installed, the whole profile of a small numbers
model's package."""

import json
import shutil
import subprocess
import sys

import pytest

from benchmarks.service import profile
from seq2seq.exports.argos import export_argos

from helpers import ENV, HANG

HTTP = "run (uvicorn/server.py:60);handle_events (h11/_connection.py:400)"
ROUTE = "post_translate (seq2seq/service/ours.py:108)"
RAW = f"""thread (7);{HTTP};{ROUTE};dumps (json/__init__.py:231) 3
thread (7);{HTTP};{ROUTE} 1
thread (7);run (uvicorn/server.py:60);EpollSelector.select (selectors.py:468) 50
thread (9);run (threading.py:1045);ArgosEngine.search (seq2seq/decoding/argos_engine.py:118) 40
thread (9);run (threading.py:1045);encode (sentencepiece/__init__.py:361) 2
"""


def test_a_sample_takes_the_step_of_its_innermost_named_frame():
    assert profile.step_of(f"{HTTP};{ROUTE};dumps (json/__init__.py:231)") == "JSON"
    assert profile.step_of(f"{HTTP};{ROUTE}") == "our routes and answers (seq2seq/service)"
    assert profile.step_of(HTTP) == "HTTP: uvicorn, h11"
    assert profile.step_of("main (something/else.py:1)") == profile.OTHER
    assert profile.step_of("run (a.py:1);EpollSelector.select (selectors.py:468)") is None


def test_each_threads_cpu_is_split_over_its_samples_and_the_unseen_ones_are_native(tmp_path):
    raw = tmp_path / "raw.txt"
    raw.write_text(RAW)
    by_thread = profile.samples(raw)
    assert by_thread[7] == {"JSON": 3, "our routes and answers (seq2seq/service)": 1}
    assert by_thread[9] == {"sentencepiece": 2}  # its wait for CTranslate2 left out
    cpu = profile.by_step({7: 1.0, 9: 0.5, 11: 2.0}, {7: 3.0, 9: 1.0, 11: 5.0}, by_thread)
    assert cpu == {
        "JSON": pytest.approx(1.5),
        "our routes and answers (seq2seq/service)": pytest.approx(0.5),
        "sentencepiece": pytest.approx(0.5),
        profile.NATIVE: pytest.approx(3.0),
    }


@pytest.mark.slow
def test_the_quick_profile_of_a_package_accounts_for_the_servers_cpu(
    trained_joint_numbers_checkpoint, tmp_path
):
    if not (shutil.which("wrk") and shutil.which("py-spy")):
        pytest.skip("no wrk or py-spy (apt-get install wrk; pip install py-spy)")
    checkpoint, test = trained_joint_numbers_checkpoint
    package, sentences = tmp_path / "numbers.argosmodel", tmp_path / "test.src"
    export_argos(checkpoint, package)
    sentences.write_text("".join(source + "\n" for source, _ in test))
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.service.profile", "--quick", "--package",
         str(package), "--sentences", str(sentences), "--out", str(tmp_path)],
        env=ENV, capture_output=True, text=True, timeout=HANG,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads((tmp_path / "profile.json").read_text())["packages"]["numbers.argosmodel"]
    for setting in ("greedy", "beam 4"):
        for clients in ("1", "16"):
            point = figures[setting][clients]
            assert point["requests"] > 0 and point["samples"] > 0
            steps = point["cpu_ms_per_request"]
            assert sum(steps.values()) == pytest.approx(point["server_cpu_ms_per_request"])
            assert steps[profile.NATIVE] > 0 and steps["HTTP: uvicorn, h11"] > 0
    assert "| server CPU ms per request |" in (tmp_path / "profile.md").read_text()
