"""What a person sees in the web page and at ``/docs``, in Debian's chromium driven by Playwright
(issue 24 items 1, 5 and 8).

The service runs the VLM path (``--layout vlm``, MinerU-Diffusion prompts) against the fake
OpenAI server, whose recorded answers hold what the page used to show wrongly: Markdown escapes
(``\\newwrite``, ``save\\_handler``, ``&lt;module>``, ``\\*right\\*``), inline LaTeX, an OTSL
table and a display formula. The page must show them as written, with KaTeX math and a real
table; raw HTML (and any hostile markup) in Markdown stays inert; a fenced code block renders as
code; a reload shows the job again (from ``GET /v1/jobs``, with this browser's storage cleared)
and its Delete button removes it; a bad upload is styled as an error; ``/docs`` renders Swagger UI.
Every request that leaves 127.0.0.1 is aborted and fails the test (the page and ``/docs`` must
work offline). Screenshots: ``.ocrstack/artifacts/api-render.png``,
``api-error.png`` (after the reload and the bad upload) and ``api-docs.png`` (CI artifacts).
Skips with the reason when chromium or Playwright is absent (``apt-get install -y chromium``).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from PIL import Image

from ocrstack.api.process import ServiceProcess
from ocrstack.testing.fake_openai import FakeOpenAIServer
from ocrstack.testing.fake_replies import prompt_replay

pytestmark = [pytest.mark.server, pytest.mark.slow]
CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / ".ocrstack" / "artifacts"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
# MinerU layout answer on a 1000 x 1400 page (coordinates in 0..1000): text, table, equation
LAYOUT = (
    "<|box_start|>100 120 900 300<|box_end|><|ref_start|>text<|ref_end|><|rotate_up|>\n"
    "<|box_start|>100 320 900 500<|box_end|><|ref_start|>table<|ref_end|><|rotate_up|>\n"
    "<|box_start|>300 520 700 580<|box_end|><|ref_start|>equation<|ref_end|><|rotate_up|><|im_end|>"
)
TEXT = r"Use \newwrite with save_handler from <module>, *right* here; inline $x_i^2 + y$ and \(a<b\)."
ANSWERS = {
    "Layout Detection:": LAYOUT,
    "Text Recognition:": TEXT,
    "Table Recognition:": "<fcel>Name<fcel>Value<nl><fcel>alpha<fcel>x & y<nl>",
    "Formula Recognition:": r"\frac{a}{b} = \sum_{i=1}^{n} x_i",
}
# Markdown no ocrstack writer produces, rendered by the page's own renderer: a fenced code block
# and hostile markup that must stay inert.
SAMPLE = """\
```
<b>not bold</b> \\*kept\\*
```

<script>window.pwned = 1</script>
<img src=x onerror="window.pwned = 1">

<table onclick="window.pwned = 1"><tr>
<td colspan="2" style="color:red">cell<img src=x onerror="window.pwned = 1"></td></tr></table>

| a | b |
|---|---|
| 1 | $y^2$ |

