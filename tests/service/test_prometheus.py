"""GET /metrics (serve.metrics): Prometheus' text format, read back by prometheus_client's own
parser; its counts move by exactly what was sent; its token; off, a 404 and nothing installed;
with two workers, the figures of both, whichever answers."""

import http.client
import os
import signal
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from prometheus_client import multiprocess
from prometheus_client.parser import text_string_to_metric_families

from benchmarks.service.process import stop_server
from seq2seq.decoding.engines import TorchEngine, Translated
from seq2seq.service.prometheus import SHARED, Measure, SizedFiles, bare_answers
from seq2seq.serving.batcher import Job, Options
from seq2seq.text.sentences import Texts

from helpers import HANG, call, running, spawned_workers, start_workers, wait_until

TOKEN = "a scraper's token"
AUTHORIZED = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def measured(trained_numbers_checkpoint):
    """A server of the small numbers model with serve.metrics on, behind TOKEN."""
    model = TorchEngine(trained_numbers_checkpoint[0])
    with running(model, metrics=True, metrics_auth_token=TOKEN) as server:
        yield server


def get(url: str, path: str, headers: dict) -> tuple[int, str, dict]:
    """-> status, the body as text, the headers."""
    connection = http.client.HTTPConnection(urlsplit(url).netloc, timeout=HANG)
    connection.request("GET", path, headers=headers)
    response = connection.getresponse()
    answer = response.read().decode()
    connection.close()
    return response.status, answer, response.headers


