"""Chapter 5, service: translations over HTTP (the command is seq2seq/serve.py).

    batcher.py         one thread that decodes the requests' sentences a batch at a time
    api.py             requests and answers shared by both APIs: the body read once, errors
    loaders.py         the models a service is given (serve --model), known before they load
    models.py          the models served, by pair; a pair's route, through pivots if need be
    backend.py         what both APIs stand on (models, settings, keys); a request's run
    cache.py           serve.translation_cache: texts' translations kept, answered undecoded
    ours.py            our API and the page
    libretranslate.py  LibreTranslate's API, its equal over the same backend
    openapi.py         the API described in OpenAPI 3.1
    access.py          the Host and Origin guard, CORS, API keys and the per-client rate limit
    keystore.py        API keys with limits of their own, in SQLite (python -m seq2seq.keys)
    app.py             the routes of both, the guards before them, every error as JSON
    metrics.py         GET /metrics, Prometheus' (serve.metrics): requests, latency, errors, the
                       decoders' queues and batches, over every worker
    protocol.py        below the routes: HTTP/1.1 connections and their limits, the socket,
                       the open-file limit
    server.py          uvicorn on a bound socket, with the batcher beside it, drained first
                       at shutdown (the command, seq2seq/serve.py, runs it)
    files.py           LibreTranslate's file translation: a document in, its translation kept
                       for a while to download
    static/            the page

May import: decoding, the model, text, the config, support.
"""
