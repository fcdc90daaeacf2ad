"""Tests for ocrstack.fetch against real HTTP servers on 127.0.0.1 (in-process threads).

* a file server that honours Range, can cut a response short, answer 5xx or ignore Range;
* a minimal Hugging Face hub (the three endpoints huggingface_hub 2.x calls for
  ``snapshot_download``) reached through ``HF_ENDPOINT`` like a mirror (guide 3.4).
Tarballs and model directories are built by the tests.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import tarfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ocrstack.cli import main
from ocrstack.core.errors import (
    CheckFailed,
    ConfigError,
    InputError,
    ServerRejected,
    ServerUnreachable,
    StepFailed,
)
from ocrstack.core.results import Status
from ocrstack.fetch import catalog, http
from ocrstack.fetch.layout import export_line, fetch_layout
from ocrstack.fetch.models import fetch_models
from ocrstack.fetch.options import LayoutFetchOptions, ModelFetchOptions
from ocrstack.fetch.verify import (
    BAD_MARKER,
    PROVENANCE,
    bad_reason,
    check_layout_dir,
    require_layout_dir,
    verify_models,
)

# ---------------------------------------------------------------- servers


@dataclass
class Behaviour:
    files: dict[str, bytes] = field(default_factory=dict)
    cut_after: dict[str, list[int]] = field(default_factory=dict)  # per GET: send only N bytes, then close
    errors: dict[str, list[int]] = field(default_factory=dict)  # per GET: answer this status first
    ignore_range: set[str] = field(default_factory=set)
    drop: dict[str, int] = field(default_factory=dict)  # close this many GETs without any response (reset)
    log: list[tuple[str, str, str | None]] = field(default_factory=list)


def _handler(b: Behaviour):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # quiet
            pass

        def do_GET(self) -> None:  # http.server API
            path = self.path.split("?")[0]
            rng = self.headers.get("Range")
            b.log.append(("GET", path, rng))
            if b.drop.get(path):
                b.drop[path] -= 1
                self.close_connection = True
                return
            if b.errors.get(path):
                code = b.errors[path].pop(0)
                self.send_response(code)
                if code == 429:
                    self.send_header("Retry-After", "3")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            data = b.files.get(path)
            if data is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            start = 0
            m = re.fullmatch(r"bytes=(\d+)-", rng or "")
            if m and path not in b.ignore_range:
                start = int(m.group(1))
                if start >= len(data):
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{len(data)}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            else:
                self.send_response(200)
            body = data[start:]
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()
            cut = b.cut_after.get(path)
            if cut:
                n = cut.pop(0)
                self.wfile.write(body[:n])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(body)

    return Handler


@pytest.fixture
def file_server() -> Iterator[tuple[str, Behaviour]]:
    beh = Behaviour()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _handler(beh))
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_port}", beh
    finally:
        srv.shutdown()
        srv.server_close()


def _blob(n: int, seed: int = 1) -> bytes:
    out = bytearray()
    h = hashlib.sha256(str(seed).encode()).digest()
    while len(out) < n:
        h = hashlib.sha256(h).digest()
        out += h
    return bytes(out[:n])


# ---------------------------------------------------------------- resumable download


@pytest.mark.server
def test_interrupted_download_resumes_with_range(file_server, tmp_path: Path) -> None:
    url, beh = file_server
    data = _blob(300_000)
    beh.files["/m.tar"] = data
    beh.cut_after["/m.tar"] = [120_000]
    out = http.download(f"{url}/m.tar", tmp_path / "m.tar", retries=3, backoff=0)
    assert out.read_bytes() == data
    assert [r for _, p, r in beh.log if p == "/m.tar"] == [None, "bytes=120000-"]
    assert not (tmp_path / "m.tar.part").exists()


@pytest.mark.server
def test_existing_part_file_is_resumed(file_server, tmp_path: Path) -> None:
    url, beh = file_server
    data = _blob(50_000)
    beh.files["/f"] = data
    (tmp_path / "f.part").write_bytes(data[:10_000])
    http.download(f"{url}/f", tmp_path / "f", retries=0)
    assert (tmp_path / "f").read_bytes() == data
    assert beh.log == [("GET", "/f", "bytes=10000-")]


@pytest.mark.server
def test_complete_part_file_416_is_accepted(file_server, tmp_path: Path) -> None:
    url, beh = file_server
    data = _blob(4_000)
    beh.files["/f"] = data
    (tmp_path / "f.part").write_bytes(data)
    http.download(f"{url}/f", tmp_path / "f", retries=0)
    assert (tmp_path / "f").read_bytes() == data


@pytest.mark.server
def test_server_ignoring_range_restarts_from_zero(file_server, tmp_path: Path) -> None:
    url, beh = file_server
    data = _blob(20_000)
    beh.files["/f"] = data
    beh.ignore_range.add("/f")
    (tmp_path / "f.part").write_bytes(b"garbage-not-a-prefix")
    http.download(f"{url}/f", tmp_path / "f", retries=0)
    assert (tmp_path / "f").read_bytes() == data


@pytest.mark.server
def test_5xx_is_retried(file_server, tmp_path: Path) -> None:
    url, beh = file_server
    beh.files["/f"] = b"hello"
    beh.errors["/f"] = [503, 502]
    http.download(f"{url}/f", tmp_path / "f", retries=3, backoff=0)
    assert (tmp_path / "f").read_bytes() == b"hello"
    assert len(beh.log) == 3


@pytest.mark.server
def test_4xx_is_never_retried(file_server, tmp_path: Path) -> None:
    url, beh = file_server
    with pytest.raises(ServerRejected) as err:
        http.download(f"{url}/missing.tar", tmp_path / "x", retries=5, backoff=0)
    assert err.value.status == 404
    assert len(beh.log) == 1


@pytest.mark.server
def test_retries_exhausted_keep_the_part(file_server, tmp_path: Path) -> None:
    url, beh = file_server
    beh.files["/f"] = _blob(10_000)
    beh.cut_after["/f"] = [1000, 1000, 1000]
    with pytest.raises(StepFailed, match="rerun the same command to resume"):
        http.download(f"{url}/f", tmp_path / "f", retries=2, backoff=0)
    assert (tmp_path / "f.part").stat().st_size == 3000
    assert not (tmp_path / "f").exists()


@pytest.fixture
def refused_url() -> Iterator[str]:
    """A URL on 127.0.0.1 whose port is bound but not listening: every connect is refused."""
    import socket

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))  # held (no listen) so no other test can take the port meanwhile
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/x.tar"
    finally:
        sock.close()


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Record the download's waits instead of sleeping."""
    waits: list[float] = []
    monkeypatch.setattr("time.sleep", waits.append)  # stamina (tenacity) sleeps through time.sleep
    return waits


