"""Support: what every chapter uses and none owns.

    errors.py           the one-line user errors and the commands' argument parser
    files.py            atomic (crash-safe) file writing
    database.py         the service's kept state in SQLite or PostgreSQL, one place for both
    paths.py            the name of every file under data/ and runs/
    device.py           where the model runs (CUDA, MPS, CPU) and in which precision
    dataclass_yaml.py   YAML into typed dataclasses, key by key (under seq2seq/config.py)

May import: nothing of seq2seq's but its own modules.
"""
