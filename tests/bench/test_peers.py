"""The born-digital peers table of ``ocrstack bench`` (issue 21): ratio and target rows from
measured figures, a failed tool as a not-run row, and one real child process per peer tool
(skipped with the reason when the ``bench`` extra is not installed)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from ocrstack.bench.harness import make_pdf
from ocrstack.bench.peers import LINEAR_TARGET, RSS_BORN_DIGITAL_MIB, Tool, child, table_rows


def _tool(cold: float, warm: float, rss_mib: int, recall: float = 0.99) -> Tool:
    return Tool(
        cold_s=[cold, cold + 1, cold + 2],
        cold_rss_kib=[rss_mib * 1024] * 3,
        warm_s=warm * 10,
        warm_rss_kib=rss_mib * 1024,
        pages=10,
        scores=[(2, recall, 0.98, 0.95), (1, recall, 0.98, 0.95)],
    )


def test_targets_compare_ocrstack_with_the_named_peers():
    ours = _tool(4.0, 0.2, 240)
    ours.kinds = ["plain", "layout", "ocr"]
    ours.cold_rss_kib = [200 * 1024, 240 * 1024, 600 * 1024]
    tools = {
        "ocrstack": ours,
        "pymupdf4llm": _tool(5.0, 0.9, 400, recall=0.95),
        "pymupdf4llm-legacy": _tool(3.0, 0.1, 200),
        "markitdown": Tool(error="markitdown cold exited 1: boom"),
    }
    rows = {r.metric: r for r in table_rows(tools)}
    cold = rows["ocrstack cold s/file / pymupdf4llm"]
    assert (cold.value, cold.verdict) == (0.833, "meets")  # medians 5.0 / 6.0
    warm = rows["ocrstack warm s/page / pymupdf4llm-legacy"]
    assert (warm.value, warm.verdict) == (2.0, "misses")
    rss = rows["ocrstack peak RSS, born-digital without OCR"]  # the OCR file's 600 MiB left out
    assert rss.value == 240 and rss.verdict == "meets" and str(RSS_BORN_DIGITAL_MIB)[:3] in rss.target
    assert "ocr 1 files max 600 MiB" in rss.detail and "plain 1 files max 200 MiB" in rss.detail
    assert "recall +0.040" in rows["ocrstack / pymupdf4llm"].detail
    assert rows["born-digital markitdown"].verdict == "not-run"
    assert "ocrstack / markitdown" not in rows
    assert LINEAR_TARGET == 1.3


@pytest.mark.proc
@pytest.mark.parametrize("tool", ["markitdown", "pymupdf4llm-legacy"])
def test_a_peer_child_converts_and_reports_its_peak_rss(tool: str, tmp_path: Path):
    module = "markitdown" if tool == "markitdown" else "pymupdf4llm"
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} not installed (the bench extra: scripts/bootstrap bench)")
    pdf = make_pdf(tmp_path / "doc.pdf", 2)
    res, wall = child(tool, "cold", tmp_path / "out", [pdf])
    md = (tmp_path / "out" / "doc.md").read_text(encoding="utf-8")
    assert "Page 2 line 40: the quick brown fox" in md
    assert res["maxrss_kib"] > 10_000 and 0 < res["seconds"][str(pdf)] < wall


@pytest.mark.proc
def test_warm_children_are_fed_one_file_at_a_time_and_report_their_peak_rss(tmp_path: Path):
    """The warm protocol: a child loads and warms its tool on the first file, says ready, then
    converts each file it is sent (so the parent interleaves the tools file by file)."""
    from ocrstack.bench.peers import WarmChild

    tool = "pymupdf4llm-legacy" if importlib.util.find_spec("pymupdf4llm") else "ocrstack"
    first, second = make_pdf(tmp_path / "a.pdf", 1), make_pdf(tmp_path / "b.pdf", 2)
    w = WarmChild(tool, tmp_path / "out", first).start()
    assert not (tmp_path / "out" / "b.md").exists()  # nothing converted before it is sent
    seconds = w.convert(second)
    assert seconds > 0 and "Page 2 line 40" in (tmp_path / "out" / "b.md").read_text(encoding="utf-8")
    res = w.close()
    assert res["maxrss_kib"] > 10_000 and list(res["seconds"]) == [str(second)]
    assert w.proc.returncode == 0


def test_the_first_run_on_a_machine_is_measured_with_an_empty_model_cache(tmp_path: Path, monkeypatch):
    """The untimed first round fills ocrstack's compiled-model cache for the timed rounds, so its
    first run on a machine (the layout model compiled) is measured apart: on the layout file whose
    cold parse peaked highest, with ``XDG_CACHE_HOME`` at an empty folder."""
    from ocrstack.bench import peers

    calls = []

    def fake_child(tool, mode, out, files, env=None):
        calls.append((tool, mode, [f.name for f in files], env))
        return {"maxrss_kib": 253 * 1024}, 2.5

    monkeypatch.setattr(peers, "child", fake_child)
    ours = _tool(1.0, 0.2, 240)
    ours.kinds = ["plain", "layout", "layout"]
    ours.cold_rss_kib = [300 * 1024, 230 * 1024, 237 * 1024]  # the plain file's RSS is not the pick
    files = [tmp_path / n for n in ("a.pdf", "b.pdf", "c.pdf")]
    peers._first_run(ours, files, tmp_path / "work")
    ((tool, mode, names, env),) = calls
    assert (tool, mode, names) == ("ocrstack", "cold", ["c.pdf"])
    assert env == {"XDG_CACHE_HOME": str(tmp_path / "work" / "empty-cache")}
    ours.cold_rss_kib = [200 * 1024, 230 * 1024, 237 * 1024]
    row = {r.metric: r for r in table_rows({"ocrstack": ours})}["ocrstack first run on a machine, peak RSS"]
    assert row.value == 253.0 and "c, empty model cache" in row.detail and "2.50 s" in row.detail
