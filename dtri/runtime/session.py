"""Where a count runs: the Dask scheduler, the partition backend and the memory budget.

* ``scheduler`` is a scheduler address (``tcp://host:8786``; ``DASK_SCHEDULER_ADDRESS`` is
  read when it is not given), ``scheduler_file``, or the name of a local Dask scheduler
  (``"threads"``, ``"synchronous"``) for runs without ``distributed``.
* Otherwise an active ``distributed.Client`` is used, as Dask users expect, and failing that
  an embedded local cluster is started for the run: ``dask_cuda.LocalCUDACluster`` (one worker
  per visible GPU, ``CUDA_VISIBLE_DEVICES`` respected) for the GPU backend,
  ``distributed.LocalCluster`` (one single-threaded worker process per core) for the CPU.
* :class:`MemoryCaps` shape the memory of a cluster started here: a host memory limit above
  which workers spill stored results to disk, and on GPU workers a device memory limit above
  which dask-cuda moves them to host memory and an RMM pool that caps the GPU memory dtri uses.
  :func:`measured_memory` reads each worker's peak memory and spilled bytes after a run.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

import dask
import psutil
from dask.utils import format_bytes, parse_bytes

from dtri.errors import ConfigurationError
from dtri.runtime.compat import lift_cached_property_locks

BACKENDS = ("auto", "cpu", "gpu")
PROTOCOLS = ("auto", "tcp", "ucx")
"""Comm protocol of an embedded local cluster. ``auto``: UCX (with NVLink) between the dask-cuda
workers of several GPUs when ``distributed-ucxx`` is installed, TCP otherwise."""
LOCAL_SCHEDULERS = ("threads", "synchronous", "sync", "single-threaded")
DEFAULT_BUDGET_FRACTION = 0.25
"""Share of a worker's memory (GPU memory on the GPU backend) one count may plan for."""
RMM_ALIGNMENT = 256
"""RMM pools are sized in multiples of 256 bytes; a pool size is rounded down to one."""
DEFAULT_RMM_POOL = 0.5
"""Initial RMM pool of a dask-cuda worker that dtri starts without ``--rmm-pool-size``, as a
fraction of the GPU's memory; it grows as needed (no maximum), so it is no cap. Without a
pool every cuDF allocation is a ``cudaMalloc`` and every free a synchronizing ``cudaFree``,
and UCX opens a new CUDA IPC handle for each received buffer: on 4 H200s a pool took RMAT 25
from 1.387 s to 0.912 s, and 2.630 s to 2.126 s on one (``examples/results/``). dask-cuda
recommends a pool with NVLink for the same reason."""
WORKER_MEMORY_CONFIG = {
    "distributed.worker.memory.pause": False,
    "distributed.worker.memory.terminate": False,
}
"""Dask's memory thresholds that dtri turns off when it gives its workers a memory limit.

``target`` (stored results above 60 % of the limit, by their size, go to disk) and ``spill``
(process memory above 70 %: the least recently used results go to disk) stay on. ``pause``
(80 %) and ``terminate`` (95 %) act on the process's whole memory, which also holds the
interpreter, the libraries, the CUDA context and the running task's arrays, none of which
spilling can free: under a small limit a paused worker would wait forever, and a terminated
one would lose its stored results, be restarted and redo the same work. The running tasks are
bounded by ``--memory-budget`` instead. With ``terminate`` off the scheduler also stops
refusing a task whose inputs add up to more than the limit: they can come back from disk."""


@dataclass(frozen=True)
class MemoryCaps:
    """Memory options of a worker, in bytes per worker (``None``: Dask's or dask-cuda's default).

    dtri applies them to the local cluster it starts; for a running cluster they are read back
    from its workers (:func:`open_session`)."""

    memory_limit: int | None = None
    """Host memory: a worker spills stored results to disk above Dask's ``target`` (60 %,
    by their size) and ``spill`` (70 %, by process memory) fractions of it. On GPU workers it
    is also how much device data spilled to host memory stays there before going to disk."""
    device_memory_limit: int | None = None
    """GPU workers: stored results in device memory above which dask-cuda moves the least
    recently used ones to host memory."""
    rmm_pool_size: int | None = None
    """GPU workers: the size of an RMM pool that cannot grow (initial = maximum), from which
    cuDF and CuPy allocate: a hard cap on the GPU memory one worker uses."""
    spill_directory: str | None = None
    """Where workers write spilled results (their local directory; default Dask's
    ``temporary-directory``, else the system's temporary directory)."""

    OPTIONS: ClassVar[dict[str, str]] = {
        "memory_limit": "--memory-limit", "device_memory_limit": "--device-memory-limit",
        "rmm_pool_size": "--rmm-pool-size", "spill_directory": "--spill-directory"}
    """The command-line option of each field."""

    def given(self) -> list[str]:
        """The command-line names of the options that are set."""
        return [option for name, option in self.OPTIONS.items()
                if getattr(self, name) is not None]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def sizes(self) -> dict[str, int | None]:
        """The caps in bytes (``None`` where not set), without the spill directory."""
        return {name: value for name, value in self.to_dict().items()
                if name != "spill_directory"}


