"""The text-layer benchmark's bookkeeping (issue 11): totals, the auto/off pages-per-second
ratio, the targets verdict and the per-page split of the Markdown. The measured run itself is
``ocrstack.bench.textlayer.run`` over the corpus (minutes of OCR), not a unit test."""

from __future__ import annotations

from pathlib import Path

from ocrstack.bench.textlayer import FileRow, TextLayerBench, _pages_of, dev_files


def _bench(recall: float, order: float, auto_s: float, off_s: float) -> TextLayerBench:
    return TextLayerBench(
        files=[
            FileRow(
                "a",
                2,
                {"auto": recall, "off": 0.9},
                {"auto": order, "off": 0.8},
                {"auto": auto_s, "off": off_s},
            ),
            FileRow(
                "b", 1, {"auto": 1.0, "off": 0.9}, {"auto": 1.0, "off": 0.8}, {"auto": auto_s, "off": off_s}
            ),
        ]
    )


def test_ratio_and_targets():
    b = _bench(1.0, 1.0, 0.5, 10.0)
    assert b.pages() == 3
    assert b.pages_per_second("auto") == 3 / 1.0 and b.pages_per_second("off") == 3 / 20.0
    assert b.speedup == 20.0 and b.ok()
    assert not _bench(1.0, 1.0, 0.6, 10.0).ok()  # 16.7x
    assert not _bench(0.98, 1.0, 0.1, 10.0).ok()  # page-weighted recall (2*0.98+1)/3 < 0.99
    assert _bench(0.986, 1.0, 0.1, 10.0).ok()  # (2*0.986+1)/3 = 0.9907
    assert "NOT met" in _bench(0.5, 1.0, 0.1, 10.0).table()
    assert b.to_json()["ok"] is True


def test_markdown_is_split_at_the_page_markers():
    md = "<!-- page 1 -->\n\none\n\n<!-- page 2 -->\n\ntwo words\n"
    assert {k: v.strip() for k, v in _pages_of(md).items()} == {0: "one", 1: "two words"}


def test_dev_files_are_the_born_digital_dev_pdfs(corpus: Path):
    files = dev_files(corpus)
    names = {f.stem for f in files}
    assert "en_single_bzip2_manual" in names and "tables_googledocs_grid" in names
    assert not any(n.startswith(("scan_", "odd_encrypted")) for n in names)
    assert all(f.with_suffix(".txt").is_file() for f in files)
