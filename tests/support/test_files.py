"""What a process killed while writing leaves: removed by the next write of the same file or
folder, if its process no longer runs; nothing else is touched."""

import os
import subprocess
import sys

from seq2seq.support.files import atomic_write, remove_leftovers, stand_in


def ended_pid() -> int:
    """The id of a process that has ended."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_only_the_stand_ins_of_ended_processes_for_that_name_are_removed(tmp_path):
    dead, alive = ended_pid(), os.getpid()
    names = {
        f".best.ct2.{dead}.abc_1234": "dir",  # a staging folder: removed
        f".best.ct2.{dead}.k9z0x8y7.tmp": "file",  # a temporary file: removed
        f".best.ct2.{alive}.abcd1234": "dir",  # a running process's: kept
        f".other.ct2.{dead}.abcd1234": "dir",  # another folder's: kept
        ".best.ct2.notmine": "dir",  # not a stand-in's name: kept
        "best.ct2.12.abcd1234": "file",  # not hidden: kept
    }
    for name, kind in names.items():
        path = tmp_path / name
        path.mkdir() if kind == "dir" else path.write_text("x")
        if kind == "dir":
            (path / "model.bin").write_text("x")
    remove_leftovers(tmp_path, "best.ct2")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(list(names)[2:])
    remove_leftovers(tmp_path)  # every name
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(list(names)[2:3] + list(names)[4:])


def test_an_earlier_folder_set_aside_for_a_new_one_that_never_came_is_put_back(tmp_path):
    aside = tmp_path / f".best.ct2.{ended_pid()}.abcd1234.old"
    aside.mkdir()
    (aside / "model.bin").write_text("the earlier export")
    remove_leftovers(tmp_path, "best.ct2")
    assert (tmp_path / "best.ct2/model.bin").read_text() == "the earlier export"
    assert [p.name for p in tmp_path.iterdir()] == ["best.ct2"]


def test_a_write_clears_what_an_ended_writer_of_the_same_file_left(tmp_path):
    left = tmp_path / f".eval.json.{ended_pid()}.abcd1234.tmp"
    left.write_text("{")
    with atomic_write(tmp_path / "eval.json") as file:
        (writing,) = [p.name for p in tmp_path.iterdir()]  # the other one is gone
        assert writing.startswith(stand_in(tmp_path / "eval.json")) and writing.endswith(".tmp")
        file.write("{}")
    assert [p.name for p in tmp_path.iterdir()] == ["eval.json"]
