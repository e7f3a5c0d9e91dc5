"""The preparation's compiled kernels, by side. Its fronts are :mod:`dtri.kernels.canonicalize`
and :mod:`dtri.kernels.orient` (array code for NumPy and CuPy alike) and
:func:`dtri.prepared.local.prepare_marked_on_cpu`. The CPU side is numba's one-pass preparation
of a graph whose ids are few enough to mark (:mod:`dtri.kernels.prepare.cpu`); the CUDA side is
the fused passes of the dense keys and the orientation (:mod:`dtri.kernels.prepare.cuda`)."""
