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


INT32_MAX = 2**31 - 1
"""The largest count an int32 array holds."""


def narrow_counts(counts: Any, most: int) -> Any:
    """``counts`` as int32 where no count can pass ``most`` (a bound the caller knows, such as
    the ids counted), else as they are. A vertex-wide tree sends half the bytes."""
    if most > INT32_MAX or counts.dtype.kind not in "iu":
        return counts
    return counts.astype(array_module(counts).int32, copy=False)


def wide_counts(counts: Any) -> Any:
    """``counts`` as int64, as the analytics read them (:func:`narrow_counts` undone)."""
    return counts.astype(array_module(counts).int64, copy=False)


def add_counts(*counts: Any) -> Any:
    """Element-wise sum of per-partition count arrays of equal length, in the widest of their
    dtypes (CuPy's ``bincount`` of an empty partition returns ints even with float weights).
    int32 counts (:func:`narrow_counts`) are added in int64 and stay int32 where the sums
    fit."""
    xp = array_module(counts[0])
    kind = xp.result_type(*counts)
    narrow = kind == xp.int32 and len(counts) > 1
    total = counts[0].astype(xp.int64 if narrow else kind)
    for more in counts[1:]:
        total += more
    if narrow and (not total.shape[0] or int(total.max()) <= INT32_MAX):
        return total.astype(xp.int32)
    return total
