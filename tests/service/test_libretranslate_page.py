"""LibreTranslate's own web page, working unchanged against our service in headless Chromium: a
text typed in its source box gets our translation; a document chosen in its "Translate files"
tab comes back as its download, translated; its suggest button's suggestion is kept.

The page is LibreTranslate 1.9's HTML and JavaScript, rendered from its templates (index.html,
app.js.template) by the LibreTranslate installed in benchmarks/.venv-libretranslate, as its
Flask app renders them with its defaults (no URL prefix, no API keys, English). Its script calls
the API on its own origin, so a reverse proxy in this test puts both on one: the page's files
from the rendered folder, every other request passed to our service as it came (its Host kept,
as a proxy that preserves it does) and the answer passed back as it is."""

import http.client
import io
import mimetypes
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import docx
import httpx
import pytest
from test_suggestions import rows

from seq2seq.decoding.engines import TorchEngine

from helpers import HANG, ROOT, running
from samples import saved

LIBRETRANSLATE = ROOT / "benchmarks/.venv-libretranslate/bin/python"  # the Makefile's venv
pytestmark = pytest.mark.skipif(
    not LIBRETRANSLATE.exists(),
    reason=f"no {LIBRETRANSLATE}: LibreTranslate's page is rendered by the LibreTranslate "
    "installed there (make benchmarks/.venv-libretranslate/.installed)",
)

# Run by LibreTranslate's interpreter: its templates rendered as its index and /js/app.js
# routes render them (libretranslate/app.py), with its defaults, into the folder argv[1], its
# static files beside them. Its package's __init__ (which loads the translation models) is
# not run: its locales.py, of Flask-Babel and MarkupSafe only, is loaded from its file.
RENDER = r"""
import importlib.metadata, importlib.util, shutil, sys
from pathlib import Path
from flask import Blueprint, Flask, render_template
from flask_babel import Babel

out = Path(sys.argv[1])
package = Path(importlib.util.find_spec("libretranslate").submodule_search_locations[0])
spec = importlib.util.spec_from_file_location("lt_locales", package / "locales.py")
locales = importlib.util.module_from_spec(spec)
spec.loader.exec_module(locales)
app = Flask("libretranslate", template_folder=str(package / "templates"),
            static_folder=str(package / "static"))
Babel(app, locale_selector=lambda: "en")
app.jinja_env.globals.update(_e=locales.gettext_escaped, _h=locales.gettext_html)
main = Blueprint("Main app", "libretranslate")
main.add_url_rule("/", "index")
app.register_blueprint(main)
with app.test_request_context("/"):
    page = render_template(
        "index.html", frontendTimeout=500, api_keys=False, get_api_key_link="",
        web_version=False, version=importlib.metadata.version("libretranslate"),
        swagger_url="/docs", available_locales=[{"code": "en", "name": "English"}],
        current_locale="en", alternate_locales=[], under_attack=False, hide_api=False,
        frontend_title="",
    )
    script = render_template(
        "app.js.template", url_prefix="", get_api_key_link="", api_secret="",
        bogus_api_secret="", under_attack=False,
    )
shutil.copytree(package / "static", out / "static")
(out / "index.html").write_text(page, encoding="utf-8")
(out / "js").mkdir()
(out / "js/app.js").write_text(script, encoding="utf-8")
"""

HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "te", "trailer",
              "transfer-encoding", "upgrade"}  # fmt: skip
TEXTS = ["three is three", "twenty one is five"]


def libretranslate_page(folder: Path) -> dict[str, Path]:
    """LibreTranslate's page rendered into `folder`: its URL paths -> their files."""
    folder.mkdir()
    rendered = subprocess.run(
        [str(LIBRETRANSLATE), "-I", "-c", RENDER, str(folder)], capture_output=True, text=True,
        timeout=HANG, cwd=folder,
    )  # fmt: skip
    assert rendered.returncode == 0, rendered.stderr
    files = {"/": folder / "index.html", "/js/app.js": folder / "js/app.js"}
    for path in (folder / "static").rglob("*"):
        if path.is_file():
            files["/" + path.relative_to(folder).as_posix()] = path
    return files


