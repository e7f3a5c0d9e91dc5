"""The CPU side of the exact counts (:mod:`dtri.kernels.counting`): numba's integer
scatter-adds. Imported only where they run; compiled on first use and cached on disk by
numba."""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from dtri.kernels.compiled import watch_numba

watch_numba()  # their compiles and cache loads are reported apart from the stages


@numba.njit(nogil=True, cache=True)
def scatter_add(ids: Any, weights: Any, size: int) -> Any:
    """``out[ids[i]] += weights[i]`` into int64 zeros of ``size``: an exact ``bincount`` with
    integer weights (NumPy's adds in float64)."""
    out = np.zeros(size, dtype=np.int64)
    scatter_add_into(out, ids, weights)
    return out


@numba.njit(nogil=True, cache=True)
def scatter_add_into(out: Any, ids: Any, weights: Any) -> None:
    """``out[ids[i]] += weights[i]`` in place."""
    for i in range(ids.shape[0]):
        out[ids[i]] += weights[i]


