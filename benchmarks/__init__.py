"""seq2seq's benchmarks, a folder a question (README.md says which make target runs what):

    common.py    what every script shares: the machine, the clocks, the options, the results
    speed/       how fast we train and decode, against baselines measured in the same run
    service/     the translation service under load, and against LibreTranslate
    peers/       training against JoeyNMT and OpenNMT-py: the same data, model and budget
    checks/      whole paths run end to end: the GPU, the install sizes, the recipes' scores
    results/     every figure committed: <name>.json and its table <name>.md

Each script runs from the repository's root as a module: python -m benchmarks.speed.bench.
"""
