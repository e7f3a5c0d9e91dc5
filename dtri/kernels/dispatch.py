"""Type dispatch between the CPU (pandas/NumPy) and GPU (cuDF/CuPy) libraries.

The pipeline's kernels are written once against the array API that NumPy and CuPy share
and against the DataFrame API that pandas and cuDF share. The few places where the two
differ are functions here that dispatch on the type of their argument, registered the way
``dask/dataframe/dispatch.py`` registers pandas and cuDF: this module holds the dispatch
functions and the NumPy/pandas implementations that need nothing else; the GPU
implementations live in :mod:`dtri.kernels.gpu` (CuPy) and :mod:`dtri.kernels.gpu_frames`
(cuDF), registered by :mod:`dtri.kernels.backends` the first time a CuPy or cuDF object is
seen, so this module (and every test) imports without a GPU, imports none of the kernels
that use it, and a count of CuPy arrays does not import cuDF.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
from dask.utils import Dispatch

array_module = Dispatch("array_module")
"""The array library (``numpy`` or ``cupy``) that owns an array."""

column_to_array = Dispatch("column_to_array")
"""A DataFrame column as a contiguous array of the matching array library (no host copy)."""

frame_from_arrays = Dispatch("frame_from_arrays")
"""A DataFrame of the library of ``like`` (a DataFrame, or an array: NumPy → pandas,
CuPy → cuDF) built from a dict of arrays."""

to_host = Dispatch("to_host")
"""A NumPy copy of an array (identity for NumPy arrays)."""

is_device_object = Dispatch("is_device_object")
"""True for objects in GPU memory (CuPy arrays, cuDF frames and series), False otherwise."""

sort_keys = Dispatch("sort_keys")
"""Integer keys, ascending (a new array): NumPy's sort, or numba's radix sort for long arrays
of non-negative keys (:func:`dtri.kernels.sort.cpu.radix_sort`); CuPy's sort on the GPU."""

def sorted_unique(values: Any) -> Any:
    """Distinct values, ascending, by sort and adjacent compare (NumPy's hash-based ``unique``
    is several times slower on integer keys; CuPy's is the same sort)."""
    xp = array_module(values)
    ordered = sort_keys(values)
    if ordered.shape[0] < 2:
        return ordered
    keep = xp.empty(ordered.shape[0], dtype=bool)
    keep[0] = True
    xp.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


RADIX_SORT_MIN = 1 << 10
"""Shorter NumPy arrays are sorted by NumPy. From about a thousand keys the radix sort is
several times quicker on this project's 2-core machine (NumPy 2.4, int64 keys of 26 bits,
best of 50): 16,000 keys 0.08 ms against 0.43 ms, 65,000 keys 0.33 ms against 2.25 ms;
1,000 keys 7 µs against 12 µs."""
RADIX_SORT_MIN_UNLOADED = 1 << 22
"""The same while numba's compiled kernels are not ready in this process: loading them takes
longer than NumPy's sort of fewer keys (a process's first small count imports no numba)."""


COMPILED_KERNEL_MODULES = ("dtri.kernels.sort.cpu", "dtri.kernels.counting.cpu",
                           "dtri.kernels.intersect.cpu", "dtri.kernels.graphlets.cpu",
                           "dtri.kernels.prepare.cpu", "dtri.kernels.parse",
                           "dtri.kernels.peel.cpu")
"""The modules of numba's compiled CPU kernels (each imports numba)."""


def compiled_kernels_ready(items: int | None = None) -> bool:
    """Whether numba's compiled CPU kernels of a count are loaded in this process
    (:data:`dtri.kernels.compiled.LOADER`), waiting for a load in progress
    (:meth:`~dtri.kernels.compiled.KernelLoader.ready`) where the input has ``items``
    (edges, wedges, keys, lines) at least ``dtri.kernel-load-wait-min-items``, or is not
    sized: their start-up is then paid, and they are worth using on small inputs too. A
    smaller input takes what is ready now: a count of a toy graph does not wait half a
    second for kernels it can do without. A process that has imported numba's kernels for
    another use (any of :data:`COMPILED_KERNEL_MODULES`) starts the load here: numba's own
    start is paid there."""
    import dask

    from dtri.kernels.compiled import KERNEL_LOAD_WAIT_MIN_ITEMS, LOADER

    if not LOADER.started and any(name in sys.modules for name in COMPILED_KERNEL_MODULES):
        LOADER.start()
    return LOADER.ready(wait=items is None or
                        items >= int(dask.config.get(KERNEL_LOAD_WAIT_MIN_ITEMS)))

