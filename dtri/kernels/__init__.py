"""Array code only: the operations on one partition's NumPy or CuPy arrays that every stage is
made of. Nothing here knows about Dask, workers or staging; :mod:`dtri.kernels.dispatch` picks
between the CPU and GPU libraries."""

from dtri.kernels import backends as _backends  # noqa: F401  (the dispatch's implementations)
