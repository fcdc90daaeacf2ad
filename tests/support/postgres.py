"""The private PostgreSQL cluster of the API tests: :mod:`ocrstack.testing.postgres` (it lives in
the package because ``ocrstack api replicas``, the fault table of ``nox -s load``, starts one too)."""

from ocrstack.testing.postgres import Cluster, bindir, free_port

__all__ = ["Cluster", "bindir", "free_port"]
