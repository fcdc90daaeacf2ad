"""Every "guide N" and "issue N" reference in the repository resolves to docs/design.md.

Comments, docstrings, data files and tests cite sections of the deployment guide
(``shared/seeds/000_a6ffb5c9f36940fa.txt``, e.g. "guide 4.1", "(guide 3.2/8)", "guide section 8",
"guide 4.1-4.3"), the second seed, and this project's issues ("issue 11 item 4", "issues 10, 13",
"issue 3/4"). None of those documents is in the repository; docs/design.md holds one anchor per
section and per issue (``<a id="guide-4.1">``, ``<a id="issue-11">``, ``<a id="second-seed">``),
and a reference to another project's tracker ("docling issues 2467 and 3452") resolves to an
``upstream-NAME-N`` anchor. README.md links the note (issue 20 item 6).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTE = ROOT / "docs" / "design.md"
#: Where references are collected: the files and folders a reader of the code opens.
SOURCES = ("README.md", "pixi.toml", "noxfile.py", "tasks", "tests", "deploy", "envs")

NUM = r"\d+(?:\.\d+)*"
#: Between two numbers of one reference: "3.2, 8", "4.1/4.2", "4.1-4.3", "8 and 10", "3 / 9".
SEP = r"\s*(?:,|/|-|–|&|\band\b|\bor\b)\s*"
NUMS = rf"#?{NUM}(?:{SEP}#?{NUM})*"
GUIDE = re.compile(
    rf"(?:\bguides?|000_a6ffb5c9f36940fa\.txt\)?,)\s+(?:sections?\s+)?\(?(?P<nums>{NUMS})", re.IGNORECASE
)
#: ``name`` is the word right before "issue" when nothing separates them ("docling issue 3452");
#: "(MinerU-Diffusion, issue 14)" has a comma, so it is this project's issue 14.
ISSUE = re.compile(rf"(?:(?P<name>[\w/.-]+)\s+)?\bissues?\s+(?P<nums>{NUMS})", re.IGNORECASE)
SECOND_SEED = re.compile(r"\bsecond seed\b|003_b5ba6f99e594e48f", re.IGNORECASE)
#: Other projects' trackers cited by name: the word before "issue" -> the anchor's name part.
UPSTREAM = {
    "vllm": "vllm",
    "docling": "docling",
    "pypdfium2": "pypdfium2",
    "openbmb/minicpm-v": "minicpm-v",
    "mineru-diffusion": "mineru-diffusion",
}
#: Text that reads like a reference but is not one, with why.
NOT_REFERENCES = (
    # the masthead of the LaTeX News corpus page (en_twocol_ltnews24), also across a line break
    re.compile(r"Issue 24,\s+February 2016"),
)
#: An anchor is a line of its own (``<a id="guide-4.1"></a>``); one quoted inside prose is not.
ANCHOR = re.compile(r"""^<a id="([^"]+)"></a>$""", re.MULTILINE)


def _files() -> Iterator[Path]:
    """Text and data files under :data:`SOURCES` (not this file: its examples are not citations)."""
    for name in SOURCES:
        path = ROOT / name
        if path.is_file():
            yield path
            continue
        for p in sorted(path.rglob("*")):
            rel = p.relative_to(ROOT).parts
            hidden = any(part.startswith(".") or part == "__pycache__" for part in rel)
            if p.is_file() and not hidden and p != Path(__file__).resolve():
                yield p


def references(text: str) -> set[str]:
    """The anchors ``text`` needs: ``guide-N``, ``issue-N``, ``upstream-NAME-N``, ``second-seed``."""
    for phrase in NOT_REFERENCES:
        text = phrase.sub("", text)
    out = {f"guide-{n}" for m in GUIDE.finditer(text) for n in re.findall(NUM, m["nums"])}
    for m in ISSUE.finditer(text):
        name = (m["name"] or "").lower()
        prefix = f"upstream-{UPSTREAM[name]}-" if name in UPSTREAM else "issue-"
        out |= {prefix + n for n in re.findall(NUM, m["nums"])}
    if SECOND_SEED.search(text):
        out.add("second-seed")
    return out


def _cited() -> dict[str, list[str]]:
    where: dict[str, list[str]] = {}
    for path in _files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # a binary fixture cites nothing
            continue
        for ref in references(text):
            where.setdefault(ref, []).append(str(path.relative_to(ROOT)))
    return where


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("(guide 4.1, 8; issues 10, 13)", {"guide-4.1", "guide-8", "issue-10", "issue-13"}),
        ("guide 3.2/8 and Guide 6/7.", {"guide-3.2", "guide-8", "guide-6", "guide-7"}),
        ("guide section 8 lists; (guide 4) then guide 3.4.", {"guide-8", "guide-4", "guide-3.4"}),
        ("the guide 4.1-4.3 commands", {"guide-4.1", "guide-4.3"}),
        ("issue 11 item 4 and issue 3/4", {"issue-11", "issue-3", "issue-4"}),
        ("(docling issues 2467 and 3452 are", {"upstream-docling-2467", "upstream-docling-3452"}),
        ("(MinerU-Diffusion, issue 14)", {"issue-14"}),
        ("MinerU-Diffusion issues 8 and 10", {"upstream-mineru-diffusion-8", "upstream-mineru-diffusion-10"}),
        ("seeds/000_a6ffb5c9f36940fa.txt, sections 4.1-4.3)", {"guide-4.1", "guide-4.3"}),
        ('"Issue 24,\n    February 2016"; the guide\'s venvs; BeforeIssue11', set()),
        ("the second seed's shape", {"second-seed"}),
    ],
)
def test_references_are_read_precisely(text: str, expected: set[str]) -> None:
    assert references(text) == expected


def test_every_reference_resolves_to_an_anchor() -> None:
    anchors = set(ANCHOR.findall(NOTE.read_text(encoding="utf-8")))
    cited = _cited()
    assert {"guide-3.2", "guide-8", "issue-11"} <= cited.keys()  # the collector found the usual ones
    missing = {ref: files[:3] for ref, files in sorted(cited.items()) if ref not in anchors}
    assert not missing, f"add these anchors to docs/design.md (cited in): {missing}"


def test_anchors_are_unique() -> None:
    ids = ANCHOR.findall(NOTE.read_text(encoding="utf-8"))
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


def test_readme_links_the_note() -> None:
    head = ROOT.joinpath("README.md").read_text(encoding="utf-8")[:3000]
    assert "](docs/design.md)" in head, "README.md must link docs/design.md near the top"
