"""Tests for ocrstack.parsing.documents (issue 3, "Pipeline" item 1 and the odd inputs of "Real input").

Inputs are generated here (hand-written PDFs, Pillow images, pikepdf for encryption) or read
from the shared corpus; expected values come from the PDF/image definitions written here or
from the corpus manifest, never from the code under test.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import math
import resource
import struct
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pypdfium2 as pdfium
import pytest
from PIL import Image, PngImagePlugin, features

from ocrstack.core.errors import InputError, UsageError
from ocrstack.parsing import documents
from ocrstack.parsing.documents import count_pages, expand_inputs, file_sha256, iter_pages, parse_page_range
from ocrstack.parsing.types import PageImage

# --------------------------------------------------------------------------- helpers


def make_pdf(pages: list[dict], *, acroform: bool = False) -> bytes:
    """Write a small, valid PDF by hand (PDF 1.7, ISO 32000-1 section 7.5).

    Each page dict: ``size`` (w, h) in points, optional ``content`` (content stream bytes),
    ``rotate`` (/Rotate), ``widget`` (x0, y0, x1, y1): a text-field widget whose normal
    appearance (/AP /N) fills its rectangle black, listed in the AcroForm when ``acroform``.
    """
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    def stream(data: bytes, extra: bytes = b"") -> bytes:
        return b"<< /Length %d %s>>\nstream\n%s\nendstream" % (len(data), extra, data)

    catalog = add(b"")  # placeholder, filled below
    pages_id = add(b"")
    kids: list[int] = []
    fields: list[int] = []
    for spec in pages:
        w, h = spec["size"]
        content_id = add(stream(spec.get("content", b"")))
        page_id = len(objects) + 1
        annots = b""
        if "widget" in spec:
            x0, y0, x1, y1 = spec["widget"]
            ap = add(
                stream(
                    b"0 0 0 rg 0 0 %g %g re f" % (x1 - x0, y1 - y0),
                    b"/Type /XObject /Subtype /Form /BBox [0 0 %g %g] " % (x1 - x0, y1 - y0),
                )
            )
            widget = add(
                b"<< /Type /Annot /Subtype /Widget /FT /Tx /T (field%d) /V (x) /F 4 /Rect [%g %g %g %g] "
                b"/P %d 0 R /AP << /N %d 0 R >> >>" % (len(fields), x0, y0, x1, y1, page_id + 2, ap)
            )
            fields.append(widget)
            annots = b"/Annots [%d 0 R] " % widget
            page_id = len(objects) + 1
        rotate = b"/Rotate %d " % spec["rotate"] if "rotate" in spec else b""
        kids.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 %g %g] %s%s/Contents %d 0 R "
                b"/Resources << >> >>" % (pages_id, w, h, rotate, annots, content_id)
            )
        )
        assert kids[-1] == page_id
    objects[pages_id - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % k for k in kids),
        len(kids),
    )
    form = b""
    if acroform and fields:
        form = b"/AcroForm << /Fields [%s] >> " % b" ".join(b"%d 0 R" % f for f in fields)
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R %s>>" % (pages_id, form)

    out = io.BytesIO()
    out.write(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, body))
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(
        b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, catalog, xref)
    )
    return out.getvalue()


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def px(points: float, dpi: float) -> int:
    """Pixels for a side of ``points`` at ``dpi`` (1 inch = 72 points); pypdfium2's
    ``PdfPage.render`` sizes the bitmap as ``ceil(points * scale)`` with ``scale = dpi / 72``."""
    return math.ceil(points * (dpi / 72))


def close_to(size: tuple[int, int], expected: tuple[int, int], tol: int = 1) -> bool:
    """Sizes equal within ``tol`` pixels per side (manifest sizes are rounded to 0.1 pt)."""
    return all(abs(a - b) <= tol for a, b in zip(size, expected, strict=True))


def dark_fraction(image: Image.Image, box: tuple[int, int, int, int] | None = None) -> float:
    arr = np.asarray(image.convert("L").crop(box) if box else image.convert("L"))
    return float((arr < 128).mean())


def manifest(corpus: Path) -> dict[str, dict]:
    return {entry["id"]: entry for entry in json.loads((corpus / "manifest.json").read_text())}


def corpus_file(corpus: Path, entry: dict) -> Path:
    """Corpus files lie flat; the manifest's ``file`` keeps the dev/ prefix of its build tree."""
    return corpus / Path(entry["file"]).name


def pikepdf_or_skip():
    return pytest.importorskip(
        "pikepdf", reason="pikepdf (test dependency) not installed: cannot encrypt PDFs"
    )


# --------------------------------------------------------------------------- page ranges


@pytest.mark.parametrize(
    ("spec", "n", "expected"),
    [
        (None, 3, [0, 1, 2]),
        ("1-3,7", 10, [0, 1, 2, 6]),
        ("7, 1-3", 10, [0, 1, 2, 6]),
        ("2-", 4, [1, 2, 3]),
        ("2,2,1-2", 5, [0, 1]),
        ("4", 4, [3]),
    ],
)
def test_parse_page_range(spec: str | None, n: int, expected: list[int]) -> None:
    assert parse_page_range(spec, n) == expected


