"""The service's options (the config's `serve` section), grouped by concern: a dataclass each,
ServeConfig all of them, their fields flat (`serve.max_chars` in YAML, `settings.max_chars` in
Python), each with its type, default, range and comment, as seq2seq/options.py's sections.

    Listening           where it listens: host, port, url_prefix, workers, threads, drain_s
    RequestLimits       what one request may hold: max_sentences, max_chars, max_body_bytes, ...;
                        the least confidence its answer gives
    Batching            the decoder's batches and queue, the translation cache
    Connections         connections and their limits; the hosts, proxies and origins answered
    Keys                API keys, and the per-client rates
    ModelsServed        the models' languages, and which stay loaded
    Pages               our page, and what LibreTranslate's reads first
    FilesAndSuggestions LibreTranslate's file translation and suggestions (and the memory
                        they make); glossaries
    Monitoring          GET /metrics
"""

from dataclasses import dataclass, field
from typing import Annotated


@dataclass
class Language:
    """A language as LibreTranslate's API names it (seq2seq/service/languages.py)."""

    code: str  # en, de, ... (BCP 47); not "auto", which asks for detection
    name: str  # English, German, ...


@dataclass
class Listening:
    """Where the service listens, and the processes and threads that answer there."""

    host: str = "127.0.0.1"  # this machine only; 0.0.0.0 serves every network interface
    port: Annotated[int, "in [0, 65535]"] = 8000  # 0: any free port (the address is printed)
    # The path every route is served under, as LibreTranslate's --url-prefix (no / at its end):
    # /translate-api serves /translate-api/translate, the page at /translate-api/, and any
    # other path a 404; for a reverse proxy that passes the path on as it is. "": at the root.
    url_prefix: str = ""
    # Processes answering on the one port, each with its own engine, decoder thread and
    # limits (the connection and rate limits count per process): for a machine with more
    # cores than one process keeps busy (docs/serve.md).
    workers: Annotated[int, "at least 1"] = 1
    # How the process's cores decode. 0: measured, for a checkpoint CTranslate2 decodes: its
    # share of the cores split into batches decoded at once (decoders) x threads each, the
    # fastest on its validation sentences, kept beside its export (docs/serve.md); one batch
    # of one thread where there is nothing to measure on (a package). N: N batches at once of
    # one thread each (torch: N threads; 0: one).
    threads: Annotated[int, ">= 0"] = 0
    # Seconds the service goes on decoding what waits after SIGTERM or Ctrl-C; then what still
    # waits gets a 503, and it exits once the batch being decoded is done (a second signal: now).
    drain_s: Annotated[float, ">= 0"] = 10.0


@dataclass
class RequestLimits:
    """What one request may hold, and the least confidence its answer gives."""

    # sentences in one /translate request, its texts split (a text, or a text between tags of
    # LibreTranslate's format html, is one at least)
    max_sentences: Annotated[int, "at least 1"] = 64
    max_chars: Annotated[int, "at least 1"] = 1000  # characters in one text
    # Each text of a /translate request, ours and LibreTranslate's, is split into its sentences
    # by the rules of the source language (seq2seq/text/sentences.py): they are translated in
    # one batch and each text's joined in the white space between them. false: each text whole.
    split_sentences: bool = True
    max_body_bytes: Annotated[int, "at least 1"] = 1_000_000  # larger bodies: refused unread
    max_beam_size: Annotated[int, "at least 1"] = 8  # the largest beam_size, nbest asked for
    # No translation rather than a bad one: each sentence whose confidence (the calibrated
    # chance, 0 to 1, that it is acceptable: docs/confidence.md) is below this is given back
    # untranslated, and flagged in the answer, on every route that translates, unless a request
    # asks for its own (min_confidence, withheld_as: docs/serve.md). 0: off. A model without a
    # calibration has no confidence: nothing of it is withheld.
    min_confidence: Annotated[float, "in [0, 1]"] = 0.0


@dataclass
class Batching:
    """How the decoder takes the requests' sentences, and what it keeps of them."""

    # The decoder takes what waits, up to max_batch_sentences sentences, as one batch; what
    # arrives while it decodes makes the next one. More than 0: while a batch holds fewer
    # requests than the service has open connections (the others' next requests may be on
    # their way), it waits up to this long after its first request for them to join it.
    batch_window_ms: Annotated[float, ">= 0"] = 2.0
    max_batch_sentences: Annotated[int, "at least 1"] = 256  # see batch_window_ms
    # Work waiting for the decoder, at most, counted as characters x beam size (what decoding
    # costs, roughly); a request that would pass this gets a 503 with Retry-After (and a
    # waiting request whose client hangs up is dropped).
    max_queue_work: Annotated[int, "at least 1"] = 1_024_000
    # Texts whose translations are kept, to answer again without decoding (LibreTranslate's
    # --translation-cache, for every client): past it, the least recently used go. 0: off.
    translation_cache: Annotated[int, ">= 0"] = 0