def scrape(url: str, headers: dict = AUTHORIZED) -> dict[tuple, float]:
    """/metrics' samples, read by prometheus_client's parser: {(name, labels...): value}."""
    status, text, _ = get(url, "/metrics", headers)
    assert status == 200, text
    return {
        (sample.name, *sorted(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


REQUESTS, ERRORS = "seq2seq_http_requests_total", "seq2seq_http_errors_total"


def requests(route: str, pair: str, status: int) -> tuple:
    """The key of a count of requests in scrape's samples."""
    return (REQUESTS, ("pair", pair), ("route", route), ("status", str(status)))


def errors(route: str, status: int) -> tuple:
    return (ERRORS, ("route", route), ("status", str(status)))


def moved(before: dict, after: dict) -> dict:
    """The samples that changed, by how much."""
    return {key: value - before.get(key, 0) for key, value in after.items()}


def test_the_counts_move_by_what_was_sent(measured):
    url, model = measured.url, measured.models.default
    pair, by_model = model.pair, (("model", model.name), ("pair", model.pair))
    before = scrape(url)
    for text in (["one is one"], ["two is two", "three is three"], ["four is four"]):
        assert call(url, "POST", "/translate", {"text": text})[0] == 200
    request = {"q": ["five is five", "six is six"], "source": "en", "target": model.target.code}
    assert call(url, "POST", "/translate", request)[0] == 200
    assert call(url, "POST", "/translate", {"txt": ["one"]})[0] == 400
    assert call(url, "GET", "/nowhere")[0] == 404
    assert call(url, "GET", "/health")[0] == 200
    batches = ("seq2seq_batch_sentences_count", *by_model)
    # a batch is counted after its answers are given: wait for the last one's
    wait_until(lambda: scrape(url)[batches] - before.get(batches, 0) == 4, "the 4 batches counted")
    after = scrape(url)
    change = moved(before, after)
    assert change[requests("/translate", pair, 200)] == 4
    assert change[requests("/translate", "", 400)] == 1
    assert change[errors("/translate", 400)] == 1
    assert change[requests("other", "", 404)] == 1 and change[errors("other", 404)] == 1
    assert change[requests("/health", "", 200)] == 1
    count = ("seq2seq_http_request_duration_seconds_count", ("route", "/translate"))
    assert change[count] == 5
    assert change[("seq2seq_batch_sentences_sum", *by_model)] == 6  # the sentences sent
    assert change[("seq2seq_batch_sentences_bucket", ("le", "1.0"), *by_model)] == 2
    assert change[("seq2seq_decoder_busy_seconds_total", *by_model)] > 0
    assert after[("seq2seq_queue_sentences", *by_model)] == 0
    assert after[("seq2seq_bare_translations_total", *by_model)] == 0  # the engines' rule
    assert after[("seq2seq_models_loaded", ("engine", "torch"), *by_model)] == 1
    counted = {key for key, value in change.items() if key[0] == ERRORS and value}
    assert counted == {errors("/translate", 400), errors("other", 404)}


def test_the_token_is_needed_and_the_guards_come_first(measured):
    before = scrape(measured.url)
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        status, text, answered = get(measured.url, "/metrics", headers)
        assert status == 401, headers
        assert "serve.metrics_auth_token" in text and answered["WWW-Authenticate"] == "Bearer"
    status, _, answered = get(measured.url, "/metrics", {"Host": "evil.example", **AUTHORIZED})
    assert status == 400  # DNS rebinding: access.py's Guard, as for every route
    status, _, answered = get(measured.url, "/metrics", AUTHORIZED)
    assert status == 200 and answered["Content-Type"].startswith("text/plain")
    change = moved(before, scrape(measured.url))
    assert change[requests("/metrics", "", 401)] == 3 and change[errors("/metrics", 400)] == 1


def test_the_description_has_metrics_with_its_token(measured):
    status, described, _ = call(measured.url, "GET", "/openapi.json")
    assert status == 200
    operation = described["paths"]["/metrics"]["get"]
    assert operation["security"] == [{"bearer": []}] and "401" in operation["responses"]
    routes = {(m, route.path) for route in measured.config.app.routes for m in route.methods}
    described = {(m.upper(), path) for path, item in described["paths"].items() for m in item}
    assert described == routes - {("HEAD", path) for _, path in routes}


def test_off_there_is_no_route_and_nothing_measures(trained_numbers_checkpoint):
    with running(TorchEngine(trained_numbers_checkpoint[0])) as server:
        status, answer, _ = call(server.url, "GET", "/metrics")
        app = server.config.app
        assert status == 404 and "GET /metrics" not in answer["error"]  # not among the routes
        assert not any(middleware.cls is Measure for middleware in app.user_middleware)
        assert server.models.default.batcher.on_batch is None


def shared_folder(worker: int) -> Path:
    """The folder where the workers of a service write their figures (PROMETHEUS_MULTIPROC_DIR,
    from the environment of one of them)."""
    variables = Path(f"/proc/{worker}/environ").read_bytes().split(b"\0")
    return Path(dict(v.split(b"=", 1) for v in variables if b"=" in v)[SHARED.encode()].decode())


def loaded(samples: dict) -> float:
    return sum(v for key, v in samples.items() if key[0] == "seq2seq_models_loaded")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_two_workers_figures_are_summed_whichever_answers(seed_run):
    """serve.workers=2: requests until both workers have counted some (each its own file in the
    shared folder); then every scrape counts them all, whichever worker answers it, and the
    models loaded are 2. A worker killed and replaced: its counts stay, its gauges go."""
    process, url = start_workers(seed_run, "serve.metrics=true")
    try:
        wait_until(lambda: len(spawned_workers(process.pid)) == 2, "two workers", process)
        workers = spawned_workers(process.pid)
        folder = shared_folder(min(workers))
        translated = requests("/translate", "en-digits", 200)
        sent = 0
        while not all((folder / f"counter_{worker}.db").exists() for worker in workers):
            assert call(url, "POST", "/translate", {"text": ["one is one"]})[0] == 200
            sent += 1
            assert sent < 1000, "one worker answered every request"
        # the last answer's worker counts it just after answering: wait for that
        wait_until(lambda: scrape(url, {})[translated] == sent, "every request counted")
        for _ in range(6):  # each on a new connection: either worker answers
            samples = scrape(url, {})
            assert samples[translated] == sent and loaded(samples) == 2
        os.kill(min(workers), signal.SIGKILL)
        wait_until(lambda: len(spawned_workers(process.pid) - workers) == 1, "a new worker")
        (new,) = spawned_workers(process.pid) - workers
        wait_until(lambda: (folder / f"gauge_livesum_{new}.db").exists(), "the new one's gauges")
        # its gauge file comes before its model is loaded: wait for that, not 3 (the dead one's)
        wait_until(lambda: loaded(scrape(url, {})) >= 2, "the new one's model loaded")
        samples = scrape(url, {})
        assert samples[translated] == sent and loaded(samples) == 2  # not 3: the dead one's gone
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=HANG) == 128 + signal.SIGTERM
        assert not folder.exists()
    finally:
        stop_server(process)


def test_a_workers_file_not_yet_sized_is_passed_over_not_a_failed_scrape(tmp_path):
    """A worker creates its file, then sizes it: a scrape between the two read an empty file,
    which fails prometheus_client's own collector (its issue #1199) and so /metrics with a
    500 (seen in test_two_workers_figures_are_summed_whichever_answers)."""
    (tmp_path / "counter_7.db").write_bytes(b"")
    with pytest.raises(Exception, match="unpack"):
        list(multiprocess.MultiProcessCollector(None, path=str(tmp_path)).collect())
    assert list(SizedFiles(None, path=str(tmp_path)).collect()) == []


def test_a_batchs_bare_translations_are_counted_text_by_text():
    """Texts answered with none of their words, empty or their placeholders alone; the best
    of an n-best; a job cancelled or failed counts nothing."""
    answered = Job(Texts(["Noise", "Delete %s", "%s", "Open"]), Options())
    answered.future.set_result(Translated(["", "%s", "", "Öffnen"], [[]] * 4, [[]] * 4))
    ranked = Job(Texts(["Noise"]), Options(nbest=2))
    ranked.future.set_result(Translated([[(-0.1, "%s"), (-0.2, "Rauschen")]], [[]], [[]]))
    failed, cancelled = Job(Texts(["Noise"]), Options()), Job(Texts(["Noise"]), Options())
    failed.future.set_exception(RuntimeError("the model failed"))
    cancelled.future.cancel()
    assert bare_answers([answered, ranked, failed, cancelled]) == 3
