"""Headless Chromium for the report tests, `make screenshot` and the bench: the OS packages
``chromium`` and ``chromium-driver`` (Debian; CI installs them in .ci/run) driven by selenium.

:func:`missing` says in one line why a browser cannot start here (the tests skip with it);
:func:`browser` opens one; :func:`console_problems` reads its console.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def _binary() -> str | None:
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


def missing() -> str | None:
    """Why no browser test can run here (one line), or None when one can."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed: pip install -e '.[report-tests]' (make setup installs it)"
    if _binary() is None:
        return "no Chromium on PATH: apt-get install chromium chromium-driver"
    if shutil.which("chromedriver") is None:
        return "no chromedriver on PATH: apt-get install chromium-driver"
    return None


@contextmanager
def browser(width: int = 1400, height: int = 1000) -> Iterator[Any]:
    """A headless Chromium (a selenium WebDriver) whose console log can be read; quit on exit."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(_binary())
    for arg in (
        "--headless=new",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--window-size={width},{height}",
    ):
        options.add_argument(arg)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        options.add_argument("--no-sandbox")  # Chromium refuses to run as root with its sandbox (CI)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(shutil.which("chromedriver"))), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def open_page(driver: Any, path: Path, fragment: str = "") -> None:
    """Load ``path`` from disk and wait until the report's script has run (``data-ready-ms``) or,
    for a page without a script, until it is loaded."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(path.resolve().as_uri() + fragment)
    WebDriverWait(driver, 20).until(
        lambda d: d.execute_script(
            "return document.readyState === 'complete' && "
            "(document.body.hasAttribute('data-ready-ms') || !document.getElementById('report-index'))"
        )
    )


def console_problems(driver: Any) -> list[str]:
    """The console's errors and warnings since the last call (JavaScript errors, CSP refusals)."""
    return [e["message"] for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
