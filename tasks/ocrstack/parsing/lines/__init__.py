"""Text lines: the geometry shared by the whole-page readers (the ``rapidocr`` recognizer, the PDF
text layer) and by assembly.

* :mod:`.assign` -- :class:`~.assign.Line`; every line given to one layout block and joined into
  the block's text (rows, columns, paragraph breaks, table-of-contents numbers).
* :mod:`.rotated` -- lines written at 90, 180 or 270 degrees, read in their own frame.
* :mod:`.titles` -- the title rules for ``header`` blocks (ink rows of the page image, line heights).
"""