def test_refused_connection_fails_at_once(refused_url: str, tmp_path: Path, sleeps) -> None:
    import httpx

    sent: list[str] = []
    client = httpx.Client(event_hooks={"request": [lambda r: sent.append(str(r.url))]})
    with pytest.raises(ServerUnreachable) as err:
        http.download(refused_url, tmp_path / "x.tar", retries=5, backoff=1.0, client=client)
    assert len(sent) == 1 and sleeps == []  # not 1 + 2 + 4 + 8 + 16 s of backoff (issue 10 item 9)
    assert "connection refused by 127.0.0.1" in err.value.message
    assert ".part" not in err.value.render()  # nothing was downloaded: no resume advice


def test_refused_connection_mentions_the_part_file_only_when_it_exists(
    refused_url: str, tmp_path: Path, sleeps
) -> None:
    (tmp_path / "x.tar.part").write_bytes(b"12345")
    with pytest.raises(ServerUnreachable) as err:
        http.download(refused_url, tmp_path / "x.tar", retries=5, backoff=1.0)
    assert f"resume from {tmp_path / 'x.tar.part'} (5 bytes kept)" in err.value.render()


@pytest.mark.server
def test_connection_resets_still_get_every_retry_with_backoff(file_server, tmp_path: Path, sleeps) -> None:
    url, beh = file_server
    beh.files["/f"] = b"payload"
    beh.drop["/f"] = 3
    http.download(f"{url}/f", tmp_path / "f", retries=3, backoff=1.0)
    assert (tmp_path / "f").read_bytes() == b"payload"
    assert len(sleeps) == 3 and len(beh.log) == 4
    for wait, base in zip(sleeps, (1.0, 2.0, 4.0), strict=True):  # exponential, up to 25 % jitter
        assert base <= wait <= base * 1.25


def test_dns_failure_fails_at_once(tmp_path: Path, sleeps) -> None:
    """RFC 6761: names under .invalid never resolve; the old code retried them for ~31 s."""
    import httpx

    client = httpx.Client(trust_env=False)
    with pytest.raises(ServerUnreachable) as err:
        http.download(
            "http://ocrstack-test.invalid/x.tar", tmp_path / "x.tar", retries=5, backoff=1.0, client=client
        )
    assert sleeps == [] and "not resolved (DNS failure" in err.value.message


