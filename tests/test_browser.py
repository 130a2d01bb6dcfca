"""Headless Chromium on the built site: a card's diff block renders and search finds a card by a symbol."""

from __future__ import annotations

import functools
import os
import re
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from site_harness import CARD

CHROMIUM = Path(os.environ.get("DOSSIER_CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("DOSSIER_CHROMEDRIVER", "/usr/bin/chromedriver"))

if not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()):
    if os.environ.get("DOSSIER_REQUIRE_BROWSER"):
        raise RuntimeError(f"DOSSIER_REQUIRE_BROWSER is set but {CHROMIUM} or {CHROMEDRIVER} is missing; "
                           "apt-get install -y chromium chromium-driver")
    pytest.skip(f"{CHROMIUM} or {CHROMEDRIVER} missing (apt-get install -y chromium chromium-driver); "
                "set DOSSIER_REQUIRE_BROWSER=1 to make this a failure", allow_module_level=True)

from selenium import webdriver  # noqa: E402 - selenium ships with the dev extra
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1280,900",
         # no name resolves but the local server: the page's one CDN polyfill must not reach out
         "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1")


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def served(tiny_site):
    _, out = tiny_site
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(out)))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """One Chromium for the module's tests (each loads its own page)."""
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, f"--user-data-dir={tmp_path_factory.mktemp('chromium') / 'profile'}"):
        options.add_argument(flag)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SE_OFFLINE", "true")  # selenium manager must never download a driver
        driver = webdriver.Chrome(options=options,
                                  service=webdriver.ChromeService(executable_path=str(CHROMEDRIVER)))
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def test_card_page_renders_its_diff_block(served, browser, tmp_path):
    browser.get(f"{served}/cards/sglang/101.html")
    block = WebDriverWait(browser, 30).until(
        EC.visibility_of_element_located((By.CSS_SELECTOR, "div.language-diff code")))
    added = block.find_elements(By.CSS_SELECTOR, "span.gi")
    removed = block.find_elements(By.CSS_SELECTOR, "span.gd")
    assert added and removed, "diff lines are not highlighted as insertions and deletions"
    assert "fused_window_attention" in block.text
    ins, dele = (e.value_of_css_property("background-color") for e in (added[0], removed[0]))
    assert ins != dele, f"insertions and deletions look the same ({ins})"
    browser.save_screenshot(str(tmp_path / "card.png"))
    assert (tmp_path / "card.png").stat().st_size > 1000


def test_search_finds_a_card_by_a_symbol_from_its_excerpt(served, browser, tmp_path):
    symbol = re.search(r"^\+def (\w+)", CARD, re.M).group(1)
    browser.get(f"{served}/index.html")
    box = WebDriverWait(browser, 30).until(EC.element_to_be_clickable((By.CSS_SELECTOR, "input.md-search__input")))
    box.click()
    box.send_keys(symbol)
    hit = WebDriverWait(browser, 30).until(EC.visibility_of_element_located(
        (By.CSS_SELECTOR, ".md-search-result__list a[href*='cards/sglang/101.html']")))
    browser.save_screenshot(str(tmp_path / "search.png"))
    assert "Fuse window attention" in hit.text
    assert (tmp_path / "search.png").stat().st_size > 1000


def test_a_family_page_fits_1400_px(served, browser):
    browser.set_window_size(1400, 900)
    browser.get(f"{served}/families/index.html")
    WebDriverWait(browser, 30).until(EC.presence_of_element_located(
        (By.CSS_SELECTOR, "article a[href$='.html']:not([href*='index'])")))
    pages = browser.execute_script(
        "return [...document.querySelectorAll(\"article a[href$='.html']:not([href*='index'])\")].map(a => a.href)")
    for page in pages:  # the first family page that has cards, hence a table
        browser.get(page)
        WebDriverWait(browser, 30).until(EC.presence_of_element_located((By.CSS_SELECTOR, "article")))
        if browser.find_elements(By.CSS_SELECTOR, "article table"):
            break
    else:
        pytest.fail(f"no family page with a table among {pages}")
    overflow = browser.execute_script(
        "return [...document.querySelectorAll('article table')].map(t => t.scrollWidth - t.parentElement.clientWidth)")
    assert overflow and max(overflow) <= 1, overflow
    assert browser.execute_script("return document.documentElement.scrollWidth") <= 1400
