"""dtri: exact triangle counting and the analytics built on triangles, as a Dask pipeline.

The same pipeline runs on pandas/NumPy partitions and on cuDF/CuPy partitions (GPUs). A graph
is prepared once on the workers (:func:`prepare`) and analysed many times: the triangle count,
triangles per vertex, clustering, transitivity, edge support and k-truss.

The names below are imported on first use, so ``import dtri`` (and ``dtri --help``) costs no
Dask, NumPy or pandas import. ``import dtri`` registers dtri's ``dask.config`` defaults
(:mod:`dtri.config`) once: at once where Dask is imported already, else the moment
``dask.config`` is imported; a ``dtri.*`` key set in a ``with dask.config.set(...)`` block
then leaves the other defaults in place when the block ends.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from typing import TYPE_CHECKING, Any

from dtri.version import VERSION


class _DefaultsWhenDaskConfigLoads(importlib.abc.MetaPathFinder):
    """Registers dtri's ``dask.config`` defaults (:mod:`dtri.config`) the moment
    ``dask.config`` is imported after ``import dtri``: once, for every module of dtri."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != "dask.config":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            run = spec.loader.exec_module

            def exec_module(module: Any) -> None:
                run(module)
                importlib.import_module("dtri.config")

            spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


if "dask.config" in sys.modules:
    importlib.import_module("dtri.config")
else:
    sys.meta_path.insert(0, _DefaultsWhenDaskConfigLoads())

if TYPE_CHECKING:
    from dtri.analytics.count import CountResult
    from dtri.analytics.estimate import Approx, Estimate
    from dtri.api import (
        PreparedGraph,
        Session,
        clustering,
        count,
        count_triangles,
        open_prepared,
        prepare,
        profile,
        write_generated,
        write_triangles,
    )
    from dtri.errors import ConfigurationError, DtriError, InputError
    from dtri.input.generate import generated
    from dtri.input.read import read_edges
    from dtri.options import Options
    from dtri.runtime.driver import start_cuda_driver

_HOMES = {
    "Approx": "dtri.analytics.estimate",
    "Estimate": "dtri.analytics.estimate",
    "ConfigurationError": "dtri.errors",
    "CountResult": "dtri.analytics.count",
    "DtriError": "dtri.errors",
    "InputError": "dtri.errors",
    "Options": "dtri.options",
    "PreparedGraph": "dtri.api",
    "Session": "dtri.api",
    "clustering": "dtri.api",
    "count": "dtri.api",
    "count_triangles": "dtri.api",
    "profile": "dtri.api",
    "generated": "dtri.input.generate",
    "open_prepared": "dtri.api",
    "prepare": "dtri.api",
    "read_edges": "dtri.input.read",
    "start_cuda_driver": "dtri.runtime.driver",
    "write_generated": "dtri.api",
    "write_triangles": "dtri.api",
}
"""Where each public name lives."""

__all__ = [
    "Approx",
    "ConfigurationError",
    "CountResult",
    "DtriError",
    "Estimate",
    "InputError",
    "Options",
    "PreparedGraph",
    "Session",
    "clustering",
    "count",
    "count_triangles",
    "generated",
    "open_prepared",
    "prepare",
    "profile",
    "read_edges",
    "start_cuda_driver",
    "write_generated",
    "write_triangles",
]
__version__ = VERSION


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'dtri' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
