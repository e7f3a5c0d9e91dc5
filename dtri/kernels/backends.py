"""Where :mod:`dtri.kernels.dispatch`'s functions find their implementations beyond the
plain NumPy/pandas ones: NumPy's key sort (numba's radix sort for long arrays, loaded when
needed) and, the first time a CuPy or cuDF object is seen, the GPU implementations
(:mod:`dtri.kernels.gpu`, :mod:`dtri.kernels.gpu_frames`). Imported by the package
(``dtri/kernels/__init__.py``), so the registrations are in place wherever a kernel runs,
and the dispatch module itself imports none of the modules that use it."""

from __future__ import annotations

import numpy as np
from dask.sizeof import sizeof

from dtri.kernels.dispatch import (
    RADIX_SORT_MIN,
    RADIX_SORT_MIN_UNLOADED,
    array_module,
    clique_counts_kernel,
    column_to_array,
    compiled_kernels_ready,
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


@sort_keys.register(np.ndarray)
def _sort_numpy(keys: np.ndarray) -> np.ndarray:
    n = keys.shape[0]
    if n < RADIX_SORT_MIN or keys.dtype != np.int64 or (
            n < RADIX_SORT_MIN_UNLOADED and not compiled_kernels_ready(n)):
        return np.sort(keys)
    from dtri.kernels.sort.cpu import radix_sort

    return radix_sort(keys)


for kernel, name in ((list_triangles_kernel, "list_triangles_cpu"),
                     (clique_counts_kernel, "clique_counts_cpu"),
                     (cycle_records_kernel, "cycle_records_cpu"),
                     (cycle_credits_kernel, "cycle_credits_cpu"),
                     (triangle_ids_kernel, "triangle_ids_cpu")):
    kernel.register(np.ndarray, imported_on_call("dtri.kernels.graphlets.cpu", name))
peel_round_kernel.register(np.ndarray, imported_on_call("dtri.kernels.peel.cpu", "peel_round_cpu"))


@array_module.register_lazy("cupy")
@sort_keys.register_lazy("cupy")
@is_device_object.register_lazy("cupy")
@series_from_arrays.register_lazy("cupy")
@to_host.register_lazy("cupy")
@column_to_array.register_lazy("cupy")
@frame_from_arrays.register_lazy("cupy")
@list_triangles_kernel.register_lazy("cupy")
@clique_counts_kernel.register_lazy("cupy")
@cycle_records_kernel.register_lazy("cupy")
@cycle_credits_kernel.register_lazy("cupy")
@triangle_ids_kernel.register_lazy("cupy")
@peel_round_kernel.register_lazy("cupy")
def _register_cupy() -> None:
    import dtri.kernels.gpu  # noqa: F401  (registers the CuPy implementations)


@is_device_object.register_lazy("cudf")
@column_to_array.register_lazy("cudf")
@frame_from_arrays.register_lazy("cudf")
@sizeof.register_lazy("cudf")
def _register_cudf() -> None:
    _register_cupy()  # a cuDF column is a CuPy array
    import dtri.kernels.gpu_frames  # noqa: F401  (registers the cuDF implementations)
