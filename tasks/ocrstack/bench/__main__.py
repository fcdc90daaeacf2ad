"""``python -m ocrstack.bench --rss-child PDF OUT URL DPI CONCURRENCY``: the child of the peak-RSS rows;
``python -m ocrstack.bench --peer-child TOOL MODE OUT PDF...``: the child of the born-digital peers
table (:mod:`ocrstack.bench.peer_child`)."""

from __future__ import annotations

import sys

from ocrstack.bench.rss import rss_child

if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--rss-child":
        sys.exit(rss_child(sys.argv[2:]))
    if len(sys.argv) > 1 and sys.argv[1] == "--peer-child":
        from ocrstack.bench.peer_child import peer_child

        sys.exit(peer_child(sys.argv[2:]))
    print("usage: ocrstack bench [--quick] [--json]", file=sys.stderr)
    sys.exit(2)
