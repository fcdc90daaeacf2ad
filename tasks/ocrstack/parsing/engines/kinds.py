"""The engine kinds parse knows: kind -> ``"module:factory"`` (data only, imports nothing).

One table per engine family. :mod:`ocrstack.parsing.options` takes its ``--layout`` /
``--recognizer`` choices from here and :mod:`ocrstack.parsing.layout` /
:mod:`ocrstack.parsing.recognition` create engines from here, so neither imports the other
(import-linter's acyclic contract). Adding an engine is one line in the right table (see
:mod:`ocrstack.parsing.engines`). Tests may add a kind with ``monkeypatch.setitem``.
"""

from __future__ import annotations

#: Layout providers (:class:`ocrstack.parsing.engines.LayoutProvider`).
LAYOUTS: dict[str, str] = {
    "rapid-layout": "ocrstack.parsing.layout.rapid:create",
    "pp-doclayout-v3": "ocrstack.parsing.layout.ppdoclayout:create",
    "paddlex": "ocrstack.parsing.layout.paddlex:create",
    "none": "ocrstack.parsing.layout.whole_page:create",
    "vlm": "ocrstack.parsing.layout.vlm:create",
}

#: Recognizers (:class:`ocrstack.parsing.engines.Recognizer`).
RECOGNIZERS: dict[str, str] = {
    "rapidocr": "ocrstack.parsing.recognition.rapidocr.recognizer:create",
    "openai": "ocrstack.parsing.recognition.openai.recognizer:create",
}
