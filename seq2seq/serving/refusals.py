"""What the service refuses to do for a request, in its own terms: no HTTP here. Each route
answers a refusal with a status of its API's (api.py's STATUSES: ours, LibreTranslate's).

    Invalid     the request names what the service lacks (a pair, a model), or a text that
                is not valid Unicode
    Unwanted    a suggestion not kept (checks.py's SuggestionChecks): `reason` says why (one of
                checks.py's REASONS)
    OverLimit   past one of the service's limits (serve.max_sentences, max_chars, the
                beams; the API key's max_chars)
    Forbidden   no API key where one is needed, or not one of the keys
    QuotaUsed   the API key's characters of the month are used (its chars_per_month)
    Slowdown    past a rate (checks.py's Buckets): `wait_s` says when to try again
    NoRoom      no room on the disk to keep a translated file
    Busy        the decoder's queue is full (batcher.py), another writer (an import)
                holds the suggestions file (suggest.py), or the API keys' database does not
                answer (keystore.py): try again in a moment
    Stopping    the service is shutting down (batcher.py): it takes no new work
"""


class Refused(Exception):
    """A request the service will not do: the message says why."""


class Invalid(Refused):
    pass


class Unwanted(Refused):
    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


class OverLimit(Refused):
    pass


class Forbidden(Refused):
    pass


class QuotaUsed(Refused):
    pass


class Slowdown(Refused):
    def __init__(self, message: str, wait_s: int):
        super().__init__(message)
        self.wait_s = wait_s


class NoRoom(Refused):
    pass


class Busy(Refused):
    wait_s = 1  # a queue drains in about that


class Stopping(Refused):
    pass
