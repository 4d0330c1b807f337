"""What a command says on stderr (seq2seq/support/errors.py): each line in one write."""

import os
import subprocess
import sys

from helpers import ROOT

SPEAKER = """import sys
from seq2seq.support.errors import say
sys.stdin.read(1)  # both start at once
for _ in range(3000):
    say(sys.argv[1] * 2000)
"""


def test_the_lines_of_processes_sharing_stderr_never_interleave():
    """Two processes say 3,000 lines of 2,000 characters each, at once, into one pipe (a
    service's workers' stderr): every line read is one of theirs, whole. (print's two writes,
    the text, then its newline, interleave here.)"""
    read_end, write_end = os.pipe()
    speakers = [subprocess.Popen([sys.executable, "-c", SPEAKER, mark], stdin=subprocess.PIPE,
                                 stderr=write_end, cwd=ROOT) for mark in "ab"]  # fmt: skip
    os.close(write_end)
    for speaker in speakers:
        speaker.stdin.close()  # read(1) returns: go
    with os.fdopen(read_end, encoding="utf-8") as stream:
        lines = stream.read().splitlines()
    assert [speaker.wait() for speaker in speakers] == [0, 0]
    assert len(lines) == 6000 and set(lines) == {"a" * 2000, "b" * 2000}
