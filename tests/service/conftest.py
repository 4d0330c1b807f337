"""The service's tests' shared fixture: a browser for the pages (ours, LibreTranslate's)."""

from pathlib import Path

import pytest


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
