"""Assembly: page results -> Markdown (:mod:`.markdown`); OTSL tables -> HTML (:mod:`.otsl`)."""

from ocrstack.parsing.assembly.markdown import Assembly, escape_text, render_document, render_page

__all__ = ["Assembly", "escape_text", "render_document", "render_page"]
