"""The vendored browser assets (``ocrstack/api/static/vendor``) match VENDORED.md, carry their
licences, and the page and ``/docs`` name no asset outside the service (issue 24: no CDN)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import ocrstack.api
from ocrstack.api.docs import SWAGGER

STATIC = Path(ocrstack.api.__file__).parent / "static"
VENDOR = STATIC / "vendor"
ROW = re.compile(r"^\| ([0-9a-f]{64}) \| (\S+) \|$", re.MULTILINE)
PACKAGE = re.compile(r"^\| ([\w-]+) \| ([@\w/.-]+) \| (\d+\.\d+\.\d+) \| ([^|]+) \|", re.MULTILINE)


def test_every_vendored_file_is_listed_with_its_hash():
    listed = dict((path, digest) for digest, path in ROW.findall((VENDOR / "VENDORED.md").read_text()))
    on_disk = {p.relative_to(VENDOR).as_posix(): p for p in VENDOR.rglob("*") if p.is_file()}
    on_disk.pop("VENDORED.md")
    assert set(listed) == set(on_disk)
    changed = [k for k, p in on_disk.items() if hashlib.sha256(p.read_bytes()).hexdigest() != listed[k]]
    assert not changed, f"vendored files differ from VENDORED.md: {changed}"


def test_each_package_has_a_version_and_its_licence():
    packages = {row[0]: row for row in PACKAGE.findall((VENDOR / "VENDORED.md").read_text())}
    folders = {p.name for p in VENDOR.iterdir() if p.is_dir()}
    assert set(packages) == folders == {"markdown-it", "katex", "dompurify", "swagger-ui"}
    for folder in folders:
        assert (VENDOR / folder / "LICENSE").stat().st_size > 500, folder


def test_page_and_docs_load_nothing_from_elsewhere():
    page = (STATIC / "index.html").read_text()
    assets = re.findall(r'(?:src|href)="([^"#]+)"', page)
    assert assets and all(a.startswith("/") and not a.startswith("//") for a in assets), assets
    for asset in assets:
        if asset.startswith("/static/"):
            assert (STATIC / asset.removeprefix("/static/")).is_file(), asset
    assert (STATIC / SWAGGER.removeprefix("/static/") / "swagger-ui-bundle.js").is_file()
