"""pdfplumber's table finder (``pdfplumber.table.TableFinder``) without pdfplumber's package import.

The born-digital table path gives the finder explicit edges only
(:func:`ocrstack.parsing.tables.born_digital._plumber`): it runs pdfplumber's pure geometry (snap
and join the edges, their intersections, the cells, the tables) and reads nothing of a page.
``import pdfplumber`` imports pdfminer.six and pdfplumber's whole API besides: 20 MiB resident
and about 0.15 s in a fresh process, on the born-digital parse whose peak memory issue 21 bounds
(250 MiB). :func:`table_module` runs pdfplumber's own ``table.py`` from the installed wheel in a
private package, with the wheel's ``_typing.py`` and the three ``utils`` modules it needs
(``clustering``, ``generic``, ``geometry``: standard library only; ``utils/__init__`` would add
``pdfinternals`` and ``text``, which import pdfminer). Nothing is copied: a pdfplumber upgrade
brings its finder along, and tests/parsing/test_table_rules.py compares the two on grids.
Where the files are not laid out so (another pdfplumber layout), the package is imported.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import types
from pathlib import Path
from typing import Any

#: The private package's name in ``sys.modules``.
PACKAGE = "ocrstack_pdfplumber_finder"
#: The ``utils`` modules table.py's helpers come from (pdfplumber 0.11).
UTILS = ("clustering", "generic", "geometry")

_lock = threading.Lock()


def table_module() -> Any:
    """pdfplumber's ``table`` module (``TableFinder``, ``TableSettings``), loaded once as described
    in the module docstring, else ``pdfplumber.table`` itself.

    Raises:
        ImportError: pdfplumber is not installed.
    """
    with _lock:
        loaded = sys.modules.get(f"{PACKAGE}.table")
        if loaded is not None:
            return loaded
        spec = importlib.util.find_spec("pdfplumber")  # finds the package without running it
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("pdfplumber is not installed (the sdk extra has it)")
        root = Path(next(iter(spec.submodule_search_locations)))
        try:
            return _load(root)
        except (OSError, ImportError, SyntaxError, AttributeError):
            for name in [n for n in sys.modules if n == PACKAGE or n.startswith(f"{PACKAGE}.")]:
                del sys.modules[name]
            import pdfplumber.table

            return pdfplumber.table


def explicit_tables(module: Any, vertical: list[dict], horizontal: list[dict]) -> list[Any]:
    """The tables ``module.TableFinder`` (pdfplumber's ``table`` module, ours or its own) finds
    on explicit edges only: pdfplumber edge dicts (``x0``, ``top``, ``x1``, ``bottom``,
    ``orientation`` ...; points). Each table has ``cells``, ``(x0, top, x1, bottom)`` points."""
    settings = {
        "vertical_strategy": "explicit",
        "horizontal_strategy": "explicit",
        "explicit_vertical_lines": vertical,
        "explicit_horizontal_lines": horizontal,
    }
    return module.TableFinder(None, module.TableSettings.resolve(settings)).tables


def _module(name: str, path: Path, package: bool = False) -> types.ModuleType:
    """Run ``path`` as module ``PACKAGE.name`` (a package's ``__init__`` when ``package``)."""
    full = f"{PACKAGE}.{name}" if name else PACKAGE
    if package:
        module = types.ModuleType(full)
        module.__path__ = [str(path)]  # relative imports resolve through sys.modules
        sys.modules[full] = module
        return module
    spec = importlib.util.spec_from_file_location(full, path)
    if spec is None or spec.loader is None or not path.is_file():
        raise ImportError(f"{path} not found in the pdfplumber wheel")
    module = importlib.util.module_from_spec(spec)
    sys.modules[full] = module
    spec.loader.exec_module(module)
    return module


def _load(root: Path) -> types.ModuleType:
    _module("", root, package=True)
    _module("_typing", root / "_typing.py")
    utils = _module("utils", root / "utils", package=True)
    for name in UTILS:
        part = _module(f"utils.{name}", root / "utils" / f"{name}.py")
        for attr, value in vars(part).items():
            if not attr.startswith("_"):
                setattr(utils, attr, value)
    return _module("table", root / "table.py")
