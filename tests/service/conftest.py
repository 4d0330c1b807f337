"""The service's tests' shared fixtures: the service as DeepL's clients meet it (Python's and
Node's), a browser for the pages (ours, LibreTranslate's)."""

from pathlib import Path

import pytest

from seq2seq.decoding.engines import TorchEngine
from seq2seq.serving.keystore import KeyLimits, KeyStore

from helpers import METERED, running


@pytest.fixture(scope="module")
def url(trained_numbers_checkpoint, tmp_path_factory):
    """The service on the trained numbers model (EN -> DIGITS), for DeepL's clients
    (test_deepl.py, test_deepl_node.py): in a keys database, `first` and `second`, and
    `metered` with a quota of METERED characters a month; a glossaries file, DeepL's
    documents; a module's own `url` replaces it (test_serve_attacks.py's)."""
    folder = tmp_path_factory.mktemp("deepl")
    keys = KeyStore(folder / "keys.db", create=True)
    for key, quota in (("first", 0), ("second", 0), ("metered", METERED)):
        keys.add(KeyLimits(chars_per_month=quota), key)
    keys.close()
    settings = {"api_keys": str(folder / "keys.db"), "glossaries_file": str(folder / "g.db"),
                "files": True, "files_dir": str(folder / "files")}  # fmt: skip
    with running(TorchEngine(trained_numbers_checkpoint[0]), **settings) as server:
        yield server.url


@pytest.fixture
def browser():
    """Debian's headless Chromium (1000 x 900) under Selenium, with the system's driver
    (nothing is downloaded), quit after the test; skips where either is missing."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is in .[dev]")
    chromium, driver = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
    if not (chromium.exists() and driver.exists()):
        pytest.skip(f"no {chromium} or {driver}: apt-get install chromium chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = str(chromium)
    for flag in (
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--window-size=1000,900",
    ):  # fmt: skip
        options.add_argument(flag)
    started = webdriver.Chrome(options=options, service=webdriver.ChromeService(str(driver)))
    yield started
    started.quit()
