"""Chapter 6, service: the HTTP service a client meets, each API's routes gathered in one app
that uvicorn serves (the command is seq2seq/serve.py; what the routes stand on is serving/).

A request's way through the modules of both, stop by stop, is docs/architecture.md's.

    ours.py            our API and the page
    languages.py       LibreTranslate's /languages, /frontend/settings and /detect
    libretranslate.py  LibreTranslate's /translate, its equal over the same core
    suggest.py         LibreTranslate's /suggest
    file_translation.py  LibreTranslate's file translation: a document in, its translation
                       kept for a while to download
    glossaries.py      DeepL's /v2/glossaries routes, and a /translate's glossary as the
                       terms its model follows
    deepl.py           DeepL's /v2/translate, /v2/languages and /v2/document, over
                       LibreTranslate's way to the models and its file translation
    openapi.py         the API described in OpenAPI 3.1
    prometheus.py      GET /metrics, Prometheus' (serve.metrics): requests, latency, errors,
                       the decoders' queues and batches, over every worker
    app.py             the routes of every API, the guards before them, every error as JSON
    server.py          uvicorn on a bound socket, with the batcher beside it, drained first
                       at shutdown (the command, seq2seq/serve.py, runs it)
    static/            the page

May import: serving, decoding, documents, the text chapters, the config, support.
"""
