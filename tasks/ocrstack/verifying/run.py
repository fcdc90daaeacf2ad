"""``ocrstack verify``: output checks and DSpark activity (guide 6), two-backend verbatim check (guide 7).

Every check ends as pass / fail / warn / not-run with its reason. The summary states that
the backends agree only when that comparison ran and passed, and that DSpark is active
only when ``/metrics`` was checked and passed (guide 10).
"""

from __future__ import annotations

from ocrstack.core.errors import ConfigError, OcrstackError, UsageError
from ocrstack.core.results import Check, Report, Status
from ocrstack.verifying import compare as cmp
from ocrstack.verifying.backends import BackendResult, OpenAIBackend, Sample, TransformersBackend
from ocrstack.verifying.config import VerifyConfig, load
from ocrstack.verifying.options import VerifyOptions
from ocrstack.verifying.outputs import (
    blocks_file_for,
    check_markdown,
    expectations_from_blocks,
    merge,
    parse_expectation,
)
from ocrstack.verifying.report import TINY_TITLE, TITLE, VerifyResult, summarize, write_reports
from ocrstack.verifying.request_settings import request_settings_check

# ------------------------------------------------------------------ sections


def output_section(opts: VerifyOptions, report: Report) -> str | None:
    """guide 6 output checks, or one not-run check; returns where the page expectations came from.

    Page expectations come from ``opts.blocks`` (default: the ``NAME.blocks.json`` beside the
    Markdown, used when it exists) merged with ``opts.expect`` (:func:`outputs.merge`).

    Raises:
        InputError: the Markdown is unreadable, or the blocks file is unreadable / was given
            explicitly and does not exist.
        UsageError: a bad ``--expect``.
    """
    if opts.markdown is None:
        report.add(
            Check("output", Status.NOT_RUN, "no --markdown file given; output checks (guide 6) not run")
        )
        return None
    explicit = [parse_expectation(e) for e in opts.expect]
    derived: list = []
    sources = []
    blocks = opts.blocks or blocks_file_for(opts.markdown)
    if opts.use_blocks and (opts.blocks is not None or blocks.is_file()):
        found = expectations_from_blocks(blocks)
        derived = found.expectations
        sources.append(found.describe())
        if not found.complete or found.failed_pages:
            pages = ", ".join(map(str, found.failed_pages)) or "unknown"
            report.add(
                Check(
                    "output:blocks-complete",
                    Status.WARN,
                    f"{blocks.name} says the parse is incomplete (failed pages: {pages}); "
                    "those pages have no expectations",
                    "rerun `ocrstack parse` (finished pages are reused) and read its report",
                )
            )
        overridden = sorted({e.kind for e in explicit} & {e.kind for e in derived})
        if overridden:
            sources.append(f"--expect replaces the {', '.join(overridden)} pages read from {blocks.name}")
    if opts.use_blocks and blocks.is_file() and (info := request_settings_check(blocks)) is not None:
        report.add(info)  # issue 14: e.g. MinerU-Diffusion's diffusion settings
    if explicit:
        sources.append("--expect " + " ".join(opts.expect))
    expectations = merge(derived, explicit)
    if not expectations:
        why = (
            f"{blocks.name} lists no table, formula or text blocks"
            if sources
            else f"no {blocks.name} beside the Markdown"
            + (" (--no-blocks)" if not opts.use_blocks else "")
            + " and no --expect"
        )
        report.add(
            Check(
                "output:pages",
                Status.NOT_RUN,
                f"{why}: table, formula and text page checks not run (guide 6)",
                "keep the blocks.json `ocrstack parse` writes beside the Markdown, "
                "or pass --expect KIND@PAGES",
            )
        )
    for c in check_markdown(opts.markdown, expectations):
        report.add(c)
    return "; ".join(sources) if sources else None


