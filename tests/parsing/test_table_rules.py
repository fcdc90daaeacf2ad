"""Ruling lines from PDFium's path objects (ocrstack.parsing.tables.rules) against pdfplumber's
``page.edges`` (the edges its ``lines`` table strategy uses), and on PDFs built here."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocrstack.parsing.tables.rules import ruling_segments
from support.imports import fresh_imports

PX = 200 / 72


def _plumber_edges(pdf: Path) -> list[tuple[float, float, float, float, str]]:
    pdfplumber = pytest.importorskip("pdfplumber")
    with pdfplumber.open(str(pdf)) as doc:
        edges = doc.pages[0].edges
    return sorted(
        (e["x0"] * PX, e["top"] * PX, e["x1"] * PX, e["bottom"] * PX, e["orientation"])
        for e in edges
        if e["orientation"] in ("h", "v") and max(e["width"], e["height"]) >= 1
    )


@pytest.mark.parametrize(
    "stem",
    [
        "tables_booktabs_ruled_vs_booktabs",
        "tables_googledocs_grid",
        "tables_zh_debian_reference",
        "math_mathtools_doc",
    ],
)
def test_same_edges_as_pdfplumber_on_corpus_tables(corpus: Path, stem: str) -> None:
    pdf = corpus / f"{stem}.pdf"
    want = _plumber_edges(pdf)
    got = sorted((g.x0, g.y0, g.x1, g.y1, g.orientation) for g in ruling_segments(pdf, 0, PX))
    assert len(got) == len(want) > 5
    for o in ("h", "v"):
        mine, theirs = [g for g in got if g[4] == o], [w for w in want if w[4] == o]
        assert len(mine) == len(theirs)
        for a in mine:
            # page pixels; PDFium maps onto the rendered bitmap (its width rounded), pdfplumber scales
            near = [b for b in theirs if all(abs(x - y) <= 1.5 for x, y in zip(a[:4], b[:4], strict=True))]
            assert near, a
            theirs.remove(near[0])


def _make_pdf(path: Path) -> None:
    """A 200 x 200 pt page: a stroked rectangle (10,10)-(110,60), a filled thin horizontal rule at
    y=150 from x=20 to 180, an unpainted rectangle, a diagonal line, and a form XObject-free
    rectangle moved by a matrix to (120,100)-(140,120)."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    doc = pdfium.PdfDocument.new()
    page = doc.new_page(200, 200)

    def add(obj, fill: int, stroke: bool) -> None:
        raw.FPDFPath_SetDrawMode(obj, fill, stroke)
        raw.FPDFPage_InsertObject(page.raw, obj)

    add(raw.FPDFPageObj_CreateNewRect(10, 140, 100, 50), raw.FPDF_FILLMODE_NONE, True)
    add(raw.FPDFPageObj_CreateNewRect(20, 49.8, 160, 0.4), raw.FPDF_FILLMODE_WINDING, False)
    add(raw.FPDFPageObj_CreateNewRect(30, 30, 50, 50), raw.FPDF_FILLMODE_NONE, False)
    diag = raw.FPDFPageObj_CreateNewPath(0, 0)
    raw.FPDFPath_LineTo(diag, 50, 40)
    add(diag, raw.FPDF_FILLMODE_NONE, True)
    moved = raw.FPDFPageObj_CreateNewRect(0, 0, 20, 20)
    raw.FPDFPageObj_Transform(moved, 1, 0, 0, 1, 120, 80)
    add(moved, raw.FPDF_FILLMODE_NONE, True)
    assert raw.FPDFPage_GenerateContent(page.raw)
    page.close()
    with open(path, "wb") as fh:
        doc.save(fh)
    doc.close()


def test_painted_axis_aligned_segments_in_page_pixels(tmp_path: Path) -> None:
    pdf = tmp_path / "rules.pdf"
    _make_pdf(pdf)
    segs = {
        (round(g.x0), round(g.y0), round(g.x1), round(g.y1), g.orientation)
        for g in ruling_segments(pdf, 0, 1.0)
    }
    # stroked rectangle x 10..110, PDF y 140..190 -> pixels y 10..60: four sides
    assert {
        (10, 10, 110, 10, "h"),
        (10, 60, 110, 60, "h"),
        (10, 10, 10, 60, "v"),
        (110, 10, 110, 60, "v"),
    } <= segs
    # the thin filled rule (PDF y 49.8..50.2 -> pixels 149.8..150.2): its long sides
    assert (20, 150, 180, 150, "h") in segs
    # the rectangle moved by its matrix: PDF (120..140, 80..100) -> pixels y 100..120
    assert (120, 100, 140, 100, "h") in segs and (140, 100, 140, 120, "v") in segs
    # the unpainted rectangle (30..80 pt) and the diagonal are not rules
    assert not any(x0 == 30 for x0, *_ in segs)
    assert len(ruling_segments(pdf, 0, 1.0)) == 4 + 4 + 4  # thin rule: 2 long + 2 short sides


