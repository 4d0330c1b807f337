"""Chapter 5, service: translations over HTTP (the command is seq2seq/serve.py).

    batcher.py         one thread that decodes the requests' sentences a batch at a time
    api.py             requests and answers shared by both APIs
    libretranslate.py  LibreTranslate's API over the same batcher
    openapi.py         the API described in OpenAPI 3.1
    access.py          API keys and the per-client rate limit
    markup.py          HTML in, HTML out (format=html)
    static/            the page

May import: decoding, the model, text, the config, support.
"""
