"""A screenshot of a page in headless Chromium (Debian's ``chromium`` and
``chromium-driver``, driven through selenium's WebDriver): the faults scenario keeps one
of the web view while a verdict is shown, the browser tests look at the page with it.

>>> find_chromium() is None or find_chromium()[0].endswith("chromium")
True
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, Optional

PAGE_TIMEOUT_S = 20.0


class BrowserUnavailable(RuntimeError):
    """No Chromium or ChromeDriver here, or the browser did not start (the message says)."""


def find_chromium() -> Optional[tuple[str, str]]:
    """(chromium, chromedriver) paths, or None when either is missing."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


def open_browser(width: int = 1400, height: int = 1000, profile_dir: Optional[Path] = None,
                 log_path: Optional[Path] = None) -> Any:
    """A headless Chromium WebDriver (``--no-sandbox``: the testbed runs as root), with its
    own profile in ``profile_dir`` when given (two browsers at once do not share one) and
    ChromeDriver's log at ``log_path``; the caller quits it."""
    found = find_chromium()
    if found is None:
        raise BrowserUnavailable("chromium and chromedriver are not installed "
                                 "(apt-get install chromium chromium-driver)")
    from selenium import webdriver  # noqa: PLC0415 — heavy: selenium
    from selenium.common.exceptions import WebDriverException  # noqa: PLC0415 — heavy: selenium
    from selenium.webdriver.chrome.service import Service  # noqa: PLC0415 — heavy: selenium
    opts = webdriver.ChromeOptions()
    opts.binary_location = found[0]
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},{height}"):
        opts.add_argument(arg)
    if profile_dir is not None:
        opts.add_argument(f"--user-data-dir={profile_dir}")
    service = Service(found[1], log_output=str(log_path)) if log_path else Service(found[1])
    try:
        return webdriver.Chrome(service=service, options=opts)
    except WebDriverException as exc:
        raise BrowserUnavailable(f"chromium did not start: {exc.msg or exc}") from None


def screenshot(url: str, path: Path, wait_css: Optional[str] = None,
               timeout_s: float = PAGE_TIMEOUT_S) -> Path:
    """Load ``url``, wait (at most ``timeout_s``) until an element matches ``wait_css``,
    save a full-page PNG at ``path``; :class:`BrowserUnavailable` without a browser,
    ``TimeoutError`` when the element never shows. The browser's profile lives in a
    temporary folder removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="astral-chromium-",
                                     ignore_cleanup_errors=True) as profile:
        return _screenshot_with(open_browser(profile_dir=Path(profile)), url, path, wait_css,
                                timeout_s)


def _screenshot_with(driver: Any, url: str, path: Path, wait_css: Optional[str],
                     timeout_s: float) -> Path:
    """:func:`screenshot`'s body with a started ``driver``, which it quits (before the
    caller removes the driver's profile folder)."""
    from selenium.common.exceptions import TimeoutException  # noqa: PLC0415 — heavy: selenium
    from selenium.webdriver.common.by import By  # noqa: PLC0415 — heavy: selenium
    from selenium.webdriver.support import expected_conditions as ec  # noqa: PLC0415 — heavy: selenium
    from selenium.webdriver.support.ui import WebDriverWait  # noqa: PLC0415 — heavy: selenium
    try:
        driver.get(url)
        if wait_css:
            try:
                WebDriverWait(driver, timeout_s).until(
                    ec.presence_of_element_located((By.CSS_SELECTOR, wait_css)))
            except TimeoutException:
                raise TimeoutError(f"{url}: nothing matched {wait_css!r} within {timeout_s:g} s") from None
        height = int(driver.execute_script("return document.documentElement.scrollHeight") or 1000)
        driver.set_window_size(1400, min(max(height, 800), 4000))
        path.parent.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(path))
        return path
    finally:
        driver.quit()


__all__ = ["BrowserUnavailable", "find_chromium", "open_browser", "screenshot"]
