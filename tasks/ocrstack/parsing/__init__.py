"""``ocrstack parse`` (guide 5): documents -> layout -> recognition -> reading order -> Markdown.

Where things are, from the run down to one page:

* The run (whole documents), :mod:`.run`: :mod:`.run.pipeline` -- :func:`~.run.pipeline.run`:
  inputs, resume cache, pages in flight, outputs; :mod:`.run.batch` (which inputs need work, up
  to date like make), :mod:`.run.work` (one document's pages), :mod:`.run.outcomes` (ok / partial
  / failed per document, ``ocrstack-report.json``, exit codes), and the run's helpers (a lock per
  output document, Ctrl-C, the progress bar, post-write checks).
* Shared by both: :mod:`.outputs` (atomic files, output names, blocks.json, overlays) and
  :mod:`.page_cache` (finished pages by input, page and settings hash; the run reads it, a page
  is stored as it finishes), :mod:`.options` (every option declared once: CLI
  flags, HTTP form fields, validation and cache key derive from it), :mod:`.types` (blocks,
  pages, categories), :mod:`.page_result`; :mod:`.documents` (PDFs and images to page images).
* One page: :mod:`.stages` -- the page stages (textlayer, orient, layout, merge, paratext,
  recognise, order, figures; timed per page in blocks.json), each an object with one call
  signature, listed once (:data:`~.stages.STAGES`). What they use: :mod:`.engines` (the engine
  protocol, the kind tables, the registry), :mod:`.layout` and :mod:`.recognition` (the
  engines, one folder per recognizer), :mod:`.textlayer` (the PDF's own text), :mod:`.lines`
  (text-line geometry shared by the text layer, rapidocr and assembly), :mod:`.tables`,
  :mod:`.reading_order`, :mod:`.geometry` and :mod:`.crops` (boxes and crops),
  :mod:`.assembly` (Markdown, OTSL).
"""
