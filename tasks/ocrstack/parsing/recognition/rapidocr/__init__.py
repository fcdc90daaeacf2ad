"""The ``rapidocr`` recognizer: the embedded CPU OCR (PP-OCR ONNX models from the ``rapidocr`` wheel).

* :mod:`.recognizer` -- :class:`~.recognizer.RapidOcrRecognizer` (whole page read once, lines
  given to blocks, page orientation) and its ``create`` factory;
* :mod:`.reading` -- one image through rapidocr's detector, classifier and recognizer objects;
* :mod:`.reread` -- blocks left empty read again from their crop;
* :mod:`.openvino_rec` -- the opt-in OpenVINO bfloat16 session for the text recognizer.
"""