def memory_caps(memory_limit: int | str | None = None,
                device_memory_limit: int | str | None = None,
                rmm_pool_size: int | str | None = None,
                spill_directory: str | os.PathLike | None = None) -> MemoryCaps:
    """:class:`MemoryCaps` from sizes in bytes or strings such as ``"2GiB"``."""
    def size(option: str, value: int | str | None) -> int | None:
        if value is None or isinstance(value, int):
            return value
        try:
            return parse_bytes(value)
        except ValueError:
            raise ConfigurationError(f"{option} {value!r} is not a size such as 2GiB, 500MB "
                                     "or 1000000") from None

    return MemoryCaps(size("--memory-limit", memory_limit),
                      size("--device-memory-limit", device_memory_limit),
                      size("--rmm-pool-size", rmm_pool_size),
                      None if spill_directory is None else os.fspath(spill_directory))


def default_device_memory_limit(rmm_pool_size: int, memory_budget: int | None) -> int:
    """Device memory limit for an RMM pool given without one: the pool less room for the
    running tasks, twice the per-worker memory budget (a quarter of the pool by default), so
    at most half the pool holds stored results; never below a quarter of the pool.

    dask-cuda's own default (80 % of the whole GPU) would be above a smaller pool: stored
    results would never move to host memory, and the pool would run out instead."""
    budget = memory_budget or int(rmm_pool_size * DEFAULT_BUDGET_FRACTION)
    return max(rmm_pool_size - 2 * budget, rmm_pool_size // 4)


def resolve_caps(caps: MemoryCaps, backend: str, memory_budget: int | None) -> MemoryCaps:
    """Check ``caps`` against the backend and the budget; fill in the device memory limit of
    an RMM pool (:func:`default_device_memory_limit`)."""
    gpu_only = [option for option in ("--device-memory-limit", "--rmm-pool-size")
                if option in caps.given()]
    if gpu_only and backend != "gpu":
        raise ConfigurationError(
            f"{' and '.join(gpu_only)} need{'s' if len(gpu_only) == 1 else ''} the GPU backend "
            "(dask-cuda workers); on the CPU backend use --memory-limit")
    for name in ("memory_limit", "device_memory_limit", "rmm_pool_size"):
        value = getattr(caps, name)
        if value is not None and value <= 0:
            raise ConfigurationError(f"{MemoryCaps.OPTIONS[name]} must be positive, got {value}")
    pool = caps.rmm_pool_size
    if pool is None:
        return caps
    pool = pool // RMM_ALIGNMENT * RMM_ALIGNMENT
    if pool <= 0:
        raise ConfigurationError(f"--rmm-pool-size must be at least {RMM_ALIGNMENT} bytes")
    if memory_budget is not None and memory_budget >= pool:
        raise ConfigurationError(
            f"--memory-budget {format_bytes(memory_budget)} is not below --rmm-pool-size "
            f"{format_bytes(pool)}: the plan would need more GPU memory than the pool holds")
    device = caps.device_memory_limit
    if device is None:
        device = default_device_memory_limit(pool, memory_budget)
    elif device >= pool:
        raise ConfigurationError(
            f"--device-memory-limit {format_bytes(device)} is not below --rmm-pool-size "
            f"{format_bytes(pool)}: stored results would fill the pool before moving to host "
            "memory")
    return MemoryCaps(caps.memory_limit, device, pool, caps.spill_directory)


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
    caps: MemoryCaps = field(default_factory=MemoryCaps)
    """The workers' memory caps (the smallest over the workers); ``worker_memory`` is the
    RMM pool on GPU workers that have one, the memory limit on CPU workers."""
    staging: str = "device"
    """Where stage results live between tasks: ``host`` or ``device`` (:mod:`dtri.runtime.staging`,
    :func:`resolve_staging`)."""

    def task_budget(self, memory_budget: int | None) -> int:
        """Bytes one task may plan for: the per-worker budget shared by its threads (by
        default a quarter of the worker's memory; half of the GPU's under host staging, where
        the device holds nothing between tasks)."""
        share = STAGED_BUDGET_FRACTION if self.staged_on_gpu else DEFAULT_BUDGET_FRACTION
        budget = memory_budget or int(self.worker_memory * share)
        return max(1, budget // max(1, self.threads_per_worker))

    @property
    def staged_on_gpu(self) -> bool:
        """Host staging with GPU tasks: the data moves to the device task by task."""
        return self.staging == "host" and self.backend == "gpu"


STAGED_BUDGET_FRACTION = 0.5
"""Share of a capped GPU one task may plan for under host staging (:mod:`dtri.runtime.staging`): a
stage's results wait in host memory, so the pool holds the running task and the device cache
of vertex-wide arrays (a quarter of the budget) and nothing else."""


def resolve_staging(requested: str, session: Session) -> str:
    """``host`` or ``device`` for a run: ``auto`` stages on the host when the GPU workers'
    memory is capped by an RMM pool that cannot grow (``--rmm-pool-size``, or
    ``dask cuda worker --rmm-maximum-pool-size``), since the graph then may not fit."""
    from dtri.runtime.staging import STAGINGS

    if requested not in STAGINGS:
        raise ConfigurationError(f"staging must be one of {', '.join(STAGINGS)}, "
                                 f"got {requested!r}")
    if requested != "auto":
        return requested
    capped = session.backend == "gpu" and session.caps.rmm_pool_size is not None
    return "host" if capped else "device"


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


def _start_local_cluster(backend: str, workers: int | None, protocol: str,
                         caps: MemoryCaps | None = None) -> Any:
    """A local cluster for one run; ``caps`` must have been through :func:`resolve_caps`."""
    protocol = resolve_protocol(protocol, backend, workers)
    caps = caps or MemoryCaps()
    memory: dict[str, Any] = {}
    if caps.memory_limit is not None:
        memory["memory_limit"] = caps.memory_limit
    if caps.spill_directory is not None:
        memory["local_directory"] = caps.spill_directory
    # Each nanny copies the config when it is made and passes it to the worker it (re)starts;
    # the scheduler (in this process) reads it for as long as the cluster runs: open_session.
    config = WORKER_MEMORY_CONFIG if caps.memory_limit is not None else {}
    with dask.config.set(config):
        if backend == "gpu":
            from dask_cuda import LocalCUDACluster

            ucx = {"enable_tcp_over_ucx": True, "enable_nvlink": True,
                   "enable_infiniband": False} if protocol == "ucx" else {}
            if caps.device_memory_limit is not None:
                memory["device_memory_limit"] = caps.device_memory_limit
            # CuPy's arrays from the pool too; a given pool cannot grow, so the cap is real
            memory.update(rmm_pool_size=caps.rmm_pool_size or DEFAULT_RMM_POOL,
                          rmm_maximum_pool_size=caps.rmm_pool_size,
                          rmm_allocator_external_lib_list=["cupy"])
            return LocalCUDACluster(
                n_workers=workers, protocol=protocol, dashboard_address=":0",
                silence_logs=logging.CRITICAL, **ucx, **memory,
            )
        from distributed import LocalCluster

        return LocalCluster(
            n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
            protocol=protocol, dashboard_address=":0", silence_logs=logging.CRITICAL, **memory,
        )


def _device_memory() -> int:
    from dtri.runtime.gpu import device_memory_bytes

    return device_memory_bytes()


def _worker_memory(backend: str, *, dask_worker: Any) -> dict[str, Any]:
    """One worker's memory caps as it runs (and its GPU's memory on the GPU backend)."""
    device_buffer = getattr(dask_worker.data, "device_buffer", None)  # dask-cuda's
    pool = None
    for plugin in dask_worker.plugins.values():  # dask-cuda's RMMSetup, after its setup
        maximum = getattr(plugin, "maximum_pool_size", None)
        if type(plugin).__name__ == "RMMSetup" and isinstance(maximum, int):
            pool = maximum
    return {
        "memory_limit": dask_worker.memory_manager.memory_limit,
        "device_memory_limit": getattr(device_buffer, "n", None),
        "rmm_pool_size": pool,
        "spill_directory": os.path.dirname(dask_worker.local_directory),
        "device_memory": _device_memory() if backend == "gpu" else None,
    }


def _smallest(values: list[Any]) -> Any:
    present = [v for v in values if v is not None]
    return min(present) if present else None


def _describe_client(client: Any, backend: str, workers: int | None) -> Session:
    info = client.scheduler_info(n_workers=-1)["workers"]
    if not info:
        client.wait_for_workers(1, timeout=60)
        info = client.scheduler_info(n_workers=-1)["workers"]
    if workers:
        info = dict(list(info.items())[:workers])
    reports = list(client.run(_worker_memory, backend, workers=list(info)).values())
    caps = MemoryCaps(**{name: _smallest([r[name] for r in reports])
                         for name in ("memory_limit", "device_memory_limit", "rmm_pool_size")},
                      spill_directory=reports[0]["spill_directory"])
    if backend == "gpu":
        memory = caps.rmm_pool_size or min(r["device_memory"] for r in reports)
    else:
        memory = caps.memory_limit or psutil.virtual_memory().total
    return Session(
        backend=backend, client=client, workers=len(info),
        threads_per_worker=max(w["nthreads"] for w in info.values()),
        worker_memory=int(memory), dashboard=getattr(client, "dashboard_link", None),
        addresses=tuple(sorted(info)), caps=caps,
    )


def _make_spill_directory(path: str) -> None:
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as error:
        raise ConfigurationError(f"--spill-directory {path}: {error.strerror or error}") from None


def _refuse_caps_for(caps: MemoryCaps, where: str) -> None:
    """Memory caps only shape a cluster that dtri starts: fail if the run goes elsewhere."""
    if given := caps.given():
        raise ConfigurationError(
            f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} only to the local "
            f"cluster that dtri starts, not to {where}; give a running cluster's workers their "
            "own limits (dask worker --memory-limit, dask cuda worker --device-memory-limit "
            "--rmm-pool-size)")


@contextmanager
def open_session(backend: str, scheduler: str | None = None, scheduler_file: str | None = None,
                 workers: int | None = None, protocol: str = "auto",
                 caps: MemoryCaps | None = None,
                 memory_budget: int | None = None) -> Iterator[Session]:
    """Connect to (or start) the Dask scheduler of one run; close what this run started.

    ``protocol`` and ``caps`` apply to a cluster started here (a running one has its own; caps
    given for one raise :class:`ConfigurationError`). ``memory_budget`` (bytes per worker, or
    ``None`` for the default) only sizes the device memory limit of an RMM pool given
    without one (:func:`default_device_memory_limit`)."""
    address = scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS")
    caps = resolve_caps(caps or MemoryCaps(), backend, memory_budget)
    if address in LOCAL_SCHEDULERS:
        _refuse_caps_for(caps, f"--scheduler {address} (no workers)")
    elif address or scheduler_file:
        _refuse_caps_for(caps, f"the cluster at {address or scheduler_file}")
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
            if caps.spill_directory is not None:
                _make_spill_directory(caps.spill_directory)
            if caps.memory_limit is not None:
                stack.enter_context(dask.config.set(WORKER_MEMORY_CONFIG))
            cluster = _start_local_cluster(backend, workers, protocol, caps)
            stack.callback(cluster.close)
            client = Client(cluster)
            stack.callback(client.close)
        else:
            _refuse_caps_for(caps, "the active distributed.Client's cluster")
        # as_current, not dask.config: a nanny copies the config into the workers it restarts
        stack.enter_context(client.as_current())
        yield _describe_client(client, backend, workers)


# ------------------------------------------------------------------ peak memory and spilling

_MEMORY_MARKS: dict[str, dict[str, Any]] = {}
"""In each worker process: what :func:`_reset_worker_memory` saw, by worker address."""


class SpillCounter:
    """A ``zict.Buffer`` ``fast_to_slow`` callback adding up the bytes (``sizeof``) it moves.

    dask-cuda's buffers (device to host, host to disk) keep no such count themselves."""

    def __init__(self) -> None:
        self.bytes = 0

    def __call__(self, key: Any, value: Any) -> None:
        from distributed.sizeof import safe_sizeof

        self.bytes += safe_sizeof(value)


def _spill_counter(buffer: Any) -> SpillCounter | None:
    """The :class:`SpillCounter` of a ``zict.Buffer`` (installed once), ``None`` for a
    mapping that never spills."""
    callbacks = getattr(buffer, "fast_to_slow_callbacks", None)
    if callbacks is None:
        return None
    for callback in callbacks:
        if isinstance(callback, SpillCounter):
            return callback
    callbacks.append(counter := SpillCounter())
    return counter


def _spilled(data: Any) -> dict[str, int | None]:
    """Bytes a worker has moved out of memory so far: ``disk`` (to its spill directory) and
    ``host`` (device to host memory, dask-cuda workers only); ``None`` where it cannot."""
    metrics = getattr(data, "cumulative_metrics", None)  # distributed's SpillBuffer
    if metrics is not None:  # bytes written by the spill file, as Dask meters them
        return {"disk": int(metrics.get(("disk-write", "bytes"), 0)), "host": None}
    if hasattr(data, "device_buffer"):  # dask-cuda's DeviceHostFile
        to_host, to_disk = _spill_counter(data.device_buffer), _spill_counter(data.host_buffer)
        return {"disk": to_disk.bytes if to_disk else None,
                "host": to_host.bytes if to_host else None}
    return {"disk": None, "host": None}


def _high_water_mark() -> int | None:
    """This process's peak resident memory (Linux ``VmHWM``), or ``None``."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


def _reset_high_water_mark() -> bool:
    """Restart the kernel's count of this process's peak memory (Linux 4.0+)."""
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
        return True
    except OSError:
        return False


def _sampled_peak(monitor: Any, quantity: str, since: float) -> int | None:
    """Largest sample of ``quantity`` that Dask's system monitor took since ``since``."""
    samples = monitor.quantities.get(quantity)
    if not samples:
        return None
    times = monitor.quantities["time"]
    recent = [value for when, value in zip(reversed(times), reversed(samples), strict=False)
              if when >= since]
    return int(max(recent)) if recent else int(samples[-1])


def _reset_worker_memory(backend: str, *, dask_worker: Any) -> None:
    """Start this worker's peak and spill counts afresh (run on the worker)."""
    marks: dict[str, Any] = {"time": time.time(), "spilled": _spilled(dask_worker.data),
                             "exact_host_peak": _reset_high_water_mark(), "device": None}
    if backend == "gpu":
        from dtri.runtime.gpu import reset_device_peak

        marks["device"] = reset_device_peak()
    _MEMORY_MARKS[dask_worker.address] = marks


def _read_worker_memory(backend: str, *, dask_worker: Any) -> dict[str, Any]:
    """This worker's peaks and spilled bytes since :func:`_reset_worker_memory` (run on the
    worker; a worker restarted since then counts from its start)."""
    marks = _MEMORY_MARKS.get(dask_worker.address) or {
        "time": 0.0, "spilled": {}, "exact_host_peak": False, "device": None}
    monitor = dask_worker.monitor
    host_peak = (_high_water_mark() if marks["exact_host_peak"]
                 else _sampled_peak(monitor, "memory", marks["time"]))
    spilled, before = _spilled(dask_worker.data), marks["spilled"]
    device_peak, device_source = None, None
    if backend == "gpu":
        from dtri.runtime.gpu import device_peak_bytes

        device_peak = device_peak_bytes() if marks["device"] == "rmm" else None
        if device_peak is not None:
            device_source = "rmm"
        elif (device_peak := _sampled_peak(monitor, "gpu_memory_used", marks["time"])):
            device_source = "nvml-sampled"
    return {
        "peak_process_bytes": host_peak,
        "peak_device_bytes": device_peak,
        "peak_device_source": device_source,
        "spilled_bytes": (None if spilled["disk"] is None
                          else spilled["disk"] - (before.get("disk") or 0)),
        "spilled_device_bytes": (None if spilled["host"] is None
                                 else spilled["host"] - (before.get("host") or 0)),
    }


@contextmanager
def measured_memory(session: Session) -> Iterator[dict[str, dict[str, Any]]]:
    """Measure each worker's memory over the block; the yielded dict is filled at its end.

    Per worker address: ``peak_process_bytes`` (the worker process's peak resident memory:
    the kernel's high-water mark, or Dask's system monitor samples where it cannot be reset),
    ``peak_device_bytes`` with ``peak_device_source`` (``rmm``: RMM statistics, exact, when
    cuDF and CuPy both allocate through RMM, as with an RMM pool; ``nvml-sampled``: the GPU's
    used memory as Dask's system monitor samples it every 500 ms), ``spilled_bytes`` (written
    to the spill directory) and ``spilled_device_bytes`` (device data moved to host memory by
    dask-cuda). ``None`` where not measured; empty without a distributed client.
    """
    report: dict[str, dict[str, Any]] = {}
    client = session.client
    if client is None:
        yield report
        return
    client.run(_reset_worker_memory, session.backend, workers=_live_workers(session))
    yield report
    report.update(sorted(client.run(_read_worker_memory, session.backend,
                                    workers=_live_workers(session)).items()))


def _live_workers(session: Session) -> list[str]:
    """The session's workers that are still up (a lost one is not waited for)."""
    known = session.client.scheduler_info(n_workers=-1)["workers"]
    return [address for address in session.addresses if address in known]
