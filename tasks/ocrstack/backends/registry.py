"""Back-end names -> :class:`~ocrstack.backends.base.Backend` (the ``engine`` of a profiles build).

The four built-in back-ends are registered here; :func:`register` adds another (a plugin, or a
test's throwaway back-end), :func:`unregister` takes it away again.
"""

from __future__ import annotations

from ocrstack.backends.base import Backend
from ocrstack.backends.llamacpp import LlamaCpp
from ocrstack.backends.sglang import Sglang
from ocrstack.backends.transformers import Transformers
from ocrstack.backends.vllm import Vllm
from ocrstack.core.errors import ConfigError

_BACKENDS: dict[str, Backend] = {b.name: b for b in (Vllm(), Sglang(), Transformers(), LlamaCpp())}


def register(backend: Backend) -> Backend:
    """Add ``backend`` under its ``name`` and return it.

    Raises:
        ConfigError: a back-end with that name is already registered.
    """
    if backend.name in _BACKENDS:
        raise ConfigError(f"serving back-end '{backend.name}' is already registered", "give it another name")
    _BACKENDS[backend.name] = backend
    return backend


def unregister(name: str) -> None:
    """Remove back-end ``name`` (no error when it is not registered)."""
    _BACKENDS.pop(name, None)


def names() -> tuple[str, ...]:
    """The registered back-end names, built-ins first, in registration order."""
    return tuple(_BACKENDS)


def backends() -> tuple[Backend, ...]:
    """Every registered back-end, in :func:`names` order."""
    return tuple(_BACKENDS.values())


def get(name: str) -> Backend:
    """Return back-end ``name``.

    Raises:
        ConfigError: unknown name; the message lists the registered ones.
    """
    try:
        return _BACKENDS[name]
    except KeyError:
        raise ConfigError(
            f"unknown serving back-end '{name}'",
            f"use one of: {', '.join(_BACKENDS)} (or register it in ocrstack.backends.registry)",
        ) from None