def test_failed_download_leaves_no_empty_destination(refused_url: str, tmp_path: Path, sleeps) -> None:
    with pytest.raises(ServerUnreachable):
        http.download(refused_url, tmp_path / "new" / "deeper" / "x.tar")
    assert list(tmp_path.iterdir()) == []  # both created folders removed again
    (tmp_path / "kept").mkdir()
    with pytest.raises(ServerUnreachable):
        http.download(refused_url, tmp_path / "kept" / "x.tar")
    assert (tmp_path / "kept").is_dir()  # it existed before: not ours to remove


@pytest.mark.server
def test_4xx_leaves_no_empty_destination(file_server, tmp_path: Path) -> None:
    url, _ = file_server
    with pytest.raises(ServerRejected):
        http.download(f"{url}/missing.tar", tmp_path / "new" / "x.tar")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.server
def test_429_is_retried_after_retry_after_seconds(file_server, tmp_path: Path, sleeps) -> None:
    url, beh = file_server
    beh.files["/f"] = b"payload"
    beh.errors["/f"] = [429]
    http.download(f"{url}/f", tmp_path / "f", retries=3, backoff=1.0)
    assert (tmp_path / "f").read_bytes() == b"payload"
    assert sleeps == [3.0]  # the server's Retry-After: 3, not the 1 s backoff


@pytest.mark.server
def test_other_4xx_get_no_retry(file_server, tmp_path: Path, sleeps) -> None:
    url, beh = file_server
    beh.files["/f"] = b"payload"
    beh.errors["/f"] = [403]
    with pytest.raises(ServerRejected):
        http.download(f"{url}/f", tmp_path / "f", retries=3, backoff=1.0)
    assert sleeps == [] and len(beh.log) == 1


@pytest.mark.server
def test_exhausted_retries_without_a_part_give_no_resume_advice(file_server, tmp_path: Path, sleeps) -> None:
    url, beh = file_server
    beh.files["/f"] = b"x"
    beh.errors["/f"] = [503, 503]
    with pytest.raises(StepFailed) as err:
        http.download(f"{url}/f", tmp_path / "f", retries=1)
    assert (
        "after 2 attempts" in err.value.message
        and "HTTP 503" in err.value.message
        and ".part" not in err.value.render()
    )


def test_cli_fetch_layout_refused_exits_5_quickly(refused_url: str, tmp_path: Path, sleeps, capsys) -> None:
    rc = main(["fetch", "layout", "--dest", str(tmp_path), "--url", refused_url])
    err = capsys.readouterr().err
    assert rc == ServerUnreachable.exit_code
    assert "connection refused" in err and "x.tar.part" not in err
    assert sleeps == []


# ---------------------------------------------------------------- layout tarball


