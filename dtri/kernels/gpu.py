"""CuPy implementations of :mod:`dtri.kernels.dispatch`, imported lazily the first time a CuPy
array is seen, so dtri imports without a GPU. They import no cuDF: a count of arrays on the
GPU (an in-process run) never loads it, which takes longer than a small graph's whole count.
cuDF's own are in :mod:`dtri.kernels.gpu_frames`."""

from __future__ import annotations

from typing import Any

import cupy

from dtri.kernels.dispatch import (
    array_module,
    clique_counts_kernel,
    column_to_array,
    cycle_credits_kernel,
    cycle_records_kernel,
    frame_from_arrays,
    imported_on_call,
    is_device_object,
    list_triangles_kernel,
    peel_round_kernel,
    series_from_arrays,
    sort_keys,
    to_host,
    triangle_ids_kernel,
)

sort_keys.register(cupy.ndarray, cupy.sort)


@array_module.register(cupy.ndarray)
def _cupy_module(array: cupy.ndarray) -> Any:
    return cupy


@to_host.register(cupy.ndarray)
def _cupy_to_host(array: cupy.ndarray) -> Any:
    return cupy.asnumpy(array)


@column_to_array.register(cupy.ndarray)
def _array_column(array: cupy.ndarray) -> cupy.ndarray:
    return array


@is_device_object.register(cupy.ndarray)
def _on_device(value: Any) -> bool:
    return True


@frame_from_arrays.register(cupy.ndarray)
def _cudf_frame(like: cupy.ndarray, columns: dict[str, Any]) -> Any:
    import cudf

    return cudf.DataFrame(columns)


@series_from_arrays.register(cupy.ndarray)
def _cudf_series(values: cupy.ndarray, index: cupy.ndarray, name: str,
                 index_name: str) -> Any:
    import cudf

    return cudf.Series(values, index=cudf.Index(index, name=index_name), name=name)


for kernel, name in ((list_triangles_kernel, "list_triangles_cuda"),
                     (clique_counts_kernel, "clique_counts_cuda"),
                     (cycle_records_kernel, "cycle_records_cuda")):
    kernel.register(cupy.ndarray, imported_on_call("dtri.kernels.graphlets.cuda", name))
cycle_credits_kernel.register(cupy.ndarray,
                              imported_on_call("dtri.kernels.graphlets", "sorted_cycle_credits"))
peel_round_kernel.register(cupy.ndarray,
                           imported_on_call("dtri.kernels.peel.cuda", "peel_round_cuda"))
triangle_ids_kernel.register(cupy.ndarray,
                             imported_on_call("dtri.kernels.graphlets", "gathered_triangle_ids"))
