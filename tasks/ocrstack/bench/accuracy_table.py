"""Side-by-side accuracy and speed table over the born-digital dev corpus (issue 11, "Done when").

One run, same pages, same DPI, each method in this process with its models loaded once and
warmed on one page before timing:

* ``ocrstack auto``: the embedded default with ``--text-layer auto``;
* ``ocrstack off``: the OCR path (``--text-layer off``);
* ``ocrstack off, openvino``: the same with ``--ocr-runtime openvino`` (OpenVINO bf16; a
  ``not-run`` row where openvino or a BF16 CPU is absent);
* ``ocrstack off, before``: the OCR path as it read pages before issue 11
  (:class:`BeforeIssue11`: rapidocr's own pipeline and sessions, classifier over every line),
  the "today's OCR path" of the 2x speed target, measured in the same run;
* ``rapidocr page``: ``rapidocr.RapidOCR`` defaults on the whole page, lines in its order;
* ``tesseract``: ``tesseract IMAGE stdout -l eng`` (``eng+chi_sim`` for Chinese files), a child
  process per page; a ``not-run`` row with the reason when the binary or a language is absent;
* ``text layer``: pypdfium2's ``get_text_bounded`` of the page (the truth itself: 1.0 by
  construction, its speed is the point).

Truth is NAME.txt (the PDF's text layer, pages split by form feed); metrics are the accuracy
suite's (:mod:`ocrstack.bench.metrics`):
recall = share of truth tokens found, precision = share of output tokens found in the truth,
order = token-sequence similarity. Per language (``zh`` when the file name has a ``zh_`` part),
page-weighted means and seconds per page (median over pages).

Targets (issue 11): ``off`` recall and order >= the best peer's per language, pages/s >= 2x
``off, before`` and above both peers; ``auto``: recall >= 0.99, order >= 0.95 and >= 20x the
pages/s of "today's OCR path", the issue's words for the OCR path when it was filed, i.e.
``off, before`` (the ratio to ``off``, the OCR path of this tree, is printed as well).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median

from ocrstack.bench import metrics as accuracy_metrics
from ocrstack.bench.options import BenchOptions
from ocrstack.bench.results import Row
from ocrstack.bench.textlayer import dev_files, pages_of, timed_run, warm_parser

METHODS = (
    "ocrstack auto",
    "ocrstack off",
    "ocrstack off, openvino",
    "ocrstack off, before",
    "rapidocr page",
    "tesseract",
    "text layer",
)
#: Issue 11 targets.
AUTO_RECALL, AUTO_ORDER, AUTO_SPEEDUP, OFF_SPEEDUP = 0.99, 0.95, 20.0, 2.0
#: Files of the quick run (one English page: a smoke run of every column, about a minute).
QUICK_FILES = ("en_single_libtasn1_intro",)


@dataclass
class Cell:
    """One method on one language: per page (recall, precision, order, seconds)."""

    pages: list[tuple[float, float, float, float]] = field(default_factory=list)
    skipped: str = ""

    def mean(self, k: int) -> float:
        return sum(p[k] for p in self.pages) / len(self.pages) if self.pages else 0.0

    def s_per_page(self) -> float:
        return median(p[3] for p in self.pages) if self.pages else 0.0


def language(pdf: Path) -> str:
    """``zh`` for corpus files named ``zh_...`` or ``..._zh_...``, else ``en``."""
    return "zh" if "zh_" in pdf.stem.split("/")[-1] else "en"


def _truth(pdf: Path) -> list[str]:
    return pdf.with_suffix(".txt").read_text(encoding="utf-8").split("\f")


class BeforeIssue11:
    """Factory of the recognizer as it read lines before issue 11 (see module docstring)."""

    @staticmethod
    def make():  # a RapidOcrRecognizer subclass instance
        """A ``RapidOcrRecognizer`` whose engine is rapidocr's own (default sessions), whose
        ``read_lines`` is the pre-issue-11 body (git: rapidocr.py before this change) and which
        takes one page at a time (``workers`` 1, as before issue 11). The layout model is this
        tree's (one thread; about 5 % of such a page's time)."""
        import numpy as np
        from rapidocr import RapidOCR
        from rapidocr.ch_ppocr_rec import TextRecInput
        from rapidocr.utils.process_img import get_rotate_crop_image

        from ocrstack.parsing.recognition.rapidocr import reading
        from ocrstack.parsing.recognition.rapidocr import recognizer as r

        class Before(r.RapidOcrRecognizer):
            @property
            def workers(self) -> int:  # one page at a time, as the pipeline ran it then
                return 1

            def engine(self):
                if self._engine is None:
                    params = {
                        "Global.log_level": "warning",
                        "Global.model_root_dir": str(r._bundled_model_dir()),
                    }
                    self._engine = RapidOCR(params=params)
                    r.quiet_rapidocr_warnings()
                return self._engine

            def read_region(self, image):  # a crop read as a whole image, as then
                return self.read_lines(image)

            def read_lines(self, image):  # the pre-issue-11 body of read_lines
                arr = np.ascontiguousarray(np.asarray(image.convert("RGB"))[:, :, ::-1])
                eng = self.engine()
                out = eng(arr, use_cls=False, text_score=0.0)
                if out.txts is None or out.boxes is None or len(out.txts) == 0:
                    return []
                polys = [np.asarray(b, dtype=np.float32) for b in out.boxes]
                texts, scores = list(out.txts), [float(s) for s in out.scores]
                crops = [get_rotate_crop_image(arr, p.copy()) for p in polys]
                cls = reading.stage_model(eng, "cls")(crops).cls_res
                flip = [i for i, (label, _) in enumerate(cls) if str(label) == "180"]
                flipped = [False] * len(texts)
                if flip:
                    rr = reading.stage_model(eng, "rec")(
                        TextRecInput(img=[np.ascontiguousarray(np.rot90(crops[i], 2)) for i in flip])
                    )
                    for j, i in enumerate(flip):
                        if rr.txts and rr.txts[j].strip() and float(rr.scores[j]) > scores[i]:
                            texts[i], scores[i], flipped[i] = rr.txts[j], float(rr.scores[j]), True
                lines = []
                for p, t, s, f in zip(polys, texts, scores, flipped, strict=True):
                    if s < self.min_score or not t.strip():
                        continue
                    bbox = (
                        float(p[:, 0].min()),
                        float(p[:, 1].min()),
                        float(p[:, 0].max()),
                        float(p[:, 1].max()),
                    )
                    w = max(np.linalg.norm(p[0] - p[1]), np.linalg.norm(p[2] - p[3]))
                    h = max(np.linalg.norm(p[0] - p[3]), np.linalg.norm(p[1] - p[2]))
                    lines.append(
                        r.Line(bbox, t.strip(), s, vertical=bool(h >= r.VERTICAL_RATIO * w), flipped=f)
                    )
                return lines

        return Before()


def _render(pdf: Path, dpi: int):  # list of PIL images
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(str(pdf))
    try:
        return [doc[i].render(scale=dpi / 72).to_pil().convert("RGB") for i in range(len(doc))]
    finally:
        doc.close()


def _text_layer(pdf: Path) -> list[tuple[str, float]]:
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(str(pdf))
    out = []
    try:
        for i in range(len(doc)):
            t = time.perf_counter()
            page = doc[i]
            text = page.get_textpage().get_text_bounded()
            out.append((text, time.perf_counter() - t))
    finally:
        doc.close()
    return out


def tesseract_reason(langs: tuple[str, ...] = ("eng", "chi_sim")) -> str:
    """Why the tesseract column cannot run ('' when it can): binary or language data absent."""
    exe = shutil.which("tesseract")
    if exe is None:
        return "tesseract not installed (Debian: apt-get install tesseract-ocr tesseract-ocr-chi-sim)"
    have = subprocess.run([exe, "--list-langs"], capture_output=True, text=True, timeout=30, check=False)
    missing = [lang for lang in langs if lang not in have.stdout.split()]
    return f"tesseract language data missing: {', '.join(missing)}" if missing else ""


def _tesseract(image, lang: str, tmp: Path) -> str:  # PIL image
    png = tmp / "page.png"
    image.save(png)
    out = subprocess.run(
        [shutil.which("tesseract") or "tesseract", str(png), "stdout", "-l", lang],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return out.stdout


def _ocrstack(mode: str, files: list[Path], work: Path, dpi: int, recognizer=None):
    """Per file: list of (markdown text of page i, seconds per page) through ``pipeline.run``."""
    tl = "auto" if mode == "auto" else "off"
    base, parser = warm_parser(files[0], tl, work / f"warm-{mode}", dpi, recognizer)
    out = {}
    for f in files:
        summary, seconds = timed_run(base, parser, f, work / mode.replace(" ", "-"))
        doc = summary.documents[0]
        pages = pages_of(doc.markdown.read_text(encoding="utf-8"))
        out[f] = [(pages.get(i, ""), seconds / max(1, doc.pages)) for i in range(doc.pages)]
    return out


def measure(files: list[Path], work: Path, dpi: int = 200, metrics=None) -> dict[str, dict[str, Cell]]:
    """``{method: {language: Cell}}`` for :data:`METHODS` over ``files`` (see module docstring)."""
    m = metrics or accuracy_metrics
    table: dict[str, dict[str, Cell]] = {k: {} for k in METHODS}

    def add(method: str, pdf: Path, i: int, text: str, seconds: float) -> None:
        gold = _truth(pdf)[i] if i < len(_truth(pdf)) else ""
        found, total = m.word_hits(text, gold)  # output tokens found in the truth
        precision = found / total if total else 1.0
        cell = table[method].setdefault(language(pdf), Cell())
        cell.pages.append((m.word_recall(gold, text), precision, m.sequence_similarity(gold, text), seconds))

    from ocrstack.parsing.recognition.rapidocr import openvino_rec
    from ocrstack.parsing.recognition.rapidocr.recognizer import RapidOcrRecognizer

    runs = [("auto", None), ("off", None), ("off, before", BeforeIssue11.make())]
    if openvino_rec.runtime_name("openvino") == "openvino-bf16":
        runs.insert(2, ("off, openvino", RapidOcrRecognizer(runtime="openvino")))
    else:
        why = "--ocr-runtime openvino unavailable here (openvino and a CPU with BF16)"
        table["ocrstack off, openvino"] = {"en": Cell(skipped=why), "zh": Cell(skipped=why)}
    for mode, rec in runs:
        for f, pages in _ocrstack(mode, files, work, dpi, rec).items():
            for i, (md, s) in enumerate(pages):
                add(f"ocrstack {mode}", f, i, m.markdown_text(md), s)

    import numpy as np
    from rapidocr import RapidOCR

    peer = RapidOCR(params={"Global.log_level": "error"})
    peer(np.zeros((64, 64, 3), np.uint8))
    reason = tesseract_reason()
    for f in files:
        images = _render(f, dpi)
        for i, im in enumerate(images):
            t = time.perf_counter()
            res = peer(np.ascontiguousarray(np.asarray(im)[:, :, ::-1]))
            add("rapidocr page", f, i, "\n".join(res.txts or ()), time.perf_counter() - t)
            if not reason:
                with tempfile.TemporaryDirectory() as tmp:
                    t = time.perf_counter()
                    text = _tesseract(im, "eng+chi_sim" if language(f) == "zh" else "eng", Path(tmp))
                    add("tesseract", f, i, text, time.perf_counter() - t)
        for i, (text, s) in enumerate(_text_layer(f)):
            add("text layer", f, i, text, s)
    if reason:
        table["tesseract"] = {"en": Cell(skipped=reason), "zh": Cell(skipped=reason)}
    return table


def targets(table: dict[str, dict[str, Cell]]) -> list[Row]:
    """The issue 11 target rows (``meets`` / ``misses``) from a measured table."""
    rows = []
    all_pages = {k: [p for c in v.values() for p in c.pages] for k, v in table.items()}

    def pps(method: str) -> float:
        s = sum(p[3] for p in all_pages[method])
        return len(all_pages[method]) / s if s > 0 else 0.0

    def row(name: str, ok: bool, value: float, unit: str, target: str, detail: str) -> None:
        rows.append(Row(name, round(value, 3), unit, target, "meets" if ok else "misses", detail))

    before = pps("ocrstack off, before")
    auto = all_pages["ocrstack auto"]
    if auto:
        r = sum(p[0] for p in auto) / len(auto)
        o = sum(p[2] for p in auto) / len(auto)
        row("auto recall (all pages)", r >= AUTO_RECALL, r, "", f">= {AUTO_RECALL}", "")
        row("auto order (all pages)", o >= AUTO_ORDER, o, "", f">= {AUTO_ORDER}", "")
        if before:
            sp = pps("ocrstack auto") / before
            row(
                "auto pages/s / before issue 11",
                sp >= AUTO_SPEEDUP,
                sp,
                "x",
                f">= {AUTO_SPEEDUP:g}",
                "the issue's 'today's OCR path', measured in this run",
            )
        if pps("ocrstack off"):
            sp = pps("ocrstack auto") / pps("ocrstack off")
            rows.append(Row("auto pages/s / off pages/s", round(sp, 3), "x", detail="this tree's OCR path"))
    if before:
        sp = pps("ocrstack off") / before
        row("off pages/s / before issue 11", sp >= OFF_SPEEDUP, sp, "x", f">= {OFF_SPEEDUP:g}", "")
        if all_pages["ocrstack off, openvino"]:
            sp = pps("ocrstack off, openvino") / before
            row(
                "off (--ocr-runtime openvino) pages/s / before",
                sp >= OFF_SPEEDUP,
                sp,
                "x",
                f">= {OFF_SPEEDUP:g}",
                "",
            )
    for peer in ("rapidocr page", "tesseract"):
        if all_pages[peer]:
            sp = pps("ocrstack off") / pps(peer)
            row(f"off pages/s / {peer} pages/s", sp > 1.0, sp, "x", "> 1", "")
    for lang in ("en", "zh"):
        off = table["ocrstack off"].get(lang)
        peers = [
            table[p][lang]
            for p in ("rapidocr page", "tesseract")
            if lang in table[p] and table[p][lang].pages
        ]
        if off is None or not off.pages or not peers:
            continue
        for k, what in ((0, "recall"), (2, "order")):
            best = max(c.mean(k) for c in peers)
            row(f"off {what} {lang} vs best peer", off.mean(k) >= best, off.mean(k), "", f">= {best:.3f}", "")
    return rows


def accuracy_rows(opts: BenchOptions, work: Path) -> list[Row]:
    """Bench section: one ``info`` row per method and language (value s/page median, detail
    recall / precision / order / pages), then the target rows. ``--quick`` uses
    :data:`QUICK_FILES` only. A ``not-run`` row when the corpus is absent."""
    from ocrstack.bench.embedded import _corpus_pdf

    probe = _corpus_pdf()
    if probe is None:
        return [
            Row("side-by-side", None, "", verdict="not-run", detail="dev corpus not found (OCRSTACK_CORPUS)")
        ]
    files = dev_files(probe.parent)
    if opts.quick_mode:
        files = [f for f in files if f.stem in QUICK_FILES]
    table = measure(files, work / "accuracy-table", opts.dpi)
    rows = []
    for method in METHODS:
        for lang in ("en", "zh"):
            c = table[method].get(lang)
            if c is None:
                continue
            if c.skipped:
                rows.append(Row(f"{lang} {method}", None, "s/page", verdict="not-run", detail=c.skipped))
                continue
            rows.append(
                Row(
                    f"{lang} {method}",
                    round(c.s_per_page(), 3),
                    "s/page",
                    detail=f"recall {c.mean(0):.3f} precision {c.mean(1):.3f} order {c.mean(2):.3f}"
                    f" ({len(c.pages)} pages)",
                )
            )
    return rows + targets(table)
