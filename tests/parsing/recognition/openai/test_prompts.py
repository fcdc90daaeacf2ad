"""Prompt sets: the shipped data files and validation of user files."""

from __future__ import annotations

from pathlib import Path

import pytest

from ocrstack.core.errors import InputError, UsageError
from ocrstack.parsing.recognition.openai import prompts
from ocrstack.parsing.types import Category

GUIDE = "seeds/000_a6ffb5c9f36940fa.txt"


def test_builtin_sets_are_listed() -> None:
    assert {"minicpm-ocr", "mineru-diffusion"} <= set(prompts.builtin_names())


@pytest.mark.parametrize("name", ["minicpm-ocr", "mineru-diffusion"])
def test_builtin_set_loads_and_maps_every_category(name: str) -> None:
    ps = prompts.load(name)
    assert ps.name == name
    assert set(ps.categories) == {c.value for c in Category}
    assert ps.for_category(Category.TABLE).output == "otsl"
    assert ps.for_category(Category.FIGURE) is None  # figures are saved as images, not sent
    for p in ps.prompts.values():
        assert p.source if p.verified else p.note, p.name


def test_minicpm_table_prompt_is_the_guide_one(shared: Path) -> None:
    guide = (shared / GUIDE).read_text(encoding="utf-8")
    table = prompts.load("minicpm-ocr").for_category("table")
    assert table.text == "请识别图中的表格并输出 OTSL"
    assert f'--prompt "{table.text}"' in guide  # guide 7 uses it verbatim
    assert table.verified


def test_minicpm_prompts_without_a_published_source_are_unverified() -> None:
    ps = prompts.load("minicpm-ocr")
    assert sorted(ps.unverified()) == ["formula", "text"]


def test_mineru_prompts_are_the_task_prompts() -> None:
    ps = prompts.load("mineru-diffusion")
    assert {k: v.text.strip() for k, v in ps.prompts.items()} == {
        "text": "Text Recognition:",
        "table": "Table Recognition:",
        "formula": "Formula Recognition:",
        "layout": "Layout Detection:",
    }
    assert ps.for_category(Category.TEXT).text == "\nText Recognition:"  # text follows the image
    assert ps.system


def test_user_file_loads(tmp_path: Path) -> None:
    f = tmp_path / "mine.yaml"
    f.write_text(
        "name: mine\nprompts:\n  text: {text: 'read it', note: 'my own'}\n"
        "  table: {text: 'table please', output: otsl, verified: true, source: 'model card'}\n",
        encoding="utf-8",
    )
    ps = prompts.load(str(f))
    assert ps.name == "mine" and ps.path == f.resolve()
    assert ps.for_category("title").text == "read it"  # default mapping: text categories -> text
    assert ps.for_category("table").text == "table please"
    assert ps.for_category("figure") is None


def test_user_file_partial_categories_keep_defaults(tmp_path: Path) -> None:
    f = tmp_path / "partial.yaml"
    f.write_text("prompts:\n  text: {text: t, note: n}\ncategories: {header: null}\n", encoding="utf-8")
    ps = prompts.load(f)
    assert ps.for_category("header") is None
    assert ps.for_category("table").text == "t"  # no table prompt: falls back to text


BAD = {
    "not yaml": ("prompts: [unclosed", "YAML"),
    "a list": ("- a\n- b\n", "mapping"),
    "no prompts": ("name: x\n", "'prompts'"),
    "empty text": ("prompts:\n  text: {text: '', note: n}\n", "prompts.text.text"),
    "unknown key": ("prompts:\n  text: {text: t, note: n, temp: 1}\n", "unknown key"),
    "bad output": ("prompts:\n  text: {text: t, note: n, output: pdf}\n", "output"),
    "verified without source": ("prompts:\n  text: {text: t, verified: true}\n", "source"),
    "unverified without note": ("prompts:\n  text: {text: t}\n", "note"),
    "unknown category": ("prompts:\n  text: {text: t, note: n}\ncategories: {banana: text}\n", "banana"),
    "category to missing prompt": ("prompts:\n  text: {text: t, note: n}\ncategories: {table: tbl}\n", "tbl"),
    "nothing mapped": ("prompts:\n  layout: {text: t, note: n}\n", "nothing"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_invalid_user_file_is_a_clear_input_error(tmp_path: Path, case: str) -> None:
    content, needle = BAD[case]
    f = tmp_path / "bad.yaml"
    f.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as err:
        prompts.load(f)
    msg = str(err.value)
    assert str(f) in msg and needle in msg and "fix:" in msg
    assert "\n" not in msg
    assert err.value.exit_code == 3


def test_unknown_name_lists_builtins() -> None:
    with pytest.raises(UsageError) as err:
        prompts.load("no-such-set")
    assert "minicpm-ocr" in str(err.value) and "mineru-diffusion" in str(err.value)
