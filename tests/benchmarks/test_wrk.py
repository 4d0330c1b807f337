"""The wrk driver's script (benchmarks/service/wrk.py): each request body one Lua long string,
whatever brackets it holds, in the shape of the API asked, to its path (wrk itself is not
needed)."""

import pytest

from benchmarks.service import wrk
from benchmarks.service.clients import Shape


@pytest.mark.parametrize("text", ['{"text": ["a"]}', "q=x]]y", "x]]y]=]z"])
def test_a_body_is_one_lua_long_string_whatever_it_holds(text):
    quoted = wrk.lua_string(text)
    opening = quoted[: quoted.index("[", 1) + 1]
    closing = opening.replace("[", "]")
    assert quoted == opening + text + closing and closing not in text


def test_the_script_sends_each_sentence_in_the_shape_asked():
    ours = wrk.script(Shape.ours(beam_size=1), ["one is one", "two ]] two"])
    assert '[[{"text": ["one is one"], "beam_size": 1}]]' in ours
    assert '[=[{"text": ["two ]] two"], "beam_size": 1}]=]' in ours
    assert 'wrk.headers["Content-Type"] = "application/json"' in ours
    assert 'wrk.format(nil, "/translate", nil, bodies[i])' in ours
    theirs = wrk.script(Shape.libretranslate("en", "digits"), ["one is one"])
    assert "[[q=one+is+one&source=en&target=digits]]" in theirs
    assert "application/x-www-form-urlencoded" in theirs
    deepl = wrk.script(Shape.deepl("en", "digits"), ["one is one"])
    assert '[[{"text": ["one is one"], "source_lang": "EN", "target_lang": "DIGITS"}]]' in deepl
    assert 'wrk.format(nil, "/v2/translate", nil, bodies[i])' in deepl
