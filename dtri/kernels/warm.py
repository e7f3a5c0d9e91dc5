"""The kernels a CPU count runs, loaded ahead (:class:`dtri.kernels.compiled.KernelLoader`'s
work): each is called once on a triangle, with the argument types a count gives it, so that
numba imports, reads it from its disk cache (or compiles and caches it, where the cache has
none) and keeps it for the count that follows.

``python -m dtri.kernels.warm``, once after installing dtri, writes numba's cache of them (under
``NUMBA_CACHE_DIR`` where set, else next to dtri's source where it is writable, else under
numba's user-wide cache, ``~/.cache/numba``: a read-only install's), so that a new install's
first process reads them as later ones do."""

from __future__ import annotations

import numpy as np

WARM_THREADS = (1, 2)
"""The marks kernel on one thread and on several (a partition's edges pick one)."""


def warm_count_kernels() -> None:
    """Load the preparation's kernel (:func:`dtri.kernels.prepare.cpu.prepare_marked`), the
    key sort and the marks kernel on one thread and on several, on a triangle; raises where
    one of them does not find it."""
    import numba  # noqa: F401  (first, holding no lock of a dtri module's import)

    from dtri.kernels.csr import CSR
    from dtri.kernels.intersect import _intersect_numpy
    from dtri.kernels.prepare.cpu import prepare_marked
    from dtri.kernels.sort.cpu import radix_sort

    src = np.array([0, 0, 1], dtype=np.int64)
    dst = np.array([1, 2, 2], dtype=np.int64)
    out, offsets, *_ = prepare_marked(src, dst, 2, True)
    if radix_sort(dst[::-1].copy()).tolist() != [1, 2, 2]:
        raise RuntimeError("numba's radix sort did not order three keys")
    csr = CSR(out, offsets, 0)
    for threads in WARM_THREADS:
        found = _intersect_numpy(csr, csr, None, None, None, None, None, False, "marks",
                                 threads)
        if found != 1:
            raise RuntimeError(f"the marks kernel found {found} triangles in a triangle")


if __name__ == "__main__":
    import time

    from dtri.kernels.compiled import CLOCK

    started = time.perf_counter()
    warm_count_kernels()
    print(f"numba's CPU kernels of a count loaded in {time.perf_counter() - started:.2f} s "
          f"({CLOCK.seconds:.2f} s compiling or reading numba's cache)")
