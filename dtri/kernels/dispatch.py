"""Type dispatch between the CPU (pandas/NumPy) and GPU (cuDF/CuPy) libraries.

The pipeline's kernels are written once against the array API that NumPy and CuPy share
and against the DataFrame API that pandas and cuDF share. The few places where the two
differ are functions here that dispatch on the type of their argument, registered the way
``dask/dataframe/dispatch.py`` registers pandas and cuDF: the GPU implementations live in
:mod:`dtri.kernels.gpu` and are only imported the first time a cuDF or CuPy object is seen, so this
module (and every test) imports without a GPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from dask.sizeof import sizeof
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

series_from_arrays = Dispatch("series_from_arrays")
"""A Series of the library of ``values`` (NumPy → pandas, CuPy → cuDF): ``values`` indexed by
``index``, named ``name``, its index named ``index_name``."""


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
def _pandas_series(values: np.ndarray, index: np.ndarray, name: str,
                   index_name: str) -> pd.Series:
    return pd.Series(values, index=pd.Index(index, name=index_name), name=name, copy=False)


@column_to_array.register(pd.Series)
def _pandas_column(series: pd.Series) -> np.ndarray:
    return series.to_numpy()


@frame_from_arrays.register((pd.DataFrame, np.ndarray))
def _pandas_frame(like: pd.DataFrame | np.ndarray, columns: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame(columns)


@array_module.register_lazy("cupy")
@is_device_object.register_lazy("cupy")
@is_device_object.register_lazy("cudf")
@series_from_arrays.register_lazy("cupy")
@to_host.register_lazy("cupy")
@column_to_array.register_lazy("cudf")
@frame_from_arrays.register_lazy("cudf")
@frame_from_arrays.register_lazy("cupy")
@sizeof.register_lazy("cudf")
def _register_gpu() -> None:
    from dtri.kernels import gpu  # noqa: F401  (registers the cuDF/CuPy implementations)
