"""cuDF implementations of :mod:`dtri.kernels.dispatch`, imported lazily the first time a cuDF
object is seen (CuPy's are in :mod:`dtri.kernels.gpu`)."""

from __future__ import annotations

from typing import Any

import cudf
import dask_cudf.backends  # noqa: F401  (cuDF's sizeof for Dask: see below)

# Dask weighs stored results with ``dask.sizeof``, whose cuDF implementation lives in
# dask_cudf.backends. A worker that only runs dtri's tasks never imports it, so a stored cuDF
# frame weighed 48 B (its Python object) and dask-cuda's device memory limit never spilled
# anything: :mod:`dtri.kernels.dispatch` registers this module lazily for cuDF's sizeof.
from dtri.kernels.dispatch import column_to_array, frame_from_arrays, is_device_object


@column_to_array.register(cudf.Series)
def _cudf_column(series: cudf.Series) -> Any:
    return series.values


@frame_from_arrays.register(cudf.DataFrame)
def _cudf_frame(like: cudf.DataFrame, columns: dict[str, Any]) -> cudf.DataFrame:
    return cudf.DataFrame(columns)


@is_device_object.register((cudf.DataFrame, cudf.Series))
def _on_device(value: Any) -> bool:
    return True
