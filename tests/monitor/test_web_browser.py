"""The web view in a real browser: headless Chromium (Debian's ``chromium`` and
``chromium-driver``, driven by selenium) loads the page served by :class:`monitor.web.WebServer`,
and the test checks that the SVG shows every switch and link direction, then changes the
view while the page is open and waits (bounded) until the page shows each change — a
lossy link, a switch down, a verdict, a GOR move — without a reload. A screenshot goes
to ``$MONITOR_WEB_SCREENSHOT_DIR`` (the run's folder on the testbed) or the test's tmp dir.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Iterator

import pytest

from monitor.evidence import Verdict, component
from monitor.browser import open_browser
from monitor.web import WebServer
from monitor.webstate import MonitorView
from topo.model import build_fabric
from topo.spec import FabricSpec

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
SCREENSHOT_ENV = "MONITOR_WEB_SCREENSHOT_DIR"
WAIT_S = 15.0

pytestmark = pytest.mark.skipif(
    not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)),
    reason=f"needs Debian's chromium and chromium-driver ({CHROMIUM}, {CHROMEDRIVER}): "
           f"apt-get install chromium chromium-driver")

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


@pytest.fixture()
def served() -> Iterator[tuple[MonitorView, WebServer]]:
    view = MonitorView(build_fabric(FabricSpec()))
    with WebServer(view) as server:
        yield view, server


@pytest.fixture()
def browser(tmp_path: Path) -> Iterator["webdriver.Chrome"]:
    driver = open_browser(1500, 1250, profile_dir=tmp_path / "chromium-profile",
                          log_path=tmp_path / "chromedriver.log")
    driver.set_page_load_timeout(WAIT_S)
    try:
        yield driver
    finally:
        driver.quit()


def _wait(driver: "webdriver.Chrome", what: str, css: str) -> None:
    """Wait (at most WAIT_S) until ``css`` matches an element; fail naming ``what``."""
    WebDriverWait(driver, WAIT_S).until(lambda d: d.find_elements(By.CSS_SELECTOR, css),
                                        message=f"the page did not show {what} ({css}) within {WAIT_S} s")


def _full_page_screenshot(driver: "webdriver.Chrome", path: Path) -> None:
    """The whole page in one PNG (Chromium's DevTools: the viewport made as tall as the page)."""
    width, height = driver.execute_script(
        "return [document.documentElement.scrollWidth, document.documentElement.scrollHeight];")
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": int(width), "height": int(height), "deviceScaleFactor": 1, "mobile": False})
    try:
        assert driver.save_screenshot(str(path)), f"no screenshot written to {path}"
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def _screenshot_dir(tmp_path: Path) -> Path:
    out = Path(os.environ.get(SCREENSHOT_ENV) or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    return out


def test_page_draws_the_fabric_and_follows_the_view_live(served: tuple[MonitorView, WebServer],
                                                         browser: "webdriver.Chrome", tmp_path: Path) -> None:
    view, server = served
    browser.get(server.url)
    _wait(browser, "the drawing", "#status[data-version='0']")

    fab = view.fabric
    drawn_nodes = {e.get_attribute("data-node") for e in browser.find_elements(By.CSS_SELECTOR, "#fabric [data-node]")}
    assert {s.name for s in fab.switches} <= drawn_nodes
    assert {h.name for h in fab.hosts} | {n.intf for h in fab.hosts for n in h.nics} <= drawn_nodes
    drawn_links = {e.get_attribute("data-link") for e in browser.find_elements(By.CSS_SELECTOR, "#fabric [data-link]")}
    assert drawn_links == set(view.link_names()) and len(drawn_links) == 32
    labels = {e.text for e in browser.find_elements(By.CSS_SELECTOR, "#fabric .node-label")}
    assert {s.name for s in fab.switches} <= labels, "every switch is labelled with its name"
    # every direction is a visible line of its own (both directions of a cable apart)
    for lid in ("b0r0l0->s0", "s0->b0r0l0", "b1s1-eth1->b1r1l0", "b1r1l0->b1s1-eth1"):
        wire = browser.find_element(By.CSS_SELECTOR, f"[data-link='{lid}'] .wire")
        assert wire.is_displayed() and wire.size["height"] + wire.size["width"] > 20, lid

    # the view changes while the page is open: each change shows up without a reload
    marker = browser.execute_script("window.__notReloaded = 1; return window.__notReloaded;")
    view.update_links(util={"b0r0l0->s0": 0.92, "b0r0l0->s1": 0.35}, alarm={"b0r0l0->s0": 2},
                      state={"b1r0l0->s1": "lossy", "s1->b1r1l0": "corrupting", "b0r1l0->s0": "dead"},
                      loss={"b1r0l0->s1": 0.2})
    _wait(browser, "the lossy link", "[data-link='b1r0l0->s1'][data-state='lossy']")
    _wait(browser, "the alarm badge", "[data-alarm-link='b0r0l0->s0'][data-level='2']")
    _wait(browser, "the utilisation", "[data-link='b0r0l0->s0'][data-util='0.92']")
    _wait(browser, "the dead link", "[data-link='b0r1l0->s0'][data-state='dead']")
    dashes = [browser.find_element(By.CSS_SELECTOR, f"[data-link='{lid}'] .wire").get_attribute("stroke-dasharray")
              for lid in ("b1r0l0->s1", "s1->b1r1l0", "b0r1l0->s0")]
    assert all(dashes) and len(set(dashes)) == 3, f"lossy, corrupting and dead are drawn alike: {dashes}"
    assert browser.find_element(By.CSS_SELECTOR, "[data-label-link='b1r0l0->s1']").text == "lossy 20%"
    assert not browser.find_element(By.CSS_SELECTOR, "[data-link='s0->b0r0l0'] .wire").get_attribute("stroke-dasharray")
    legend = browser.find_element(By.ID, "legend").text
    for word in ("utilisation", "lossy", "corrupting", "dead", "alarm", "switch down"):
        assert word in legend, f"the legend does not explain {word!r}"
    colours = {browser.find_element(By.CSS_SELECTOR, f"[data-link='{lid}'] .wire").get_attribute("stroke")
               for lid in ("b0r0l0->s0", "b0r0l0->s1", "s0->b0r0l0")}
    assert len(colours) == 3, f"92%, 35% and unknown utilisation look alike: {colours}"

    view.set_switch_up("s1", False)
    _wait(browser, "switch s1 down", "[data-node='s1'][data-up='0']")
    assert browser.find_element(By.CSS_SELECTOR, "[data-node='s1'] .down-label").is_displayed()

    view.add_fault("gray-1", "gray_link", component("link", "b1r0l0", "s1"), detail="20% loss")
    view.add_verdict(Verdict("gray_link", component("link", "b1r0l0", "s1"), 0.9,
                             ("4 of 4 probe paths over b1r0l0->s1 lose 20%", "all other links clean"),
                             time.monotonic()))
    _wait(browser, "the verdict", "#verdicts tr[data-component='link b1r0l0->s1'][data-kind='gray_link']")
    _wait(browser, "the injected fault", "#faults tr[data-fault='gray-1']")
    _wait(browser, "the named link", "[data-link='b1r0l0->s1'][data-named='1']")
    row = browser.find_element(By.CSS_SELECTOR, "#verdicts tr[data-component='link b1r0l0->s1']").text
    assert "90%" in row and "4 of 4 probe paths" in row

    view.add_move("10.0.0.1:49152->10.1.0.1:4791", "b0r0l0->s0", "b0r0l0->s1")
    _wait(browser, "the GOR move", "#timeline li[data-kind='move']")
    first = browser.find_element(By.CSS_SELECTOR, "#timeline li:first-child")
    assert first.get_attribute("data-kind") == "move", "the timeline shows the newest event first"
    assert "b0r0l0->s0 → b0r0l0->s1" in first.text
    assert browser.execute_script("return window.__notReloaded;") == marker, "the page was reloaded"

    shot = _screenshot_dir(tmp_path) / "monitor-web.png"
    _full_page_screenshot(browser, shot)
    assert shot.stat().st_size > 10_000


def test_page_shows_a_cleared_verdict_and_a_switch_back_up(
        served: tuple[MonitorView, WebServer], browser: "webdriver.Chrome") -> None:
    """A verdict cleared and a switch back up are shown too (the rows and marks go away)."""
    view, server = served
    view.set_switch_up("s0", False)
    v = Verdict("hung_switch", component("switch", "s0"), 0.95, ("P4Runtime silent 2.1 s",), time.monotonic())
    view.add_verdict(v)
    browser.get(server.url)
    _wait(browser, "the verdict", "#verdicts tr[data-component='switch s0']")
    _wait(browser, "s0 named", "[data-node='s0'][data-named='1'][data-up='0']")
    view.set_verdicts([])
    view.set_switch_up("s0", True)
    WebDriverWait(browser, WAIT_S).until(
        lambda d: not d.find_elements(By.CSS_SELECTOR, "#verdicts tbody tr, [data-named]")
        and d.find_elements(By.CSS_SELECTOR, "[data-node='s0'][data-up='1']"),
        message="the cleared verdict or the switch back up did not show")
    kinds = [e.get_attribute("data-kind") for e in browser.find_elements(By.CSS_SELECTOR, "#timeline li")]
    assert kinds[:2] == ["switch", "verdict_cleared"], kinds
