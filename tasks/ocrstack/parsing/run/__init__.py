"""The run: whole documents, not pages.

* :mod:`.pipeline` -- :func:`~.pipeline.run`: inputs, resume cache, pages in flight, outputs;
  returns the :class:`~.outcomes.RunSummary`;
* :mod:`.batch` -- which inputs need work (up to date like make);
* :mod:`.work` -- one document's pages: open, compute or reuse, record;
* :mod:`.outcomes` -- ok / partial / failed per document, ``ocrstack-report.json``, exit codes;
* :mod:`.doclock` -- a lock per output document, so two runs into one ``-o`` do not do the work twice;
* :mod:`.interrupts` -- Ctrl-C: finished pages stay in the page cache;
* :mod:`.progress` -- the progress bar on stderr;
* :mod:`.validate` -- the post-write checks of a written document.
"""
