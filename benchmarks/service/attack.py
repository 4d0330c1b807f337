"""The attacker of the load check (load.py), in a process of its own: idle connections held
open and a client sending poison, until its stdin closes.

    python -m benchmarks.service.attack URL --idle N --poison-pause SECONDS

    stdout: "ready" once the idle connections are open and the first poison is answered;
            at the end, its counts as JSON (poison_as_expected, poison_otherwise,
            idle_reopened)

Half the idle connections send nothing, half trickle a never-ending header a byte every
TRICKLE_EVERY seconds; each is re-opened as soon as the server closes it. The poison, in turn on
one keep-alive connection: a lone surrogate sentence (400), malformed JSON (400), a body of
serve.max_body_bytes + 1 bytes (413).
"""

import argparse
import contextlib
import http.client
import json
import selectors
import socket
import sys
import threading
import time
from collections import Counter
from urllib.parse import urlsplit

from benchmarks.service.process import HANG, get_json

TRICKLE = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Trickle: "  # then "x" for ever
TRICKLE_EVERY = 0.5  # seconds between two bytes of a trickling connection

POISON = (  # (what, body, the status expected)
    ("lone surrogate", json.dumps({"text": ["\ud800"]}).encode(), 400),
    ("malformed JSON", b'{"text": ["three is', 400),
)


def attack(url: str, idle: int, poison_pause: float) -> None:
    """Hold `idle` idle connections and send poison until stdin closes; print "ready" once
    they are open and the first poison is answered, then at the end the counts as JSON."""
    stats: Counter = Counter()
    stop, ready = threading.Event(), threading.Event()
    host, port = urlsplit(url).hostname, urlsplit(url).port
    holder = threading.Thread(
        target=hold_idle, args=((host, port), idle, stop, ready, stats), daemon=True
    )  # a daemon: should this thread fail, the process still ends
    holder.start()
    ready.wait()
    status, info = get_json(url, "/info")
    if status != 200:
        sys.exit(f"the attacker's GET /info was answered {status}: {info}")
    oversized = b'{"text": ["' + b"x" * info["serve"]["max_body_bytes"] + b'"]}'
    poison = [*POISON, ("oversized body", oversized, 413)]
    poisoner = threading.Thread(target=send_poison, args=(url, poison, poison_pause, stop, stats))
    poisoner.start()
    deadline = time.monotonic() + HANG
    while not (stats["poison_as_expected"] or stats["poison_otherwise"]):
        if time.monotonic() > deadline:
            sys.exit("the service did not answer the poison")
        time.sleep(0.01)
    print("ready", flush=True)
    sys.stdin.read()
    stop.set()
    holder.join()
    poisoner.join()
    print(json.dumps(stats), flush=True)


def hold_idle(address, count: int, stop, ready, stats: Counter) -> None:
    """`count` connections that send nothing (the even ones) or trickle a never-ending header
    (the odd ones), each re-opened when the server closes it."""
    selector = selectors.DefaultSelector()
    sockets: list = [None] * count
    sent = [0] * count  # bytes trickled on each

    def open_connection(i: int) -> None:
        connection = socket.create_connection(address, timeout=HANG)
        connection.setblocking(False)
        selector.register(connection, selectors.EVENT_READ, i)
        sockets[i], sent[i] = connection, 0

    for i in range(count):
        open_connection(i)
    ready.set()
    next_trickle = time.monotonic()
    while not stop.is_set():
        for key, _ in selector.select(timeout=0.1):
            try:
                closed = key.fileobj.recv(65536) == b""  # else an answer (408, 400): dropped
            except OSError:
                closed = True
            if closed:
                selector.unregister(key.fileobj)
                key.fileobj.close()
                open_connection(key.data)
                stats["idle_reopened"] += 1
        if time.monotonic() >= next_trickle:
            next_trickle += TRICKLE_EVERY
            for i in range(1, count, 2):
                byte = TRICKLE[sent[i] : sent[i] + 1] or b"x"
                with contextlib.suppress(OSError):  # closed: the selector sees it
                    sent[i] += sockets[i].send(byte)
    for connection in sockets:
        connection.close()


def send_poison(url: str, poison, pause: float, stop, stats: Counter) -> None:
    """Each request of `poison` in turn on one keep-alive connection (a new one when the
    server closes it), until `stop`."""
    connection = http.client.HTTPConnection(urlsplit(url).netloc, timeout=HANG)
    headers = {"Content-Type": "application/json"}
    turn = 0
    while not stop.is_set():
        _, body, status = poison[turn % len(poison)]
        turn += 1
        try:
            connection.request("POST", "/translate", body, headers)
            response = connection.getresponse()
            response.read()
            stats["poison_as_expected" if response.status == status else "poison_otherwise"] += 1
        except (OSError, http.client.HTTPException):
            connection.close()
            stats["poison_otherwise"] += 1
        time.sleep(pause)
    connection.close()


def main() -> None:
    # not common.arguments: importing benchmarks.common would load torch into the attacker
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url")
    parser.add_argument("--idle", type=int, required=True, help="idle connections to hold")
    parser.add_argument("--poison-pause", type=float, required=True, help="seconds between two")
    args = parser.parse_args()
    attack(args.url, args.idle, args.poison_pause)


if __name__ == "__main__":
    main()
