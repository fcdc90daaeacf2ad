"""Table structure without a model (issue 11 item 3): :mod:`.born_digital` (ruling lines and
word positions of a PDF page, pdfplumber's table finder) and :mod:`.grid` (rows/columns from
word or OCR-line geometry, also for scans) -> ``<table>`` HTML with spans."""
