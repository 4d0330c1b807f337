"""The translation service under load, and against LibreTranslate on the same model.

load.py                make bench's load check: 32 clients, calm and under attack
attack.py              the attacker, a process of its own: idle connections and poison
clients.py             the clients' requests (our API's, LibreTranslate's) and figures
wrk.py                 wrk, a load generator in C, on a core of its own: the speed figures
process.py             a server as a process: started, asked for JSON, its CPU time, stopped
contenders.py          ours or LibreTranslate, started from a name, packages and a beam
latency.py             make bench-serve: 1 to 64 clients, each engine, and LibreTranslate
libretranslate_peer.py LibreTranslate 1.9.6 run on our Argos export, in its own venv
detection.py           make bench-detect: language detectors against LibreTranslate's
model_memory.py        make bench-models: a model's memory and load time, in each form
pairs.py               make bench-pairs: two pairs and a pivot, against LibreTranslate
files.py               make bench-files: a 20-page document, against LibreTranslate
profile.py             make bench-profile: where our server's CPU goes, step by step (py-spy)
"""
