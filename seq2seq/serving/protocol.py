"""The service's HTTP/1.1 connections, its socket and its open files, below the routes.

    bind(host, port): the socket, bound before the models load (a port in use: one line),
      listening only once uvicorn serves on it (asyncio's create_server): until then a
      connection is refused, not kept waiting, so that a proxy tries another replica and a
      probe fails at once while the models load
    allow_connections(settings): the soft limit on open files raised (allow_files) for
      serve.max_connections + SPARE_FILES, or one line saying why it cannot be
    uvicorn (HTTP/1.1 parsed by h11, strictly), one Connection a client connection:
      a request's headers must arrive within serve.timeout_s; over serve.max_client_connections
      from one address (not one of serve.trusted_proxies) -> 503; over serve.max_connections,
      a connection waiting for its request is closed (none: 503); a request that is not
      HTTP/1.1 -> a JSON 400
    OutOfFiles: the event loop's error handler, should the files run out all the same

Nothing here knows the routes (app.py) or the engine.
"""

import asyncio
import ipaddress
import json
import math
import resource
import socket
import time
from collections import Counter

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from seq2seq.config import ServeConfig
from seq2seq.support.errors import UserError, warn


class Connection(H11Protocol):
    """uvicorn's HTTP/1.1 connection, with a deadline and JSON for its own 400.

    uvicorn closes a keep-alive connection that stays silent for timeout_keep_alive seconds,
    but each byte restarts that wait, and a new connection has none: a client that sends
    its headers a byte at a time would hold the connection for ever. Here each request's
    headers must arrive within timeout_keep_alive (serve.timeout_s) of the connection's
    opening or of the previous answer; the body has its own deadline (api.py's Body.read)."""

    deadline: asyncio.TimerHandle | None = None  # set while waiting for a request's headers
    most, most_per_client = 256, 64  # serve.max_connections, max_client_connections
    proxies: tuple = ()  # serve.trusted_proxies: their connections count only against `most`

    @classmethod
    def limited(cls, settings: ServeConfig) -> type["Connection"]:
        """This class, with the limits of `settings` (uvicorn makes one per connection)."""
        limits = {
            "most": settings.max_connections,
            "most_per_client": settings.max_client_connections,
            "proxies": tuple(
                ipaddress.ip_network(p, strict=False) for p in settings.trusted_proxies
            ),
        }
        return type(cls.__name__, (cls,), limits)

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        mine = [c for c in self.connections if c.address == self.address]
        if len(mine) > self.most_per_client and not self.from_proxy():
            self.refuse("too many connections from your address (serve.max_client_connections)")
        elif len(self.connections) > self.most and not self.make_room():
            self.refuse("too many connections: try again in a moment")
        else:
            self.start_deadline()

    @property
    def address(self) -> str:
        return self.client[0] if self.client else ""

    def from_proxy(self) -> bool:
        """Whether the connection comes from serve.trusted_proxies: every client behind a
        reverse proxy connects from its address."""
        try:
            address = ipaddress.ip_address(self.address)
        except ValueError:
            return False
        return any(address in network for network in self.proxies)

    def make_room(self) -> bool:
        """Over serve.max_connections: close a connection still waiting for its request, of
        the client that holds the most connections, the one waiting longest, so that a
        well-formed client always gets in; False if every other connection is busy with a
        request."""
        waiting = [c for c in self.connections if c is not self and c.deadline is not None]
        if not waiting:
            return False
        held = Counter(c.address for c in self.connections)
        victim = max(waiting, key=lambda c: (held[c.address], -c.deadline.when()))
        victim.stop_deadline()
        victim.transport.close()
        self.connections.discard(victim)  # now, not when its loss is noticed
        return True

    def refuse(self, why: str) -> None:
        """One connection too many: a 503 at once, before any request (h11 cannot answer
        one that has not come, so the bytes are written here), and the connection closed, so
        that open connections, and the files they hold, stay within serve.max_connections."""
        body = json.dumps({"error": why}).encode()
        head = (
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nretry-after: 1\r\nconnection: close\r\n\r\n"
        )
        self.transport.write(head.encode() + body)
        self.transport.close()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.cycle is not None and not self.cycle.response_complete:
            self.stop_deadline()  # a request's headers are in

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.cycle.response_complete:  # no pipelined request started
            self.start_deadline()

    def connection_lost(self, exc) -> None:
        super().connection_lost(exc)
        self.stop_deadline()

    def start_deadline(self) -> None:
        self.stop_deadline()
        if not self.transport.is_closing():
            self.deadline = self.loop.call_later(self.timeout_keep_alive, self.transport.close)

    def stop_deadline(self) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None

    def send_400_response(self, msg: str) -> None:
        """A request that is not HTTP/1.1 (h11 refused it): the connection is closed."""
        body = json.dumps({"error": f"not a valid HTTP/1.1 request ({msg})"}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        for event in (
            h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
            h11.Data(data=body),
        ):
            self.transport.write(self.conn.send(event))
        self.transport.write(self.conn.send(h11.EndOfMessage()))
        self.transport.close()


SPARE_FILES = 64  # files the process needs besides its connections: the model, torch, logs


def allow_connections(settings: ServeConfig) -> None:
    """Let the process open a file for each of serve.max_connections, and SPARE_FILES, or say
    in one line why it cannot: a server out of files stops accepting connections."""
    needed = settings.max_connections + SPARE_FILES
    hard = allow_files(needed)
    if hard is not None:
        raise UserError(
            f"serve.max_connections needs about {needed} open files and this process may open "
            f"{hard} (ulimit -n): lower serve.max_connections or raise the limit"
        )


def allow_files(needed: int) -> int | None:
    """Let this process, and those it starts, open `needed` files (its soft limit raised up
    to the hard one): None, or the hard limit if that is lower."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return None
    if hard != resource.RLIM_INFINITY and hard < needed:
        return hard
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    return None


class OutOfFiles:
    """The event loop's error handler. Should the process run out of files all the same (they
    are used by something else), asyncio stops accepting for a second, but (Python 3.11) only
    after trying again once per connection that may wait (uvicorn's backlog, 2,048), with a
    traceback each: here that is one line at most every 10 s. Other errors go to asyncio's
    own handler."""

    def __init__(self, every_s: float = 10.0):
        self.every_s, self.last = every_s, -math.inf

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict) -> None:
        if context.get("message") != "socket.accept() out of system resource":
            loop.default_exception_handler(context)
        elif time.monotonic() - self.last >= self.every_s:
            self.last = time.monotonic()
            warn(
                f"out of files ({context['exception'].strerror}): new connections wait; "
                "lower serve.max_connections or raise the file limit (ulimit -n)"
            )


def bind(host: str, port: int) -> socket.socket:
    """A socket bound to host:port, not yet listening (the module's docstring), or one line
    saying why it cannot be."""
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # IPPROTO_TCP, not 0: asyncio turns Nagle's algorithm off (TCP_NODELAY) only on the
        # connections of a socket that says it is TCP; with it on, each answer on a keep-alive
        # connection waited ~40 ms for the client's delayed ACK
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as error:
        raise UserError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    return sock