@dataclass
class Connections:
    """The connections, and whose requests are answered (seq2seq/serving/protocol.py,
    access.py)."""

    # Open connections at most. One more closes one still waiting for its request (of the
    # client holding the most), or, all busy, gets a quick 503. Well under ulimit -n.
    max_connections: Annotated[int, "at least 1"] = 256
    # Open connections from one client address at most; more get a quick 503. Those from
    # trusted_proxies count only against max_connections (behind a reverse proxy every
    # client connects from the proxy's address).
    max_client_connections: Annotated[int, "at least 1"] = 64
    # Seconds a client has to send a request's headers (from connecting, or from its previous
    # answer: idle keep-alive connections close then), and again for its body (408).
    timeout_s: Annotated[float, "positive"] = 10.0
    # Host names the service answers besides its own address and localhost, e.g.
    # [translate.example.org]; ["*"]: any. Others get a 400 (no DNS rebinding).
    allowed_hosts: list[str] = field(default_factory=list)
    # Addresses (or networks, 10.0.0.0/8) of the reverse proxies whose X-Forwarded-For header
    # names the client; from any other address the header is ignored. []: none, the
    # connection's own address is the client's (so no client can choose its address).
    trusted_proxies: list[str] = field(default_factory=list)
    # Origins (scheme://host:port) whose web pages may call the service from a browser: their
    # requests get CORS headers. A POST from any other origin (a form another site submits)
    # gets a 403. ["*"]: any. []: only the service's own page.
    cors_origins: list[str] = field(default_factory=list)


@dataclass
class Keys:
    """API keys, and how often a client may ask (seq2seq/serving/keystore.py, checks.py)."""

    # Where the API keys are (seq2seq/serving/keystore.py): "" (none), a file of keys one a line,
    # env:NAME (the environment variable NAME, keys separated by commas or spaces), or a keys
    # database, an SQLite file ending in .db or a PostgreSQL URL (postgresql://...: several
    # instances' keys and quotas), each key with its own limits (python -m seq2seq.keys add;
    # read again when it changes). With keys, every POST needs one.
    api_keys: str = ""
    # With api_keys: true, a POST without a key gets a 403; false, it is served too, at the
    # client's own limits (requests_per_minute ...), as LibreTranslate's --api-keys without
    # --under-attack (a key given must still be one).
    keys_required: bool = True
    # Where a client gets a key, e.g. https://example.org/keys: said in the 403 of a request
    # without one (LibreTranslate's --get-api-key-link). "": nothing said.
    api_key_link: str = ""
    # POST requests one client address may make per minute, in bursts of as many; more get a
    # 429 with Retry-After. 0: no limit.
    requests_per_minute: Annotated[int, ">= 0"] = 0
    # The same an hour, and a day (LibreTranslate's --hourly-req-limit, --daily-req-limit).
    requests_per_hour: Annotated[int, ">= 0"] = 0
    requests_per_day: Annotated[int, ">= 0"] = 0  # see requests_per_hour
    # Where the rate limits above (a key's and suggestions_per_hour too) are counted: "" in
    # each process, or a storage every instance shares, as a URI of the `limits` library
    # (Flask-Limiter's): redis://HOST:6379/0, valkey://..., memcached://... (the extra
    # seq2seq[replicas]). There, at most N in any window; the storage gone, each instance
    # counts alone until it answers again (said in the log, /metrics' seq2seq_limits_storage_up).
    limits_storage: str = ""


