"""Allow ``python -m ocrstack``."""

from ocrstack.cli import main

raise SystemExit(main())
