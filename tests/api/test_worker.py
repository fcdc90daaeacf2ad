"""The API worker runs a job through :func:`ocrstack.parsing.run.pipeline.run` and records its
returned outcome (no server process: the worker's job loop body on a real store, fake engines)."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import generate_latest

from ocrstack.api.metrics import Metrics
from ocrstack.api.store import JobStore
from ocrstack.api.worker import Worker
from ocrstack.parsing.engines import LayoutProvider, Recognizer
from ocrstack.parsing.options import ParseOptions
from ocrstack.parsing.types import Block, Category, PageImage
from support.inputs import multipage_tiff


class Layout(LayoutProvider):
    name = "fake-layout"

    def detect(self, page: PageImage) -> list[Block]:
        w, h = page.size
        return [Block((0, 0, w, h), Category.TEXT, 0.9, 0, "text")]


class FailsPage2(Recognizer):
    name, structured = "fake-ocr", False

    def recognize(self, page: PageImage, blocks: list[Block]) -> list[Block]:
        if page.index == 1:
            raise RuntimeError("cannot read this page")
        for b in blocks:
            b.text = f"words of page {page.index + 1}"
        return blocks


def test_a_job_with_a_failed_page_is_partial_with_the_counts_of_the_returned_outcome(tmp_path: Path):
    """3 pages, page 2 fails: state partial, 2 pages done, the CLI's message and fix, 1 failure
    counted, 3 render times -- all from the run's RunSummary (no blocks.json re-read)."""
    store = JobStore(tmp_path / "data")
    metrics = Metrics(store.counts)
    base = ParseOptions(inputs=(), layout="none", recognizer="rapidocr")
    worker = Worker(store, metrics, base)
    engines = {
        ("layout", "none", str(base.layout_model)): Layout(),
        ("recognizer", "rapidocr", base.ocr_runtime): FailsPage2(),
    }
    upload = multipage_tiff(tmp_path / "upload.tif", 3)
    job = store.create(upload=upload, name="doc.tif", filename="doc.tif", options={}, pages_total=3)
    claimed = store.claim()  # as the worker's loop does
    assert claimed is not None and claimed.id == job.id
    worker._run(claimed, engines)
    done = store.get(job.id)
    assert done is not None and done.state == "partial", done
    assert done.pages_done == 2 and done.error == "1 page(s) failed; the rest was written"
    assert done.fix and "rerun the same command" in done.fix
    exposed = generate_latest(metrics.registry).decode()
    assert "ocrstack_page_failures_total 1.0" in exposed
    assert 'ocrstack_page_stage_seconds_count{stage="render"} 3.0' in exposed  # every page rendered
    store.close()


def test_a_job_asking_for_another_ocr_runtime_gets_its_own_recognizer(tmp_path: Path, monkeypatch):
    """Engines are reused across jobs by what changes their output: a job with
    ``ocr_runtime=openvino`` must not reuse the service's onnxruntime recognizer (its pages are
    cached under the openvino key)."""
    from ocrstack.api import jobrun

    made: list[str] = []

    def create(kind: str, opts: ParseOptions) -> Recognizer:
        made.append(opts.ocr_runtime)
        return FailsPage2()

    monkeypatch.setattr(jobrun.recognition_registry, "create", create)
    store = JobStore(tmp_path / "data")
    base = ParseOptions(inputs=(), layout="none", recognizer="rapidocr")
    worker = Worker(store, Metrics(store.counts), base)
    engines = {("layout", "none", str(base.layout_model)): Layout()}
    first = worker._engines(base, engines)[1]
    again = worker._engines(base, engines)[1]
    other = worker._engines(
        ParseOptions(inputs=(), layout="none", recognizer="rapidocr", ocr_runtime="openvino"), engines
    )[1]
    assert first is again and other is not first
    assert made == [base.ocr_runtime, "openvino"]
    store.close()


def test_a_job_cancelled_while_its_page_is_in_layout_stops_before_recognition(tmp_path: Path):
    """Issue 24 item 8 ("DELETE answers cancelled while the current page keeps computing"): the
    job parser's checkpoint before each stage stops the page in flight once the job is cancelled;
    the recognizer never sees that page and the job ends cancelled."""
    store = JobStore(tmp_path / "data")
    metrics = Metrics(store.counts)
    base = ParseOptions(inputs=(), layout="none", recognizer="rapidocr")
    worker = Worker(store, metrics, base)
    upload = multipage_tiff(tmp_path / "upload.tif", 2)
    job = store.create(upload=upload, name="doc.tif", filename="doc.tif", options={}, pages_total=2)

    class CancelledDuringLayout(Layout):
        def detect(self, page: PageImage) -> list[Block]:
            store.cancel(job.id)  # what DELETE /v1/jobs/{id} does, while this page is in layout
            worker.cancel(job.id)
            return super().detect(page)

    read: list[int] = []

    class Counting(FailsPage2):
        def recognize(self, page: PageImage, blocks: list[Block]) -> list[Block]:
            read.append(page.index)
            return blocks

    engines = {
        ("layout", "none", str(base.layout_model)): CancelledDuringLayout(),
        ("recognizer", "rapidocr", base.ocr_runtime): Counting(),
    }
    claimed = store.claim()
    assert claimed is not None and claimed.id == job.id
    worker._run(claimed, engines)
    assert read == []
    done = store.get(job.id)
    assert done is not None and done.state == "cancelled", done
    store.close()
