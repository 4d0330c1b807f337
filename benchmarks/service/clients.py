"""The Python clients, the load harness's driver where each answer is read (harness.py pools
what they measure): how a request asks for one sentence, and keep-alive clients sharing
numbered requests.

    Shape.ours(beam_size=1), Shape.libretranslate("de", "en"), Shape.deepl("en", "de"),
    Shape.asking(api, "de", "en")   one sentence's request by an API of APIS, from and to a pair
    named_pair(url), libretranslate_shape(url)   the pair the service names at GET /languages
    ask(url, shape, sentence) -> (status, translation)     one request, alone
    run_load(service, shape, sentences, expected, requests, clients, processes) -> a turn
        `requests` requests of one sentence each (request i asks sentences[i % n] and expects
        expected[i % n]) from `clients` keep-alive clients (threads, in `processes` processes:
        one Python process's clients can be the bottleneck) -> its seconds, the requests
        answered (200), failed (not 200, or not sent within the bound), unlike (answered, but
        not as expected), each answered request's latency, and what the server spent
        (process.spending)
"""

import http.client
import json
import multiprocessing
import queue
import sys
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlencode, urlsplit

from benchmarks.service.process import HANG, Service, get_json, spending

APIS = ("ours", "libretranslate", "deepl")  # the APIs a request may speak (Shape.api)


@dataclass(frozen=True)
class Shape:
    """How a request asks for the translation of one sentence: our API's JSON (with `fields`
    such as beam_size) at POST /translate, LibreTranslate's form (q, with source and target)
    there too, or DeepL's JSON (text, with source_lang and target_lang) at POST
    /v2/translate."""

    api: str  # one of APIS
    fields: dict = field(default_factory=dict)

    @classmethod
    def ours(cls, **fields) -> "Shape":
        return cls("ours", fields)

    @classmethod
    def libretranslate(cls, source: str, target: str) -> "Shape":
        return cls("libretranslate", {"source": source, "target": target})

    @classmethod
    def deepl(cls, source: str, target: str) -> "Shape":
        return cls("deepl", {"source_lang": source.upper(), "target_lang": target.upper()})

    @classmethod
    def asking(cls, api: str, source: str, target: str) -> "Shape":
        """A request by `api` (APIS) from `source` to `target`, in that API's fields."""
        if api == "deepl":
            return cls.deepl(source, target)
        return cls(api, {"source": source, "target": target})

    @property
    def path(self) -> str:
        return "/v2/translate" if self.api == "deepl" else "/translate"

    def body(self, sentence: str) -> tuple[bytes, dict]:
        if self.api == "libretranslate":
            body = urlencode({"q": sentence, **self.fields}).encode()
            return body, {"Content-Type": "application/x-www-form-urlencoded"}
        body = json.dumps({"text": [sentence], **self.fields}).encode()  # ours, DeepL's
        return body, {"Content-Type": "application/json"}

    def translation(self, answer: dict) -> str:
        if self.api == "libretranslate":
            return answer["translatedText"]
        first = answer["translations"][0]
        return first["text"] if self.api == "deepl" else first


def named_pair(url: str) -> tuple[str, str]:
    """The first pair the service at `url` names at GET /languages (LibreTranslate's route,
    where each language is also listed as a target of itself): (source, target)."""
    status, languages = get_json(url, "/languages")
    if status != 200:
        sys.exit(f"the service answered GET /languages with {status}: no LibreTranslate API")
    return next(
        (lang["code"], to) for lang in languages for to in lang["targets"] if to != lang["code"]
    )


def libretranslate_shape(url: str) -> Shape:
    """LibreTranslate's request for the pair the service at `url` names (named_pair)."""
    return Shape.libretranslate(*named_pair(url))


def post(connection, shape: Shape, sentence: str) -> tuple[int, str | None]:
    """One request on `connection` -> (its status, the translation if it is 200)."""
    body, headers = shape.body(sentence)
    connection.request("POST", shape.path, body, headers)
    response = connection.getresponse()
    answer = response.read()
    return response.status, shape.translation(
        json.loads(answer)
    ) if response.status == 200 else None


def ask(url: str, shape: Shape, sentence: str) -> tuple[int, str | None]:
    """One request on a connection of its own."""
    connection = http.client.HTTPConnection(urlsplit(url).netloc, timeout=HANG)
    try:
        return post(connection, shape, sentence)
    finally:
        connection.close()


def client(url, shape: Shape, work: queue.Queue, sentences, expected, deadline, results) -> None:
    """Send requests on one keep-alive connection while there is work and time: results get
    (latency in seconds, answered with 200, the expected translation)."""
    connection = http.client.HTTPConnection(urlsplit(url).netloc, timeout=HANG)
    while time.monotonic() < deadline:
        try:
            i = work.get_nowait()
        except queue.Empty:
            break
        start = time.perf_counter()
        try:
            status, translation = post(connection, shape, sentences[i % len(sentences)])
            ok = status == 200
        except (OSError, http.client.HTTPException, ValueError, KeyError, IndexError):
            connection.close()  # reconnects at the next request
            ok, translation = False, None
        results.append(
            (time.perf_counter() - start, ok, ok and translation == expected[i % len(expected)])
        )
    connection.close()


def clients_of(url, shape, sentences, expected, clients: int, numbers, deadline) -> tuple:
    """`clients` client threads sharing the requests `numbers` -> (when they started and
    ended, on time.monotonic's clock, which every process shares; their results)."""
    work: queue.Queue[int] = queue.Queue()
    for number in numbers:
        work.put(number)
    results: list = []
    args = (url, shape, work, sentences, expected, deadline, results)
    threads = [threading.Thread(target=client, args=args) for _ in range(clients)]
    start = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return start, time.monotonic(), results


def run_load(
    service: Service,
    shape: Shape,
    sentences: list[str],
    expected: list[str],
    requests: int,
    clients: int,
    processes: int = 1,
    bound: float = HANG,
    batches: bool = True,
) -> dict:
    """`requests` one-sentence requests from `clients` keep-alive clients in up to `processes`
    processes, within `bound` seconds -> the turn's figures (see the module)."""
    processes = min(processes, clients)
    shares = [clients // processes + (i < clients % processes) for i in range(processes)]
    deadline = time.monotonic() + bound
    jobs = [
        (service.url, shape, sentences, expected, share, range(i, requests, processes), deadline)
        for i, share in enumerate(shares)
    ]
    with spending(service, batches) as spent:
        if processes == 1:
            done = [clients_of(*jobs[0])]
        else:
            with multiprocessing.get_context("spawn").Pool(processes) as pool:
                done = pool.starmap(clients_of, jobs)
    results = [one for _, _, results in done for one in results]
    latencies = [latency for latency, ok, _ in results if ok]
    return {
        "seconds": max(end for _, end, _ in done) - min(start for start, _, _ in done),
        "answered": len(latencies),
        "failed": requests - len(latencies),
        "unlike": sum(ok and not same for _, ok, same in results),
        "latencies": latencies,
        **spent,
    }
