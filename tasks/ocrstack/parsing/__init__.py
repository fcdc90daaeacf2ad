"""``ocrstack parse`` (guide 5): documents -> layout -> recognition -> reading order -> Markdown.

Where things are:

* :mod:`.options` -- every option declared once (CLI flags, HTTP form fields, validation, cache
  key derive from it); per-engine option classes (``LayoutOptions``, ``OpenAIOptions``).
* :mod:`.pipeline` -- :func:`~.pipeline.run`: inputs, resume cache, pages in flight, outputs;
  :mod:`.batch` (which inputs need work, up to date like make), :mod:`.outcomes` (ok / partial /
  failed per document, ``ocrstack-report.json``, exit codes), :mod:`.doclock` (a lock per
  output document), :mod:`.interrupts` (Ctrl-C).
* :mod:`.stages` -- one page as the stages textlayer, orient, layout, merge, paratext, recognise,
  order, figures (:data:`~.stages.STAGES`; timed per page in blocks.json).
* :mod:`.engines` -- the engine protocol (``LayoutProvider``, ``Recognizer`` base classes);
  engines in :mod:`.layout` and :mod:`.recognition`, chosen through their registries.
* :mod:`.documents` -- PDFs and images to page images; :mod:`.assembly` -- Markdown, OTSL;
  :mod:`.outputs` -- files, resume cache, blocks.json; :mod:`.validate` -- post-write checks.
"""
