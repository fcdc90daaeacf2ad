"""Helpers for the API tests: tiny generated documents and waiting for a job."""

from __future__ import annotations

from pathlib import Path

import httpx
from PIL import Image, ImageDraw, ImageFont

from support.wait import wait_until


def make_page(title: str, body: str, size: tuple[int, int] = (1240, 880)) -> Image.Image:
    """A white page with a large heading line and two body lines (readable by rapidocr)."""
    im = Image.new("RGB", size, "white")
    d = ImageDraw.Draw(im)
    try:
        big, small = ImageFont.load_default(56), ImageFont.load_default(30)
    except TypeError:  # Pillow without FreeType sizes
        big = small = ImageFont.load_default()
    d.text((90, 90), title, fill="black", font=big)
    d.text((90, 260), body, fill="black", font=small)
    d.text((90, 330), "The quick brown fox jumps over the lazy dog.", fill="black", font=small)
    return im


def make_pdf(path: Path, pages: int = 1) -> Path:
    """A ``pages``-page image PDF made with Pillow."""
    ims = [
        make_page(f"Report part {i + 1}", f"Page {i + 1} of the tiny test document.") for i in range(pages)
    ]
    ims[0].save(path, save_all=True, append_images=ims[1:], resolution=150)
    return path


def wait_job(client: httpx.Client, job_id: str, timeout: float = 120.0, until: tuple[str, ...] = ()) -> dict:
    """Poll ``GET /v1/jobs/{id}`` until a final state (or one of ``until``) and return that body;
    AssertionError (with the last status) after ``timeout`` s."""
    final = {"done", "partial", "failed", "cancelled", *until}

    def settled() -> dict | None:
        body = client.get(f"/v1/jobs/{job_id}").json()
        return body if body["status"] in final else None

    return wait_until(settled, f"job {job_id} to reach one of {sorted(final)}", timeout, 0.05)


#: ``ServiceConfig(allowed_hosts=TESTSERVER)``: the Host name Starlette's TestClient sends, which
#: the service's Host allow-list (issue 25 item 5) would refuse otherwise.
TESTSERVER = ("testserver",)
