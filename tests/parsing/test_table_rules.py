"""Ruling lines from PDFium's path objects (ocrstack.parsing.tables.rules) against pdfplumber's
``page.edges`` (the edges its ``lines`` table strategy uses), and on PDFs built here."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocrstack.parsing.tables.rules import ruling_segments

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
