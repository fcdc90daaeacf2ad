"""The render buffer pool (ocrstack.parsing.documents.buffers): a buffer is handed out again only
once nothing uses it, and a page image on it keeps its pixels while it lives."""

from __future__ import annotations

import weakref
from pathlib import Path

import numpy as np
from PIL import Image
from tests.parsing.test_documents import make_pdf, write

from ocrstack.parsing.documents import buffers, iter_pages


def _taken(pool: buffers.RenderBuffers, size: int) -> int:
    """The id of the buffer ``take`` hands out, not holding it (pytest keeps an assertion's values)."""
    return id(pool.take(size))


def _image_on(buf) -> Image.Image:
    """A 10 x 10 RGB image on ``buf`` (400 bytes), as the renderer maps a page."""
    return Image.new("RGB", (0, 0))._new(Image.core.map_buffer(buf, (10, 10), "raw", 0, ("RGB", 40, 1)))


def test_a_buffer_is_handed_out_again_only_when_nothing_uses_it():
    pool = buffers.RenderBuffers()
    a = pool.take(4000)
    assert len(a) == 4000
    assert _taken(pool, 4000) != id(a)  # ``a`` still referenced here: in use
    first = _taken(pool, 4000)  # the fresh one, kept
    reused, smaller = _taken(pool, 4000), _taken(pool, 3300)
    assert reused == first and smaller == first  # free; 4000 <= 1.25 x 3300
    assert _taken(pool, 3000) != first  # too big for that page: a fresh buffer, kept instead
    view = np.ctypeslib.as_array(pool.take(5000))  # a view counts as a use
    assert _taken(pool, 5000) != id(view.base)
    image = Image.new("RGB", (0, 0))._new(
        Image.core.map_buffer(pool.take(400), (10, 10), "raw", 0, ("RGB", 40, 1))
    )
    mapped = id(pool._kept[0])
    assert _taken(pool, 400) != mapped  # the image uses it
    kept = _taken(pool, 400)
    image2 = Image.new("RGB", (0, 0))._new(
        Image.core.map_buffer(pool.take(400), (10, 10), "raw", 0, ("RGB", 40, 1))
    )
    assert id(pool._kept[0]) == kept
    del image2
    assert _taken(pool, 400) == kept and image.size == (10, 10)  # that image is gone: free again


def test_pages_rendered_one_after_another_keep_their_own_pixels(tmp_path: Path):
    """A page image lives on its render buffer; the next document renders into it only once that
    image is gone, and while it lives the next page gets another buffer."""
    black = write(tmp_path / "black.pdf", make_pdf([{"size": (72, 72), "content": b"0 g 0 0 72 72 re f"}]))
    white = write(tmp_path / "white.pdf", make_pdf([{"size": (72, 72)}]))
    (first,) = iter_pages(black, dpi=72)
    (second,) = iter_pages(white, dpi=72)  # ``first`` still alive: its buffer is in use
    assert np.asarray(first.image).max() == 0 and np.asarray(second.image).min() == 255
    kept = weakref.ref(buffers.BUFFERS._kept[0])
    del second
    (third,) = iter_pages(black, dpi=72)
    assert buffers.BUFFERS._kept[0] is kept()  # the white page's buffer, free again, rendered into
    assert np.asarray(third.image).max() == 0 and np.asarray(first.image).max() == 0
