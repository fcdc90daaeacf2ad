"""``ocrstack parse`` (guide 5): documents -> layout -> recognition -> reading order -> Markdown."""
