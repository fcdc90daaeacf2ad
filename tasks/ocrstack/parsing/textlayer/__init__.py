"""The PDF's own text layer as a source of block text (issue 11 items 1 and 5).

* :mod:`.extract`: PDFium characters with boxes in page pixels at the render DPI;
* :mod:`.soundness`: the per-page verdict (sound or not, with measured reasons);
* :mod:`.vouch`: the layer judged without OCR (words that read as language, ink under its lines);
* :mod:`.lines`: characters -> lines for the OCR path's block assignment;
* :mod:`.stage`: the parse stage: blocks with sound text take it from the layer, the rest
  go to OCR or the server; every block records its ``source``;
* :mod:`.pictures`: text only in the picture of a layer-filled figure block, read by OCR.
"""
