"""The one loader of dtri's CUDA sources: the ``.cu`` files shipped inside the package (package
data, read with :mod:`importlib.resources`), each compiled into a ``cupy.RawModule`` once per
device and set of options, and kept for the process.

The sources: ``intersect/intersect.cu`` (:mod:`dtri.kernels.intersect.cuda`),
``graphlets/graphlets.cu`` (:mod:`dtri.kernels.graphlets.cuda`) and ``dtri/input/generate.cu``
(the fused generators of :mod:`dtri.input.generate`). A compile, or a load from CuPy's disk
cache, is counted as compile time (:func:`dtri.kernels.compiled.compiling`). CuPy is imported
on the first compile, so the list of sources reads without a GPU.
"""

from __future__ import annotations

import importlib.resources
from collections.abc import Sequence
from typing import Any

from dtri.kernels.compiled import compiling

CUDA_SOURCES = (
    ("dtri.kernels.intersect", "intersect.cu"),
    ("dtri.kernels.graphlets", "graphlets.cu"),
    ("dtri.kernels.peel", "peel.cu"),
    ("dtri.input", "generate.cu"),
)
"""Every ``.cu`` file loaded here, as ``(package, file name)``: package data of the wheel
(``[tool.setuptools.package-data]`` in ``pyproject.toml``); no other is loaded."""

_modules: dict[tuple[int, str, str, tuple[str, ...], tuple[str, ...]], Any] = {}


def cuda_text(package: str, name: str) -> str:
    """The text of the CUDA source ``name`` inside ``package``."""
    return importlib.resources.files(package).joinpath(name).read_text(encoding="utf-8")


def cuda_module(package: str, name: str, options: Sequence[str] = ("-std=c++17",),
                name_expressions: Sequence[str] = ()) -> Any:
    """The ``cupy.RawModule`` of the source ``name`` of ``package`` on the current device,
    compiled with ``options`` (and ``name_expressions``: the template instantiations it
    holds) the first time it is asked for here, then kept."""
    if (package, name) not in CUDA_SOURCES:
        raise ValueError(f"{package}/{name} is not one of dtri's CUDA sources "
                         f"(CUDA_SOURCES in {__name__})")
    import cupy

    key = (cupy.cuda.runtime.getDevice(), package, name, tuple(options),
           tuple(name_expressions))
    if key not in _modules:
        with compiling():  # compiled, or loaded from CuPy's disk cache
            module = cupy.RawModule(code=cuda_text(package, name), options=tuple(options),
                                    name_expressions=list(name_expressions) or None)
            module.compile()
        _modules[key] = module
    return _modules[key]
