"""serve.url_prefix, as LibreTranslate's --url-prefix: every route under the prefix (ours,
LibreTranslate's through its own client, a document's download URL, the description, the
page's files, /metrics' labels), the guards before them, any other path the JSON 404; and
the page translates under it in headless Chromium. One server, as behind a reverse proxy that
passes the path on as it is (its Host and X-Forwarded-Proto), and reached directly."""

import http.client
import re
from urllib.parse import urlsplit

import httpx
import pytest
from libretranslatepy import LibreTranslateAPI
from prometheus_client.parser import text_string_to_metric_families
from test_translate_file import upload, word_document

from seq2seq.decoding.engines import TorchEngine
from seq2seq.service.server import Server
from seq2seq.serving.protocol import bind

from helpers import HANG, call, running

PREFIX = "/translate-api"
PUBLIC = "translate.example.org"  # the name a reverse proxy in front is reached by
SENTENCE = "three is three"


@pytest.fixture(scope="module")
def served(trained_numbers_checkpoint, tmp_path_factory):
    """The small numbers model under PREFIX, with metrics, behind a proxy on 127.0.0.1 (whose
    X-Forwarded-Proto counts), reached as PUBLIC too; and the model."""
    model = TorchEngine(trained_numbers_checkpoint[0])
    settings = {
        "url_prefix": PREFIX,
        "metrics": True,
        "files_dir": str(tmp_path_factory.mktemp("files")),
        "allowed_hosts": [PUBLIC],
        "trusted_proxies": ["127.0.0.1"],
    }
    with running(model, **settings) as server:
        yield server, model


def fetch(url: str, path: str, headers=None) -> http.client.HTTPResponse:
    """GET `path` on the server of `url`: the response, its body read into .text."""
    connection = http.client.HTTPConnection(urlsplit(url).netloc, timeout=HANG)
    connection.request("GET", path, headers=headers or {})
    response = connection.getresponse()
    response.text = response.read().decode(errors="replace")
    connection.close()
    return response


def test_every_route_is_under_the_prefix_and_any_other_path_is_a_404(served):
    server, model = served
    status, health, _ = call(server.url, "GET", f"{PREFIX}/health")
    assert status == 200 and health["status"] == "ok"
    status, answer, _ = call(server.url, "POST", f"{PREFIX}/translate", {"text": [SENTENCE]})
    expected = model.translate([SENTENCE], model.config.decode).outputs[0]
    assert status == 200 and answer["translations"] == [expected]
    for path, method in (("/health", "GET"), ("/translate", "POST"), ("/", "GET")):
        status, answer, _ = call(server.url, method, path, {"text": [SENTENCE]})
        assert status == 404, path
        assert answer["error"].startswith(f"no {path} here; there are GET {PREFIX}")
        assert f"POST {PREFIX}/translate," in answer["error"]
    status, answer, _ = call(server.url, "GET", f"{PREFIX}/health/")
    assert status == 404 and answer["error"].startswith(f"no {PREFIX}/health/ here")
    status, answer, _ = call(server.url, "GET", f"{PREFIX}/translate")
    assert status == 405 and answer["error"] == f"{PREFIX}/translate takes POST, not GET"
    bare = fetch(server.url, PREFIX)  # the prefix alone: to the page, whose URLs are relative
    assert bare.status == 307 and bare.headers["Location"] == f"{PREFIX}/"
    # the guards come first, under the prefix and outside it
    for path in (f"{PREFIX}/health", "/health"):
        status, answer, _ = call(server.url, "GET", path, headers={"Host": "evil.example"})
        assert status == 400 and "serve.allowed_hosts" in answer["error"], path
    origin = {"Origin": "http://evil.example", "Content-Type": "application/json"}
    status, _, _ = call(server.url, "POST", f"{PREFIX}/translate", {"text": ["x"]}, origin)
    assert status == 403


