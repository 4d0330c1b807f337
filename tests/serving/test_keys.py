"""API keys with limits of their own in a keys database (seq2seq/serving/keystore.py), managed
by `python -m seq2seq.keys` as LibreTranslate's `ltmanage keys`, and held to by the service:
a key's requests a minute and characters a request, a key added or removed while it serves."""

import math
import sqlite3

import databases
import pytest

from seq2seq import keys
from seq2seq.decoding.engines import TorchEngine
from seq2seq.serving import checks, keystore
from seq2seq.serving.keystore import KeyLimits, KeyStore, digest
from seq2seq.serving.refusals import Busy
from seq2seq.support.database import is_url
from seq2seq.support.errors import UserError

from helpers import JSON, call, running

T = "/translate"


def cli(capsys, *argv: str) -> str:
    keys.main(list(argv))
    return capsys.readouterr().out


def test_the_command_adds_lists_and_removes_keys_and_the_file_keeps_no_key(
    database, tmp_path, capsys
):
    db = database  # an SQLite file's path, or a PostgreSQL URL
    key = cli(capsys, "--db", db, "add", "--requests-per-minute", "5", "--max-chars", "40",
              "--chars-per-month", "1000").strip()  # fmt: skip
    assert len(key) >= 32
    if not is_url(db):  # the file and its write-ahead log: the key's digest, not the key
        kept = b"".join(path.read_bytes() for path in tmp_path.glob("state.db*"))
        assert digest(key) in kept.decode("latin-1") and key not in kept.decode("latin-1")
    assert cli(capsys, "--db", db, "add", "--key", "sesame").strip() == "sesame"
    listed = cli(capsys, "--db", db, "list").splitlines()
    assert len(listed) == 2
    assert "requests a minute: 5  characters a request: 40" in listed[0]
    assert "characters this month: 0 of 1,000" in listed[0]
    assert "requests a minute: no limit of its own" in listed[1]
    first_id = listed[0].split()[0]
    cli(capsys, "--db", db, "remove", first_id)  # by its id
    cli(capsys, "--db", db, "remove", "sesame")  # by the key itself
    assert cli(capsys, "--db", db, "list").strip() == f"no keys in {db}"
    with pytest.raises(UserError, match="no key sesame"):
        keys.main(["--db", db, "remove", "sesame"])
    with pytest.raises(UserError, match="no such API keys file"):
        keys.main(["--db", str(tmp_path / "none.db"), "list"])
    store = KeyStore(db)
    store.add(KeyLimits(), "sesame")
    with pytest.raises(UserError, match="there already"):
        store.add(KeyLimits(), "sesame")


def test_a_keys_quota_holds_across_instances_sharing_its_database(database):
    """Two instances' keys databases (the same file, or the same PostgreSQL): a key's month
    charged by both stops at its quota, and a key one adds the other reads."""
    one, other = KeyStore(database, create=True), KeyStore(database)
    one.add(KeyLimits(chars_per_month=10), "shared")
    assert other.limits() == {digest("shared"): KeyLimits(0, 0, 10)}
    assert one.charge(digest("shared"), 6, 10) and not other.charge(digest("shared"), 5, 10)
    assert other.charge(digest("shared"), 4, 10) and other.used(digest("shared")) == 10
    one.close()
    other.close()


def test_a_service_sees_a_key_added_to_postgresql_and_keeps_its_keys_while_it_is_gone(
    postgresql,
):
    """serve.api_keys a PostgreSQL URL: its keys read again in a thread of their own (never
    on the event loop); a key added is taken once read; the database gone, the keys read
    last stay, and a charge is refused as Busy (a 503 to try again), nothing counted."""
    KeyStore(postgresql).add(KeyLimits(), "first")
    keys = keystore.ApiKeys.load(postgresql)
    assert keys.limits("first")[0] == digest("first")
    KeyStore(postgresql).add(KeyLimits(chars_per_month=5), "second")
    keys.looked = -math.inf  # due
    keys.refresh()
    keys.rereading.join()
    assert keys.limits("second")[1] == KeyLimits(0, 0, 5)
    databases.drop_database(postgresql)
    keys.reread()
    assert keys.limits("second")[1] == KeyLimits(0, 0, 5)  # the keys read last
    with pytest.raises(Busy, match="does not answer"):
        keys.charge(digest("second"), KeyLimits(0, 0, 5), 1)


