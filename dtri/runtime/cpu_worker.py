"""What each worker process of a local CPU cluster that dtri starts does as it starts (a
Dask preload, ``distributed.worker.preload``, beside :mod:`dtri.runtime.local_worker`): it
loads numba's compiled CPU kernels on a thread of its own
(:data:`dtri.kernels.compiled.LOADER`), while the run reads and prepares the graph, so that
its first join task finds them ready (:func:`dtri.kernels.dispatch.compiled_kernels_ready`)
instead of paying their load. GPU workers are not asked: their own start imports cuDF, which
imports numba too, and two threads importing the same packages can deadlock
(:func:`dtri.runtime.worker_start.claim_start_method`)."""

from __future__ import annotations

from typing import Any

PRELOAD = "dtri.runtime.cpu_worker"
"""This module's name, as ``distributed.worker.preload`` lists it."""


def dask_setup(worker: Any) -> None:
    """Dask's preload hook, called as the worker starts (not at import: the process that
    starts the cluster imports this module for :data:`PRELOAD`)."""
    from dtri.kernels.compiled import LOADER

    LOADER.start()
