"""Where a count runs: the Dask scheduler, the partition backend and the memory budget.

* ``scheduler`` is a scheduler address (``tcp://host:8786``; ``DASK_SCHEDULER_ADDRESS`` is
  read when it is not given), ``scheduler_file``, or the name of a local Dask scheduler
  (``"threads"``, ``"synchronous"``) for runs without ``distributed``.
* Otherwise an active ``distributed.Client`` is used, as Dask users expect, and failing that
  an embedded local cluster is started for the run: ``dask_cuda.LocalCUDACluster`` (one worker
  per visible GPU, ``CUDA_VISIBLE_DEVICES`` respected) for the GPU backend,
  ``distributed.LocalCluster`` (one single-threaded worker process per core) for the CPU.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import dask
import psutil

from dtri.compat import lift_cached_property_locks
from dtri.errors import ConfigurationError

BACKENDS = ("auto", "cpu", "gpu")
PROTOCOLS = ("auto", "tcp", "ucx")
"""Comm protocol of an embedded local cluster. ``auto``: UCX (with NVLink) between the dask-cuda
workers of several GPUs when ``distributed-ucxx`` is installed, TCP otherwise."""
LOCAL_SCHEDULERS = ("threads", "synchronous", "sync", "single-threaded")
DEFAULT_BUDGET_FRACTION = 0.25
"""Share of a worker's memory (GPU memory on the GPU backend) one count may plan for."""


