"""DeepL's API on the service (seq2seq/service/deepl.py), through DeepL's own Python client
pointed at it (server_url): texts translated as our API translates them, the languages, a
glossary made by the client and followed, a document uploaded, polled and downloaded,
Weblate's <x id="N"/> placeholders kept in place, and every refusal the client's own
exception."""

import deepl
import pytest

from seq2seq.decoding.engines import TorchEngine

from helpers import call, running

SENTENCES = ["three is three", "twenty one is five", "four hundred six is nine"]


@pytest.fixture(scope="module")
def url(trained_numbers_checkpoint, tmp_path_factory):
    folder = tmp_path_factory.mktemp("deepl")
    (folder / "keys").write_text("first second\n")
    settings = {"api_keys": str(folder / "keys"), "glossaries_file": str(folder / "g.db"),
                "files": True, "files_dir": str(folder / "files")}  # fmt: skip
    with running(TorchEngine(trained_numbers_checkpoint[0]), **settings) as server:
        yield server.url


def client(url: str, key: str = "first") -> deepl.Translator:
    return deepl.Translator(key, server_url=url.rstrip("/"))


def ours(url: str, texts: list[str]) -> list[str]:
    """The texts' translations by our API."""
    bearer = {"Content-Type": "application/json", "Authorization": "Bearer first"}
    status, answer, _ = call(url, "POST", "/translate", {"text": texts}, bearer)
    assert status == 200, answer
    return answer["translations"]


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


def test_weblates_placeholders_come_back_each_once_in_place(url):
    """Weblate's DeepL backend: tag_handling xml, ignore_tags x, each placeholder <x id="N"/>."""
    text = 'three is three <x id="0"/> nine is nine <x id="1"/>'
    result = client(url).translate_text(
        text, source_lang="EN", target_lang="DIGITS", tag_handling="xml", ignore_tags=["x"]
    )
    expected = ours(url, ["three is three", "nine is nine"])
    assert result.text == f'{expected[0]} <x id="0"/> {expected[1]} <x id="1"/>'


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
    stranger = deepl.DocumentHandle(handle.document_id, "0" * 32)  # the id, not its key
    with pytest.raises(deepl.DeepLException, match="no document"):
        translator.translate_document_get_status(stranger)
