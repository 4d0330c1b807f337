"""Translation on any input: one output line per input line, warnings instead of crashes,
and fuzzed inputs (hypothesis) for translation and the corpus readers."""

import contextlib
import dataclasses
import io
import os
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seq2seq.checkpoint import load_checkpoint
from seq2seq.decoding.engines import TorchEngine
from seq2seq.text.parallel import CorpusError, read_lines, read_parallel, utf8_lines
from seq2seq.translate import read_input_lines, translate_lines

from helpers import ENV, HANG, command


@pytest.fixture(scope="module")
def model_path(seed_run) -> Path:
    return seed_run / "best.pt"


@pytest.fixture(scope="module")
def checkpoint(model_path):
    return load_checkpoint(model_path)


def run_translate(model_path: Path, stdin: bytes, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        command("seq2seq.translate", "--checkpoint", str(model_path), *args),
        input=stdin,
        capture_output=True,
        env=ENV,
        timeout=HANG,
    )


def test_a_pipeline_gets_one_line_per_input_line(model_path):
    stdin = (
        b"one is one\r\n"  # CRLF
        b"\n"  # empty
        b"Four-is FOUR\n"  # normalised like the training text: "four is four"
        b"\xff\xfe three is three\n"  # invalid UTF-8
        b"   \n"  # blank
        b"two\x0bis\x1ctwo\xe2\x80\xa8two\n"  # characters that str.splitlines() splits on
        b"nine is nine"  # no newline at the end
    )
    done = run_translate(model_path, stdin)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.decode().split("\n")
    assert len(lines) == 8 and lines[-1] == ""  # seven lines, each ended by a newline
    assert lines[0] == "1 la 1" and lines[1] == "" and lines[2] == "4 la 4"
    assert lines[4] == "" and lines[6] == "9 la 9"
    stderr = done.stderr.decode()
    assert "warning: line 4: invalid UTF-8 (invalid start byte) replaced by U+FFFD" in stderr
    assert "Traceback" not in stderr


