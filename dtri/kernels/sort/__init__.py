"""The key sort, by side. Its front is :func:`dtri.kernels.dispatch.sort_keys` (with
:func:`~dtri.kernels.dispatch.sorted_unique`): every kernel sorts through it. The CPU side is
numba's radix sort (:mod:`dtri.kernels.sort.cpu`), which :mod:`dtri.kernels.backends` takes for
long NumPy arrays; the CUDA side is CuPy's own sort (CUB's radix sort), registered by
:mod:`dtri.kernels.gpu`."""
