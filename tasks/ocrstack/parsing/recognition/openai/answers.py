"""The block-level cache: a server's answer per request body (issue 10, "rerun = resume").

Decoding is greedy (temperature 0), so the same request body -- served model name, prompt, crop
PNG, ``max_tokens``, the prompt set's extra fields -- gives the same answer. Every answered block is
stored under ``ROOT/answers/KK/KEY.json`` (KEY = sha256 of the canonical JSON body); a rerun after
an interruption, or of a page with a failed block, sends only the blocks that have no stored
answer. Failed requests are never stored. A file that cannot be read counts as absent.

ROOT is the page cache directory (``--cache-dir``, default ``OUT/.ocrstack-cache``), so deleting
it forgets both caches.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

#: Sub-directory of the cache root holding the answers.
ANSWERS_DIR = "answers"


def request_key(body: dict[str, Any]) -> str:
    """sha256 (hex) of ``body`` as canonical JSON (sorted keys, no spaces)."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class AnswerCache:
    """Stored answers under ``root / ANSWERS_DIR``. Thread-safe (one file per answer, atomic rename).

    Attributes:
        hits, stores: counters for the run (tests, benchmarks).
    """

    def __init__(self, root: Path) -> None:
        self.dir = Path(root) / ANSWERS_DIR
        self.hits = 0
        self.stores = 0

    def path(self, key: str) -> Path:
        """File of one answer."""
        return self.dir / key[:2] / f"{key}.json"

    def load(self, body: dict[str, Any]) -> tuple[str, str | None] | None:
        """``(text, finish_reason)`` stored for ``body``, or None."""
        try:
            data = json.loads(self.path(request_key(body)).read_text(encoding="utf-8"))
            found = str(data["text"]), data.get("finish_reason")
        except (OSError, ValueError, KeyError, TypeError):
            return None
        self.hits += 1
        return found

    def store(self, body: dict[str, Any], text: str, finish_reason: str | None) -> None:
        """Keep the answer to ``body`` (temporary file + ``os.replace``; a failed write is ignored:
        the cache only saves work)."""
        path = self.path(request_key(body))
        # ASCII JSON: an unpaired surrogate in the answer is kept as "\\udXXX" (issue 25 item 9)
        data = json.dumps({"text": text, "finish_reason": finish_reason})
        tmp = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".answer.", suffix=".tmp", dir=path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(data)
            os.replace(tmp, path)
            self.stores += 1
        except OSError:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