@contextmanager
def one_origin(files: dict[str, Path], service: str) -> Iterator[str]:
    """The URL of a reverse proxy on 127.0.0.1: GET of one of `files`' paths (a query
    ignored), that file; any other request passed to `service` unchanged, Host included, and
    its answer passed back unchanged but for the hop-by-hop headers."""
    backend = urlsplit(service).netloc

    class Proxy(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = files.get(urlsplit(self.path).path)
            if path is None:
                return self.forward()
            data = path.read_bytes()
            self.send_response(200)
            kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            self.forward()

        def forward(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            connection = http.client.HTTPConnection(backend, timeout=HANG)
            connection.request(self.command, self.path, body, headers)
            answer = connection.getresponse()
            data = answer.read()
            connection.close()
            self.send_response(answer.status, answer.reason)
            for name, value in answer.getheaders():
                if name.lower() not in {*HOP_BY_HOP, "content-length"}:
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args) -> None:
            pass

    proxy = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    thread = threading.Thread(target=proxy.serve_forever)
    thread.start()
    try:
        yield f"http://127.0.0.1:{proxy.server_address[1]}/"
    finally:
        proxy.shutdown()
        thread.join()
        proxy.server_close()


def word_document() -> bytes:
    word = docx.Document()
    word.add_heading(TEXTS[0], level=1)
    word.add_paragraph(TEXTS[1])
    return saved(word)


@pytest.mark.slow
def test_libretranslates_own_page_translates_text_and_files_and_suggests_with_our_service(
    trained_numbers_checkpoint, tmp_path, browser
):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import WebDriverWait

    files = libretranslate_page(tmp_path / "page")
    browser.set_window_size(1200, 900)
    model = TorchEngine(trained_numbers_checkpoint[0])
    kept, document = tmp_path / "suggestions.db", tmp_path / "report.docx"
    document.write_bytes(word_document())
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    on = {"suggestions": True, "suggestions_file": str(kept), "files_dir": str(tmp_path / "kept")}
    with running(model, **on) as server, one_origin(files, server.url) as url:
        base = server.url.rstrip("/")
        ours = httpx.post(f"{base}/translate", json={"text": TEXTS}).json()["translations"]
        assert ours[0] == "3 la 3"
        browser.execute_cdp_cmd(
            "Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)}
        )
        browser.get(url)
        wait = WebDriverWait(browser, HANG)

        # text: typed in its source box, our translation in its target box
        source = wait.until(seen.element_to_be_clickable((By.ID, "textarea1")))
        source.send_keys(TEXTS[0])
        target = (By.ID, "textarea2")
        wait.until(seen.text_to_be_present_in_element_value(target, ours[0]))
        assert browser.find_element(*target).get_attribute("value") == ours[0]

        # a suggestion: its edit button, the translation corrected, Send
        suggest = (By.CSS_SELECTOR, "button[aria-label='Suggest translation']")
        wait.until(seen.element_to_be_clickable(suggest)).click()
        wait.until(lambda b: b.find_element(*target).get_attribute("readonly") is None)
        browser.find_element(*target).send_keys(" indeed")
        send = (By.XPATH, "//button[normalize-space()='Send']")
        wait.until(seen.element_to_be_clickable(send)).click()
        toast = (By.CSS_SELECTOR, "#toast-container .toast")
        wait.until(seen.text_to_be_present_in_element(toast, "Thanks for your correction"))
        assert rows(kept) == [(TEXTS[0], f"{ours[0]} indeed", "en", "digits", 1)]

        # a file: its "Translate Files" tab, the document chosen, Translate: downloaded
        tab = (By.XPATH, "//button[span[normalize-space()='Translate Files']]")
        wait.until(seen.element_to_be_clickable(tab)).click()
        chooser = (By.CSS_SELECTOR, "input[type=file]")
        accepted = wait.until(seen.presence_of_element_located(chooser))
        assert ".docx" in accepted.get_attribute("accept")
        accepted.send_keys(str(document))
        translate = (By.XPATH, "//button[normalize-space()='Translate']")
        wait.until(seen.element_to_be_clickable(translate)).click()
        link = (By.XPATH, "//a[normalize-space()='Download']")
        href = wait.until(seen.visibility_of_element_located(link)).get_attribute("href")
        assert href.startswith(f"{url}download_file/") and href.endswith(".report.digits.docx")
        done = downloads / "report.digits.docx"  # the page's own download, as named
        wait.until(lambda _: done.exists())
        again = httpx.get(href)  # the link it shows, fetched
        errors = browser.find_elements(By.XPATH, "//i[text()='warning']/following::p[1]")
        assert not errors, errors[0].text
    assert again.status_code == 200 and again.content == done.read_bytes()
    back = docx.Document(io.BytesIO(done.read_bytes()))
    assert [paragraph.text for paragraph in back.paragraphs] == ours