[link](javascript:window.pwned=1)
"""
SHOW_SAMPLE = """s => {
  const el = document.createElement('article');
  el.id = 'sample';
  el.className = 'markdown';
  el.innerHTML = ocrstackMarkdown.render(s);
  document.querySelector('main').append(el);
}"""
INERT = """() => {
  const n = (sel) => document.querySelectorAll(sel).length;
  return {pwned: window.pwned, imgs: n('#sample img'), scripts: n('#sample script'),
          handlers: n('#sample [onclick], #sample [onerror], #sample div.table [style]'),
          links: n('#sample a[href^="javascript"]'), tables: n('#sample table'),
          katex: n('#sample td .katex'),
          colspan: document.querySelector('#sample td[colspan]')?.getAttribute('colspan')};
}"""


def _page(path: Path) -> Path:
    """A 1000 x 1400 white page with something dark in each layout box (so no crop is blank)."""
    img = Image.new("RGB", (1000, 1400), "white")
    for box in ((100, 180, 400, 220), (100, 460, 400, 500), (320, 740, 600, 780)):
        img.paste((0, 0, 0), box)
    img.save(path)
    return path


@pytest.fixture
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    if not Path(CHROMIUM).is_file() and not shutil.which("chromium"):
        pytest.skip(f"chromium not found at {CHROMIUM} (apt-get install -y chromium)")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            b.close()


def _offline(context, left: list[str]) -> None:
    """Abort (and record in ``left``) every request whose host is not 127.0.0.1."""

    def route(r) -> None:
        url = urlsplit(r.request.url)
        if url.scheme in ("http", "https", "ws", "wss") and url.hostname != "127.0.0.1":
            left.append(r.request.url)
            r.abort()
        else:
            r.continue_()

    context.route("**/*", route)


def test_page_renders_markdown_math_tables_and_docs_offline(browser, tmp_path: Path) -> None:
    args = ["--layout", "vlm", "--recognizer", "openai", "--prompts", "mineru-diffusion", "--model", "md"]
    with (
        FakeOpenAIServer(model="md", reply=prompt_replay(ANSWERS)) as fake,
        ServiceProcess(tmp_path / "data", [*args, "--server-url", fake.url]) as svc,
    ):
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        left: list[str] = []
        _offline(context, left)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        missing: list[str] = []
        page.on("response", lambda r: missing.append(r.url) if r.status >= 400 and "/static/" in r.url else 0)
        page.goto(svc.url + "/")
        page.set_input_files("#files", str(_page(tmp_path / "formulas.png")))
        page.click("#submit")
        page.wait_for_selector(".job[data-rendered=true]", timeout=120_000)
        md = page.locator(".job .markdown")
        shown = md.inner_text()
        cells = md.locator("table td").all_inner_texts()
        inline_math = md.locator("p .katex").count()
        display_math = md.locator(".katex-display").count()
        math_errors = md.locator(".katex-error").count()
        annotations = md.locator("annotation").evaluate_all("els => els.map((e) => e.textContent)")

        page.evaluate(SHOW_SAMPLE, SAMPLE)
        sample = page.locator("#sample")
        code = sample.locator("pre code").inner_text()
        sample_text = sample.inner_text()
        inert = page.evaluate(INERT)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "api-render.png"), full_page=True)

        page.evaluate("localStorage.clear(); sessionStorage.clear()")
        page.reload()  # the job list comes from the service (GET /v1/jobs), not from this browser
        page.wait_for_selector(".job[data-rendered=true] .markdown .katex", timeout=30_000)
        after_reload = page.locator(".job").count()
        button = page.locator(".job[data-rendered=true] .stop").inner_text()

        bad = tmp_path / "broken.pdf"
        bad.write_bytes(b"this is not a PDF")
        page.set_input_files("#files", str(bad))
        page.click("#submit")
        failed = page.wait_for_selector(".job.failed .status-text", timeout=60_000)
        failed_text = failed.inner_text()
        failed_color = failed.evaluate("el => getComputedStyle(el).color")
        page.screenshot(path=str(ARTIFACTS / "api-error.png"))
        page.click(".job[data-rendered=true] .stop")  # Delete: the finished job and its files go
        page.wait_for_selector(".job[data-rendered=true]", state="detached", timeout=10_000)
        page.reload()
        page.wait_for_function("document.querySelectorAll('.job').length === 0", timeout=10_000)

        docs = context.new_page()
        docs.on("pageerror", lambda exc: errors.append(str(exc)))
        docs.goto(svc.url + "/docs")
        docs.wait_for_selector(".swagger-ui .opblock", timeout=30_000)
        docs_title = docs.locator(".swagger-ui .title").first.inner_text()
        operations = docs.locator(".swagger-ui .opblock").count()
        docs.screenshot(path=str(ARTIFACTS / "api-docs.png"), full_page=True)
        context.close()

    assert not errors, errors
    assert not left, f"requests left 127.0.0.1: {left}"
    assert not missing, missing
    # escapes shown as a person expects, nothing left over from the Markdown source
    for seen in ("\\newwrite", "save_handler", "<module>", "*right*"):
        assert seen in shown, (seen, shown)
    for leftover in ("\\\\newwrite", "\\_", "\\*", "&lt;", "&amp;", "$"):
        assert leftover not in shown, (leftover, shown)
    assert cells == ["Name", "Value", "alpha", "x & y"], cells
    assert (inline_math, display_math, math_errors) == (2, 1, 0)
    assert {"x_i^2 + y", "a<b"} <= set(annotations), annotations
    assert any("\\frac{a}{b}" in a for a in annotations), annotations
    # the renderer: a code block shows its text as written; hostile markup stays inert
    assert code.strip() == "<b>not bold</b> \\*kept\\*", code
    assert "<script>" in sample_text and "onerror" in sample_text  # shown as text, not run
    assert inert == {"pwned": None, "imgs": 0, "handlers": 0, "scripts": 0, "links": 0, "colspan": "2",
                     "tables": 2, "katex": 1}, inert  # fmt: skip
    assert after_reload == 1 and button == "Delete"
    assert failed_color == "rgb(170, 0, 0)" and failed_text, failed_text
    assert docs_title.startswith("ocrstack") and operations >= 5, (docs_title, operations)
    assert (ARTIFACTS / "api-render.png").stat().st_size > 10_000
