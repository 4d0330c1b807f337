"""serve.limits_storage: the rate limits counted where every instance of the service sees
them (Redis, Valkey, Memcached), not in each process, through `limits`, the library
Flask-Limiter (so LibreTranslate) counts with; a client's limit is then the same across the
replicas behind a balancer, not N times it.

    SharedLimits.at(uri)  the process's one for that storage URI (redis://host:6379/0, ...):
                          a UserError naming serve.limits_storage if `limits` does not know it
                          or lacks its client library
    .take(name, size, seconds, client) -> 0 (taken), the seconds until the client may try
        again, or None: the storage did not answer within TIMEOUT_S; checks.py's Buckets then
        counts in this process alone, for RETRY_S, and tries again; the loss said in one line
        (and when it answers again), and `up` False meanwhile (/metrics:
        seq2seq_limits_storage_up)
      in the storage: at most `size` in any `seconds` for (name, client) (limits' moving
      window, atomic in Redis: exact across instances); `name` keeps each limit's counts
      apart (requests_per_minute, a key's, suggestions); a round trip a take (access.py's
      RateLimit, every POST: in a worker thread, off the event loop)
"""

import functools
import math
import threading
import time

from seq2seq.support.errors import UserError, say

TIMEOUT_S = 0.5  # a storage call's wait at most (a key's and suggestions' on the event loop)
RETRY_S = 5.0  # after a failure, seconds counted in-process before the storage is tried again


class SharedLimits:
    """The limits kept in one storage, and whether it answers (the module's docstring)."""

    def __init__(self, uri: str):
        try:
            from limits import RateLimitItemPerSecond, storage, strategies
        except ImportError:
            needs = 'needs the limits library: pip install -e ".[replicas]"'
            raise UserError(f"serve.limits_storage {uri}: {needs}") from None
        try:
            store = storage.storage_from_string(uri, **client_options(uri))
        except Exception as error:  # unknown scheme, its client library missing
            raise UserError(f"serve.limits_storage {uri}: {error}") from None
        self.uri, self.item = uri, functools.lru_cache(maxsize=None)(RateLimitItemPerSecond)
        self.limiter = strategies.MovingWindowRateLimiter(store)
        self.up, self.failed_at, self.lock = True, -math.inf, threading.Lock()

    @classmethod
    @functools.cache
    def at(cls, uri: str) -> "SharedLimits":
        return cls(uri)

    def take(self, name: str, size: int, seconds: float, client: str) -> int | None:
        """One of the client's `size` in `seconds` (the module's docstring)."""
        if not self.up and time.monotonic() - self.failed_at < RETRY_S:
            return None
        limit = self.item(size, math.ceil(seconds))
        try:
            if self.limiter.hit(limit, name, client):
                wait = 0
            else:
                reset_at = self.limiter.get_window_stats(limit, name, client).reset_time
                wait = max(1, math.ceil(reset_at - time.time()))
        except Exception as error:  # its client's errors: refused, timed out, gone
            self.lost(error)
            return None
        self.found()
        return wait

    def lost(self, error: Exception) -> None:
        with self.lock:
            if self.up:
                say(f"warning: serve.limits_storage {self.uri} does not answer ({error}): "
                    "each instance counts its clients' limits alone until it does")  # fmt: skip
            self.up, self.failed_at = False, time.monotonic()

    def found(self) -> None:
        if not self.up:
            with self.lock:
                if not self.up:
                    say(f"serve.limits_storage {self.uri} answers again: limits shared")
                self.up = True


def client_options(uri: str) -> dict:
    """The storage client's timeouts (Redis and Valkey: redis-py's), so that a storage gone
    costs a request TIMEOUT_S at most, not the client library's default wait (none)."""
    if uri.split(":", 1)[0].split("+", 1)[0] in ("redis", "rediss", "valkey", "valkeys"):
        return {"socket_timeout": TIMEOUT_S, "socket_connect_timeout": TIMEOUT_S}
    return {}
