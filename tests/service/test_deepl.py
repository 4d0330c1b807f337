"""DeepL's API on the service (seq2seq/service/deepl.py), through DeepL's own Python client
pointed at it (server_url): texts translated as our API translates them, the languages, a
glossary made by the client and followed, a document uploaded, polled and downloaded,
Weblate's <x id="N"/> placeholders kept in place, and every refusal the client's own
exception."""

from urllib.parse import urlencode

import deepl
import pytest
from deepl.api_data import MultilingualGlossaryDictionaryEntries

from seq2seq.decoding.engines import TorchEngine, translate_texts
from seq2seq.text.sentences import Texts

from helpers import FORM, METERED, call, ours

SENTENCES = ["three is three", "twenty one is five", "four hundred six is nine"]


def client(url: str, key: str = "first") -> deepl.DeepLClient:
    return deepl.DeepLClient(key, server_url=url.rstrip("/"))


def test_the_client_translates_as_our_api_and_lists_the_languages(url):
    translator = client(url)
    one = translator.translate_text(SENTENCES[0], target_lang="DIGITS")
    assert (one.text, one.detected_source_lang) == (ours(url, SENTENCES[:1])[0], "EN")
    assert one.billed_characters == len(SENTENCES[0])
    many = translator.translate_text(SENTENCES, source_lang="en", target_lang="digits")
    assert [result.text for result in many] == ours(url, SENTENCES)
    assert [(lang.code, lang.name) for lang in translator.get_source_languages()] == [
        ("EN", "English")
    ]
    [target] = translator.get_target_languages()
    assert (target.code, target.supports_formality) == ("DIGITS", False)
    # /v3/languages: no call of the client's yet; one source (detected: the only one), en -> digits
    status, languages, _ = call(url, "GET", "/v3/languages?resource=translate_text")
    stable = {"status": "stable"}
    features = {"tag_handling": stable, "glossary": stable}
    assert (status, languages) == (200, [
        {"lang": "en", "name": "English", "usable_as_source": True, "usable_as_target": False,
         "status": "stable", "features": {**features, "auto_detection": stable}},
        {"lang": "digits", "name": "Digits", "usable_as_source": False, "usable_as_target": True,
         "status": "stable", "features": features},
    ])  # fmt: skip


def test_weblates_placeholders_come_back_each_once_in_place(url):
    """Weblate's DeepL backend: tag_handling xml, ignore_tags x, each placeholder <x id="N"/>."""
    text = 'three is three <x id="0"/> nine is nine <x id="1"/>'
    result = client(url).translate_text(
        text, source_lang="EN", target_lang="DIGITS", tag_handling="xml", ignore_tags=["x"]
    )
    expected = ours(url, ["three is three", "nine is nine"])
    assert result.text == f'{expected[0]} <x id="0"/> {expected[1]} <x id="1"/>'
    kept = "three is three <raw>nine is nine</raw>"  # DeepL's ignore_tags: kept as it is
    result = client(url).translate_text(
        kept, source_lang="EN", target_lang="DIGITS", tag_handling="xml", ignore_tags=["raw"]
    )
    assert result.text == f"{expected[0]} <raw>nine is nine</raw>"


def test_a_glossary_the_client_makes_is_followed(url):
    translator = client(url)
    glossary = translator.create_glossary("numbers", "EN", "DIGITS", {"five": "five"})
    assert [g.glossary_id for g in translator.list_glossaries()] == [glossary.glossary_id]
    plain = translator.translate_text(SENTENCES[1], source_lang="EN", target_lang="DIGITS")
    assert not plain.text.endswith("five")
    followed = translator.translate_text(
        SENTENCES[1], source_lang="EN", target_lang="DIGITS", glossary=glossary
    )
    assert followed.text.endswith("five")  # do-not-translate: kept verbatim
    by_ids = translator.translate_text(  # DeepL's newer glossary_ids, of one
        SENTENCES[1], source_lang="EN", target_lang="DIGITS", glossary_ids=[glossary.glossary_id]
    )
    assert by_ids.text == followed.text
    translator.delete_glossary(glossary)
    assert translator.list_glossaries() == []


def test_each_refusal_is_the_clients_own_exception_naming_why(url):
    with pytest.raises(deepl.AuthorizationException):
        client(url, "third").translate_text(SENTENCES[0], target_lang="DIGITS")
    translator = client(url)
    with pytest.raises(deepl.DeepLException, match="'target_lang' not supported: FR"):
        translator.translate_text(SENTENCES[0], target_lang="FR")
    with pytest.raises(deepl.DeepLException, match="no model here has a formal register"):
        translator.translate_text(SENTENCES[0], target_lang="DIGITS", formality="more")
    with pytest.raises(deepl.DeepLException, match="text 1 of 'text' has 5,000 characters"):
        translator.translate_text("x" * 5_000, target_lang="DIGITS")