@dataclass(frozen=True)
class Session:
    """The resources of one run, as the planner sees them."""

    backend: str
    client: Any  # distributed.Client, or None for a local Dask scheduler
    workers: int
    threads_per_worker: int
    worker_memory: int
    dashboard: str | None = None
    addresses: tuple[str, ...] = ()
    """The workers' addresses, in a fixed order: the owners of partitions ``0, 1, ...`` in
    turn (empty for a local Dask scheduler)."""

    def task_budget(self, memory_budget: int | None) -> int:
        """Bytes one task may plan for: the per-worker budget shared by its threads."""
        budget = memory_budget or int(self.worker_memory * DEFAULT_BUDGET_FRACTION)
        return max(1, budget // max(1, self.threads_per_worker))


def gpu_available() -> bool:
    """True when cuDF, dask-cuDF and CuPy import and at least one GPU is visible."""
    if not all(importlib.util.find_spec(m) for m in ("cudf", "dask_cudf", "cupy")):
        return False
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def resolve_backend(requested: str, input_on_gpu: bool) -> str:
    """``cpu`` or ``gpu`` for a requested ``auto``/``cpu``/``gpu``."""
    if requested not in BACKENDS:
        raise ConfigurationError(f"backend must be one of {', '.join(BACKENDS)}, got {requested!r}")
    if requested == "gpu" or (requested == "auto" and input_on_gpu):
        if not gpu_available():
            raise ConfigurationError(
                "the GPU backend needs cuDF, dask-cuDF, dask-cuda and CuPy with a visible GPU "
                '(pip install "dtri[cuda13]"); use --backend cpu to run on pandas'
            )
        return "gpu"
    if requested == "auto" and gpu_available():
        return "gpu"
    return "cpu"


def active_client() -> Any:
    """The active ``distributed.Client`` (as Dask would use it), or ``None``."""
    try:
        from distributed import default_client

        return default_client()
    except (ImportError, ValueError):
        return None


def ucx_available() -> bool:
    """True when Dask can talk UCX (``distributed-ucxx`` installed)."""
    return importlib.util.find_spec("distributed_ucxx") is not None


def _visible_gpus() -> int:
    import cupy

    return int(cupy.cuda.runtime.getDeviceCount())


def resolve_protocol(requested: str, backend: str, workers: int | None) -> str:
    """``tcp`` or ``ucx`` for an embedded cluster. ``auto`` picks UCX for several GPU workers
    when it is installed: Dask's TCP comm moves GPU data at about 1 GB/s through host memory,
    UCX over NVLink at about 100 GB/s (measured on 4 H200, examples/results/README.md)."""
    if requested not in PROTOCOLS:
        raise ConfigurationError(
            f"protocol must be one of {', '.join(PROTOCOLS)}, got {requested!r}")
    if requested == "ucx" and not ucx_available():
        raise ConfigurationError(
            "the UCX protocol needs distributed-ucxx (pip install distributed-ucxx-cu13); "
            "use --protocol tcp")
    if requested != "auto":
        return requested
    several = (workers or (_visible_gpus() if backend == "gpu" else 1)) > 1
    return "ucx" if backend == "gpu" and several and ucx_available() else "tcp"


def _start_local_cluster(backend: str, workers: int | None, protocol: str) -> Any:
    protocol = resolve_protocol(protocol, backend, workers)
    if backend == "gpu":
        from dask_cuda import LocalCUDACluster

        ucx = {"enable_tcp_over_ucx": True, "enable_nvlink": True,
               "enable_infiniband": False} if protocol == "ucx" else {}
        return LocalCUDACluster(
            n_workers=workers, protocol=protocol, dashboard_address=":0",
            silence_logs=logging.CRITICAL, **ucx,
        )
    from distributed import LocalCluster

    return LocalCluster(
        n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
        protocol=protocol, dashboard_address=":0", silence_logs=logging.CRITICAL,
    )


def _device_memory() -> int:
    from dtri.gpu import device_memory_bytes

    return device_memory_bytes()


def _describe_client(client: Any, backend: str, workers: int | None) -> Session:
    info = client.scheduler_info(n_workers=-1)["workers"]
    if not info:
        client.wait_for_workers(1, timeout=60)
        info = client.scheduler_info(n_workers=-1)["workers"]
    if workers:
        info = dict(list(info.items())[:workers])
    if backend == "gpu":
        memory = min(client.run(_device_memory, workers=list(info)).values())
    else:
        memory = min(w.get("memory_limit") or psutil.virtual_memory().total for w in info.values())
    return Session(
        backend=backend, client=client, workers=len(info),
        threads_per_worker=max(w["nthreads"] for w in info.values()),
        worker_memory=int(memory), dashboard=getattr(client, "dashboard_link", None),
        addresses=tuple(sorted(info)),
    )


@contextmanager
def open_session(backend: str, scheduler: str | None = None, scheduler_file: str | None = None,
                 workers: int | None = None, protocol: str = "auto") -> Iterator[Session]:
    """Connect to (or start) the Dask scheduler of one run; close what this run started.

    ``protocol`` applies to a cluster started here (a running one has its own)."""
    address = scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS")
    lift_cached_property_locks()
    with ExitStack() as stack:
        if backend == "gpu" or address in LOCAL_SCHEDULERS:
            # p2p needs distributed workers, and on cuDF it is far slower than the task shuffle.
            stack.enter_context(dask.config.set({"dataframe.shuffle.method": "tasks"}))
        if address in LOCAL_SCHEDULERS:
            stack.enter_context(dask.config.set(scheduler=address))
            threads = 1 if address != "threads" else (os.cpu_count() or 1)
            memory = _device_memory() if backend == "gpu" else psutil.virtual_memory().total
            yield Session(backend, None, 1, threads, memory)
            return
        from distributed import Client

        if address or scheduler_file:
            try:
                client = Client(address, scheduler_file=scheduler_file, timeout="30s")
            except OSError as error:
                raise ConfigurationError(
                    f"cannot reach the Dask scheduler at {address or scheduler_file}: {error}"
                ) from None
            stack.callback(client.close)
        elif (client := active_client()) is None:
            cluster = _start_local_cluster(backend, workers, protocol)
            stack.callback(cluster.close)
            client = Client(cluster)
            stack.callback(client.close)
        # as_current, not dask.config: a nanny copies the config into the workers it restarts
        stack.enter_context(client.as_current())
        yield _describe_client(client, backend, workers)
