"""cuDF/CuPy implementations of :mod:`dtri.kernels.dispatch`, imported lazily the first time a
cuDF or CuPy object is seen, so dtri imports without a GPU."""

from __future__ import annotations

from typing import Any

import cudf
import cupy
import dask_cudf.backends  # noqa: F401  (cuDF's sizeof for Dask: see below)

# Dask weighs stored results with ``dask.sizeof``, whose cuDF implementation lives in
# dask_cudf.backends. A worker that only runs dtri's tasks never imports it, so a stored cuDF
# frame weighed 48 B (its Python object) and dask-cuda's device memory limit never spilled
# anything: :mod:`dtri.kernels.dispatch` registers this module lazily for cuDF's sizeof.
from dtri.kernels.dispatch import (
    array_module,
    column_to_array,
    frame_from_arrays,
    is_device_object,
    series_from_arrays,
    sort_keys,
    to_host,
)

sort_keys.register(cupy.ndarray, cupy.sort)


@array_module.register(cupy.ndarray)
def _cupy_module(array: cupy.ndarray) -> Any:
    return cupy


@to_host.register(cupy.ndarray)
def _cupy_to_host(array: cupy.ndarray) -> Any:
    return cupy.asnumpy(array)


@column_to_array.register(cudf.Series)
def _cudf_column(series: cudf.Series) -> cupy.ndarray:
    return series.values


@frame_from_arrays.register((cudf.DataFrame, cupy.ndarray))
def _cudf_frame(like: cudf.DataFrame | cupy.ndarray, columns: dict[str, Any]) -> cudf.DataFrame:
    return cudf.DataFrame(columns)


@is_device_object.register((cupy.ndarray, cudf.DataFrame, cudf.Series))
def _on_device(value: Any) -> bool:
    return True


@series_from_arrays.register(cupy.ndarray)
def _cudf_series(values: cupy.ndarray, index: cupy.ndarray, name: str,
                 index_name: str) -> cudf.Series:
    return cudf.Series(values, index=cudf.Index(index, name=index_name), name=name)
