"""Our page in a real browser (Selenium, headless Firefox): it translates as you type, draws the
attention, fits a phone's screen, and says why a CTranslate2 engine draws none."""

import pytest

from seq2seq.checkpoint import load_checkpoint
from seq2seq.decoding.ctranslate2_engine import CTranslate2Engine
from seq2seq.decoding.engines import TorchEngine
from seq2seq.exports.ctranslate2 import export_ctranslate2

from helpers import (
    HANG,
    ROOT,
    running,
)

ARTIFACTS = ROOT / "runs/test-artifacts"  # git-ignored; CI may keep it


@pytest.mark.slow
def test_the_page_translates_as_you_type_and_draws_the_attention(seed_run, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import Select, WebDriverWait

    model = TorchEngine(load_checkpoint(seed_run / "best.pt"))
    example = model.checkpoint.info["example"]
    assert example == (seed_run.parent.parent / "data/seed/valid.src").read_text().splitlines()[0]
    with running(model, max_chars=40) as server:
        browser.get(server.url)
        wait = WebDriverWait(browser, HANG)
        box = browser.find_element(By.ID, "sentence")
        translation = model.translate([example], model.config.decode).outputs[0]
        wait.until(seen.text_to_be_present_in_element((By.ID, "translation"), translation))
        assert box.get_attribute("value") == example  # shown before anything is typed
        box.send_keys("three is three")  # the example is selected: typing replaces it
        wait.until(seen.text_to_be_present_in_element((By.ID, "translation"), "3 la 3"))
        caption = (By.CSS_SELECTOR, "#heatmap caption")
        wait.until(seen.text_to_be_present_in_element(caption, "decoder 1 cross, head 1"))
        assert len(browser.find_elements(By.CSS_SELECTOR, "#heatmap tbody td")) == 4 * 4
        Select(browser.find_element(By.ID, "kind")).select_by_value("encoder self")
        Select(browser.find_element(By.ID, "head")).select_by_value("2")
        assert browser.find_element(*caption).text == "encoder 1 self, head 2"
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(ARTIFACTS / "serve-page.png"))
        print(f"screenshot: {ARTIFACTS / 'serve-page.png'}")

        browser.set_window_size(360, 800)  # a phone: nothing wider than the screen
        width = browser.execute_script("return document.documentElement.scrollWidth")
        assert width <= browser.execute_script("return window.innerWidth")
        browser.save_screenshot(str(ARTIFACTS / "serve-page-360.png"))

        box.send_keys(" and so on" * 4)  # over max_chars: the page shows the API's error
        wait.until(seen.visibility_of_element_located((By.ID, "error")))
        assert "serve.max_chars" in browser.find_element(By.ID, "error").text


@pytest.mark.slow
def test_the_page_translates_with_the_ctranslate2_engine_and_says_why_no_attention(
    seed_run, tmp_path, browser
):
    pytest.importorskip("ctranslate2", reason='CTranslate2 is an optional extra: ".[export]"')
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import WebDriverWait

    export_ctranslate2(load_checkpoint(seed_run / "best.pt"), tmp_path / "ct2")
    with running(CTranslate2Engine.load(tmp_path / "ct2")) as server:
        browser.get(server.url)
        wait = WebDriverWait(browser, HANG)
        heatmap = (By.ID, "heatmap")
        wait.until(seen.text_to_be_present_in_element(heatmap, "needs our torch model"))
        browser.find_element(By.ID, "sentence").send_keys("three is three")
        wait.until(seen.text_to_be_present_in_element((By.ID, "translation"), "3 la 3"))
        assert "ctranslate2" in browser.find_element(By.ID, "model").text
        assert not browser.find_element(By.ID, "error").is_displayed()