def _tar(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


PADDLE = {
    "PP-DocLayoutV3_infer/inference.pdiparams": _blob(5000),
    "PP-DocLayoutV3_infer/inference.json": b'{"base_code": {}}',
    "PP-DocLayoutV3_infer/inference.yml": b"Global:\n  model_name: PP-DocLayoutV3\n",
}


@pytest.mark.server
def test_fetch_layout_end_to_end(file_server, tmp_path: Path) -> None:
    url, beh = file_server
    beh.files["/PP-DocLayoutV3_infer.tar"] = _tar(PADDLE)
    beh.cut_after["/PP-DocLayoutV3_infer.tar"] = [3000]
    target, report = fetch_layout(
        LayoutFetchOptions(dest=tmp_path, url=f"{url}/PP-DocLayoutV3_infer.tar"), backoff=0
    )
    assert report.ok and target == tmp_path / "PP-DocLayoutV3_infer"
    assert (target / "inference.pdiparams").read_bytes() == PADDLE["PP-DocLayoutV3_infer/inference.pdiparams"]
    assert export_line(target) == f"export OCR_LAYOUT_MODEL_DIR={target.resolve()}"
    assert not (tmp_path / "PP-DocLayoutV3_infer.tar").exists()
    assert not list(tmp_path.glob(".extract-*"))
    # second run: nothing downloaded again
    n = len(beh.log)
    fetch_layout(LayoutFetchOptions(dest=tmp_path, url=f"{url}/PP-DocLayoutV3_infer.tar"))
    assert len(beh.log) == n


@pytest.mark.server
def test_tar_with_parent_member_is_refused(file_server, tmp_path: Path) -> None:
    url, beh = file_server
    beh.files["/PP-DocLayoutV3_infer.tar"] = _tar({**PADDLE, "../evil.txt": b"pwned"})
    dest = tmp_path / "dest"
    with pytest.raises(InputError, match="unsafe archive member"):
        fetch_layout(LayoutFetchOptions(dest=dest, url=f"{url}/PP-DocLayoutV3_infer.tar"), backoff=0)
    assert not (tmp_path / "evil.txt").exists()
    assert not (dest / "PP-DocLayoutV3_infer").exists()
    assert not list(dest.glob(".extract-*"))


@pytest.mark.server
def test_safetensors_tarball_is_rejected_with_guide_explanation(file_server, tmp_path: Path) -> None:
    url, beh = file_server
    beh.files["/PP-DocLayoutV3_infer.tar"] = _tar(
        {"PP-DocLayoutV3/model.safetensors": b"x", "PP-DocLayoutV3/config.json": b"{}"}
    )
    with pytest.raises(InputError, match="not a Paddle inference model") as err:
        fetch_layout(LayoutFetchOptions(dest=tmp_path, url=f"{url}/PP-DocLayoutV3_infer.tar"), backoff=0)
    assert "not a safetensors directory (guide 3.4)" in err.value.render()


def test_safetensors_dir_given_as_layout_dir(tmp_path: Path) -> None:
    hf = tmp_path / "PP-DocLayoutV3"
    hf.mkdir()
    (hf / "model.safetensors").write_bytes(b"x")
    (hf / "config.json").write_text("{}")
    c = check_layout_dir(hf)
    assert c.status is Status.FAIL and "safetensors" in c.detail and "inference.pdiparams" in c.fix
    with pytest.raises(ConfigError, match="safetensors"):
        require_layout_dir(hf)


def test_incomplete_existing_layout_dir_is_not_overwritten(tmp_path: Path) -> None:
    target = tmp_path / "PP-DocLayoutV3_infer"
    target.mkdir()
    (target / "inference.yml").write_text("mine")
    with pytest.raises(ConfigError, match="nothing is overwritten"):
        fetch_layout(LayoutFetchOptions(dest=tmp_path, url="http://127.0.0.1:9/never"))
    assert (target / "inference.yml").read_text() == "mine"


def test_catalog_url_is_the_guide_url(shared: Path) -> None:
    guide = (shared / "seeds/000_a6ffb5c9f36940fa.txt").read_text(encoding="utf-8")
    spec = catalog.layouts()["PP-DocLayoutV3"]
    assert spec.url in guide
    for f in spec.required:
        assert f in guide
    for f in catalog.model("MiniCPM-OCR-1.0").required:
        assert f"`{f}`" in guide


# ---------------------------------------------------------------- model checks


def _main_dir(root: Path, weights: bytes = b"main-weights") -> Path:
    d = root / "MiniCPM-OCR-1.0"
    d.mkdir(parents=True)
    for f in catalog.model("MiniCPM-OCR-1.0").required:
        (d / f).write_bytes(weights if f == "model.safetensors" else b"{}")
    return d


def _draft_dir(root: Path, weights: bytes = b"draft-weights", manifest: dict | None = None) -> Path:
    d = root / "MiniCPM-OCR-1.0-DSpark"
    d.mkdir(parents=True)
    (d / "model.safetensors").write_bytes(weights)
    (d / "release_manifest.json").write_text(
        json.dumps(
            manifest if manifest is not None else {"weight_sha256": hashlib.sha256(weights).hexdigest()}
        )
    )
    return d


def _verify(root: Path):
    main_spec, draft_spec = catalog.model("MiniCPM-OCR-1.0"), catalog.model("MiniCPM-OCR-1.0-DSpark")
    return verify_models(root / main_spec.name, main_spec, root / draft_spec.name, draft_spec)


def _status(report) -> dict[str, Status]:
    return {c.name: c.status for c in report.checks}


def test_good_pair_passes_but_release_is_not_claimed(tmp_path: Path) -> None:
    _main_dir(tmp_path)
    _draft_dir(tmp_path)
    report = _verify(tmp_path)
    s = _status(report)
    assert s["MiniCPM-OCR-1.0:files"] is Status.PASS
    assert s["MiniCPM-OCR-1.0-DSpark:sha256"] is Status.PASS
    assert s["MiniCPM-OCR-1.0-DSpark:same-release"] is Status.NOT_RUN  # manifest names no main identity
    assert report.ok


def test_draft_sha_mismatch_marks_bad_and_keeps_files(tmp_path: Path) -> None:
    _main_dir(tmp_path)
    draft = _draft_dir(tmp_path, manifest={"weight_sha256": "0" * 64})
    report = _verify(tmp_path)
    assert _status(report)["MiniCPM-OCR-1.0-DSpark:sha256"] is Status.FAIL and not report.ok
    assert (draft / "model.safetensors").read_bytes() == b"draft-weights"
    assert "sha256" in (bad_reason(draft) or "")
    # fixing the manifest and rerunning clears the mark
    (draft / "release_manifest.json").write_text(
        json.dumps({"weight_sha256": hashlib.sha256(b"draft-weights").hexdigest()})
    )
    assert _verify(tmp_path).ok and bad_reason(draft) is None


def test_main_from_another_release_marks_both(tmp_path: Path) -> None:
    main_dir = _main_dir(tmp_path, weights=b"other-release-main")
    draft = _draft_dir(
        tmp_path,
        manifest={
            "weight_sha256": hashlib.sha256(b"draft-weights").hexdigest(),
            "main_weight_sha256": hashlib.sha256(b"main-weights").hexdigest(),
        },
    )
    report = _verify(tmp_path)
    assert _status(report)["MiniCPM-OCR-1.0-DSpark:same-release"] is Status.FAIL
    assert bad_reason(draft) and bad_reason(main_dir)
    assert (main_dir / "model.safetensors").exists()


def test_release_ids_compared_when_both_manifests_have_one(tmp_path: Path) -> None:
    main_dir = _main_dir(tmp_path)
    (main_dir / "release_manifest.json").write_text(json.dumps({"release": "2026-10-01"}))
    _draft_dir(
        tmp_path,
        manifest={"weight_sha256": hashlib.sha256(b"draft-weights").hexdigest(), "release": "2026-10-01"},
    )
    assert _status(_verify(tmp_path))["MiniCPM-OCR-1.0-DSpark:same-release"] is Status.PASS


def test_missing_main_files(tmp_path: Path) -> None:
    main_dir = _main_dir(tmp_path)
    (main_dir / "chat_template.jinja").unlink()
    _draft_dir(tmp_path)
    report = _verify(tmp_path)
    assert _status(report)["MiniCPM-OCR-1.0:files"] is Status.FAIL
    assert "chat_template.jinja" in (bad_reason(main_dir) or "")


# ---------------------------------------------------------------- huggingface_hub against a local hub


def _hub_handler(repos: dict[str, dict[str, bytes]], log: list[str]):
    sha = "0123456789abcdef0123456789abcdef01234567"

    class Hub(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def _send(self, code: int, body: bytes = b"", headers: dict | None = None) -> None:
            self.send_response(code)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_HEAD(self) -> None:
            self.do_GET()

        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            log.append(f"{self.command} {path}")
            m = re.fullmatch(r"/api/models/([^/]+/[^/]+)/(revision|tree)/([^/]+)", path)
            if m:
                files = repos.get(m.group(1))
                if files is None:
                    return self._send(
                        404, b'{"error":"Repository not found"}', {"X-Error-Code": "RepoNotFound"}
                    )
                if m.group(2) == "revision":
                    body = {"id": m.group(1), "sha": sha, "siblings": [{"rfilename": f} for f in files]}
                else:
                    body = [
                        {"type": "file", "oid": hashlib.sha1(v).hexdigest(), "size": len(v), "path": f}
                        for f, v in files.items()
                    ]
                return self._send(200, json.dumps(body).encode(), {"Content-Type": "application/json"})
            m = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
            if m and m.group(1) in repos and m.group(3) in repos[m.group(1)]:
                data = repos[m.group(1)][m.group(3)]
                return self._send(
                    200, data, {"X-Repo-Commit": sha, "ETag": f'"{hashlib.sha256(data).hexdigest()}"'}
                )
            return self._send(404, b"", {"X-Error-Code": "EntryNotFound"})

    return Hub, sha


@pytest.fixture
def local_hub(monkeypatch: pytest.MonkeyPatch):
    main_files = {
        f: (b"W" * 2048 if f == "model.safetensors" else b"{}")
        for f in catalog.model("MiniCPM-OCR-1.0").required
    }
    draft_w = b"D" * 1024
    repos = {
        "openbmb/MiniCPM-OCR-1.0": main_files,
        "openbmb/MiniCPM-OCR-1.0-DSpark": {
            "model.safetensors": draft_w,
            "release_manifest.json": json.dumps(
                {"weight_sha256": hashlib.sha256(draft_w).hexdigest()}
            ).encode(),
            "config.json": b"{}",
        },
    }
    log: list[str] = []
    handler, sha = _hub_handler(repos, log)
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{srv.server_port}")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    try:
        yield repos, log, sha
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.mark.server
def test_fetch_models_through_hf_endpoint_mirror(local_hub, tmp_path: Path) -> None:
    repos, log, sha = local_hub
    report = fetch_models(ModelFetchOptions(dest=tmp_path))
    assert report.ok, report.to_text()
    main_dir = tmp_path / "MiniCPM-OCR-1.0"
    for f, data in repos["openbmb/MiniCPM-OCR-1.0"].items():
        assert (main_dir / f).read_bytes() == data
    prov = json.loads((main_dir / PROVENANCE).read_text())
    assert prov["commit"] == sha and prov["endpoint"].startswith("http://127.0.0.1:")
    assert any(line.startswith("GET /openbmb/MiniCPM-OCR-1.0-DSpark/resolve/") for line in log)
    assert _status(report)["MiniCPM-OCR-1.0-DSpark:sha256"] is Status.PASS


@pytest.mark.server
def test_fetch_models_unknown_repo_is_rejected(local_hub, tmp_path: Path) -> None:
    with pytest.raises(ServerRejected):
        fetch_models(
            ModelFetchOptions(dest=tmp_path, repo_overrides=(("MiniCPM-OCR-1.0", "nobody/nothing"),))
        )
    assert not (tmp_path / "MiniCPM-OCR-1.0").exists()  # issue 10 item 9: no empty models/NAME left


@pytest.mark.server
def test_failed_fetch_keeps_a_directory_that_existed(local_hub, tmp_path: Path) -> None:
    (tmp_path / "MiniCPM-OCR-1.0").mkdir()
    with pytest.raises(ServerRejected):
        fetch_models(
            ModelFetchOptions(dest=tmp_path, repo_overrides=(("MiniCPM-OCR-1.0", "nobody/nothing"),))
        )
    assert (tmp_path / "MiniCPM-OCR-1.0").is_dir()


def test_modelscope_missing_is_a_config_error(tmp_path: Path) -> None:
    try:
        import modelscope  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigError, match="pip install modelscope"):
            fetch_models(
                ModelFetchOptions(
                    dest=tmp_path,
                    source="modelscope",
                    repo_overrides=(
                        ("MiniCPM-OCR-1.0", "OpenBMB/x"),
                        ("MiniCPM-OCR-1.0-DSpark", "OpenBMB/y"),
                    ),
                )
            )
    else:
        pytest.skip("modelscope is installed here; the missing-module path cannot be exercised")


# ---------------------------------------------------------------- CLI


@pytest.mark.server
def test_cli_layout_prints_export(file_server, tmp_path: Path, capsys) -> None:
    url, beh = file_server
    beh.files["/PP-DocLayoutV3_infer.tar"] = _tar(PADDLE)
    rc = main(["fetch", "layout", "--dest", str(tmp_path), "--url", f"{url}/PP-DocLayoutV3_infer.tar"])
    assert rc == 0
    assert (
        f"export OCR_LAYOUT_MODEL_DIR={(tmp_path / 'PP-DocLayoutV3_infer').resolve()}"
        in capsys.readouterr().out
    )


def test_cli_check_fails_on_bad_draft(tmp_path: Path, capsys) -> None:
    _main_dir(tmp_path)
    _draft_dir(tmp_path, manifest={"weight_sha256": "f" * 64})
    rc = main(["fetch", "check", "--dest", str(tmp_path), "--json"])
    assert rc == CheckFailed.exit_code
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False
    assert (tmp_path / "MiniCPM-OCR-1.0-DSpark" / BAD_MARKER).is_file()


def test_modelscope_needs_explicit_repo_ids(tmp_path: Path) -> None:
    """guide 3.4 gives the ModelScope id only as <MS_REPO_ID>: ocrstack asks instead of guessing."""
    from ocrstack.core.errors import UsageError

    with pytest.raises(UsageError, match="MS_REPO_ID"):
        fetch_models(ModelFetchOptions(dest=tmp_path, source="modelscope"))
