"""guide 7 comparison rules on hand-made backend results (the live runs are in test_two_backend.py)."""

from __future__ import annotations

from ocrstack.core.results import Check, Report, Status
from ocrstack.verifying.backends import BackendResult, Sample
from ocrstack.verifying.compare import check_loading, check_reference, compare, first_difference
from ocrstack.verifying.config import load
from ocrstack.verifying.report import summarize

CFG = load()
TABLE = Sample(b"png", CFG.table_prompt, table=True)
OTSL = "<otsl><ched>名称<ched>数量<nl><fcel>A<fcel>1<nl></otsl>"


def r(name: str, prompt: int | None, out: str, gen: int | None = 10) -> BackendResult:
    return BackendResult(name, prompt, out, gen)


def _by(checks):
    return {c.name.split(":", 1)[1]: c for c in checks}


def test_agreeing_table_outputs_pass() -> None:
    c = _by(compare(r("a", 1975, OTSL), r("b", 1975, OTSL), TABLE, CFG, "x"))
    assert [v.status for v in c.values()] == [Status.PASS] * 3


def test_prompt_token_mismatch_fails() -> None:
    c = _by(compare(r("a", 1975, OTSL), r("b", 1976, OTSL), TABLE, CFG, "x"))
    assert c["prompt-tokens"].status is Status.FAIL and c["prompt-tokens"].found == "1976"


def test_one_character_difference_fails_with_position() -> None:
    other = OTSL.replace("数量", "數量")
    c = _by(compare(r("a", 5, OTSL), r("b", 5, other), TABLE, CFG, "x"))
    assert c["output"].status is Status.FAIL
    assert f"character {first_difference(OTSL, other)}" in c["output"].detail


def test_table_prompt_must_end_with_otsl_on_both() -> None:
    cut = OTSL[:-7]
    c = _by(compare(r("a", 5, cut), r("b", 5, cut), TABLE, CFG, "x"))
    assert c["output"].status is Status.PASS  # they agree ...
    assert c["ends-with-otsl"].status is Status.FAIL  # ... but the table output was cut


def test_non_table_prompt_has_no_otsl_rule() -> None:
    c = _by(compare(r("a", 5, "text"), r("b", 5, "text"), Sample(b"", "OCR:"), CFG, "x"))
    assert "ends-with-otsl" not in c


def test_missing_prompt_tokens_is_not_run() -> None:
    c = _by(compare(r("a", 5, "t"), r("b", None, "t"), Sample(b"", "OCR:"), CFG, "x"))
    assert c["prompt-tokens"].status is Status.NOT_RUN


def test_loading_keys() -> None:
    ok = BackendResult("t", loading={"missing_keys": 0, "unexpected_keys": 0, "mismatched_keys": 0})
    bad = BackendResult("t", loading={"missing_keys": 2, "unexpected_keys": 0, "mismatched_keys": 0})
    assert check_loading(ok).status is Status.PASS and check_loading(bad).status is Status.FAIL


def test_reference_values_only_when_they_apply() -> None:
    ref = CFG.reference
    assert (ref.prompt_tokens, ref.vision_tokens, ref.generated_tokens, ref.output_chars) == (
        1975,
        1936,
        284,
        677,
    )
    res = BackendResult("t", 1975, "x" * 677, 284, 1936, params=1_300_123_456)
    assert [c.status for c in check_reference(res, ref, TABLE, False, "why")] == [Status.NOT_RUN]
    got = {c.name: c.status for c in check_reference(res, ref, TABLE, True, "")}
    assert set(got.values()) == {Status.PASS}
    off = BackendResult("t", 1975, "x" * 600, 284, 1936, params=2_000_000_000)
    got = {c.name: c.status for c in check_reference(off, ref, TABLE, True, "")}
    assert got["reference:output-chars"] is Status.WARN and got["reference:params"] is Status.FAIL


def test_summary_never_claims_agreement_that_was_not_checked() -> None:
    rep = Report(
        "t",
        [Check("two-backend", Status.NOT_RUN, "needs --image"), Check("dspark", Status.NOT_RUN, "no url")],
    )
    text = " ".join(summarize(rep))
    assert "NOT RUN" in text and "agree:" not in text and "Agreement is not claimed" in text
    assert "DSpark activity NOT CHECKED" in text
    rep = Report(
        "t",
        [Check("two-backend[0-1]:prompt-tokens", Status.PASS), Check("two-backend[0-1]:output", Status.FAIL)],
    )
    assert "do not agree" in summarize(rep)[0]
    rep = Report(
        "t",
        [
            Check("backend:a", Status.PASS, "A"),
            Check("two-backend[0-1]:prompt-tokens", Status.PASS),
            Check("two-backend[0-1]:output", Status.PASS),
        ],
    )
    assert summarize(rep)[0].startswith("Both backends agree")
