"""Ctrl-C during ``ocrstack parse`` (issue 10 problem 4): the real CLI in a child process with
the embedded rapidocr recognizer on a generated scanned PDF. SIGINT lands after one page is in
the page cache, while the other is being read (several CPU seconds): the process ends with 130
without finishing that page, that page stays cached, and the same command resumes it; a second
SIGINT right after the first is an exit 130 too, never a crash (rc 134, ``terminate called
without an active exception``). How fast it stops (the 2 s target of issue 10) is measured by
``nox -s bench`` (the Ctrl-C row of the fault table), not asserted here."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from support.wait import wait_until

WORDS = "the quick brown fox jumps over a lazy dog while reading order keeps each block".split()


def scanned_pdf(path: Path, pages: int = 2, lines: int = 14) -> Path:
    """An image-only PDF (no text layer) of ``pages`` pages of ``lines`` lines of printed words
    each: a few CPU seconds per page for rapidocr."""
    rng = random.Random(7)
    font = ImageFont.load_default(size=24)
    frames = []
    for _ in range(pages):
        im = Image.new("L", (1400, 80 + 40 * lines), 255)
        draw = ImageDraw.Draw(im)
        for k in range(lines):
            draw.text((60, 40 + 40 * k), " ".join(rng.choice(WORDS) for _ in range(11)), fill=0, font=font)
        frames.append(im)
    frames[0].save(path, save_all=True, append_images=frames[1:], resolution=200)
    return path


def _cmd(pdf: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "ocrstack", "parse", str(pdf), "-o", str(out), "--layout", "none"] + [
        "--no-progress"
    ]


def _start(pdf: Path, out: Path, env: dict[str, str]) -> subprocess.Popen:
    from ocrstack.bench.interrupts import sigint_default  # a nohup'ed suite ignores SIGINT

    return subprocess.Popen(
        _cmd(pdf, out),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=sigint_default,
    )


def _cached(out: Path) -> list[Path]:
    return list((out / ".ocrstack-cache").glob("*/p*-*.json"))


def _wait_for_page(out: Path, proc: subprocess.Popen, timeout: float = 400) -> None:
    """Until one page is in the page cache: the embedded recognizer takes two pages at once
    (its lock lets one read at a time, either may go first), so the other is being read then."""

    def cached() -> list[Path]:
        if proc.poll() is not None:
            raise AssertionError(f"parse ended before a page was cached: {proc.communicate()[1]}")
        return _cached(out)

    try:
        wait_until(cached, "one page in the page cache", timeout, interval=0.05)
    except AssertionError:
        proc.kill()
        raise


def _interrupt(proc: subprocess.Popen, times: int = 1) -> tuple[int, float, str]:
    start = time.monotonic()
    for n in range(times):
        if n:
            time.sleep(0.05)  # spacing, not a wait: two SIGINTs sent at once may arrive as one
        proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, time.monotonic() - start, err


def _fingerprint() -> str:
    """The code part of the page-cache key, read from the sources now (as a new CLI reads it)."""
    from ocrstack.parsing import page_cache

    page_cache.code_fingerprint.cache_clear()
    return page_cache.code_fingerprint()


@pytest.mark.proc
@pytest.mark.slow
def test_ctrl_c_mid_page_stops_keeps_pages_and_the_rerun_resumes(tmp_path: Path, cli_env):
    pdf = scanned_pdf(tmp_path / "scan.pdf")
    # the parsing sources are part of the cache key: when a checkout shared with other writers
    # changes them between the interrupted run and the rerun, the rerun rightly recomputes page 1;
    # then the scenario is repeated (at most 3 times); a static checkout runs it once
    for attempt in range(3):
        out = tmp_path / f"out{attempt}"
        code = _fingerprint()
        proc = _start(pdf, out, cli_env)
        _wait_for_page(out, proc)
        rc, seconds, err = _interrupt(proc)
        print(f"stopped {seconds:.2f} s after SIGINT")  # the figure (pytest -s)
        assert rc == 130, err
        assert "Traceback" not in err and "terminate called" not in err, err
        assert "rerun the same command to resume" in err
        assert not (out / "scan.md").exists()  # nothing half-written
        again = subprocess.run(_cmd(pdf, out), capture_output=True, text=True, env=cli_env, timeout=600)
        assert again.returncode == 0, again.stderr
        if _fingerprint() == code:
            break
    else:
        pytest.fail("the parsing sources changed during each of 3 attempts")
    assert "2 page(s), 1 from cache" in again.stderr, again.stderr


@pytest.mark.proc
@pytest.mark.slow
def test_a_second_ctrl_c_is_not_a_crash(tmp_path: Path, cli_env):
    pdf = scanned_pdf(tmp_path / "scan.pdf")
    out = tmp_path / "out"
    proc = _start(pdf, out, cli_env)
    _wait_for_page(out, proc)
    rc, seconds, err = _interrupt(proc, times=2)
    assert rc == 130, (rc, err)  # not 134 (abort) or a traceback
    assert "terminate called" not in err and "Traceback" not in err, err
    print(f"stopped {seconds:.2f} s after the first SIGINT")  # the figure (pytest -s)
    assert len(_cached(out)) == 1  # the finished page kept
