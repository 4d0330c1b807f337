"""The service's server: uvicorn serving the app (app.py) on a socket bound beforehand, with
a decoder thread per model (models.py, batcher.py) beside it, the thread that swaps in the
versions they follow (versions.py), and a shutdown that drains those threads first.

    Server(engines, settings[, socket])  the socket (protocol.py's bind), the models, each
                                          with its batcher, the versions' watcher, and the
                                          app; Connection's limits on every connection
    server.serve_forever()               until should_exit, or SIGINT / SIGTERM
    server.close()                       the watcher, the improvements started and the
                                          batchers stopped, the socket closed

seq2seq/serve.py (the command) runs one in this process, or one per worker process; the
tests run one in a thread (tests/helpers.py's `running`).
"""

import asyncio
import socket
from collections.abc import Callable

import uvicorn

from seq2seq.config import ServeConfig
from seq2seq.decoding.engines import Engine
from seq2seq.service.app import build_app
from seq2seq.serving.loaders import Loader
from seq2seq.serving.models import Models
from seq2seq.serving.protocol import Connection, OutOfFiles, allow_connections, bind
from seq2seq.serving.versions import Watcher


class Server(uvicorn.Server):
    """uvicorn serving the app on a socket bound beforehand; its shutdown first drains the
    decoders: no more waiting for batch windows, new jobs get a 503, and so do those still
    waiting serve.drain_s later."""

    def __init__(
        self,
        models: list[Loader | Engine],
        settings: ServeConfig,
        sock: socket.socket | None = None,
    ):
        """`models`: the models to serve (serve.py's load_models), or engines loaded already."""
        allow_connections(settings)
        self.socket = sock or bind(settings.host, settings.port)  # listening once it serves
        self.on_listening: Callable[[], None] | None = None  # called once it listens
        loaders = [m if isinstance(m, Loader) else Loader.of(m) for m in models]
        self.models = Models.load(loaders, settings)
        self.watcher = Watcher(self.models.all, settings.watch_versions_s)
        self.watcher.start()
        self.settings = settings
        app = build_app(self.models, settings)
        super().__init__(
            uvicorn.Config(
                app,
                http=Connection.limited(settings),  # h11, strict
                loop="asyncio",
                lifespan="off",
                # uvicorn's own 503 comes at this many connections: one more than
                # Connection ever keeps, so that it is Connection's rules that apply
                limit_concurrency=settings.max_connections + 1,
                proxy_headers=bool(settings.trusted_proxies),  # X-Forwarded-For, from these only
                forwarded_allow_ips=settings.trusted_proxies,
                timeout_keep_alive=settings.timeout_s,
                log_config=None,  # uvicorn's warnings: one line each on stderr
                access_log=False,
                server_header=False,
            )
        )
        for model in self.models.all:  # a batch waits for the requests that may come
            model.batcher.connections = lambda: len(self.server_state.connections)

    @property
    def url(self) -> str:
        """The socket's URL (its root: serve.url_prefix not in it)."""
        return self.address(self.socket)

    @staticmethod
    def address(sock: socket.socket, prefix: str = "") -> str:
        """The URL of the service on `sock`, under `prefix` (serve.url_prefix) if any."""
        host, port = sock.getsockname()[:2]
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{port}{prefix}/"

    def serve_forever(self) -> None:
        """Until should_exit is set, or SIGINT or SIGTERM comes (in the main thread)."""
        self.run(sockets=[self.socket])

    async def startup(self, sockets=None) -> None:
        """The socket listening (asyncio's create_server, uvicorn's backlog: 2048 waiting),
        then on_listening."""
        asyncio.get_running_loop().set_exception_handler(OutOfFiles())
        await super().startup(sockets)
        if self.started and self.on_listening:
            self.on_listening()

    async def shutdown(self, sockets=None) -> None:
        for model in self.models.all:
            model.batcher.drain(within_s=self.settings.drain_s)
        await super().shutdown(sockets)

    def close(self) -> None:
        self.watcher.stop()
        if improvements := self.config.app.state.core.improvements:
            improvements.stop()  # none runs on alone (improving.py)
        for model in self.models.all:
            model.batcher.stop(wait=not self.force_exit)  # a second signal: the batch is left
        self.socket.close()