def test_the_page_and_the_description_are_under_the_prefix(served):
    server, _ = served
    page = fetch(server.url, f"{PREFIX}/")
    assert page.status == 200 and page.headers["Content-Type"].startswith("text/html")
    assert 'href="style.css"' in page.text and 'src="app.js"' in page.text  # relative
    script = fetch(server.url, f"{PREFIX}/app.js")
    assert script.status == 200
    asked = re.findall(r'\b(?:fetch|post)\("([^"]*)"', script.text)
    assert {"info", "translate", "attention", "suggest"} == set(asked)  # relative, each
    assert fetch(server.url, f"{PREFIX}/style.css").status == 200
    status, described, _ = call(server.url, "GET", f"{PREFIX}/openapi.json")
    assert status == 200 and described["servers"] == [{"url": PREFIX}]
    assert {"/", "/health", "/translate", "/download_file/{name}"} <= set(described["paths"])
    assert call(server.url, "GET", "/openapi.json")[0] == 404


def test_libretranslates_client_and_a_documents_download_url_have_the_prefix(served):
    server, model = served
    expected = model.translate([SENTENCE], model.config.decode).outputs[0]
    client = LibreTranslateAPI(server.url.rstrip("/") + PREFIX + "/")
    assert client.translate(SENTENCE, "en", "digits") == expected
    assert client.translate(SENTENCE, "auto", "digits") == expected
    assert client.languages()[0]["code"] == "en"
    base = server.url.rstrip("/") + PREFIX
    answer = upload(base, "report.docx", word_document())
    assert answer.status_code == 200, answer.text
    url = answer.json()["translatedFileUrl"]
    assert url.startswith(f"{base}/download_file/") and url.endswith(".report.digits.docx")
    download = httpx.get(url)
    assert download.status_code == 200 and download.content.startswith(b"PK")  # a .docx
    assert httpx.get(url.replace(PREFIX, "", 1)).status_code == 404
    # through a reverse proxy that passes the path on: the public name and scheme, the prefix
    proxied = {"Host": PUBLIC, "X-Forwarded-Proto": "https"}
    answer = upload(base, "report.docx", word_document(), headers=proxied)
    url = answer.json()["translatedFileUrl"]
    assert url.startswith(f"https://{PUBLIC}{PREFIX}/download_file/"), url
    path = urlsplit(url).path
    assert fetch(server.url, path, proxied).status == 200


def test_metrics_name_the_routes_without_the_prefix(served):
    server, _ = served

    def count(route: str, status: int) -> float:
        answer = fetch(server.url, f"{PREFIX}/metrics")
        assert answer.status == 200
        labels = {"route": route, "pair": "", "status": str(status)}
        return sum(
            sample.value
            for family in text_string_to_metric_families(answer.text)
            for sample in family.samples
            if sample.name == "seq2seq_http_requests_total" and sample.labels == labels
        )

    before = count("/health", 200), count("other", 404)
    assert fetch(server.url, f"{PREFIX}/health").status == 200
    assert fetch(server.url, "/health").status == 404  # outside the prefix: not the route
    assert (count("/health", 200), count("other", 404)) == (before[0] + 1, before[1] + 1)
    assert fetch(server.url, "/metrics").status == 404


def test_the_address_printed_is_the_pages_under_the_prefix():
    sock = bind("127.0.0.1", 0)
    try:
        port = sock.getsockname()[1]
        assert Server.address(sock, PREFIX) == f"http://127.0.0.1:{port}{PREFIX}/"
        assert Server.address(sock) == f"http://127.0.0.1:{port}/"
    finally:
        sock.close()


def test_the_page_translates_under_the_prefix(served, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import WebDriverWait

    server, model = served
    browser.get(server.url.rstrip("/") + PREFIX)  # redirected to PREFIX + "/"
    assert urlsplit(browser.current_url).path == f"{PREFIX}/"
    wait = WebDriverWait(browser, HANG)
    described = (By.ID, "model")  # /info asked, relative to the page: its description
    wait.until(lambda _: "loading" not in browser.find_element(*described).text)
    box = browser.find_element(By.ID, "sentence")
    box.clear()
    box.send_keys(SENTENCE)
    translation = model.translate([SENTENCE], model.config.decode).outputs[0]
    wait.until(seen.text_to_be_present_in_element((By.ID, "translation"), translation))
    caption = (By.CSS_SELECTOR, "#heatmap caption")  # POST attention, under the prefix
    wait.until(seen.text_to_be_present_in_element(caption, "decoder 1 cross, head 1"))
    assert not browser.find_element(By.ID, "error").is_displayed()
