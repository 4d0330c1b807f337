"""DeepL's API on the service through DeepL's official Node client, deepl-node (pinned in
tests/service/node/package-lock.json; `make test` installs it with `npm ci` where npm is on
PATH), as test_deepl.py drives the Python client: tests/service/node/client.mjs makes each call
and prints what it got, checked here against our own API's translations.

What the Node client sends differs from the Python client's: every request with fields is a
form (`text` repeated for several texts, `show_billed_characters=1`), a document multipart.
Language codes: it checks none against DeepL's list (its TypeScript types name DeepL's, plain
JavaScript passes any), but lowercases them, both ways: `DIGITS` is sent as `digits` (`EN-US`
as `en-US`, a glossary's languages without their region), which the service takes in any case,
and the `EN` it answers is read as `en`. It refuses a target `en` or `pt` before sending (DeepL
wants EN-GB/EN-US, PT-PT/PT-BR): a model into plain English or Portuguese is asked for with
`EN-US` or `PT-BR`, which the service maps back.

GET /v2/usage (translator.getUsage) is checked only where the service answers it."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import HANG, call, ours

SENTENCES = ["three is three", "twenty one is five", "four hundred six is nine"]
CLIENT = Path(__file__).parent / "node" / "client.mjs"
INSTALLED = CLIENT.parent / "node_modules" / "deepl-node" / "package.json"

if shutil.which("node") is None:
    pytest.skip("no node on PATH: DeepL's Node client cannot run", allow_module_level=True)
if not INSTALLED.exists():
    pytest.skip(
        "deepl-node is not installed: `make test` installs it where npm is on PATH "
        "(npm ci --prefix tests/service/node)",
        allow_module_level=True,
    )


def test_the_node_client_translates_lists_glossaries_and_documents_as_our_api(url, tmp_path):
    run = subprocess.run(
        ["node", str(CLIENT), url.rstrip("/"), "first", str(tmp_path), *SENTENCES],
        capture_output=True, text=True, timeout=HANG, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout)
    # asked before anything else is translated, should the key's characters be counted
    usage = call(url, "GET", "/v2/usage", None, {"Authorization": "DeepL-Auth-Key first"})
    expected = ours(url, SENTENCES)

    first = {"text": expected[0], "detected": "en", "billed": len(SENTENCES[0])}
    assert got["one"] == first  # source_lang absent: detected
    billed = [len(sentence) for sentence in SENTENCES]
    translated = [
        {"text": text, "detected": "en", "billed": count}
        for text, count in zip(expected, billed, strict=True)
    ]
    assert got["many"] == got["manyDetected"] == translated
    assert got["sources"] == [["en", "English"]]  # the client lowercases codes
    assert got["targets"] == [["digits", False]]

    assert got["glossary"] == {"name": "numbers", "count": 1, "ready": True}
    assert got["listed"] == [True]  # the one glossary, the one just made
    assert not expected[1].endswith("five")
    assert got["followed"]["text"].endswith("five")  # do-not-translate: kept verbatim
    assert got["entries"] == {"five": "five"}
    assert got["afterDelete"] == 0

    assert got["document"] == {"done": True, "text": "".join(t + "\n" for t in expected)}
    assert got["wrongKey"]["error"] == "AuthorizationError", got["wrongKey"]

    status, answer, _ = usage
    if status == 404:  # not served yet: the client's own error for it
        assert got["usage"]["message"].startswith("Not found"), got["usage"]
    else:  # the client reads the characters only if both are given
        assert status == 200, answer
        count, limit = answer.get("character_count"), answer.get("character_limit")
        assert got["usage"] == {"character": {"count": count, "limit": limit}}
