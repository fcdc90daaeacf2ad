"""The run's helpers around :func:`ocrstack.parsing.pipeline.run` (whole documents, not pages).

* :mod:`.doclock` -- a lock per output document, so two runs into one ``-o`` do not do the work twice;
* :mod:`.interrupts` -- Ctrl-C: finished pages stay in the page cache;
* :mod:`.progress` -- the progress bar on stderr;
* :mod:`.validate` -- the post-write checks of a written document.
"""
