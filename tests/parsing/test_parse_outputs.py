"""Parse outputs (ocrstack.parsing.outputs): atomic writes, resume cache keyed by settings, overwrite guard.

Named test_parse_outputs.py, not test_outputs.py: tests/verifying/test_outputs.py has the same
basename in a directory without __init__.py (pytest rootdir import mode would clash)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
from PIL import Image

from ocrstack.core.errors import UsageError
from ocrstack.parsing import outputs, page_cache
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.page_result import PageResult
from ocrstack.parsing.recognition.openai.recognizer import OpenAIRecognizer
from ocrstack.parsing.recognition.rapidocr.recognizer import RapidOcrRecognizer
from ocrstack.parsing.types import Block, Category


def _result(index=0, images=None):
    b = Block(
        bbox=(1.0, 2.0, 30.5, 40.0), category=Category.TITLE, score=0.9, order=0, label="title", text="Hi <x>"
    )
    b.warnings.append("w")
    return PageResult(
        index=index, size=(100, 200), dpi=200, blocks=[b], images=images or {}, timings={"layout": 0.1}
    )


def test_atomic_write_replaces_whole_file_and_leaves_no_temp(tmp_path: Path):
    target = tmp_path / "sub" / "a.md"
    outputs.atomic_write_text(target, "one")
    outputs.atomic_write_text(target, "two")
    assert target.read_text() == "two"
    assert [p.name for p in target.parent.iterdir()] == ["a.md"]
    assert oct(target.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


def test_atomic_write_failure_keeps_old_content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    target = tmp_path / "a.md"
    outputs.atomic_write_text(target, "old")

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        outputs.atomic_write_text(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["a.md"]


#: The cache-key contribution each recognizer declares (Parser.cache_fields() in a run).
ENGINE_FIELDS = {"rapidocr": RapidOcrRecognizer.cache_fields, "openai": OpenAIRecognizer.cache_fields}


def _key(o: ParseOptions) -> str:
    return page_cache.settings_hash(page_cache.settings(o, ENGINE_FIELDS[o.recognizer]))


def test_page_result_json_round_trip():
    r = _result(images={0: "x_files/p0001-b00.png"})
    back = PageResult.from_json(json.loads(json.dumps(r.to_json())))
    assert back.blocks[0].text == "Hi <x>" and back.blocks[0].category is Category.TITLE
    assert back.blocks[0].bbox == (1.0, 2.0, 30.5, 40.0) and back.images == {0: "x_files/p0001-b00.png"}
    assert back.size == (100, 200) and back.blocks[0].warnings == ["w"]


def test_cache_hits_same_settings_and_misses_changed_settings(tmp_path: Path):
    opts = ParseOptions(inputs=(tmp_path / "a.pdf",))
    key = _key(opts)
    cache = page_cache.PageCache(tmp_path, "ab" * 32, key)
    cache.store(_result(index=3))
    assert cache.load(3, tmp_path).blocks[0].text == "Hi <x>"
    assert cache.load(2, tmp_path) is None
    for change in ({"dpi": 300}, {"layout": "none"}, {"recognizer": "openai"}, {"max_pixels": 10}):
        other = _key(dataclasses.replace(opts, **change))
        assert other != key, change
        assert page_cache.PageCache(tmp_path, "ab" * 32, other).load(3, tmp_path) is None
    # another input (different sha256) never sees this page
    assert page_cache.PageCache(tmp_path, "cd" * 32, key).load(3, tmp_path) is None


def test_settings_ignore_options_that_do_not_change_pages(tmp_path: Path):
    opts = ParseOptions(inputs=(tmp_path / "a.pdf",))
    same = dataclasses.replace(opts, force=True, concurrency=9, keep_paratext=True, output=tmp_path / "x")
    assert _key(opts) == _key(same)


def test_prompt_file_content_is_part_of_the_key(tmp_path: Path):
    f = tmp_path / "p.yaml"
    f.write_text("a: 1\n")
    opts = ParseOptions(inputs=(), recognizer="openai", prompts=str(f))
    k1 = _key(opts)
    f.write_text("a: 2\n")
    assert _key(opts) != k1


def test_cache_entry_with_missing_figure_file_is_a_miss(tmp_path: Path):
    cache = page_cache.PageCache(tmp_path, "ab" * 32, "k")
    cache.store(_result(images={0: "x_files/p0001-b00.png"}))
    assert cache.load(0, tmp_path) is None
    (tmp_path / "x_files").mkdir()
    (tmp_path / "x_files" / "p0001-b00.png").write_bytes(b"png")
    assert cache.load(0, tmp_path) is not None


def test_corrupt_cache_file_is_a_miss(tmp_path: Path):
    cache = page_cache.PageCache(tmp_path, "ab" * 32, "k")
    cache.path(0).parent.mkdir(parents=True)
    cache.path(0).write_text("{not json")
    assert cache.load(0, tmp_path) is None


def test_failed_pages_are_not_cached(tmp_path: Path):
    cache = page_cache.PageCache(tmp_path, "ab" * 32, "k")
    cache.store(PageResult(index=0, size=(0, 0), error="boom"))
    assert not cache.path(0).exists()


def test_overwrite_guard(tmp_path: Path):
    paths = outputs.OutputPaths(tmp_path, "doc")
    outputs.check_overwrite(paths, force=False)  # nothing there yet
    paths.markdown.write_text("x")
    paths.blocks_json.write_text(json.dumps({"complete": True}))
    with pytest.raises(UsageError, match="already exists.*--force"):
        outputs.check_overwrite(paths, force=False)
    outputs.check_overwrite(paths, force=True)
    paths.blocks_json.write_text(json.dumps({"complete": False}))  # interrupted/partial: resumable
    outputs.check_overwrite(paths, force=False)


def test_output_names_disambiguate_equal_stems(tmp_path: Path):
    a, b, c = tmp_path / "x" / "doc.pdf", tmp_path / "y" / "doc.pdf", tmp_path / "other.png"
    names = outputs.output_names([a, b, c])
    assert names[c] == "other" and names[a] != names[b] and names[a].startswith("doc-")


def test_overlay_draws_boxes_without_touching_the_page():
    page = Image.new("RGB", (200, 100), "white")
    b = Block(bbox=(10, 10, 100, 50), category=Category.TABLE, order=0)
    over = outputs.draw_overlay(page, [b])
    assert page.getpixel((10, 30)) == (255, 255, 255)
    assert over.getpixel((10, 30)) == outputs.COLOURS[Category.TABLE]


def test_code_that_shapes_pages_is_part_of_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The fingerprint follows module sources by import name: an edit changes it, the same
    package at another path does not."""
    for where in ("a", "b"):
        pkg = tmp_path / where / "fakepkg"
        (pkg / "sub").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "sub" / "__init__.py").write_text("")
        (pkg / "sub" / "mod.py").write_text("A = 1\n")
    monkeypatch.setattr(page_cache, "PAGE_CODE", ("fakepkg",))

    def fingerprint(where: str) -> str:
        import sys

        for name in [m for m in sys.modules if m == "fakepkg" or m.startswith("fakepkg.")]:
            monkeypatch.delitem(sys.modules, name)
        monkeypatch.syspath_prepend(str(tmp_path / where))
        page_cache.code_fingerprint.cache_clear()
        return page_cache.code_fingerprint()

    try:
        first = fingerprint("a")
        assert fingerprint("b") == first  # another location, same code
        (tmp_path / "b" / "fakepkg" / "sub" / "mod.py").write_text("A = 2\n")
        assert fingerprint("b") != first
    finally:
        page_cache.code_fingerprint.cache_clear()


