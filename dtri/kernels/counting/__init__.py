"""Exact counts per vertex id, the helpers every stage counts with: how often each id occurs
(:func:`id_counts`), ``Σ weights`` per id (:func:`weighted_counts`) and the sum of
per-partition counts (:func:`add_counts`).

The CPU side is numba's integer scatter-adds (:mod:`dtri.kernels.counting.cpu`; NumPy's
``bincount`` adds weights in float64); the CUDA side is 64-bit atomics in CuPy
(:mod:`dtri.kernels.counting.cuda`).
"""

from __future__ import annotations

from typing import Any

from dtri.kernels.dispatch import array_module, is_device_object


def id_counts(ids: Any, vertices: int) -> Any:
    """How often each id ``0 .. vertices - 1`` occurs (int64): NumPy's ``bincount`` on the
    CPU, atomics on the GPU (:func:`dtri.kernels.counting.cuda.id_counts_cuda`)."""
    if is_device_object(ids):
        from dtri.kernels.counting.cuda import id_counts_cuda

        return id_counts_cuda(ids, vertices)
    xp = array_module(ids)
    return xp.bincount(ids, minlength=vertices).astype(xp.int64, copy=False)


def weighted_counts(ids: Any, weights: Any, vertices: int, out: Any = None) -> Any:
    """``Σ weights`` per id ``0 .. vertices - 1``, exact (int64): numba's loop on the CPU
    (NumPy's ``bincount`` adds weights in float64), 64-bit atomics on the GPU (like
    :func:`id_counts`). ``out``: int64 counts of ``vertices`` to add to in place (no second
    vertex-wide array)."""
    if is_device_object(ids):
        from dtri.kernels.counting.cuda import weighted_counts_cuda

        return weighted_counts_cuda(ids, weights, vertices, out)
    from dtri.kernels.counting.cpu import scatter_add, scatter_add_into

    if out is None:
        return scatter_add(ids, weights, vertices)
    scatter_add_into(out, ids, weights)
    return out


def add_counts(*counts: Any) -> Any:
    """Element-wise sum of per-partition count arrays of equal length, in the widest of their
    dtypes (CuPy's ``bincount`` of an empty partition returns ints even with float weights)."""
    total = counts[0].astype(array_module(counts[0]).result_type(*counts))
    for more in counts[1:]:
        total += more
    return total
