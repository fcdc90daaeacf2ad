"""The dispatcher's tunables and routing modes: plain constants, importable without ``httpx``.

The ``parse`` options (:mod:`ocrstack.parsing.options`) take their defaults and choices from here
so that building the CLI parser imports no HTTP stack; :mod:`~ocrstack.client.dispatch` and
:mod:`~ocrstack.client.routing` use the same values.
"""

from __future__ import annotations

#: In-flight requests per server without ``#capacity`` (``--concurrency``): guide 4.1 serves with
#: ``--max-num-seqs`` of a few sequences, so a handful of requests keeps one server busy.
CONCURRENCY = 4
#: Seconds per request (``--timeout``): guide 8's SDK waited 600 s for a block before giving up.
REQUEST_TIMEOUT = 600.0
#: Counted failures of one request before it is given up (``--retries``; a burst counts once).
RETRIES = 3
#: Backoff: BACKOFF_BASE s doubling to BACKOFF_MAX s, plus up to 25 % of BACKOFF_BASE of jitter.
BACKOFF_BASE = 0.5
BACKOFF_MAX = 8.0
#: Seconds without any answer from any server (while work is pending) before queued requests
#: fail (``--progress-timeout``): 10 minutes covers a restart (guide 4.4: ~3 min first start).
PROGRESS_TIMEOUT = 600.0
#: Routing modes: ``auto`` reads /metrics where it can; ``inflight`` only counts our requests.
MODES = ("auto", "inflight")