@dataclass
class ModelsServed:
    """The models served: their languages, and which of them stay loaded."""

    # LibreTranslate's API (seq2seq/service/libretranslate.py) and the Argos package (export argos):
    # the language the model reads and the one it writes, e.g. {code: fr, name: French}.
    # null: from the corpus (multi30k: corpus.src_lang and tgt_lang; numbers: en, English ->
    # digits, Digits; parallel: src, Source -> tgt, Target).
    source_language: Language | None = None
    target_language: Language | None = None  # see source_language
    # true: each model but the first is loaded at its first request (the others answer meanwhile)
    lazy: bool = False
    # MiB of model weights (their files' sizes) loaded at most: past it, the least recently used
    # idle models but the first are dropped, and loaded again when asked. 0: no limit.
    models_mib: Annotated[int, ">= 0"] = 0
    # Seconds between two looks (a stat) at runs/<experiment>/versions/current of each model
    # served from a config or an experiment's best.pt: when it names another version (python
    # -m seq2seq.improve, its --rollback), that one is loaded beside the one served and swapped
    # in between two batches, nothing dropped (docs/serve.md, Versions). 0: never looked at.
    watch_versions_s: Annotated[float, ">= 0"] = 2.0


@dataclass
class Pages:
    """The pages: ours, and what LibreTranslate's reads first."""

    # The page (GET /, /app.js, /style.css). false: they answer 404, the API alone is served
    # (LibreTranslate's --disable-web-ui).
    page: bool = True
    # /frontend/settings, which LibreTranslate's page reads first: the languages its boxes
    # start with (LibreTranslate's --frontend-language-source and -target), "" for the first
    # model's (the source: auto where the service detects among several), and how long it
    # waits after the last key before it translates (--frontend-timeout).
    frontend_source: str = ""
    frontend_target: str = ""  # see frontend_source
    frontend_timeout_ms: Annotated[int, "at least 1"] = 500  # see frontend_source


@dataclass
class FilesAndSuggestions:
    """LibreTranslate's file translation and its suggestions (seq2seq/service/
    file_translation.py, suggest.py); the glossaries kept (glossaries.py)."""

    # POST /translate_file and GET /download_file, LibreTranslate's: a document (.txt .html
    # .srt .docx .pptx .odt .odp .epub: seq2seq/documents/reading.py) translated, its formatting
    # kept, and kept in files_dir to download. false: they answer 403, as LibreTranslate's
    # with --disable-files-translation.
    files: bool = True
    files_dir: str = "runs/files"  # relative to the working directory, as runs/ is
    max_file_bytes: Annotated[int, "at least 1"] = 10_000_000  # a document sent, at most
    # characters of text in one document, at most (a page holds about 3,000)
    max_file_chars: Annotated[int, "at least 1"] = 200_000
    files_keep_minutes: Annotated[float, "positive"] = 30.0  # each translated file's, to download
    # MiB of translated files kept, at most: past it, the oldest are removed first
    files_max_mib: Annotated[int, "at least 1"] = 1024
    # POST /suggest, LibreTranslate's: a user's better translation of a text, kept in
    # suggestions_file to fine-tune the model on (a corpus source {suggestions: FILE}).
    # false: it answers 403, as LibreTranslate's does.
    suggestions: bool = False
    # SQLite (seq2seq/localization/suggestions.py), relative to the working directory, as runs/ is
    suggestions_file: str = "runs/suggestions.db"
    # Suggestions one client address, and one API key, may send per hour, repeats and refused
    # ones included; more get a 429 (counted as flooding in /metrics).
    suggestions_per_hour: Annotated[int, "at least 1"] = 60
    # Characters of a suggestion's text and of its translation, each, at most (a longer one is
    # refused, as is a translation longer than 3 times its text + 20: docs/serve.md's checks)
    suggestion_chars: Annotated[int, "at least 1"] = 3000
    # The translation memory: a text a suggestion was sent for (the whole text, its white space
    # collapsed and stripped) is answered with the latest such suggestion instead of the
    # model's translation, on every route that translates text, the answer saying so (ours:
    # "memory", LibreTranslate's: "fromMemory"). It reads suggestions_file, made if need be,
    # whether or not suggestions takes new ones.
    memory: bool = False
    # With memory, a text without its own suggestion but like one the memory holds (at least
    # this share of its words the same: localization/fuzzy.py; 0: off) has the model's translation
    # repaired by that suggestion: the user's edits merged into it where they touch other
    # words than the new text changed (ours: "fuzzy", each text's match's similarity).
    memory_fuzzy: Annotated[float, "in [0, 1)"] = 0.0
    # Learning from the suggestions: after every this many new ones for a pair whose model is
    # served from a config (serve --model CONFIG.yaml, or serve's own --config), the service
    # starts `python -m seq2seq.improve` on them in the background (one at a time; its output
    # in runs/<experiment>/versions/improve.log): a version that passes its gate becomes the
    # one the config serves (versions/current; docs/improve.md). /info says the last one's
    # state. Needs suggestions. 0: off.
    improve_after: Annotated[int, ">= 0"] = 0
    # The glossaries kept by DeepL's routes (POST /v2/glossaries; seq2seq/service/glossaries.py):
    # SQLite, relative to the working directory, as runs/ is; made when the first one comes.
    glossaries_file: str = "runs/glossaries.db"
    # Where several instances of the service keep their state together: a PostgreSQL URL
    # (postgresql://USER:PASSWORD@HOST:PORT/DATABASE; psycopg, the extra seq2seq[replicas];
    # its tables made by the service), which then holds the glossaries, the suggestions and
    # the translation memory in place of glossaries_file and suggestions_file
    # (docs/deploy.md). "": each kept in its own SQLite file, as above.
    database: str = ""


