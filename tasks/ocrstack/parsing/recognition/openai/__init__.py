"""The ``openai`` recognizer: an OpenAI-compatible VLM server reads each block's crop.

* :mod:`.recognizer` -- :class:`~.recognizer.OpenAIRecognizer` and its ``create`` factory;
* :mod:`.prompts` -- the prompt sets per model and category (the ``vlm`` layout asks with them too);
* :mod:`.answers` -- the answer cache, so a rerun sends only the blocks without one.
"""