def test_page_code_covers_the_parsing_modules_and_data():
    names = [n for n, _ in page_cache._module_sources("ocrstack.parsing")]
    assert "ocrstack.parsing.stages" in names and "ocrstack.parsing.recognition.openai.recognizer" in names
    data = [n for n, _ in page_cache._data_files("ocrstack", "data/prompts")]
    assert data and all(n.startswith("ocrstack/data/prompts/") for n in data)


def test_keep_paratext_is_part_of_the_key_for_remote_recognizers_only(tmp_path: Path):
    """An openai run without --keep-paratext never reads header/footer crops, so a later run
    with it must not reuse those pages."""
    local = ParseOptions(inputs=(tmp_path / "a.pdf",))
    remote = dataclasses.replace(local, recognizer="openai")
    h = _key
    assert h(local) == h(dataclasses.replace(local, keep_paratext=True))
    assert h(remote) != h(dataclasses.replace(remote, keep_paratext=True))


def test_figure_pngs_keep_the_pixels_at_zlib_level_3(tmp_path):
    """Images are written at zlib level 3 (half the time of Pillow's default 6 on the corpus
    figures): lossless, the same pixels back."""
    import numpy as np
    from PIL import Image

    from ocrstack.parsing.outputs import PNG_LEVEL, atomic_save_image

    rng = np.random.default_rng(0)
    img = Image.fromarray(rng.integers(0, 255, (60, 80, 3), dtype=np.uint8))
    atomic_save_image(tmp_path / "f.png", img)
    data = (tmp_path / "f.png").read_bytes()
    assert np.array_equal(np.asarray(Image.open(tmp_path / "f.png").convert("RGB")), np.asarray(img))
    idat = data.index(b"IDAT") + 4  # the zlib stream's header names its level class (RFC 1950 FLEVEL)
    assert PNG_LEVEL == 3 and data[idat] == 0x78 and data[idat + 1] >> 6 == 1  # 1: levels 2-5; 6 gives 2
