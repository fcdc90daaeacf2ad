"""Serving back-ends (vLLM, SGLang, ``transformers serve``, llama.cpp) behind one interface.

Everything that differs between back-ends lives here and nowhere else: how a server
environment's build is recognised (version expectations), whether it needs a GPU, which
parser checks its flags, its ``/metrics`` queue gauges and the doctor rules that concern only
it (:class:`ocrstack.backends.base.Backend`, one module each). :mod:`ocrstack.backends.registry`
maps the ``engine`` names of ``serve_profiles.yaml`` builds to them, and
:mod:`ocrstack.backends.profiles` loads that file once into typed objects (schema:
:mod:`ocrstack.backends.schema`). A new back-end is one module plus data: a
:class:`~ocrstack.backends.base.Backend` subclass registered in the registry and a build /
profile in the profiles file (tests/backends/test_new_backend.py proves it).
"""