series_from_arrays = Dispatch("series_from_arrays")
"""A Series of the library of ``values`` (NumPy → pandas, CuPy → cuDF): ``values`` indexed by
``index``, named ``name``, its index named ``index_name``."""

list_triangles_kernel = Dispatch("list_triangles_kernel")
"""The compiled kernel that writes a group's triangle records
(:func:`dtri.kernels.graphlets.list_triangles`), by the type of a partition's targets: numba's
(:mod:`dtri.kernels.graphlets.cpu`) on NumPy, CUDA's (:mod:`dtri.kernels.graphlets.cuda`) on
CuPy."""

triangle_ids_kernel = Dispatch("triangle_ids_kernel")
"""Listed triangles' input ids, ascending row by row, into a ``(3, n)`` int64 block
(:func:`dtri.kernels.graphlets.triangle_ids`): numba's kernel on NumPy, CuPy's gathers and
minimum/maximum (:func:`dtri.kernels.graphlets.gathered_triangle_ids`) on CuPy."""

clique_counts_kernel = Dispatch("clique_counts_kernel")
"""The compiled kernel that counts 4-cliques over triangle records
(:func:`dtri.kernels.graphlets.clique_counts`), numba's or CUDA's as above."""

cycle_records_kernel = Dispatch("cycle_records_kernel")
"""The compiled kernel that writes the oriented wedges of 4-cycles
(:func:`dtri.kernels.graphlets.cycle_records`), numba's or CUDA's as above."""

peel_round_kernel = Dispatch("peel_round_kernel")
"""One round of truss peeling (:mod:`dtri.kernels.peel`), by the type of the edges' ends:
numba's kernel (:mod:`dtri.kernels.peel.cpu`) on NumPy, CUDA's (:mod:`dtri.kernels.peel.cuda`)
on CuPy."""

cycle_credits_kernel = Dispatch("cycle_credits_kernel")
"""4-cycles at each vertex from wedge keys (:func:`dtri.kernels.graphlets.cycle_credits`):
numba's kernel on NumPy, sorts and segment sums
(:func:`dtri.kernels.graphlets.sorted_cycle_credits`) on CuPy."""


def imported_on_call(module: str, name: str) -> Callable[..., Any]:
    """``module.name``, imported the first time it is called: a compiled kernel registered
    for its array type without loading numba or compiling CUDA before it is needed."""
    def call(*args: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args)

    call.__name__ = name
    return call


def host_frame(value: Any) -> Any:
    """A cuDF frame or series as pandas (a copy to host memory); pandas as it is."""
    return value.to_pandas() if hasattr(value, "to_pandas") else value


@array_module.register(np.ndarray)
def _numpy_module(array: np.ndarray) -> Any:
    return np


@to_host.register(np.ndarray)
def _numpy_to_host(array: np.ndarray) -> np.ndarray:
    return array


@is_device_object.register(object)
def _not_on_device(value: Any) -> bool:
    return False


@series_from_arrays.register(np.ndarray)
def _pandas_series(values: np.ndarray, index: np.ndarray, name: str, index_name: str) -> Any:
    import pandas as pd

    return pd.Series(values, index=pd.Index(index, name=index_name), name=name, copy=False)


@column_to_array.register(np.ndarray)
def _array_column(array: np.ndarray) -> np.ndarray:
    return array


@frame_from_arrays.register(np.ndarray)
def _pandas_frame_of_arrays(like: np.ndarray, columns: dict[str, Any]) -> Any:
    import pandas as pd

    return pd.DataFrame(columns)


@column_to_array.register_lazy("pandas")
@frame_from_arrays.register_lazy("pandas")
def _register_pandas() -> None:
    import pandas as pd

    column_to_array.register(pd.Series, pd.Series.to_numpy)
    frame_from_arrays.register(pd.DataFrame, lambda like, columns: pd.DataFrame(columns))