@dataclass
class Monitoring:
    """GET /metrics (seq2seq/service/prometheus.py)."""

    # GET /metrics: the service's figures in Prometheus' text format (requests, latency and
    # errors by route, the decoders' queues, batches and busy time; seq2seq/service/prometheus.py),
    # those of every worker together. false: no such route (a 404), as LibreTranslate's
    # --metrics, and nothing is measured.
    metrics: bool = False
    # With metrics: the token a scrape must send, `Authorization: Bearer TOKEN` (else a 401, as
    # LibreTranslate's --metrics-auth-token). "": none needed.
    metrics_auth_token: str = ""


# A dataclass takes its bases' fields last base first: the concerns, reversed, keep their order.
CONCERNS = (
    Listening,
    RequestLimits,
    Batching,
    Connections,
    Keys,
    ModelsServed,
    Pages,
    FilesAndSuggestions,
    Monitoring,
)


@dataclass
class ServeConfig(*reversed(CONCERNS)):
    """python -m seq2seq.serve: where it listens, and what one request or batch may hold."""


# The service configured by its environment, as a container is (docs/deploy.md): SERVE_ENV
# followed by a field's name sets it (SEQ2SEQ_SERVE_PORT=5000: serve.port=5000, its value read
# as YAML), and LibreTranslate's own LT_ names set the field that means the same, each value
# as LibreTranslate reads it (its -1: none, our 0; its DISABLE_ flags: our switches off).
# The command line's key=value settings come after: they win.
SERVE_ENV = "SEQ2SEQ_SERVE_"


def as_given(value: str) -> str:
    return value


def none_if_negative(value: str) -> str:
    return "0" if value.strip().startswith("-") else value


def switched_off(value: str) -> str:
    return "false" if value.strip().lower() in ("1", "true", "yes", "on") else "true"


LIBRETRANSLATE_ENV = {
    "LT_HOST": ("host", as_given),
    "LT_PORT": ("port", as_given),
    "LT_URL_PREFIX": ("url_prefix", as_given),
    "LT_REQ_LIMIT": ("requests_per_minute", none_if_negative),
    "LT_HOURLY_REQ_LIMIT": ("requests_per_hour", none_if_negative),
    "LT_DAILY_REQ_LIMIT": ("requests_per_day", none_if_negative),
    "LT_REQ_LIMIT_STORAGE": ("limits_storage", as_given),
    "LT_GET_API_KEY_LINK": ("api_key_link", as_given),
    "LT_FRONTEND_LANGUAGE_SOURCE": ("frontend_source", as_given),
    "LT_FRONTEND_LANGUAGE_TARGET": ("frontend_target", as_given),
    "LT_FRONTEND_TIMEOUT": ("frontend_timeout_ms", as_given),
    "LT_SUGGESTIONS": ("suggestions", as_given),
    "LT_DISABLE_WEB_UI": ("page", switched_off),
    "LT_DISABLE_FILES_TRANSLATION": ("files", switched_off),
    "LT_METRICS": ("metrics", as_given),
    "LT_METRICS_AUTH_TOKEN": ("metrics_auth_token", as_given),
}


def environment_settings(environ: dict[str, str]) -> list[tuple[str, str]]:
    """The serve settings the environment sets, each with the variable that set it:
    [("LT_PORT", "serve.port=5000"), ...], LibreTranslate's first, then ours (ours win)."""
    found = [
        (name, f"serve.{field}={read(environ[name])}")
        for name, (field, read) in LIBRETRANSLATE_ENV.items()
        if name in environ
    ]
    ours = sorted(name for name in environ if name.startswith(SERVE_ENV))
    return found + [
        (name, f"serve.{name[len(SERVE_ENV) :].lower()}={environ[name]}") for name in ours
    ]
