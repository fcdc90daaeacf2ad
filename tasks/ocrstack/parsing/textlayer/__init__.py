"""The PDF's own text layer as a source of block text (issue 11 items 1 and 5).

* :mod:`.extract`: PDFium characters with boxes in page pixels at the render DPI;
* :mod:`.soundness`: the per-page verdict (sound or not, with measured reasons);
* :mod:`.lines`: characters -> lines for the OCR path's block assignment;
* :mod:`.stage`: the parse stage: blocks with sound text take it from the layer, the rest
  go to OCR or the server; every block records its ``source``.
"""

from __future__ import annotations

from enum import Enum


class TextLayerMode(str, Enum):
    """The ``--text-layer`` modes, the one place their strings are spelled: the values are the CLI
    choices, the HTTP form values and the cache-key strings. ``auto`` uses a page's layer where
    it is measured sound (and the font sample agrees), ``on`` wherever it is present (an OCR layer
    over a scan too; the reasons are kept as "used anyway"), ``off`` never (OCR every page).

    A mode compares equal to its string (``"on" == TextLayerMode.ON``), so options carry the plain
    string and code compares against these members.
    """

    AUTO = "auto"
    ON = "on"
    OFF = "off"
