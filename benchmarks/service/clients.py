"""The clients of the service benchmarks: how a request asks for one sentence (our API's shape
or LibreTranslate's), keep-alive client threads that share the numbered requests, and a phase's
figures pooled over its rounds.

    numbered_work(n) -> work       client threads take request numbers from it
    client(url, shape, work, ...)  one keep-alive connection: (latency, answered, as expected)
    run_load(service, shape, ...)  `requests` requests from `clients` threads, into a Phase
    Phase.figures(label)           requests/s, latency p50 and p99, failed, mismatched, ...
"""

import http.client
import json
import queue
import statistics
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlencode, urlsplit

from benchmarks.service.process import HANG, cpu_seconds, get_json


@dataclass(frozen=True)
class Shape:
    """How a load asks for the translation of one sentence, and reads it from the answer."""

    name: str
    path: str
    content_type: str
    body: Callable[[str], bytes]
    translation: Callable[[dict], str]


OURS = Shape(
    "ours",
    "/translate",
    "application/json",
    lambda sentence: json.dumps({"text": [sentence]}).encode(),
    lambda answer: answer["translations"][0],
)


def libretranslate_shape(url: str) -> Shape:
    """LibreTranslate's request: a form with q, source and target, the pair the service
    names at GET /languages (LibreTranslate lists each language as a target of itself too);
    the answer's translatedText."""
    status, languages = get_json(url, "/languages")
    if status != 200:
        sys.exit(f"the service answered GET /languages with {status}: no LibreTranslate API")
    source, target = next(
        (lang["code"], to) for lang in languages for to in lang["targets"] if to != lang["code"]
    )
    return Shape(
        "libretranslate",
        "/translate",
        "application/x-www-form-urlencoded",
        lambda sentence: urlencode({"q": sentence, "source": source, "target": target}).encode(),
        lambda answer: answer["translatedText"],
    )


def numbered_work(count: int) -> queue.Queue:
    """The requests' numbers, for the clients to take."""
    work: queue.Queue[int] = queue.Queue()
    for i in range(count):
        work.put(i)
    return work


def client(url, shape: Shape, work: queue.Queue, sentences, expected, deadline, results) -> None:
    """Send requests on one keep-alive connection while there is work and time:
    results get (latency in seconds, answered with 200, the expected translation)."""
    connection = http.client.HTTPConnection(urlsplit(url).netloc, timeout=HANG)
    headers = {"Content-Type": shape.content_type}
    while time.monotonic() < deadline:
        try:
            i = work.get_nowait()
        except queue.Empty:
            break
        body = shape.body(sentences[i % len(sentences)])
        start = time.perf_counter()
        try:
            connection.request("POST", shape.path, body, headers)
            response = connection.getresponse()
            answer = json.loads(response.read())
            ok = response.status == 200
            same = ok and shape.translation(answer) == expected[i % len(expected)]
        except (OSError, http.client.HTTPException, ValueError, KeyError, IndexError):
            connection.close()  # reconnects at the next request
            ok = same = False
        results.append((time.perf_counter() - start, ok, same))
    connection.close()


@dataclass
class Phase:
    """One kind of load, pooled over its rounds."""

    requests: int = 0
    seconds: float = 0.0
    batches: int = 0
    sentences: int = 0
    cpu: float | None = 0.0  # the server's CPU seconds (None: unknown)
    results: list = field(default_factory=list)  # (latency, answered, as expected)
    attack: Counter | None = None  # the attacker's counts, for a phase under attack

    def add(self, requests: int, seconds: float, results: list, before: dict, after: dict):
        self.requests += requests
        self.seconds += seconds
        self.results += results
        self.batches += after["batches"] - before["batches"]
        self.sentences += after["sentences"] - before["sentences"]
        known = None not in (self.cpu, before["cpu"], after["cpu"])
        self.cpu = self.cpu + after["cpu"] - before["cpu"] if known else None

    def figures(self, label: str) -> dict:
        results = self.results
        answered = sum(ok for _, ok, _ in results)
        latencies = [latency for latency, ok, _ in results if ok] or [float("nan")] * 2
        percentiles = statistics.quantiles(latencies, n=100, method="inclusive")
        figures = {
            f"serve_{label}_requests_per_s": answered / self.seconds,  # one sentence each
            f"serve_{label}_latency_p50_ms": 1000 * percentiles[49],
            f"serve_{label}_latency_p99_ms": 1000 * percentiles[98],
            f"serve_{label}_failed": self.requests - answered,  # an error, or not sent in time
            f"serve_{label}_mismatched": sum(ok and not same for _, ok, same in results),
            f"serve_{label}_sentences_per_batch": self.sentences / max(1, self.batches),
        }
        if self.cpu is not None:  # what the server spends on a request, however busy the machine
            figures[f"serve_{label}_server_cpu_ms_per_request"] = 1000 * self.cpu / max(1, answered)
        if self.attack is not None:
            for key in ("poison_as_expected", "poison_otherwise", "idle_reopened"):
                figures[f"serve_{label}_{key}"] = self.attack[key]
        return figures


def run_load(service, shape: Shape, sentences, expected, requests: int, load: tuple, phase):
    """`requests` requests of one sentence from `clients` keep-alive clients, within `bound`
    seconds (load = (clients, bound)), into `phase`."""
    clients, bound = load
    url = service.url
    work = numbered_work(requests)
    results: list = []
    deadline = time.monotonic() + bound
    args = (url, shape, work, sentences, expected, deadline, results)
    threads = [threading.Thread(target=client, args=args) for _ in range(clients)]
    before = {**get_json(url, "/health")[1], "cpu": cpu_seconds(service.pid)}
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - start
    after = {**get_json(url, "/health")[1], "cpu": cpu_seconds(service.pid)}
    phase.add(requests, seconds, results, before, after)