def test_a_keys_file_of_an_earlier_version_keeps_its_keys_and_counts_their_characters(tmp_path):
    path = tmp_path / "keys.db"
    earlier = sqlite3.connect(path)  # the table as it was before chars_per_month
    earlier.execute(
        "CREATE TABLE keys (digest TEXT PRIMARY KEY, id TEXT NOT NULL, requests_per_minute "
        "INTEGER NOT NULL, max_chars INTEGER NOT NULL, added_at TEXT NOT NULL)"
    )
    with earlier:
        earlier.execute("INSERT INTO keys VALUES (?, 'old', 5, 40, 'then')", (digest("old"),))
    earlier.close()
    store = KeyStore(path)
    assert store.limits() == {digest("old"): KeyLimits(5, 40, 0)}
    store.add(KeyLimits(chars_per_month=10), "new")
    assert store.charge(digest("new"), 6, 10) and not store.charge(digest("new"), 5, 10)
    assert (store.used(digest("new")), store.used(digest("old"))) == (6, 0)
    assert [used for *_, used in store.listed()] == [0, 6]


def test_a_key_is_held_to_its_own_limits_and_a_new_one_counts_at_once(
    trained_numbers_checkpoint, tmp_path, monkeypatch
):
    monkeypatch.setattr(keystore.ApiKeys, "look_every_s", 0.0)  # each request looks at the file
    monkeypatch.setattr(checks.Buckets, "clock", staticmethod(lambda: 1000.0))
    store = KeyStore(tmp_path / "keys.db", create=True)
    slow = store.add(KeyLimits(requests_per_minute=2))
    short = store.add(KeyLimits(max_chars=20))
    model = TorchEngine(trained_numbers_checkpoint[0])
    ours = {"text": ["three is three"]}
    theirs = {"q": "three is three", "source": "en", "target": "digits"}
    with running(model, api_keys=str(tmp_path / "keys.db")) as server:

        def status(key: str, body: dict = ours) -> int:
            if "q" in body:
                return call(server.url, "POST", T, {**body, "api_key": key})[0]
            return call(server.url, "POST", T, body, {**JSON, "Authorization": f"Bearer {key}"})[0]

        assert [status(slow) for _ in range(3)] == [200, 200, 429]
        assert status(short) == 200  # each key its own count
        long = {"text": ["three is three and four is four"]}
        assert status(short, long) == 413 and status(short, {**theirs, "q": long["text"][0]}) == 400
        assert status("not-yet") == 403
        store.add(KeyLimits(), "not-yet")  # while it serves
        assert status("not-yet", theirs) == 200
        store.remove("not-yet")
        assert status("not-yet") == 403
        answer = call(server.url, "POST", T, ours, {**JSON, "Authorization": f"Bearer {slow}"})
        assert answer[1]["error"].startswith("Slowdown: this API key may make 2 requests")
        assert answer[2]["Retry-After"] == "30"


def test_a_missing_or_foreign_keys_database_is_an_error_at_start(tmp_path):
    with pytest.raises(UserError, match="no such API keys file"):
        keystore.ApiKeys.load(str(tmp_path / "none.db"))
    (tmp_path / "text.db").write_text("not a database at all, and long enough to say so")
    with pytest.raises(UserError, match="not an API keys file"):
        keystore.ApiKeys.load(str(tmp_path / "text.db"))
    KeyStore(tmp_path / "empty.db", create=True).close()
    assert keystore.ApiKeys.load(str(tmp_path / "empty.db"))  # no keys yet: every POST refused
