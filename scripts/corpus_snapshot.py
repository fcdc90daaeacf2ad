#!/usr/bin/env python3
"""Snapshot the embedded-default output of every dev-corpus file, for before/after comparisons.

Usage (issue 9's "byte-identical before and after a refactor" check)::

    git worktree add /tmp/old <old-commit>
    PYTHONPATH=/tmp/old/tasks .venv-dev/bin/python scripts/corpus_snapshot.py /tmp/snap-old
    .venv-dev/bin/python scripts/corpus_snapshot.py /tmp/snap-new
    diff -r /tmp/snap-old /tmp/snap-new && echo identical

Each input is parsed by ``python -m ocrstack parse FILE -o DIR/NAME`` (the interpreter running this
script, so PYTHONPATH picks the code under test) with the default settings plus ``EXTRA`` arguments
given after ``--``. ``NAME.blocks.json`` is rewritten with sorted keys and without the fields in
:data:`DROPPED`; the page cache (``.ocrstack-cache``, named by its key) is removed; the Markdown is
kept as written. Figure crops are compared by their sha256, listed in ``DIR/files.sha256``.
The corpus is ``../shared/corpus`` (``--corpus``), its ``manifest.json`` names the dev split.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


#: Keys that differ from run to run (``timings``) or change when the code does (``code``: the code
#: fingerprint in ``settings``, and ``settings_hash``, the page-cache key; issue 9 lets cache keys
#: change once).
DROPPED = {"timings", "code", "settings_hash"}


def _strip(value):
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in DROPPED}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="snapshot directory (created; must not exist)")
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    ap.add_argument("--only", action="append", default=[], help="corpus id to include (repeatable)")
    ap.add_argument("extra", nargs="*", help="extra parse arguments, after --")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=False)
    manifest = json.loads((args.corpus / "manifest.json").read_text())
    rc_all = 0
    for entry in manifest:
        if entry["split"] != "dev" or (args.only and entry["id"] not in args.only):
            continue
        src = args.corpus / Path(entry["file"]).name
        dest = args.out / entry["id"]
        cmd = [sys.executable, "-m", "ocrstack", "parse", str(src), "-o", str(dest), "--no-progress"]
        cmd += args.extra
        proc = subprocess.run(cmd, capture_output=True, text=True)
        (args.out / f"{entry['id']}.rc").write_text(f"{proc.returncode}\n")
        print(f"{entry['id']}: exit {proc.returncode}", flush=True)
        rc_all = rc_all or (proc.returncode not in (0, 1, 7))
        for blocks in dest.glob("*.blocks.json"):
            data = _strip(json.loads(blocks.read_text()))
            blocks.write_text(json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    for cache in list(args.out.rglob(".ocrstack-cache")):
        shutil.rmtree(cache)
    lines = []
    for f in sorted(args.out.rglob("*")):
        if f.is_file() and "_files" in f.parent.name:
            lines.append(f"{hashlib.sha256(f.read_bytes()).hexdigest()}  {f.relative_to(args.out)}")
            f.unlink()
    (args.out / "files.sha256").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
