"""What each worker process of a local cluster that dtri starts does first (a Dask preload,
``distributed.worker.preload``): it ignores SIGINT.

Ctrl-C in a terminal sends SIGINT to the whole process group, dtri's workers with it. Each
worker then died on its own, printing its tracebacks (a cancelled event loop, then dtri's
plugins missing on the client: 142-147 lines), while dtri was closing the cluster anyway.
Ignoring it, the workers wait for dtri, which stops them as it unwinds. A worker forked from
dtri's server ignores it from the start (:func:`dtri.runtime.worker_start.
start_worker_server`); a spawned one from here on. A cluster of the user's own
(``--scheduler``) is not touched."""

from __future__ import annotations

import signal
import threading
from typing import Any

PRELOAD = "dtri.runtime.local_worker"
"""This module's name, as ``distributed.worker.preload`` lists it."""


def dask_setup(worker: Any) -> None:
    """Dask's preload hook, called as the worker starts (not at import: the process that
    starts the cluster imports this module for :data:`PRELOAD`). A worker's event loop runs
    in its process's main thread, where Python sets signal handlers."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
