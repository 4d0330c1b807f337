"""The translation service under load, and against LibreTranslate on the same model.

load.py                make bench's load check: 32 clients, calm and under attack
attack.py              the attacker, a process of its own: idle connections and poison
harness.py             the one load harness: two drivers' turns pooled into a load's figures
wrk.py                 its driver for speed: wrk, a load generator in C, on a core of its own
clients.py             its driver where each answer is read: Python clients; a request's shape
process.py             a server as a process: started, asked for JSON, its CPU time and
                       memory, its log, stopped
contenders.py          ours or LibreTranslate 1.9.6 (in its own venv), started like for like
postgres.py            a throwaway PostgreSQL server on loopback (for the tests too)
matrix.py              servers x APIs x pairs x beams x clients: bench-serve's and bench-pairs'
latency.py             make bench-serve: 1 to 64 clients, each engine, and LibreTranslate
detection.py           make bench-detect: language detectors against LibreTranslate's
model_memory.py        make bench-models: a model's memory and load time, in each form
swap.py                make bench-swap: versions swapped in under wrk's load: failures, p99
stores.py              make bench-stores: the service's state in PostgreSQL against SQLite
pairs.py               make bench-pairs: two pairs and a pivot, against LibreTranslate
documents.py           make bench-files: a 20-page document, against LibreTranslate
profile.py             make bench-profile: where our server's CPU goes, step by step (py-spy)
"""
