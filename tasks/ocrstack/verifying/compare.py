"""Judge two backend results (guide 7): equal prompt tokens, identical output, ``</otsl>`` for tables.

Also the guide 7 transformers-side load check (no missing/unexpected/mismatched keys) and,
only for the real model on the guide's reference image, the reference values.
"""

from __future__ import annotations

from ocrstack.core.results import Check, Status
from ocrstack.verifying.backends import BackendResult, Sample
from ocrstack.verifying.config import Reference, VerifyConfig


def first_difference(a: str, b: str) -> int:
    """Index of the first differing character (``min(len)`` when one is a prefix of the other)."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


def compare(a: BackendResult, b: BackendResult, sample: Sample, cfg: VerifyConfig, label: str) -> list[Check]:
    """The verbatim checks between ``a`` and ``b`` for ``sample``; names are prefixed with ``label``."""
    out: list[Check] = []
    if a.prompt_tokens is None or b.prompt_tokens is None:
        out.append(
            Check(
                f"{label}:prompt-tokens",
                Status.NOT_RUN,
                f"a backend did not report prompt tokens ({a.prompt_tokens} vs {b.prompt_tokens})",
            )
        )
    else:
        same = a.prompt_tokens == b.prompt_tokens
        out.append(
            Check(
                f"{label}:prompt-tokens",
                Status.PASS if same else Status.FAIL,
                f"{a.prompt_tokens} vs {b.prompt_tokens}",
                ""
                if same
                else "the backends build different prompts: same chat template, processor "
                "and enable_thinking=false on both? (guide 7)",
                expected=str(a.prompt_tokens),
                found=str(b.prompt_tokens),
            )
        )
    same_text = a.output == b.output
    if same_text:
        detail = f"identical, {len(a.output)} characters"
        if a.generated_tokens is not None and b.generated_tokens is not None:
            detail += f", {a.generated_tokens} / {b.generated_tokens} generated tokens"
    else:
        i = first_difference(a.output, b.output)
        detail = (
            f"differ at character {i} ({len(a.output)} vs {len(b.output)} characters): "
            f"{a.output[max(0, i - 20) : i + 20]!r} vs {b.output[max(0, i - 20) : i + 20]!r}"
        )
    out.append(
        Check(
            f"{label}:output",
            Status.PASS if same_text else Status.FAIL,
            detail,
            ""
            if same_text
            else "outputs must be identical with greedy decoding (guide 7): compare "
            "versions (guide 9), dtype, attention backend and max tokens",
        )
    )
    if sample.table:
        ends = [r.output.rstrip().endswith(cfg.table_end) for r in (a, b)]
        ok = all(ends)
        out.append(
            Check(
                f"{label}:ends-with-otsl",
                Status.PASS if ok else Status.FAIL,
                f"{a.backend}: {ends[0]}, {b.backend}: {ends[1]}",
                ""
                if ok
                else f"a table prompt must end with {cfg.table_end} on both backends (guide 7); "
                "raise --max-new-tokens if the output was cut",
            )
        )
    return out


def check_loading(r: BackendResult) -> Check:
    """guide 7: transformers loads with no missing, unexpected or mismatched keys."""
    bad = {k: v for k, v in r.loading.items() if v}
    return Check(
        "transformers:load-keys",
        Status.FAIL if bad else Status.PASS,
        f"{bad}" if bad else "no missing, unexpected or mismatched keys",
        "the checkpoint does not match this transformers (feat-ocr fork, guide 3.3)" if bad else "",
    )


def check_reference(
    r: BackendResult, ref: Reference, sample: Sample, applies: bool, why_not: str
) -> list[Check]:
    """Compare with the guide 7 reference values; not-run unless ``applies`` (real model + image)."""
    if not applies:
        return [Check("reference-values", Status.NOT_RUN, why_not)]
    pairs = [
        ("prompt-tokens", ref.prompt_tokens, r.prompt_tokens),
        ("vision-tokens", ref.vision_tokens, r.vision_tokens),
        ("generated-tokens", ref.generated_tokens, r.generated_tokens),
        ("output-chars", ref.output_chars, len(r.output)),
    ]
    out = []
    for name, want, got in pairs:
        ok = want == got
        out.append(
            Check(
                f"reference:{name}",
                Status.PASS if ok else Status.WARN,
                f"{got} (guide 7: {want})",
                ""
                if ok
                else "differs from the guide's environment; the pass criterion is agreement "
                "between the backends (guide 7)",
                expected=str(want),
                found=str(got),
            )
        )
    if r.params is not None:
        got_b = round(r.params / 1e9, 3)
        ok = abs(got_b - ref.params_billion) < 0.0005
        out.append(
            Check(
                "reference:params",
                Status.PASS if ok else Status.FAIL,
                f"{got_b:.3f}B (guide 7: 1.300B)",
                "" if ok else "not the MiniCPM-OCR-1.0 checkpoint (guide 7)",
                expected=f"{ref.params_billion:.3f}",
                found=f"{got_b:.3f}",
            )
        )
    return out
