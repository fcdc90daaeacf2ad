"""The web page in a real headless browser: Debian's chromium driven by Playwright.

Uploads a corpus PDF through the page, waits for the rendered Markdown to show its first heading
and for the page image with layout boxes, and saves a screenshot to :data:`SCREENSHOT`
(``.ocrstack/artifacts/api-browser.png``, a CI artifact). Skips with the reason when chromium or
Playwright is absent (``apt-get install -y chromium``; Playwright cannot download its own browser
here). The browser talks only to the service on 127.0.0.1 (background networking off).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ocrstack.api.process import ServiceProcess

pytestmark = [pytest.mark.server, pytest.mark.slow, pytest.mark.corpus]
CHROMIUM = "/usr/bin/chromium"
SCREENSHOT = Path(__file__).resolve().parents[2] / ".ocrstack" / "artifacts" / "api-browser.png"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
DOCUMENT = "en_single_libtasn1_intro.pdf"


def test_upload_progress_markdown_and_boxes(corpus: Path, tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    if not Path(CHROMIUM).is_file() and not shutil.which("chromium"):
        pytest.skip(f"chromium not found at {CHROMIUM} (apt-get install -y chromium)")
    pdf = corpus / DOCUMENT
    if not pdf.is_file():
        pytest.skip(f"{pdf} is not in the corpus")
    with ServiceProcess(tmp_path / "data") as svc, sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(svc.url + "/")
            page.set_input_files("#files", str(pdf))
            page.click("#submit")
            page.wait_for_selector(".job progress", timeout=10_000)
            heading = page.wait_for_selector(".markdown :is(h1, h2, h3)", timeout=240_000)
            text = heading.inner_text()
            page.wait_for_function(
                "document.querySelector('.page img') && document.querySelector('.page img').naturalWidth > 0",
                timeout=30_000,
            )
            boxes = page.locator(".page .box").count()
            items = page.locator(".markdown ul > li").all_inner_texts()
            status = page.get_attribute(".job", "data-status")
            links = page.locator(".downloads a").all_inner_texts()
            SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOT), full_page=True)
        finally:
            browser.close()
    assert not errors, errors
    assert status == "done"
    assert "Introduction" in text, text
    assert boxes > 0
    # the wrapped lines of a list item stay in it (Markdown continuation lines)
    assert len(items) == 7 and any("GNU Lesser General Public License" in li for li in items), items
    assert links == ["Markdown", "Blocks JSON", "Zip with figures"]
    assert SCREENSHOT.stat().st_size > 10_000
