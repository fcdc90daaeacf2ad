"""The corpus helpers of the side-by-side table (ocrstack.bench.textlayer): which files are
measured and the per-page split of the Markdown. The measured run itself is the bench's
side-by-side section over the corpus (minutes of OCR), not a unit test."""

from __future__ import annotations

from pathlib import Path

from ocrstack.bench.textlayer import dev_files, pages_of


def test_markdown_is_split_at_the_page_markers():
    md = "<!-- page 1 -->\n\none\n\n<!-- page 2 -->\n\ntwo words\n"
    assert {k: v.strip() for k, v in pages_of(md).items()} == {0: "one", 1: "two words"}


def test_dev_files_are_the_born_digital_dev_pdfs(corpus: Path):
    files = dev_files(corpus)
    names = {f.stem for f in files}
    assert "en_single_bzip2_manual" in names and "tables_googledocs_grid" in names
    assert not any(n.startswith(("scan_", "odd_encrypted")) for n in names)
    assert all(f.with_suffix(".txt").is_file() for f in files)
