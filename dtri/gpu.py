"""cuDF/CuPy implementations of :mod:`dtri.dispatch`; imported lazily, only where a GPU is used."""

from __future__ import annotations

from typing import Any

import cudf
import cupy

from dtri.dispatch import array_module, column_to_array, frame_from_arrays, to_host


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


def device_memory_bytes() -> int:
    """Total memory of the current GPU, for the default memory budget."""
    _free, total = cupy.cuda.runtime.memGetInfo()
    return int(total)
