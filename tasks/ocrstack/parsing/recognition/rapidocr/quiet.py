"""rapidocr's own log lines kept off the CLI's output (its WARNINGs are expected conditions
ocrstack reports itself)."""

from __future__ import annotations

import logging

__all__ = ["RAPIDOCR_LOGGER", "quiet_rapidocr_warnings"]

#: rapidocr's logger (rapidocr/utils/log.py: ``Logger(logger_name="RapidOCR")``, own stderr
#: handler, ``propagate = False``).
RAPIDOCR_LOGGER = "RapidOCR"
log = logging.getLogger("ocrstack.rapidocr")


class _Demote(logging.Filter):
    """Re-log rapidocr records below ERROR on ``ocrstack.rapidocr`` at DEBUG and drop them.

    rapidocr logs expected conditions as WARNING on its own stderr handler (e.g. "The text
    detection result is empty" for a blank page, which ocrstack reports itself as an empty
    page), and those lines broke the CLI's output. ERROR and above pass unchanged.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR:
            return True
        log.debug("rapidocr %s: %s", record.levelname.lower(), record.getMessage())
        return False


def quiet_rapidocr_warnings() -> None:
    """Install :class:`_Demote` on rapidocr's logger (once)."""
    logger = logging.getLogger(RAPIDOCR_LOGGER)
    if not any(isinstance(f, _Demote) for f in logger.filters):
        logger.addFilter(_Demote())