@pytest.mark.parametrize("spec", ["", " ", "0", "3-1", "a", "1-b", "11", "1,,2", "-3", "1-2-3", "+1", "2-11"])
def test_parse_page_range_rejects(spec: str) -> None:
    with pytest.raises(UsageError) as err:
        parse_page_range(spec, 10)
    assert "--pages" in str(err.value)
    assert err.value.exit_code == 2


def test_parse_page_range_open_end_beyond_last_page() -> None:
    with pytest.raises(UsageError, match="beyond the last page"):
        parse_page_range("3-", 2)


def test_a_range_past_the_end_names_its_first_page_past_the_end() -> None:
    with pytest.raises(UsageError, match=r"page 5 in '5-9' is beyond the last page \(2\)"):
        parse_page_range("5-9", 2)
    with pytest.raises(UsageError, match=r"page 9 in '1-9' is beyond"):
        parse_page_range("1-9", 2)


def test_page_range_error_names_the_input(tmp_path: Path) -> None:
    pdf = write(tmp_path / "two.pdf", make_pdf([{"size": (72, 72)}] * 2))
    with pytest.raises(UsageError) as err:
        list(iter_pages(pdf, pages="3"))
    assert str(pdf) in str(err.value) and "2 page(s)" in str(err.value)


# --------------------------------------------------------------------------- inputs


def test_expand_inputs_walks_directories_sorted_and_filters(tmp_path: Path) -> None:
    root = tmp_path / "in"
    for name in [
        "b.pdf",
        "a.PNG",
        "sub/c.tiff",
        "sub/deeper/d.jpg",
        "notes.txt",
        ".hidden.pdf",
        ".git/e.pdf",
    ]:
        write(root / name, b"x")
    single = write(tmp_path / "single.bin", b"x")  # explicit files are kept whatever the suffix
    got = expand_inputs([single, root, root / "b.pdf"])
    assert got == [
        single,
        root / "a.PNG",
        root / "b.pdf",
        root / "sub" / "c.tiff",
        root / "sub" / "deeper" / "d.jpg",
    ]


def test_expand_inputs_resolves_relative_paths_against_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "docs" / "x.pdf", b"x")
    monkeypatch.chdir(tmp_path)
    assert expand_inputs([Path("docs/x.pdf")]) == [tmp_path / "docs" / "x.pdf"]
    assert expand_inputs([Path("docs")]) == [tmp_path / "docs" / "x.pdf"]