def _grid_pdf(path: Path) -> None:
    """A 300 x 200 pt page ruled as a 2 x 2 grid: four stroked 50 x 20 pt rectangles from
    (100, 100) (PDF coordinates: pixels y 60..100 at 1 px a point)."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    doc = pdfium.PdfDocument.new()
    page = doc.new_page(300, 200)
    for x in (100, 150):
        for y in (100, 120):
            rect = raw.FPDFPageObj_CreateNewRect(x, y, 50, 20)
            raw.FPDFPath_SetDrawMode(rect, raw.FPDF_FILLMODE_NONE, True)
            raw.FPDFPage_InsertObject(page.raw, rect)
    assert raw.FPDFPage_GenerateContent(page.raw)
    page.close()
    with open(path, "wb") as fh:
        doc.save(fh)
    doc.close()


def test_the_table_finder_gets_pdfiums_rules_without_opening_the_pdf_with_pdfminer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pdfplumber's finder reads only the explicit edges: no pdfminer document is opened (it
    parsed the whole file once per table block), and the grid's four cells are found."""
    pdfplumber = pytest.importorskip("pdfplumber")
    from ocrstack.parsing.tables import born_digital
    from ocrstack.parsing.tables.rules import page_rules

    def refuse(*args, **kwargs):
        raise AssertionError("pdfplumber.open called")

    monkeypatch.setattr(pdfplumber, "open", refuse)
    monkeypatch.setattr(pdfplumber.PDF, "__init__", refuse)
    pdf = tmp_path / "grid.pdf"
    _grid_pdf(pdf)
    found = page_rules(pdf, 0, 2.0)
    assert (found.width_pt, found.height_pt) == (300, 200)
    _, rules_h, cells = born_digital._plumber(pdf, 0, (190.0, 110.0, 410.0, 210.0), 2.0, None)
    assert sorted({round(r[0]) for r in rules_h}) == [120, 160, 200]
    assert sorted((round(c[0]), round(c[1]), round(c[2]), round(c[3])) for c in cells) == [
        (200, 120, 300, 160),
        (200, 160, 300, 200),
        (300, 120, 400, 160),
        (300, 160, 400, 200),
    ]
    assert born_digital.has_ruled_grid((190.0, 110.0, 410.0, 210.0), pdf, 0, 2.0)


def _edges(xs: list[float], ys: list[float], gaps: bool) -> tuple[list[dict], list[dict]]:
    """pdfplumber edge dicts of a grid of vertical lines at ``xs`` and horizontal ones at ``ys``
    (points); with ``gaps`` some inner segments are left out (merged cells)."""
    v = [
        {
            "x0": x,
            "x1": x,
            "top": y0,
            "bottom": y1,
            "width": 0.0,
            "height": y1 - y0,
            "orientation": "v",
            "object_type": "line_edge",
        }
        for i, x in enumerate(xs)
        for j, (y0, y1) in enumerate(zip(ys, ys[1:], strict=False))
        if not (gaps and 0 < i < len(xs) - 1 and (i + j) % 3 == 0)
    ]
    h = [
        {
            "x0": x0,
            "x1": x1,
            "top": y,
            "bottom": y,
            "width": x1 - x0,
            "height": 0.0,
            "orientation": "h",
            "object_type": "line_edge",
        }
        for j, y in enumerate(ys)
        for i, (x0, x1) in enumerate(zip(xs, xs[1:], strict=False))
        if not (gaps and 0 < j < len(ys) - 1 and (i * j) % 4 == 1)
    ]
    return v, h


@pytest.mark.parametrize("gaps", [False, True])
def test_the_finder_without_pdfplumbers_package_finds_pdfplumbers_tables(gaps: bool) -> None:
    """The finder run from pdfplumber's own table.py in a private package gives the tables
    pdfplumber.table.TableFinder gives (the same code, loaded without pdfminer)."""
    plumber = pytest.importorskip("pdfplumber.table")
    from ocrstack.parsing.tables.finder import PACKAGE, explicit_tables, table_module

    ours = table_module()
    assert ours.__name__ == f"{PACKAGE}.table" and ours is not plumber
    v, h = _edges([50.0, 90.5, 130.0, 171.2, 220.0], [100.0, 120.0, 141.5, 160.0, 200.0, 230.0], gaps)
    got, want = explicit_tables(ours, v, h), explicit_tables(plumber, v, h)
    assert [t.cells for t in got] == [t.cells for t in want] and len(got[0].cells) >= 12


@pytest.mark.proc
def test_the_finder_does_not_import_pdfminer() -> None:
    """pdfplumber's package import (pdfminer.six with it) cost 20 MiB of a born-digital parse."""
    pytest.importorskip("pdfplumber")
    code = "from ocrstack.parsing.tables.finder import table_module\nassert table_module().TableFinder"
    assert fresh_imports(code, ("pdfminer", "pdfplumber")) == []
