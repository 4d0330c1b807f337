"""serve.limits_storage (serving/shared_limits.py) with a real Redis server: a client's limit
held across two instances of the service, not twice it; Redis gone, each instance counts
alone, says so in its log and /metrics, and shares again once Redis is back."""

import urllib.request

import pytest
from databases import needs_redis, start_redis
from prometheus_client.parser import text_string_to_metric_families

from benchmarks.service.contenders import free_port
from benchmarks.service.process import stop_server
from seq2seq.decoding.engines import TorchEngine
from seq2seq.serving import shared_limits
from seq2seq.serving.shared_limits import SharedLimits
from seq2seq.support.errors import UserError

from helpers import HANG, call, read_address, running, start_server

pytest.importorskip("limits", reason="shared limits are the extra seq2seq[replicas]")
TEXT = {"text": ["one is one"]}
UP = "seq2seq_limits_storage_up"


@pytest.fixture
def redis():
    """A Redis server of its own: (its process, its URL)."""
    port = free_port()
    process = start_redis(port)
    yield process, f"redis://127.0.0.1:{port}/0"
    process.kill()
    process.wait()


@needs_redis
@pytest.mark.slow
def test_a_clients_limit_holds_across_two_instances_not_twice_over(seed_run, redis):
    """Two services (two processes) sharing Redis, 3 requests a minute from one client:
    asked in turns, the first 3 in all are answered and the rest get a 429 saying when to try
    again; each counting alone, all 6 would be answered."""
    _, url = redis
    settings = ("serve.requests_per_minute=3", f"serve.limits_storage={url}")
    servers = [start_server("--checkpoint", str(seed_run / "best.pt"), *settings) for _ in "ab"]
    try:
        urls = [read_address(process) for process in servers]
        answers = [call(urls[turn % 2], "POST", "/translate", TEXT) for turn in range(6)]
    finally:
        for process in servers:
            stop_server(process)
    assert [status for status, _, _ in answers] == [200, 200, 200, 429, 429, 429]
    _, refusal, headers = answers[3]
    assert 1 <= int(headers["Retry-After"]) <= 60
    assert "3 requests per minute at most (serve.requests_per_minute)" in refusal["error"]


@needs_redis
def test_redis_gone_each_instance_counts_alone_and_says_so_until_it_is_back(
    trained_numbers_checkpoint, redis, monkeypatch, capsys
):
    process, url = redis
    monkeypatch.setattr(shared_limits, "RETRY_S", 0.0)  # tried again at the next request
    model = TorchEngine(trained_numbers_checkpoint[0])
    settings = {"requests_per_minute": 2, "limits_storage": url, "metrics": True}
    with running(model, **settings) as server:

        def storage_up() -> float:
            with urllib.request.urlopen(server.url + "metrics", timeout=HANG) as answer:
                text = answer.read().decode()
            [family] = [f for f in text_string_to_metric_families(text) if f.name == UP]
            return family.samples[0].value

        assert call(server.url, "POST", "/translate", TEXT)[0] == 200
        assert storage_up() == 1
        process.kill()
        process.wait()
        statuses = [call(server.url, "POST", "/translate", TEXT)[0] for _ in range(3)]
        assert statuses == [200, 200, 429]  # its own buckets, fresh: 2 then a 429
        said = capsys.readouterr().err
        assert said.count(f"warning: serve.limits_storage {url} does not answer") == 1
        assert storage_up() == 0
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        again = start_redis(port)
        try:
            assert call(server.url, "POST", "/translate", TEXT)[0] == 200  # Redis: 2 since
            assert f"serve.limits_storage {url} answers again" in capsys.readouterr().err
            assert storage_up() == 1
        finally:
            again.kill()
            again.wait()


def test_a_storage_limits_does_not_know_is_one_line_naming_the_setting():
    with pytest.raises(UserError, match=r"serve.limits_storage postgres://x: .*"):
        SharedLimits("postgres://x")
