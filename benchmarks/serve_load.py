"""The translation service under load, against the translate command on the same sentences.

    python benchmarks/serve_load.py [--quick] [--checkpoint runs/numbers/best.pt] [--config FILE]
    (and in `make bench`: the figures serve_*)

    translate, the command     python -m seq2seq.translate --checkpoint C < test.src, timed
                               whole (start-up included); its lines are the expected answers
    translate, in-process      translate_lines(model, sentences), timed alone
    the service                python -m seq2seq.serve --checkpoint C --port 0, a subprocess
      <- 32 client threads (8 in quick mode), each with one keep-alive connection, sending
         POST /translate {"text": [one test sentence]}, cycling through test.src, until
         2,000 requests (100 in quick mode) are answered or the time bound has passed
      -> requests/s, latency p50 and p99, failed (not 200, or never sent in time),
         mismatched (not the command's line for that sentence), sentences per batch

The ratio serve_vs_translate_command compares the service's sentences/s with the whole
command's on the same file; serve_vs_translate_in_process with decoding alone, in large batches.
"""

import argparse
import http.client
import json
import queue
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

from seq2seq.checkpoint import load_checkpoint
from seq2seq.config import DEFAULT_CONFIG, load_config
from seq2seq.paths import text_files
from seq2seq.translate import TorchModel, translate_lines

HANG = 600  # seconds: a server that has not started by then is hung


def timed_command(source: Path, *args: str) -> tuple[float, list[str]]:
    """Wall seconds of `python -m seq2seq.translate args < source`, and its output lines."""
    start = time.perf_counter()
    with source.open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "seq2seq.translate", *args],
            stdin=stdin, capture_output=True, text=True, check=True,
        )  # fmt: skip
    return time.perf_counter() - start, done.stdout.splitlines()


def timed_in_process(checkpoint: Path, sentences: list[str]) -> float:
    model = TorchModel(load_checkpoint(checkpoint))
    translate_lines(model, sentences[:16])  # warm-up
    start = time.perf_counter()
    translate_lines(model, sentences)
    return time.perf_counter() - start


def start_server(checkpoint: Path, config: str, log) -> tuple[subprocess.Popen, str]:
    """The service on a free port of 127.0.0.1, and its URL once it answers /health."""
    server = subprocess.Popen(
        [sys.executable, "-m", "seq2seq.serve", "--config", config,
         "--checkpoint", str(checkpoint), "--host", "127.0.0.1", "--port", "0"],
        stderr=log,
    )  # fmt: skip
    deadline = time.monotonic() + HANG
    while not (found := re.search(r"serving .* at (http://\S+)", Path(log.name).read_text())):
        if server.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"the service did not start: {Path(log.name).read_text()}")
        time.sleep(0.05)
    url = found.group(1)
    assert get_json(url, "/health")["status"] == "ok"
    return server, url


def get_json(url: str, path: str) -> dict:
    connection = http.client.HTTPConnection(urlsplit(url).netloc, timeout=HANG)
    connection.request("GET", path)
    return json.loads(connection.getresponse().read())


def client(url, work: queue.Queue, sentences, expected, deadline: float, results: list) -> None:
    """Send requests on one keep-alive connection while there is work and time:
    results get (latency in seconds, answered with 200, the expected translation)."""
    connection = http.client.HTTPConnection(urlsplit(url).netloc, timeout=HANG)
    headers = {"Content-Type": "application/json"}
    while time.monotonic() < deadline:
        try:
            i = work.get_nowait()
        except queue.Empty:
            break
        body = json.dumps({"text": [sentences[i % len(sentences)]]})
        start = time.perf_counter()
        try:
            connection.request("POST", "/translate", body, headers)
            response = connection.getresponse()
            answer = json.loads(response.read())
            ok = response.status == 200
            same = ok and answer["translations"] == [expected[i % len(expected)]]
        except (OSError, http.client.HTTPException, ValueError):
            connection.close()  # reconnects at the next request
            ok = same = False
        results.append((time.perf_counter() - start, ok, same))


def load_check(checkpoint: Path, source: Path, quick: bool, config: str = DEFAULT_CONFIG) -> dict:
    requests, clients, bound = (100, 8, 120.0) if quick else (2000, 32, 600.0)
    sentences = source.read_text(encoding="utf-8").splitlines()
    command_seconds, expected = timed_command(source, "--checkpoint", str(checkpoint))
    in_process_seconds = timed_in_process(checkpoint, sentences)

    with tempfile.NamedTemporaryFile("w+", suffix=".log") as log:
        server, url = start_server(checkpoint, config, log)
        try:
            work: queue.Queue[int] = queue.Queue()
            for i in range(requests):
                work.put(i)
            results: list = []
            deadline = time.monotonic() + bound
            threads = [
                threading.Thread(
                    target=client, args=(url, work, sentences, expected, deadline, results)
                )
                for _ in range(clients)
            ]
            start = time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            seconds = time.perf_counter() - start
            health = get_json(url, "/health")
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=HANG)

    answered = sum(ok for _, ok, _ in results)
    latencies = [latency for latency, ok, _ in results if ok] or [float("nan")] * 2
    percentiles = statistics.quantiles(latencies, n=100, method="inclusive")
    rate = answered / seconds  # one sentence per request
    command_rate = len(sentences) / command_seconds
    in_process_rate = len(sentences) / in_process_seconds
    return {
        "serve_requests": requests,
        "serve_clients": clients,
        "serve_requests_per_s": rate,
        "serve_sentences_per_s": rate,
        "serve_latency_p50_ms": 1000 * percentiles[49],
        "serve_latency_p99_ms": 1000 * percentiles[98],
        "serve_failed": requests - answered,  # an error, or not sent within the time bound
        "serve_mismatched": sum(ok and not same for _, ok, same in results),
        "serve_sentences_per_batch": health["sentences"] / max(1, health["batches"]),
        "serve_translate_command_sentences_per_s": command_rate,
        "serve_translate_in_process_sentences_per_s": in_process_rate,
        "serve_vs_translate_command": rate / command_rate,
        "serve_vs_translate_in_process": rate / in_process_rate,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 requests from 8 clients")
    parser.add_argument("--config", default=DEFAULT_CONFIG)
    parser.add_argument("--checkpoint", help="default: the config's best.pt")
    args = parser.parse_args()
    config = load_config(args.config)
    checkpoint = Path(args.checkpoint or config.checkpoint_path)
    source = text_files(config.data_dir, "test")[0]
    print(json.dumps(load_check(checkpoint, source, args.quick, args.config), indent=2))


if __name__ == "__main__":
    main()
