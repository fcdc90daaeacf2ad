"""Every text rule of the parse pipeline, as one callable each (the hardening issue, item 1).

A text rule is a regular expression or a character loop over page or block text that an
attacker (a PDF's text layer, a recognizer's answer) can feed: the row joining and escaping of
the assembly, the OTSL and HTML table handling, the layout-answer parser, the line rules, the
answer cleaning of the openai recognizer, the post-write checks, and the text layer's line
building, block rules and soundness counts. :data:`RULES` lists them as ``(name, rule)``;
``rule(text)`` runs the rule's public entry on ``text`` (wrapped in the objects that entry
takes: a row, a block of each category, a page of text-layer characters).

One list serves two callers: the linearity test (``tests/parsing/test_text_rules_linear.py``
times each rule on 10^5 and 10^6 characters of hostile shapes) and the text-rules row of the
security table (``ocrstack.api.security.local``). A rule added to the pipeline belongs here.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from ocrstack.client.chat import Completion
from ocrstack.parsing.assembly import markdown, otsl, paragraphs
from ocrstack.parsing.layout import vlm_answer
from ocrstack.parsing.lines import assign
from ocrstack.parsing.page_result import PageResult
from ocrstack.parsing.recognition.openai import recognizer
from ocrstack.parsing.run import validate
from ocrstack.parsing.tables import born_digital
from ocrstack.parsing.textlayer import lines as layer_lines
from ocrstack.parsing.textlayer import plain, soundness
from ocrstack.parsing.textlayer.extract import Char, PageText
from ocrstack.parsing.types import Block, Category

Rule = Callable[[str], object]


def _assembly(text: str) -> object:
    vocab = paragraphs.Vocabulary.of([text, f"{text}-", f"well-known {text}-b"])
    paragraphs.join_rows(f"x {text}-", "bc next", vocab)
    paragraphs.join_rows(text, text, vocab)
    paragraphs.join_paragraph([text, f"{text}-", text], vocab)
    paragraphs.paragraphs(f"{text}\n\n{text}")
    paragraphs.continues(text, text)
    return paragraphs.list_item(text)


def _page(text: str, structured: bool) -> PageResult:
    """A page with one block of ``text`` in each category the assembly renders differently."""
    cats = [Category.TEXT, Category.TITLE, Category.TABLE, Category.FORMULA, Category.FIGURE]
    cats.append(Category.CAPTION)
    blocks = [Block((0, 100 * k, 100, 100 * k + 90), c, order=k, text=text) for k, c in enumerate(cats)]
    return PageResult(0, (100, 100 * len(cats)), blocks=blocks, structured=structured)


def _render(text: str) -> object:
    markdown.render_page(_page(text, structured=True))
    return markdown.render_page(_page(text, structured=False), keep_paratext=True)


def _otsl(text: str) -> object:
    otsl.replace_otsl(text)
    otsl.replace_otsl(f"<otsl>{text}</otsl>")
    return otsl.otsl_to_html(text)


def _layout_answer(text: str) -> object:
    vlm_answer.parse_layout_answer(text, strict=False)
    line = f"<|box_start|>1 2 3 4<|box_end|><|ref_start|>{text}<|ref_end|>{text}"
    return vlm_answer.parse_layout_answer(f"{line}\n{text}", strict=False)


def _line_rules(text: str) -> object:
    row = ((0.0, 0.0, 10.0, 10.0), text)
    assign.paragraph_break(row, ((0.0, 12.0, 10.0, 22.0), text), 0.0, 100.0, 10.0)
    ln = assign.Line((0.0, 0.0, 50.0, 10.0), text, 1.0)
    num = assign.Line((60.0, 0.0, 70.0, 10.0), text, 1.0)
    assign.merge_toc_numbers([ln, num, assign.Line((60.0, 20.0, 70.0, 30.0), text, 1.0)])
    return assign.join_lines([ln, assign.Line((0.0, 12.0, 50.0, 22.0), text, 1.0)])


def _answer(text: str) -> object:
    for answer in (text, f"<think>{text}</think>{text}", f"  <think>{text}"):
        block = Block((0, 0, 10, 10), Category.TEXT)
        recognizer._fill(block, Completion(answer, "stop", "probe", 0.0, 1))
    return block.text


def _validate(text: str) -> object:
    block = Block((0, 0, 10, 10), Category.TABLE, text=text)
    page = PageResult(0, (100, 100), blocks=[block], structured=True)
    fd, name = tempfile.mkstemp(suffix=".md", prefix="ocrstack-textrules-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass") as f:
            f.write(f"<!-- page 1 -->\n\n{text}\n")
        return validate.validate(Path(name), [page])
    finally:
        os.unlink(name)


def _html_cells(text: str) -> object:
    born_digital.html_cells(text)
    return born_digital.html_cells(f"<table><tr><td>{text}</td></tr></table>")


def _layer(text: str) -> PageText:
    """One row of characters, 6 x 10 px each, at the foot of a page wide enough for all of them:
    an isolated bottom line, which the footer and page-number rules see."""
    chars = [Char(ch, (6.0 * k, 9_980.0, 6.0 * k + 5.0, 9_990.0), font="F") for k, ch in enumerate(text)]
    return PageText(chars, (6 * len(text) + 10, 10_000))


def _layer_blocks(text: str) -> object:
    pt = _layer(text)
    layer_lines.build_lines(pt.chars)
    return plain.layer_blocks(pt)


def _soundness(text: str) -> object:
    pt = _layer(text)
    soundness.judge(pt)
    return soundness.sample_length(text)


#: ``(name, rule)`` of every text rule (see the module docstring).
RULES: list[tuple[str, Rule]] = [
    ("assembly.paragraphs", _assembly),
    ("assembly.markdown.escape_text", markdown.escape_text),
    ("assembly.markdown.render_page", _render),
    ("assembly.markdown.has_otsl", lambda t: (markdown.has_otsl(t), markdown.has_escaped_otsl(t))),
    ("assembly.otsl", _otsl),
    ("layout.vlm_answer", _layout_answer),
    ("lines.assign", _line_rules),
    ("recognition.openai answer", _answer),
    ("run.validate", _validate),
    ("tables.born_digital.html_cells", _html_cells),
    ("textlayer.plain.layer_blocks", _layer_blocks),
    ("textlayer.soundness", _soundness),
]

#: Hostile runs: ``name -> make(n)``, ``n`` characters of that shape.
SHAPES: dict[str, Callable[[int], str]] = {
    "letters": lambda n: "a" * n,
    "letters-hyphen": lambda n: "a" * (n - 1) + "-",
    "digits": lambda n: "1" * n,
    "digits-letter": lambda n: "1" * (n - 1) + "a",
    "letter-space": lambda n: ("a " * n)[:n],
    "a-": lambda n: ("a-" * n)[:n],
    "backslash-dollar": lambda n: ("\\$" * n)[:n],
    "lt-amp": lambda n: ("<&" * n)[:n],
    "newlines": lambda n: "\n" * n,
    "cjk": lambda n: "\u4e00" * n,
    "fcel": lambda n: ("<fcel>" * n)[:n],
    "fcel-nl": lambda n: ("<fcel>x<nl>" * n)[:n],
    "open-tags": lambda n: ("<table <tr><td <!--<caption><think>" * n)[:n],
}

#: Rules too slow for the default test run at 10^6 characters (seconds each, linear): they build a
#: Markdown page of six blocks, or a page of 10^6 text-layer characters, per call. The test marks
#: them ``heavy`` (CI's heavy step, ``nox -s heavy``).
SLOW = frozenset(
    {"assembly.paragraphs", "assembly.markdown.render_page", "assembly.otsl", "textlayer.plain.layer_blocks",
     "textlayer.soundness"}
)  # fmt: skip


def best_of(rule: Rule, text: str, times: int = 3) -> float:
    """The least of ``times`` wall-clock seconds ``rule(text)`` takes."""
    import time

    best = float("inf")
    for _ in range(times):
        t0 = time.perf_counter()
        rule(text)
        best = min(best, time.perf_counter() - t0)
    return best
