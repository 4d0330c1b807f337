"""Chapter 5, service: translations over HTTP (the command is seq2seq/serve.py). A request's
way through these modules, stop by stop, is docs/architecture.md's.

    refusals.py        what the service refuses a request, in its own terms (no HTTP)
    batcher.py         one thread that decodes the requests' sentences a batch at a time
    api.py             the edge both APIs share: the body read once and parsed (JSON, forms),
                       its fields and key, answers and errors as JSON, each refusal's status
    keystore.py        API keys: serve.api_keys (a file, env:NAME, or a keys database in
                       SQLite, each key with limits of its own: python -m seq2seq.keys)
    checks.py          each request's checks, in one place: its key, texts, sentences, beams;
                       the one token bucket behind every rate limit
    loaders.py         the models a service is given (serve --model), known before they load
    models.py          the models served, by pair; a pair's chain, through pivots if need be
    versions.py        serve.watch_versions_s: each model of an experiment swapped to the
                       version its versions/current names, while serving, nothing dropped
    translation_cache.py  serve.translation_cache: texts' translations kept, answered undecoded
    core.py            what both APIs stand on (models, settings, checks); a request's texts
                       through its chain's models
    ours.py            our API and the page
    languages.py       LibreTranslate's /languages, /frontend/settings and /detect
    libretranslate.py  LibreTranslate's /translate, its equal over the same core
    suggest.py         LibreTranslate's /suggest
    improving.py       serve.improve_after: python -m seq2seq.improve started every N new
                       suggestions of a pair, in the background; its state for /info
    file_translation.py  LibreTranslate's file translation: a document in, its translation
                       kept for a while to download
    glossary_store.py  the glossaries kept, in SQLite (serve.glossaries_file), each key's own
    glossaries.py      DeepL's /v2/glossaries routes, and a /translate's glossary as the
                       terms its model follows
    openapi.py         the API described in OpenAPI 3.1
    access.py          before the routes: the Host and Origin guard, CORS, the per-client
                       rate limit
    prometheus.py      GET /metrics, Prometheus' (serve.metrics): requests, latency, errors,
                       the decoders' queues and batches, over every worker
    app.py             the routes of both, the guards before them, every error as JSON
    protocol.py        below the routes: HTTP/1.1 connections and their limits, the socket,
                       the open-file limit
    server.py          uvicorn on a bound socket, with the batcher beside it, drained first
                       at shutdown (the command, seq2seq/serve.py, runs it)
    static/            the page

May import: decoding, the model, text, the config, support; training's versions
(improving.py: the versions an improvement keeps).
"""
