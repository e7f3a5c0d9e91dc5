"""The CUDA driver's start, on a thread of its own, as early as a run knows it may use a GPU.

CuPy's first call starts the driver (``cuInit``) holding Python's lock (0.3 to 1.0 s on H200
hosts); a call through ctypes lets go of it, so the process imports what its run needs
meanwhile. Where the run may stay in this process, the thread makes the first GPU's context
too. This module imports only the standard library, so that the ``dtri`` command can start
the driver before it imports the rest of dtri (:mod:`dtri.cli`); :class:`dtri.Session`
starts it for the Python API.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import os
import sys
import threading
from collections.abc import Mapping
from contextlib import suppress
from typing import Any

GPU_MODULES = ("cudf", "dask_cudf", "cupy")
"""What the GPU backend imports: installed, or the GPU is not usable."""
CUDA_DRIVER_LIBRARY = "libcuda.so.1"
"""The CUDA driver's library, as NVIDIA's Linux driver installs it."""
LOCAL_SCHEDULERS = ("threads", "synchronous", "sync", "single-threaded")
"""The ``--scheduler`` values that run in this process: :data:`dtri.options.LOCAL_SCHEDULERS`
again, which this module cannot import (it imports nothing beyond the standard library)."""
CLUSTER_OPTIONS = ("scheduler_file", "memory_limit", "device_memory_limit", "rmm_pool_size")
"""Options (:class:`~dtri.options.Options` fields) that send a run to a cluster, given."""


def gpu_modules_installed() -> bool:
    """True when every one of :data:`GPU_MODULES` is installed (found, not imported)."""
    return all(importlib.util.find_spec(m) for m in GPU_MODULES)


def may_run_here(options: Mapping[str, Any]) -> bool:
    """Whether a run of ``options`` (by :class:`~dtri.options.Options` field name, as given)
    may run in this process, by what they name alone: no scheduler but a local one (nor
    ``DASK_SCHEDULER_ADDRESS``), no scheduler file or memory caps, ``workers`` left to
    ``auto``, and no active ``distributed.Client``. The input's size decides the rest
    (:func:`dtri.runtime.resolve.placement`)."""
    scheduler = options.get("scheduler") or os.environ.get("DASK_SCHEDULER_ADDRESS")
    if scheduler not in (None, *LOCAL_SCHEDULERS):
        return False
    if any(options.get(name) is not None for name in CLUSTER_OPTIONS):
        return False
    if str(options.get("workers") or "auto") != "auto":
        return False
    if "distributed" not in sys.modules:  # no client before distributed is imported
        return True
    from distributed import default_client

    try:
        default_client()
    except ValueError:  # none
        return True
    return False


def start_cuda_driver(options: Mapping[str, Any] | None = None) -> threading.Thread | None:
    """Start the CUDA driver (``cuInit``) on a thread of its own, once a process, where the
    GPU backend is installed, and return the thread: ``None`` where the backend is not
    installed. ``options``: the run's, as given (by :class:`~dtri.options.Options` field
    name); where they let it stay in this process (:func:`may_run_here`), the thread then
    makes the first GPU's primary context, the one CuPy and cuDF use. A script that will use
    the GPU may call it first, so that the driver starts while the script imports the rest.
    The thread is not a daemon: the process ends after the driver's start, never during it.
    A driver that is missing or fails is left for CuPy to report when the run checks the
    GPU."""
    return driver_thread(options is not None and may_run_here(options))


@functools.cache
def driver_thread(context: bool) -> threading.Thread | None:
    """The thread of :func:`start_cuda_driver`, started once a process for each ``context``
    (the driver's start is the same twice; the context is made once)."""
    if not gpu_modules_installed():
        return None

    def start() -> None:
        with suppress(OSError, AttributeError):  # no driver: CuPy says so later
            driver = ctypes.CDLL(CUDA_DRIVER_LIBRARY)
            if driver.cuInit(0) != 0 or not context:
                return
            device, handle = ctypes.c_int(), ctypes.c_void_p()
            if driver.cuDeviceGet(ctypes.byref(device), 0) == 0:
                driver.cuDevicePrimaryCtxRetain(ctypes.byref(handle), device)

    thread = threading.Thread(target=start, name="dtri-cuda-driver")
    thread.start()
    return thread
