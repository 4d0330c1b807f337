"""make bench-learn's own parts (benchmarks/adapt/learn.py); the replay itself needs the
stand-in (make standin) and runs as make bench-learn."""

from benchmarks.adapt import learn


def test_the_improvement_waits_for_the_corrections_the_service_keeps():
    """serve.improve_after is the first half's corrections that the service's checks keep: a
    refused one (empty, a copy of its source) never counts towards it."""
    pairs = [
        ("Open the file", "Datei öffnen"),
        ("Save all the open files now", "Save all the open files now"),  # a copy
        ("Quit", " "),  # empty
        ("Close the window", "Fenster schließen"),
    ]
    assert learn.keepable(pairs, ("en", "de"), most=3000) == 2
    assert learn.keepable(pairs[:1], ("en", "de"), most=5) == 0  # too long
