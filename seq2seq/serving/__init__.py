"""Serving, below chapter 6: what every API's routes stand on, from the HTTP edge and each
request's checks to the core, the models' batchers and versions, and the stores.

    refusals.py        what the service refuses a request, in its own terms (no HTTP)
    api.py             the edge every API shares: the body read once and parsed (JSON,
                       forms), its fields and key, answers and errors as JSON, each refusal's
                       status
    protocol.py        below the routes: HTTP/1.1 connections and their limits, the socket,
                       the open-file limit
    access.py          before the routes: the Host and Origin guard, CORS, the per-client
                       rate limit
    keystore.py        API keys: serve.api_keys (a file, env:NAME, or a keys database in
                       SQLite, each key with limits of its own: python -m seq2seq.keys)
    checks.py          each request's checks, in one place: its key, texts, sentences, beams;
                       the one token bucket behind every rate limit
    shared_limits.py   serve.limits_storage: those limits counted in Redis (or another
                       storage of the limits library) for every instance at once
    batcher.py         one thread that decodes the requests' sentences a batch at a time
    confidences.py     how sure each sentence answered is (its models' calibrations, a
                       pivot's hops multiplied), and what a request's min_confidence withholds
    loaders.py         the models a service is given (serve --model), known before they load
    models.py          the models served, by pair; a pair's chain, through pivots if need be
    versions.py        serve.watch_versions_s: each model of an experiment swapped to the
                       version its versions/current names, while serving, nothing dropped
    translation_cache.py  serve.translation_cache: texts' translations kept, answered undecoded
    improving.py       serve.improve_after: python -m seq2seq.improve started every N new
                       suggestions of a pair, in the background; its state for /info
    core.py            what every API stands on (models, settings, checks); a request's texts
                       through its chain's models
    glossary_store.py  the glossaries kept, in SQLite (serve.glossaries_file), each key's own

May import: decoding, the model, the text chapters, the config, support; training's versions
(improving.py, loaders.py: the versions an improvement keeps, and their verdicts). Never the
routes (service/).
"""