def dspark_section(opts: VerifyOptions, report: Report) -> None:
    """guide 6 DSpark proof through the serving metrics check, or one not-run check."""
    if not opts.dspark_url:
        report.add(
            Check(
                "dspark",
                Status.NOT_RUN,
                "no DSpark server given (--dspark-url); speculative decoding not checked, so not claimed",
            )
        )
        return
    from ocrstack.client.metrics import run_check

    try:
        sub = run_check(opts.dspark_url, opts.dspark_model, opts.dspark_requests)
    except OcrstackError as err:
        report.add(Check("dspark", Status.FAIL, f"{opts.dspark_url}: {err.message}", err.remedy or ""))
        return
    for c in sub.checks:
        report.add(Check(f"dspark:{c.name}", c.status, c.detail, c.fix, c.expected, c.found))


def _run_backend(backend, sample: Sample, max_new: int, report: Report, results: list[BackendResult]) -> None:
    name = getattr(backend, "url", None) or "transformers"
    try:
        res = backend.run(sample, max_new)
    except OcrstackError as err:
        report.add(Check(f"backend:{name}", Status.FAIL, err.message, err.remedy or ""))
        return
    results.append(res)
    report.add(
        Check(
            f"backend:{name}",
            Status.PASS,
            f"{res.backend}: {res.prompt_tokens} prompt tokens, {res.generated_tokens} generated, "
            f"{len(res.output)} characters",
        )
    )


def compare_section(
    backends: list,
    sample: Sample,
    max_new: int,
    cfg: VerifyConfig,
    report: Report,
    results: list[BackendResult],
    *,
    reference: bool,
    reference_why: str,
) -> None:
    """Run every backend on ``sample`` and compare each with the first (guide 7)."""
    for b in backends:
        _run_backend(b, sample, max_new, report, results)
    if len(results) < len(backends) or len(results) < 2:
        report.add(Check("two-backend", Status.NOT_RUN, "fewer than two backends produced a result"))
        return
    first = results[0]
    for i, other in enumerate(results[1:], start=1):
        for c in cmp.compare(first, other, sample, cfg, f"two-backend[0-{i}]"):
            report.add(c)
    for r in results:
        if r.loading:
            report.add(cmp.check_loading(r))
    inproc = next((r for r in results if r.vision_tokens is not None or r.params is not None), first)
    for c in cmp.check_reference(inproc, cfg.reference, sample, reference, reference_why):
        report.add(c)


def _reference_applies(opts: VerifyOptions, sample: Sample, cfg: VerifyConfig) -> tuple[bool, str]:
    if not opts.reference:
        return False, (
            "guide 7 reference values (1975/1936/284/677) apply only to the real model on the guide's "
            "1080x1080 table image; pass --reference with that image"
        )
    size = sample.image().size
    if tuple(size) != tuple(cfg.reference.image_size):
        return False, f"--reference given but the image is {size[0]}x{size[1]}, not 1080x1080"
    if sample.prompt != cfg.reference.prompt:
        return False, f"--reference given but the prompt is not {cfg.reference.prompt!r}"
    return True, ""


