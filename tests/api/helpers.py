"""Helpers for the API tests: tiny generated documents and waiting for a job."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
from PIL import Image, ImageDraw, ImageFont


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
    """Poll ``GET /v1/jobs/{id}`` until a final state (or one of ``until``); return the last body."""
    final = {"done", "partial", "failed", "cancelled", *until}
    deadline = time.monotonic() + timeout
    while True:
        body = client.get(f"/v1/jobs/{job_id}").json()
        if body["status"] in final or time.monotonic() > deadline:
            return body
        time.sleep(0.1)
