"""make bench-peers: seq2seq against JoeyNMT and OpenNMT-py, with the same data, vocabulary,
model and time budget.

    compare.py          the command: its inputs checked, then train, decode and report each
    ours.py             seq2seq trained for the budget, and its decoding
    joeynmt_config.py   JoeyNMT's settings from ours (its token batches simulated)
    joeynmt_peer.py     JoeyNMT trained for the budget, its validations read, its decoding
    joeynmt_driver.py   run by JoeyNMT's own Python: predict() timed alone
    opennmt_peer.py     OpenNMT-py's settings from ours, trained and decoded alike
    opennmt_driver.py   run by OpenNMT-py's own Python: each checkpoint decoded, timed
    pieces.py           the text every peer reads (our pieces); their outputs made text
    measure.py          alike for all: a growing file read, files noted as they appear,
                        scores, a run's and a decoding's figures (each command run by
                        benchmarks.common.run)
    report.py           the table, the ratios, the differences left, the curves' picture
"""