def two_backend_section(
    opts: VerifyOptions, cfg: VerifyConfig, report: Report, results: list[BackendResult]
) -> None:
    """The guide 7 comparison: tiny CPU run, or the given image through the given backends."""
    if opts.tiny:
        from ocrstack.verifying import tiny

        model_dir = tiny.tiny_checkpoint(opts.work_dir)
        sample = tiny.tiny_sample()
        max_new = opts.max_new_tokens or 32
        if opts.tf_server is None:
            raise ConfigError(
                "verify --tiny needs a way to start `transformers serve` (VerifyOptions.tf_server)",
                "run it through the CLI (`ocrstack verify --tiny`) or pass "
                "ocrstack.serving.ephemeral.transformers_server",
            )
        with opts.tf_server(model_dir, opts.work_dir / "serve", opts.server_timeout) as (url, served):
            backends = [
                TransformersBackend(model_dir, device="cpu", dtype=opts.dtype),
                OpenAIBackend(url, served),
            ]
            compare_section(
                backends,
                sample,
                max_new,
                cfg,
                report,
                results,
                reference=False,
                reference_why="the tiny random checkpoint is not the real model; reference values "
                "are expectations for MiniCPM-OCR-1.0 only",
            )
        return
    n_backends = (1 if opts.tf_model else 0) + len(opts.servers)
    if opts.image is None or n_backends < 2:
        report.add(
            Check(
                "two-backend",
                Status.NOT_RUN,
                "needs --image and two backends (--tf-model and/or --server-url); backends not compared, "
                "so agreement is not claimed (guide 7, 10)",
            )
        )
        return
    try:
        png = opts.image.read_bytes()
    except OSError as exc:
        report.add(Check("two-backend", Status.FAIL, f"{opts.image}: {exc.strerror}", "pass a readable PNG"))
        return
    prompt = opts.prompt or cfg.table_prompt
    table = opts.table if opts.table is not None else ("OTSL" in prompt)
    sample = Sample(_as_png(png), prompt, table, name=str(opts.image), mm_kwargs=opts.mm_kwargs)
    applies, why = _reference_applies(opts, sample, cfg)
    backends: list = []
    if opts.tf_model:
        backends.append(TransformersBackend(opts.tf_model, opts.device, opts.dtype, opts.attn))
    backends += [OpenAIBackend(u, m, opts.server_timeout) for u, m in opts.servers]
    compare_section(
        backends,
        sample,
        opts.max_new_tokens or cfg.default_max_new_tokens,
        cfg,
        report,
        results,
        reference=applies,
        reference_why=why,
    )


def _as_png(data: bytes) -> bytes:
    """Re-encode any image Pillow reads as PNG (lossless, the same bytes go to both backends)."""
    import io

    from PIL import Image

    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return data
    buf = io.BytesIO()
    Image.open(io.BytesIO(data)).convert("RGB").save(buf, "PNG")
    return buf.getvalue()


#: What to pass when nothing was asked for (the UsageError's remedy; ``ocrstack verify --help``).
WHAT_TO_PASS = (
    "pass at least one of: --markdown OUT.md (guide 6 output checks); --dspark-url URL (guide 6 DSpark "
    "/metrics proof); --tiny (guide 7 comparison on CPU with the tiny random checkpoint); "
    "--image IMG with two backends from --tf-model DIR / --server-url URL (guide 7 comparison)"
)


def require_something(opts: VerifyOptions) -> None:
    """Refuse a verify that would check nothing (guide 10: a run with only not-run checks is no proof).

    A section is requested by ``markdown``, ``dspark_url``, ``tiny``, or ``image`` together with
    two backends (``tf_model`` counts as one, each of ``servers`` as one). When none is, nothing
    would run and the old behaviour -- three not-run checks and exit 0 -- reads like success.

    Raises:
        UsageError: nothing runnable was requested; names the options to pass (exit 2).
    """
    n_backends = (1 if opts.tf_model else 0) + len(opts.servers)
    if opts.markdown or opts.dspark_url or opts.tiny or (opts.image is not None and n_backends >= 2):
        return
    if opts.expect or opts.blocks is not None:
        what = "--expect / --blocks need --markdown (the file to check)"
    elif opts.image is not None or n_backends:
        what = (
            f"the two-backend check needs --image and two backends; got "
            f"{'an image' if opts.image is not None else 'no --image'} and {n_backends} backend(s)"
        )
    else:
        what = "nothing to check: no output file, DSpark server or backends given"
    raise UsageError(f"verify: {what}", WHAT_TO_PASS)


def run(opts: VerifyOptions) -> VerifyResult:
    """Run every requested section and return the result (the CLI maps ``report.ok`` to the exit code).

    Raises:
        UsageError: nothing to check (see :func:`require_something`), or a bad ``--expect``.
    """
    require_something(opts)
    cfg = load()
    report = Report(TINY_TITLE if opts.tiny else TITLE)
    results: list[BackendResult] = []
    expectations_from = output_section(opts, report)
    dspark_section(opts, report)
    two_backend_section(opts, cfg, report, results)
    summary = summarize(report, tiny=opts.tiny)
    if expectations_from:
        summary.append(f"Output page expectations from {expectations_from}.")
    res = VerifyResult(report, results, summary)
    if opts.report_dir is not None:
        write_reports(res, opts.report_dir)
    return res
