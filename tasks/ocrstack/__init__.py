"""ocrstack: build, serve, parse and verify document-parsing OCR VLMs.

The package is laid out one module (or sub-package) per stage; see README.md
("Where each guide section lives").
"""

__version__ = "0.1.0"