def test_a_document_is_uploaded_polled_and_downloaded_as_its_lines_are_translated(url, tmp_path):
    lines = ["three is three", "nine is nine"]
    (tmp_path / "notes.txt").write_text("".join(line + "\n" for line in lines))
    translator = client(url)
    with (tmp_path / "notes.txt").open("rb") as source, (tmp_path / "out.txt").open("wb") as out:
        status = translator.translate_document(source, out, target_lang="DIGITS")
    assert status.done and (tmp_path / "out.txt").read_text().splitlines() == ours(url, lines)
    with (tmp_path / "notes.txt").open("rb") as source:
        handle = translator.translate_document_upload(source, target_lang="DIGITS")
    assert translator.translate_document_get_status(handle).done
    glossary = translator.create_glossary("kept", "EN", "DIGITS", {"nine": "nine"})
    with (tmp_path / "notes.txt").open("rb") as source, (tmp_path / "out.txt").open("wb") as out:
        translator.translate_document(
            source, out, source_lang="EN", target_lang="DIGITS", glossary=glossary
        )
    assert (tmp_path / "out.txt").read_text().splitlines()[1].endswith("nine")
    translator.delete_glossary(glossary)
    own_format = pytest.raises(deepl.DeepLException, match="given back in its own format, txt")
    with own_format, (tmp_path / "notes.txt").open("rb") as source:
        translator.translate_document_upload(source, target_lang="DIGITS", output_format="pdf")
    stranger = deepl.DocumentHandle(handle.document_id, "0" * 32)  # the id, not its key
    with pytest.raises(deepl.DeepLException, match="no document"):
        translator.translate_document_get_status(stranger)


def test_usage_counts_a_keys_characters_and_its_quota_is_a_456(url):
    """The key `metered` (conftest.py) may send METERED characters a month."""
    translator = client(url, "metered")
    assert (translator.get_usage().character.count, translator.get_usage().character.limit) == (
        0, METERED,
    )  # fmt: skip
    translator.translate_text(SENTENCES, source_lang="EN", target_lang="DIGITS")
    sent = sum(map(len, SENTENCES))
    assert translator.get_usage().character.count == sent and sent < METERED
    with pytest.raises(deepl.QuotaExceededException, match=f"{sent:,} of its {METERED:,}"):
        translator.translate_text(SENTENCES[0], target_lang="DIGITS")
    assert translator.get_usage().character.count == sent  # the refused one not counted
    assert not client(url).get_usage().any_limit_reached  # no quota: DeepL's figure for none


def test_a_form_gives_text_once_or_more_and_booleans_as_deepl_documents_them(
    url, trained_numbers_checkpoint
):
    form = {**FORM, "Authorization": "DeepL-Auth-Key first"}
    body = urlencode(
        [("text", SENTENCES[0]), ("text", SENTENCES[1]), ("target_lang", "DIGITS"),
         ("preserve_formatting", "1"), ("show_billed_characters", "true"),
         ("ignore_tags", "x,y")],
    ).encode()  # fmt: skip
    status, answer, _ = call(url, "POST", "/v2/translate", body, form)
    assert status == 200, answer
    assert [t["text"] for t in answer["translations"]] == ours(url, SENTENCES[:2])
    assert answer["translations"][0]["billed_characters"] == len(SENTENCES[0])
    both = "three is three. nine is nine"
    whole = urlencode({"text": both, "target_lang": "DIGITS", "split_sentences": "0"})
    status, answer, _ = call(url, "POST", "/v2/translate", whole.encode(), form)
    model = TorchEngine(trained_numbers_checkpoint[0])  # split_sentences 0: one sentence
    [whole_reference] = translate_texts(model, Texts([both], None), model.config.decode)[0]
    assert answer["translations"][0]["text"] == whole_reference
    wrong = urlencode({"text": "one", "target_lang": "DIGITS", "outline_detection": "yes"})
    status, answer, _ = call(url, "POST", "/v2/translate", wrong.encode(), form)
    assert (status, answer) == (400, {"message": "'outline_detection' must be true or false"})


def test_a_multilingual_glossary_is_made_edited_followed_and_deleted_by_the_client(url):
    """DeepL's /v3 glossaries: the client's every call, on the glossaries /v2 keeps too."""
    translator = client(url)
    entries = MultilingualGlossaryDictionaryEntries("EN", "DIGITS", {"five": "five"})
    glossary = translator.create_multilingual_glossary("numbers", [entries])
    assert [(d.source_lang, d.target_lang, d.entry_count) for d in glossary.dictionaries] == [
        ("EN", "DIGITS", 1)
    ]
    assert translator.get_multilingual_glossary(glossary.glossary_id).name == "numbers"
    assert [g.glossary_id for g in translator.list_multilingual_glossaries()] == [
        glossary.glossary_id
    ]
    assert [g.glossary_id for g in translator.list_glossaries()] == [glossary.glossary_id]
    nine = MultilingualGlossaryDictionaryEntries("EN", "DIGITS", {"nine": "nine"})
    translator.update_multilingual_glossary_dictionary(glossary, nine)  # PATCH: merged
    renamed = translator.update_multilingual_glossary_name(glossary, "digits")
    assert (renamed.name, renamed.dictionaries[0].entry_count) == ("digits", 2)
    [kept] = translator.get_multilingual_glossary_entries(glossary, "EN", "DIGITS").dictionaries
    assert kept.entries == "five\tfive\nnine\tnine"  # as DeepL's, no line break at the end
    text = "twenty one is five nine is nine"
    followed = translator.translate_text(
        text, source_lang="EN", target_lang="DIGITS", glossary=glossary
    )
    assert "five" in followed.text and "nine" in followed.text
    translator.replace_multilingual_glossary_dictionary(glossary, nine)  # PUT: replaced
    assert (
        translator.get_multilingual_glossary(glossary.glossary_id).dictionaries[0].entry_count == 1
    )
    translator.delete_multilingual_glossary_dictionary(glossary, None, "EN", "DIGITS")
    assert translator.get_multilingual_glossary(glossary.glossary_id).dictionaries == []
    with pytest.raises(deepl.GlossaryNotFoundException):  # a 404: no such dictionary
        translator.get_multilingual_glossary_entries(glossary, "EN", "DIGITS")
    translator.delete_multilingual_glossary(glossary)
    with pytest.raises(deepl.GlossaryNotFoundException):
        translator.get_multilingual_glossary(glossary.glossary_id)