def test_expand_inputs_missing_path_names_file_and_fix(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        expand_inputs([tmp_path / "nope.pdf"])
    assert str(tmp_path / "nope.pdf") in str(err.value)
    assert "fix:" in str(err.value)
    assert err.value.exit_code == 3


def test_expand_inputs_empty_directory_is_an_error(tmp_path: Path) -> None:
    write(tmp_path / "only.txt", b"x")
    with pytest.raises(InputError, match="no supported input file"):
        expand_inputs([tmp_path])
    with pytest.raises(InputError):
        expand_inputs([])


def test_file_sha256_follows_file_changes(tmp_path: Path) -> None:
    path = write(tmp_path / "a.pdf", b"first")
    assert file_sha256(path) == hashlib.sha256(b"first").hexdigest()
    write(path, b"second version")
    assert file_sha256(path) == hashlib.sha256(b"second version").hexdigest()
    with pytest.raises(InputError, match="cannot read"):
        file_sha256(tmp_path / "missing.pdf")


# --------------------------------------------------------------------------- PDF rendering


def test_pdf_pages_render_at_dpi_with_range_and_limit(tmp_path: Path) -> None:
    sizes = [(612, 792), (300, 200), (100, 400)]
    pdf = write(tmp_path / "doc.pdf", make_pdf([{"size": s} for s in sizes]))
    assert count_pages(pdf) == 3
    got = list(iter_pages(pdf, dpi=100))
    assert [p.index for p in got] == [0, 1, 2]
    assert [p.size for p in got] == [(px(w, 100), px(h, 100)) for w, h in sizes]
    assert all(p.image.mode == "RGB" and p.dpi == pytest.approx(100) for p in got)
    assert all(p.source == str(pdf) for p in got)
    assert got[0].source_sha256 == hashlib.sha256(pdf.read_bytes()).hexdigest()
    assert np.asarray(got[0].image).min() == 255  # empty page: white background
    assert [p.index for p in iter_pages(pdf, pages="3,1", dpi=30)] == [0, 2]
    assert [p.index for p in iter_pages(pdf, pages="2-", dpi=30, limit=1)] == [1]
    with pytest.raises(UsageError):
        list(iter_pages(pdf, pages="4"))


def test_a_thumbnailer_gets_each_rendered_pages_pixels_and_its_result_stays_with_that_image(
    tmp_path: Path,
) -> None:
    """The thumbnailer sees the render buffer (height, width, RGB + an unused byte) of each PDF
    page: what it returns is the page's thumbnail, for that image only (a page whose image was
    replaced, e.g. turned, has none); raster inputs get none."""
    import dataclasses

    # a black 36 x 36 pt square at the top left of a 72 x 144 pt page
    pdf = write(tmp_path / "doc.pdf", make_pdf([{"size": (72, 144), "content": b"0 g 0 108 36 36 re f"}] * 2))
    seen = []

    def thumb(px: np.ndarray) -> np.ndarray:
        seen.append((px.shape, px.dtype))
        return px[::2, ::2, :3].copy()  # every other pixel, RGB

    pages = list(iter_pages(pdf, dpi=72, thumbnailer=thumb))
    assert seen == [((144, 72, 4), np.uint8)] * 2
    small = pages[0].thumbnail_for()
    assert small.shape == (72, 36, 3)
    assert small[:18, :18].max() == 0 and small[18:, :].min() == 255 and small[:, 18:].min() == 255
    assert np.array_equal(small, np.asarray(pages[0].image)[::2, ::2])
    turned = dataclasses.replace(pages[0], image=pages[0].image.rotate(90, expand=True))
    assert turned.thumbnail_for() is None and pages[1].thumbnail_for() is not None
    assert next(iter_pages(pdf, dpi=72)).thumbnail_for() is None
    png = tmp_path / "page.png"
    Image.new("RGB", (20, 10), "white").save(png)
    assert next(iter_pages(png, thumbnailer=thumb)).thumbnail_for() is None and len(seen) == 2
    # the objects reader: called with the loaded PDF page and its render size; raster inputs none
    calls = []
    (first, _) = iter_pages(pdf, dpi=72, objects_reader=lambda raw, pg, size: calls.append(size) or size)
    assert first.objects == (72, 144) and calls == [(72, 144)] * 2
    assert next(iter_pages(png, objects_reader=lambda *a: 1 / 0)).objects is None


def test_pdf_pages_are_streamed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pdf = write(tmp_path / "long.pdf", make_pdf([{"size": (72, 72)}] * 20))
    calls: list[int] = []
    real = documents.pdf._render_pdf_page

    def spy(doc, path, index, *args):
        calls.append(index)
        return real(doc, path, index, *args)

    monkeypatch.setattr(documents.pdf, "_render_pdf_page", spy)
    stream = iter_pages(pdf, dpi=10)
    first = next(stream)
    assert first.index == 0 and calls == [0]
    next(stream)
    assert calls == [0, 1]
    stream.close()


def test_pdf_reopened_in_chunks_keeps_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sizes = [(72 + i, 72) for i in range(11)]  # page i is 72 + i points wide
    pdf = write(tmp_path / "chunks.pdf", make_pdf([{"size": s} for s in sizes]))
    monkeypatch.setattr(documents.pdf, "PDF_REOPEN_EVERY", 4)
    got = list(iter_pages(pdf, dpi=72))
    assert [p.index for p in got] == list(range(11))
    assert [p.size for p in got] == [(px(w, 72), px(h, 72)) for w, h in sizes]
    assert [p.index for p in iter_pages(pdf, pages="2,5-6,10-", dpi=72)] == [1, 4, 5, 9, 10]


def test_pdf_changed_between_chunks_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pdf = write(tmp_path / "moving.pdf", make_pdf([{"size": (72, 72)}] * 6))
    monkeypatch.setattr(documents.pdf, "PDF_REOPEN_EVERY", 2)
    stream = iter_pages(pdf, dpi=10)
    next(stream), next(stream)
    write(pdf, make_pdf([{"size": (72, 72)}] * 7))
    with pytest.raises(InputError, match="changed while"):
        next(stream)


def test_a_rendered_page_is_an_rgb_image_on_pdfiums_buffer_with_the_pixels_of_a_copy(tmp_path: Path) -> None:
    """The page image uses the render buffer itself (RGBx is Pillow's RGB layout): the pixels of
    pypdfium2's own image converted (the copy it replaced), RGB, read-only (Pillow copies it
    before drawing on it), and it outlives the bitmap."""
    import pickle

    from PIL import ImageDraw

    content = b"1 0 0 rg 10 10 30 20 re f 0 0.5 1 rg 40 50 25 25 re f 0.2 g 5 80 60 8 re f"
    pdf = write(tmp_path / "colours.pdf", make_pdf([{"size": (72, 100), "content": content}]))
    (page,) = iter_pages(pdf, dpi=144)
    doc = pdfium.PdfDocument(str(pdf))
    bitmap = doc[0].render(scale=2, fill_color=(255, 255, 255, 255), rev_byteorder=True, prefer_bgrx=True)
    want = np.asarray(bitmap.to_pil().convert("RGB"))
    bitmap.close()
    doc.close()
    got = np.asarray(page.image)
    assert page.image.mode == "RGB" and got.shape == want.shape == (200, 144, 3)
    assert np.array_equal(got, want) and {(255, 0, 0), (255, 255, 255)} <= {
        tuple(px) for px in got.reshape(-1, 3)
    }
    assert page.image.readonly
    assert np.array_equal(np.asarray(pickle.loads(pickle.dumps(page.image))), want)
    drawn = page.image.copy()
    ImageDraw.Draw(page.image).rectangle((0, 0, 3, 3), fill=(0, 255, 0))
    assert page.image.getpixel((1, 1)) == (0, 255, 0) and drawn.getpixel((1, 1)) == (255, 255, 255)


def test_pdf_rotate_is_honoured(tmp_path: Path) -> None:
    # 200 x 100 pt landscape MediaBox, black square at the top-left corner in PDF user space
    # (y grows upwards). /Rotate 90 turns the page clockwise for display (ISO 32000-1 7.7.3.3):
    # the page becomes 100 x 200 and the top-left corner moves to the top-right.
    content = b"0 0 0 rg 0 80 20 20 re f"
    pdf = write(tmp_path / "rot.pdf", make_pdf([{"size": (200, 100), "content": content, "rotate": 90}]))
    (page,) = iter_pages(pdf, dpi=72)
    assert page.size == (100, 200)
    assert dark_fraction(page.image, (80, 0, 100, 20)) > 0.9  # top-right
    assert dark_fraction(page.image, (0, 0, 20, 20)) == 0.0  # top-left stays white
    assert any("/Rotate 90" in note for note in page.notes)


def test_acroform_widgets_are_rendered(tmp_path: Path) -> None:
    pdf = write(
        tmp_path / "form.pdf", make_pdf([{"size": (200, 200), "widget": (50, 50, 150, 150)}], acroform=True)
    )
    (page,) = iter_pages(pdf, dpi=72)
    assert dark_fraction(page.image, (60, 60, 140, 140)) > 0.9
    # Control: PDFium without a form environment does not draw widget annotations, so this
    # test would fail if the loader stopped calling init_forms().
    doc = pdfium.PdfDocument(str(pdf))
    try:
        bare = doc[0].render(scale=1).to_pil()
        assert dark_fraction(bare, (60, 60, 140, 140)) == 0.0
    finally:
        doc.close()


def test_page_over_pixel_budget_is_downscaled_before_allocation(tmp_path: Path) -> None:
    side_pt = 5000 / 25.4 * 72  # 5 m in points (1 in = 25.4 mm = 72 pt)
    pdf = write(tmp_path / "huge.pdf", make_pdf([{"size": (side_pt, side_pt / 2)}]))
    budget = 4_000_000
    full = px(side_pt, 200) * px(side_pt / 2, 200)
    assert full > 100 * budget  # ~775 megapixels, ~2.3 GB as RGB
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    (page,) = iter_pages(pdf, dpi=200, max_pixels=budget)
    peak_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    w, h = page.size
    assert w * h <= budget
    assert w * h > 0.98 * budget
    assert w / h == pytest.approx(2, rel=0.01)
    assert page.dpi == pytest.approx(200 * w / px(side_pt, 200), rel=0.01)
    assert any("downscaled" in note for note in page.notes)
    assert (peak_after - peak_before) * 1024 < 500_000_000


def test_user_password_pdf(tmp_path: Path) -> None:
    pikepdf = pikepdf_or_skip()
    plain = write(
        tmp_path / "plain.pdf", make_pdf([{"size": (100, 100), "content": b"0 0 0 rg 0 0 50 50 re f"}])
    )
    locked = tmp_path / "locked.pdf"
    with pikepdf.open(plain) as pdf:
        pdf.save(locked, encryption=pikepdf.Encryption(user="s3cret", owner="owner-pw", R=6))
    with pytest.raises(InputError) as err:
        list(iter_pages(locked))
    message = str(err.value)
    assert str(locked) in message and "password required" in message and "--password" in message
    with pytest.raises(InputError, match="password required"):
        count_pages(locked)
    with pytest.raises(InputError, match="wrong password"):
        list(iter_pages(locked, password="guess"))
    assert count_pages(locked, password="s3cret") == 1
    (page,) = iter_pages(locked, password="s3cret", dpi=72)
    assert dark_fraction(page.image, (0, 50, 50, 100)) > 0.9  # bottom-left square


def test_owner_password_only_pdf_opens_without_password(tmp_path: Path) -> None:
    pikepdf = pikepdf_or_skip()
    plain = write(tmp_path / "plain.pdf", make_pdf([{"size": (100, 100)}] * 2))
    locked = tmp_path / "owner.pdf"
    with pikepdf.open(plain) as pdf:
        perms = pikepdf.Permissions(extract=False, modify_other=False)
        pdf.save(locked, encryption=pikepdf.Encryption(user="", owner="owner-pw", allow=perms))
    with pikepdf.open(locked) as check:
        assert check.is_encrypted
    assert count_pages(locked) == 2
    assert len(list(iter_pages(locked, dpi=20))) == 2


@pytest.mark.parametrize(
    ("name", "data", "needle"),
    [
        ("empty.pdf", b"", "empty"),
        ("truncated.pdf", make_pdf([{"size": (100, 100)}])[:60], "cannot open PDF"),
        ("garbage.pdf", b"GIF89a not really", "not a PDF"),
        ("noise.png", bytes(range(256)) * 4, "not a supported document"),
        ("notes.txt", b"hello world\n", "not a supported document"),
        ("cut.png", None, "cannot be decoded"),
    ],
)
def test_corrupt_or_unsupported_files_name_the_file(
    tmp_path: Path, name: str, data: bytes | None, needle: str
) -> None:
    if data is None:  # a PNG whose pixel data is cut off
        buf = io.BytesIO()
        Image.effect_noise((300, 300), 64).save(buf, "PNG")
        data = buf.getvalue()[: len(buf.getvalue()) // 2]
    path = write(tmp_path / name, data)
    with pytest.raises(InputError) as err:
        list(iter_pages(path))
    assert str(path) in str(err.value)
    assert needle in str(err.value)
    assert "fix:" in str(err.value)


def test_pdf_with_no_pages_is_an_input_error(tmp_path: Path) -> None:
    doc = pdfium.PdfDocument.new()
    buf = io.BytesIO()
    doc.save(buf)
    doc.close()
    path = write(tmp_path / "blank.pdf", buf.getvalue())
    with pytest.raises(InputError) as err:  # PDFium refuses a document without a page tree
        list(iter_pages(path))
    assert str(path) in str(err.value) and "fix:" in str(err.value)


def test_bad_numeric_options_are_refused_by_the_option_declarations() -> None:
    """The ranges of --dpi / --max-pixels / --limit live in one place (ocrstack.parsing.options)."""
    from ocrstack.parsing.options import ParseOptions, validate

    for field, value, flag in (
        ("dpi", 0, "--dpi"),
        ("max_pixels", 0, "--max-pixels"),
        ("limit", 0, "--limit"),
    ):
        with pytest.raises(UsageError, match=flag):
            validate(ParseOptions(inputs=(), **{field: value}))


# --------------------------------------------------------------------------- images


def save(image: Image.Image, path: Path, **kw) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, **kw)
    return path


def test_alpha_is_composited_on_white(tmp_path: Path) -> None:
    rgba = Image.new("RGBA", (40, 20), (0, 0, 0, 0))  # transparent BLACK: naive convert gives black
    rgba.paste((200, 10, 10, 255), (20, 0, 40, 20))
    rgba.putpixel((0, 0), (0, 0, 0, 128))
    (page,) = iter_pages(save(rgba, tmp_path / "a.png"))
    arr = np.asarray(page.image)
    assert page.image.mode == "RGB" and page.size == (40, 20) and page.dpi is None
    assert (arr[:, 1:20] == 255).all()
    assert (arr[:, 20:] == (200, 10, 10)).all()
    assert tuple(arr[0, 0]) == pytest.approx((127, 127, 127), abs=1)  # 50 % black over white
    assert any("white" in note for note in page.notes)


@pytest.mark.parametrize("mode", ["LA", "P", "1", "L"])
def test_other_modes_become_rgb(tmp_path: Path, mode: str) -> None:
    # Left half: transparent black (LA, P) or opaque white (1, L); right half: opaque black.
    kw = {}
    if mode == "P":
        image = Image.new("P", (16, 8), 0)
        image.putpalette([0, 0, 0, 0, 0, 0])  # both entries black; entry 1 is transparent
        image.paste(1, (0, 0, 8, 8))
        kw["transparency"] = 1
    elif mode == "LA":
        image = Image.new("LA", (16, 8), (0, 0))
        image.paste((0, 255), (8, 0, 16, 8))
    else:
        image = Image.new(mode, (16, 8), 255 if mode == "L" else 1)
        image.paste(0, (8, 0, 16, 8))
    (page,) = iter_pages(save(image, tmp_path / f"m_{mode}.png", **kw))
    arr = np.asarray(page.image)
    assert page.image.mode == "RGB" and page.size == (16, 8)
    assert (arr[:, 8:] == 0).all()  # opaque black stays black
    assert (arr[:, :8] == 255).all()  # transparent black or opaque white -> white


def test_16_bit_grey_is_scaled_not_clipped(tmp_path: Path) -> None:
    values = np.array([[0, 257 * 64, 257 * 128, 65535]], dtype=np.uint16)
    path = save(Image.fromarray(values), tmp_path / "g16.png")
    assert Image.open(path).mode.startswith("I")
    (page,) = iter_pages(path)
    assert np.asarray(page.image)[0, :, 0].tolist() == [0, 64, 128, 255]


@pytest.mark.parametrize(("fmt", "suffix"), [("BMP", ".bmp"), ("WEBP", ".webp"), ("JPEG", ".jpg")])
def test_other_raster_formats(tmp_path: Path, fmt: str, suffix: str) -> None:
    if fmt == "WEBP" and not features.check("webp"):
        pytest.skip("Pillow built without WebP")
    image = Image.new("RGB", (30, 20), (255, 255, 255))
    image.paste((0, 0, 0), (0, 0, 15, 20))
    kw = {"lossless": True} if fmt == "WEBP" else {"quality": 95} if fmt == "JPEG" else {}
    (page,) = iter_pages(save(image, tmp_path / f"x{suffix}", format=fmt, **kw))
    assert page.size == (30, 20) and page.image.mode == "RGB"
    assert dark_fraction(page.image) == pytest.approx(0.5, abs=0.05)


def test_multipage_tiff_yields_every_frame(tmp_path: Path) -> None:
    # RGB frames: no mode conversion, so the loader must copy each frame before the next seek
    frames = [Image.new("RGB", (20 + i, 10), (40 * i,) * 3) for i in range(4)]
    path = save(frames[0], tmp_path / "multi.tif", save_all=True, append_images=frames[1:])
    assert count_pages(path) == 4
    got = list(iter_pages(path))
    assert [p.index for p in got] == [0, 1, 2, 3]
    assert [p.size for p in got] == [(20 + i, 10) for i in range(4)]
    assert [int(np.asarray(p.image)[0, 0, 0]) for p in got] == [0, 40, 80, 120]
    assert [p.index for p in iter_pages(path, pages="2,4")] == [1, 3]


def test_exif_orientation_is_applied(tmp_path: Path) -> None:
    image = Image.new("RGB", (40, 20), "white")
    image.paste((0, 0, 0), (0, 0, 10, 10))  # top-left as stored
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90 CW to display" (EXIF 2.3 table 8 / TIFF Orientation)
    path = save(image, tmp_path / "cam.jpg", exif=exif, quality=95)
    (page,) = iter_pages(path)
    assert page.size == (20, 40)
    assert dark_fraction(page.image, (10, 0, 20, 10)) > 0.9  # stored top-left is now top-right


def test_large_image_is_downscaled_within_budget(tmp_path: Path) -> None:
    image = Image.linear_gradient("L").resize((1500, 1000))
    (page,) = iter_pages(save(image, tmp_path / "big.png"), max_pixels=1_000_000)
    w, h = page.size
    assert w * h <= 1_000_000 and w / h == pytest.approx(1.5, rel=0.01)
    assert any("downscaled" in note for note in page.notes)


def test_large_jpeg_uses_draft(tmp_path: Path) -> None:
    image = Image.linear_gradient("L").resize((3000, 2000)).convert("RGB")
    (page,) = iter_pages(save(image, tmp_path / "big.jpg", quality=80), max_pixels=1_000_000)
    w, h = page.size
    assert w * h <= 1_000_000 and w / h == pytest.approx(1.5, rel=0.01)
    assert any("downscaled" in note for note in page.notes)


def png_header_bomb(width: int, height: int) -> bytes:
    """A valid 1-bit greyscale PNG of ``width`` x ``height`` white pixels (PNG spec, ISO 15948)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = b"\x00" + b"\xff" * ((width + 7) // 8)
    packer = zlib.compressobj(9)
    idat = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def test_decompression_bomb_png_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "bomb.png", png_header_bomb(20000, 20000))
    assert path.stat().st_size < 2_000_000  # 400 megapixels in a small file
    with pytest.raises(InputError) as err:
        list(iter_pages(path))
    assert str(path) in str(err.value) and "decompression bomb" in str(err.value)
    # Below Pillow's own limit, the loader's budget still refuses before decoding.
    moderate = write(tmp_path / "moderate.png", png_header_bomb(3000, 2000))
    with pytest.raises(InputError, match="decompression bomb"):
        list(iter_pages(moderate, max_pixels=1_000_000))


def test_jpeg_beyond_pillow_bomb_limit_is_drafted_not_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    image = Image.linear_gradient("L").resize((1000, 1000))
    jpeg = save(image, tmp_path / "wide.jpg", quality=80)
    png = save(image, tmp_path / "wide.png")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100_000)  # Pillow refuses > 200_000 pixels at open
    with pytest.raises(Image.DecompressionBombError):
        Image.open(jpeg)
    (page,) = iter_pages(jpeg, max_pixels=200_000)
    assert page.size[0] * page.size[1] <= 200_000 and page.size[0] == page.size[1]
    assert any("downscaled" in note for note in page.notes)
    with pytest.raises(InputError, match="decompression bomb"):
        list(iter_pages(png, max_pixels=200_000))


def test_type_is_detected_from_content_not_suffix(tmp_path: Path) -> None:
    pdf_named_png = write(tmp_path / "scan.png", make_pdf([{"size": (72, 144)}]))
    (page,) = iter_pages(pdf_named_png, dpi=72)
    assert page.dpi == pytest.approx(72) and page.size == (72, 144)
    buf = io.BytesIO()
    info = PngImagePlugin.PngInfo()
    info.add_text("Comment", "%PDF-1.4 is not a PDF header here")
    Image.new("RGB", (5, 7), "white").save(buf, "PNG", pnginfo=info)
    png_named_pdf = write(tmp_path / "odd.pdf", buf.getvalue())
    (page,) = iter_pages(png_named_pdf)
    assert page.dpi is None and page.size == (5, 7)


def test_only_tiff_frames_are_pages(tmp_path: Path) -> None:
    if not features.check("webp"):
        pytest.skip("Pillow built without WebP")
    frames = [Image.new("RGB", (10, 10), c) for c in ("black", "white")]
    path = save(frames[0], tmp_path / "anim.webp", save_all=True, append_images=frames[1:], lossless=True)
    assert Image.open(path).n_frames == 2
    assert count_pages(path) == 1
    (page,) = iter_pages(path)
    assert np.asarray(page.image).max() == 0  # the first frame
    assert any("only the first" in note for note in page.notes)


# --------------------------------------------------------------------------- corpus


@pytest.mark.corpus
def test_corpus_hashes_and_page_counts_match_manifest(corpus: Path) -> None:
    for entry in manifest(corpus).values():
        path = corpus_file(corpus, entry)
        assert file_sha256(path) == entry["sha256"], path
        assert count_pages(path) == entry["pages"], path


@pytest.mark.corpus
def test_corpus_cmyk_jpeg(corpus: Path) -> None:
    m = manifest(corpus)
    entry = m["odd_cmyk_jpeg_map"]
    assert entry["frames"][0]["mode"] == "CMYK"
    (page,) = iter_pages(corpus_file(corpus, entry))
    assert page.image.mode == "RGB"
    assert list(page.size) == entry["frames"][0]["size_px"]
    # The manifest says odd_png_alpha_opaque_map is the same map (an RGBA conversion); an
    # Adobe-inverted CMYK decode would differ by ~230 grey levels on average.
    reference = Image.open(corpus_file(corpus, m["odd_png_alpha_opaque_map"])).convert("RGB")
    diff = np.abs(np.asarray(page.image, dtype=int) - np.asarray(reference, dtype=int)).mean()
    assert diff < 5


@pytest.mark.corpus
def test_corpus_png_alpha_opaque(corpus: Path) -> None:
    entry = manifest(corpus)["odd_png_alpha_opaque_map"]
    path = corpus_file(corpus, entry)
    assert entry["alpha"]["min"] == 255
    (page,) = iter_pages(path)
    assert page.image.mode == "RGB" and list(page.size) == entry["frames"][0]["size_px"]
    assert np.array_equal(np.asarray(page.image), np.asarray(Image.open(path))[..., :3])


@pytest.mark.corpus
def test_corpus_png_alpha_page_render(corpus: Path) -> None:
    entry = manifest(corpus)["odd_png_alpha_page_render"]
    path = corpus_file(corpus, entry)
    source = np.asarray(Image.open(path).convert("RGBA"))
    alpha = source[..., 3]
    assert (alpha < 255).mean() == pytest.approx(entry["alpha"]["fraction_not_opaque"], abs=0.001)
    (page,) = iter_pages(path)
    out = np.asarray(page.image)
    assert page.image.mode == "RGB" and list(page.size) == entry["frames"][0]["size_px"]
    assert (out[alpha == 0] == 255).all()
    assert np.array_equal(out[alpha == 255], source[alpha == 255][:, :3])


@pytest.mark.corpus
def test_corpus_multipage_fax_tiff(corpus: Path) -> None:
    entry = manifest(corpus)["odd_multipage_tiff_fax_g3"]
    path = corpus_file(corpus, entry)
    got = list(iter_pages(path))
    assert len(got) == entry["pages"] == len(entry["frames"])
    for page, frame in zip(got, entry["frames"], strict=True):
        (w, h), (xdpi, ydpi) = frame["size_px"], frame["dpi"]
        assert page.image.mode == "RGB"
        # non-square fax pixels resampled so both axes have the higher (horizontal) DPI
        assert page.size == (w, round(h * max(xdpi, ydpi) / ydpi))
    assert got[0].image.tobytes() != got[1].image.tobytes()  # really different frames
    assert [p.index for p in iter_pages(path, pages="2")] == [1]
    # within a pixel budget the square-pixel aspect ratio is kept
    for page, frame in zip(iter_pages(path, max_pixels=2_000_000), entry["frames"], strict=True):
        (w, h), (xdpi, ydpi) = frame["size_px"], frame["dpi"]
        assert 1_900_000 < page.size[0] * page.size[1] <= 2_000_000
        assert page.size[0] / page.size[1] == pytest.approx(w * ydpi / (h * xdpi), rel=0.01)


@pytest.mark.corpus
def test_corpus_rotate90_scan(corpus: Path) -> None:
    entry = manifest(corpus)["odd_rotate90_skewed_scan"]
    path = corpus_file(corpus, entry)
    assert entry["rotate"] == [90]
    doc = pdfium.PdfDocument(str(path))
    try:
        x0, y0, x1, y1 = doc[0].get_mediabox()  # unrotated page box
    finally:
        doc.close()
    (page,) = iter_pages(path, dpi=100)
    # /Rotate 90 swaps width and height of the displayed page; manifest sizes are as displayed
    assert page.size == (px(y1 - y0, 100), px(x1 - x0, 100))
    assert close_to(page.size, tuple(px(v, 100) for v in entry["sizes_pt"][0]))


@pytest.mark.corpus
def test_corpus_rotated_text_boxes(corpus: Path) -> None:
    entry = manifest(corpus)["odd_rotated_text_boxes"]
    (page,) = iter_pages(corpus_file(corpus, entry), dpi=100)
    assert close_to(page.size, tuple(px(v, 100) for v in entry["sizes_pt"][0]))
    assert 0.001 < dark_fraction(page.image) < 0.5  # text drawn on a white page


@pytest.mark.corpus
def test_corpus_mixed_page_sizes(corpus: Path) -> None:
    entry = manifest(corpus)["odd_mixed_sizes_multipage"]
    path = corpus_file(corpus, entry)
    got = list(iter_pages(path, dpi=72))
    assert len(got) == entry["pages"]
    for page, (w, h) in zip(got, entry["sizes_pt"], strict=True):
        assert close_to(page.size, (px(w, 72), px(h, 72)))
        assert (page.size[0] > page.size[1]) == (w > h)
    # With a budget smaller than the 2160 x 2160 pt poster at 200 DPI (36 Mpx), only it shrinks.
    budget = 10_000_000
    for page, (w, h) in zip(iter_pages(path, dpi=200, max_pixels=budget), entry["sizes_pt"], strict=True):
        full = px(w, 200) * px(h, 200)
        assert page.size[0] * page.size[1] <= budget
        assert any("downscaled" in n for n in page.notes) == (full > budget)


@pytest.mark.corpus
def test_corpus_owner_only_encrypted_form(corpus: Path) -> None:
    entry = manifest(corpus)["odd_encrypted_owner_only_dd0293"]
    path = corpus_file(corpus, entry)
    assert entry["encrypted"] and "user pw empty" in entry["encryption"]
    got = list(iter_pages(path, dpi=50))
    assert len(got) == entry["pages"]
    for page, size in zip(got, entry["sizes_pt"], strict=True):
        assert close_to(page.size, tuple(px(v, 50) for v in size))
    assert all(dark_fraction(page.image) > 0.01 for page in got)
    # Form fields: page 1 differs from a render without the form environment.
    doc = pdfium.PdfDocument(str(path))
    try:
        bare = np.asarray(doc[0].render(scale=50 / 72).to_pil().convert("RGB"))
    finally:
        doc.close()
    assert (np.asarray(got[0].image) != bare).any()


@pytest.mark.corpus
def test_corpus_xfa_form_note_without_pypdfium2_rebuild_advice(
    corpus: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = corpus_file(corpus, manifest(corpus)["odd_encrypted_owner_only_dd0293"])
    doc = pdfium.PdfDocument(str(path))
    try:
        formtype = doc.get_formtype()
    finally:
        doc.close()
    if formtype not in (pdfium.raw.FORMTYPE_XFA_FULL, pdfium.raw.FORMTYPE_XFA_FOREGROUND):
        pytest.skip(f"{path.name} has no XFA form here (form type {formtype})")
    with caplog.at_level(logging.DEBUG):
        (page,) = iter_pages(path, pages="1", dpi=20)
    assert not [r for r in caplog.records if "XFA support" in r.getMessage()]
    assert any("XFA" in note for note in page.notes)


@pytest.mark.corpus
def test_corpus_rc4_encrypted_scan(corpus: Path) -> None:
    entry = manifest(corpus)["odd_encrypted_rc4_wipo_scan"]
    assert entry["encrypted"] and "rc4" in entry["encryption"]
    got = list(iter_pages(corpus_file(corpus, entry), dpi=50))
    assert len(got) == entry["pages"]
    for page, images, chars in zip(got, entry["images_per_page"], entry["chars_per_page"], strict=True):
        has_content = dark_fraction(page.image) > 0.001
        assert has_content == bool(images or chars), page.index


@pytest.mark.corpus
def test_concurrent_rendering_matches_sequential(corpus: Path) -> None:
    pdfs = [corpus_file(corpus, e) for e in manifest(corpus).values() if e["file"].endswith(".pdf")]
    assert len(pdfs) >= 10

    def render(path: Path) -> list[bytes]:
        return [hashlib.sha256(p.image.tobytes()).digest() for p in iter_pages(path, dpi=36)]

    sequential = [render(p) for p in pdfs]
    workers = 8
    start = threading.Barrier(workers)  # the first jobs enter PDFium at the same moment

    def job(numbered: tuple[int, Path]) -> list[bytes]:
        number, path = numbered
        if number < workers:
            start.wait(timeout=10)
        return render(path)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        concurrent = list(pool.map(job, enumerate(pdfs * 2)))
    assert concurrent == sequential * 2


def test_pdfium_calls_never_overlap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Deterministic companion of the pixel comparison above (races crash only sometimes):
    PDFium entry points are wrapped to widen the race window and count overlapping calls."""
    pdfs = [write(tmp_path / f"d{i}.pdf", make_pdf([{"size": (72, 72)}] * 3)) for i in range(8)]
    active, peak, guard = [0], [0], threading.Lock()

    def overlapping(func):
        def wrapper(*args, **kwargs):
            with guard:
                active[0] += 1
                peak[0] = max(peak[0], active[0])
            try:
                time.sleep(0.005)
                return func(*args, **kwargs)
            finally:
                with guard:
                    active[0] -= 1

        return wrapper

    monkeypatch.setattr(pdfium.PdfDocument, "__init__", overlapping(pdfium.PdfDocument.__init__))
    monkeypatch.setattr(pdfium.PdfPage, "render", overlapping(pdfium.PdfPage.render))
    with ThreadPoolExecutor(max_workers=8) as pool:
        pages = list(pool.map(lambda p: len(list(iter_pages(p, dpi=10))), pdfs))
    assert pages == [3] * 8
    assert peak[0] == 1


def test_page_image_contract(tmp_path: Path) -> None:
    pdf = write(tmp_path / "one.pdf", make_pdf([{"size": (72, 72)}]))
    (page,) = iter_pages(pdf, dpi=72)
    assert isinstance(page, PageImage)
    assert page.notes == ()


@pytest.mark.corpus
def test_pages_render_the_pixels_of_a_packed_rgb_render(corpus: Path) -> None:
    """The pages come from an RGBx bitmap (one copy out of PDFium's buffer, issue 21): the same
    pixels as PDFium's packed RGB render of the page, as an RGB image."""
    for name in ("en_twocol_ltnews24.pdf", "tables_googledocs_grid.pdf", "scan_linn_brochure_twocol.pdf"):
        (page,) = iter_pages(corpus / name, pages="1", dpi=100)
        doc = pdfium.PdfDocument(str(corpus / name))
        try:
            bitmap = doc[0].render(scale=100 / 72, may_draw_forms=True, fill_color=(255, 255, 255, 255))
            packed = bitmap.to_pil().convert("RGB")  # BGR bitmap, PIL swaps to RGB
        finally:
            doc.close()
        assert page.image.mode == "RGB" and page.image.size == packed.size
        assert np.array_equal(np.asarray(page.image), np.asarray(packed)), name