def test_an_argument_that_is_not_utf8_is_translated_with_a_warning(model_path):
    done = subprocess.run(
        [*command("seq2seq.translate", "--checkpoint", str(model_path)), b"\xff three is three"],
        capture_output=True,
        env=ENV,
        timeout=HANG,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().count("\n") == 1
    stderr = done.stderr.decode()
    assert "warning: argument 1: invalid UTF-8 replaced by U+FFFD" in stderr
    assert "Traceback" not in stderr


def test_unknown_words_are_named_on_stderr(checkpoint, capsys):
    lines = translate_lines(TorchEngine(checkpoint), ["three is eleven", "five is five"])
    assert len(lines) == 2 and lines[1] == "5 la 5"
    err = capsys.readouterr().err
    assert err == "warning: line 1: not in the vocabulary, translated as unknown: 'eleven'\n"


def test_an_input_longer_than_the_model_is_cut_with_a_warning(checkpoint, capsys):
    longest = checkpoint.config.model.max_positions - 1
    lines = translate_lines(TorchEngine(checkpoint), ["one is one", "one " * 300])
    assert len(lines) == 2 and lines[0] == "1 la 1"
    assert f"warning: line 2: 300 pieces, cut to the model's {longest}" in capsys.readouterr().err


# A text of three sentences (the word vocabulary does not know "one." and its kind: each is
# translated as its unknown piece, with a warning), and the same sentences alone.
TEXT = "one is one.   two is two!\tthree is three?"
SENTENCES = ["one is one.", "two is two!", "three is three?"]


def test_a_line_of_sentences_is_their_translations_in_its_spacing(checkpoint, capsys):
    engine = TorchEngine(checkpoint)
    each = translate_lines(engine, SENTENCES)
    assert len(set(each)) == 3 and all(each)
    capsys.readouterr()
    assert translate_lines(engine, [TEXT], language="en") == [f"{each[0]}   {each[1]}\t{each[2]}"]
    warnings = capsys.readouterr().err.splitlines()
    assert len(warnings) == 3 and all(w.startswith("warning: line 1: ") for w in warnings)
    # line breaks end sentences; the output stays one line per input line
    assert translate_lines(engine, ["one is one\ntwo is two"], language="en") == [
        " ".join(translate_lines(engine, ["one is one", "two is two"]))
    ]


def test_a_line_of_one_sentence_is_translated_as_it_was(checkpoint):
    engine = TorchEngine(checkpoint)
    lines = ["three is three", "", "   ", "  four is four ", "Five is five."]
    assert translate_lines(engine, lines, language="en") == translate_lines(engine, lines)


def test_a_line_of_sentences_has_the_nbest_of_its_sentences_joined(checkpoint):
    engine = TorchEngine(checkpoint)
    decoding = dataclasses.replace(checkpoint.config.decode, beam_size=2)
    (first, second, _), *_ = engine.translate_nbest(SENTENCES, decoding)
    checkpoint.config.decode.beam_size = 2
    try:
        lines = translate_lines(engine, ["one is one. two is two!"], nbest=2, language="en")
    finally:
        checkpoint.config.decode.beam_size = 1
    assert lines == [
        f"0 ||| {a} {b} ||| {score_a + score_b:.4f}"
        for (score_a, a), (score_b, b) in zip(first, second, strict=True)
    ]


def test_the_command_splits_lines_into_sentences_unless_told_not_to(model_path):
    stdin = "\n".join([TEXT, *SENTENCES]).encode()  # the text, then its sentences alone
    split, whole = run_translate(model_path, stdin), run_translate(model_path, stdin, "--no-split")
    assert split.returncode == whole.returncode == 0, (split.stderr, whole.stderr)
    text, *each = split.stdout.decode().splitlines()
    assert text == f"{each[0]}   {each[1]}\t{each[2]}"
    assert split.stdout.decode().splitlines()[1:] == whole.stdout.decode().splitlines()[1:]
    warned = [done.stderr.decode().count("warning: line 1: ") for done in (split, whole)]
    assert warned == [3, 1]  # each sentence's unknown words, or the whole line's in one warning


def test_a_pipe_gets_its_first_translations_before_its_last_line(model_path):
    process = subprocess.Popen(
        command("seq2seq.translate", "--checkpoint", str(model_path)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=ENV,
    )
    chunk = load_checkpoint(model_path).config.decode.batch_size  # lines translated together
    process.stdin.write(b"two is two\n" * chunk)
    process.stdin.flush()  # the input stays open: no end of file yet
    first = []
    reader = threading.Thread(target=lambda: first.append(process.stdout.readline()))
    reader.start()
    reader.join(timeout=HANG)
    assert first == [b"2 la 2\n"], "the first chunk is answered while more input may come"
    process.stdin.write(b"three is three\n")
    process.stdin.close()
    rest = process.stdout.read().decode().splitlines()  # from the same reader, to the end
    assert process.wait(timeout=HANG) == 0
    assert rest == ["2 la 2"] * (chunk - 1) + ["3 la 3"]


def test_interactive_mode_on_a_terminal(model_path):
    controller, terminal = os.openpty()
    process = subprocess.Popen(
        command("seq2seq.translate", "--checkpoint", str(model_path)),
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
    )
    os.close(terminal)
    os.write(controller, b"seven is seven\n\x04")  # a sentence, then Ctrl-D
    try:
        stdout, stderr = process.communicate(timeout=HANG)
    finally:
        os.close(controller)
    assert process.returncode == 0, stderr
    assert stdout == b"7 la 7\n"
    assert b"Ctrl-D to quit" in stderr and b"> " in stderr


FUZZ = settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.slow
@FUZZ
@given(st.binary(max_size=300))
def test_fuzz_any_bytes_on_stdin_give_one_line_per_input_line(checkpoint, stdin):
    with contextlib.redirect_stderr(io.StringIO()):
        lines = list(read_input_lines(io.BytesIO(stdin)))
        lines = translate_lines(TorchEngine(checkpoint), lines, language="en")
    expected = stdin.count(b"\n") + (0 if stdin.endswith(b"\n") or not stdin else 1)
    assert len(lines) == expected
    assert all("\n" not in line and "\r" not in line for line in lines)


@pytest.mark.slow
@FUZZ
@given(st.lists(st.text(max_size=400), max_size=4), st.integers(1, 3))
def test_fuzz_any_text_is_translated_with_nbest_lists(checkpoint, sentences, nbest):
    checkpoint.config.decode.beam_size = nbest
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            lines = translate_lines(TorchEngine(checkpoint), sentences, nbest=nbest)
    finally:
        checkpoint.config.decode.beam_size = 1
    numbers = [int(line.split(" ||| ")[0]) for line in lines]
    for number, sentence in enumerate(sentences):
        count = numbers.count(number)
        assert count == 1 if not checkpoint.src_vocab.encode([sentence])[0] else 1 <= count <= nbest


@FUZZ
@given(st.binary(max_size=200))
def test_fuzz_the_line_reader_gives_lines_or_an_error_naming_the_line(data_bytes):
    try:
        lines = list(utf8_lines(io.BytesIO(data_bytes), "corpus.txt"))
    except CorpusError as error:
        assert str(error).startswith("corpus.txt, line ") and "invalid UTF-8" in str(error)
        return
    assert len(lines) == data_bytes.count(b"\n") + (
        not data_bytes.endswith(b"\n") and data_bytes != b""
    )
    assert all("\n" not in line for line in lines)


@FUZZ
@given(st.lists(st.text(), max_size=6), st.lists(st.text(), max_size=6))
def test_fuzz_parallel_files_pair_up_or_say_why(sources, targets):
    with tempfile.TemporaryDirectory() as directory:
        src, tgt = Path(directory, "a.src"), Path(directory, "a.tgt")
        src.write_text(
            "".join(s.replace("\n", " ") + "\n" for s in sources), encoding="utf-8", newline=""
        )
        tgt.write_text(
            "".join(t.replace("\n", " ") + "\n" for t in targets), encoding="utf-8", newline=""
        )
        try:
            pairs = read_parallel(src, tgt)
        except CorpusError as error:
            assert len(sources) != len(targets)
            assert str(src) in str(error) and str(tgt) in str(error)
            return
        assert len(pairs) == len(sources) == len(targets)
        assert len(read_lines(src)) == len(sources)


def test_placeholders_option_sets_the_decoding_and_a_wrong_value_is_one_line(capsys):
    from seq2seq.translate import decode_flags, parse_arguments

    assert decode_flags(parse_arguments(["three is three"])) == {}  # the model's own
    flags = decode_flags(parse_arguments(["--placeholders", "off", "three is three"]))
    assert flags == {"placeholders": "off"}
    with pytest.raises(SystemExit):
        parse_arguments(["--placeholders", "keep"])
    assert "invalid choice: 'keep'" in capsys.readouterr().err


def test_a_document_is_translated_beside_itself_as_its_lines_are(model_path, tmp_path):
    lines = b"one is one\n\nFour-is FOUR\nnine is nine"
    (tmp_path / "notes.txt").write_bytes(lines)
    done = run_translate(model_path, b"", "--file", str(tmp_path / "notes.txt"))
    assert done.returncode == 0, done.stderr
    written = tmp_path / "notes.digits.txt"
    assert done.stdout.decode().strip() == str(written)
    assert written.read_text() == run_translate(model_path, lines).stdout.decode().rstrip("\n")
    missing = run_translate(model_path, b"", "--file", str(tmp_path / "none.docx"))
    assert missing.returncode != 0 and "cannot read" in missing.stderr.decode()
    assert "Traceback" not in missing.stderr.decode()
