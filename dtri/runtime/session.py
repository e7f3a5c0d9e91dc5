"""Where a run goes: the Dask scheduler, the partition backend, the memory caps and budget.

* ``scheduler`` is a scheduler address (``tcp://host:8786``; ``DASK_SCHEDULER_ADDRESS`` is
  read when it is not given), ``scheduler_file``, or the name of a local Dask scheduler
  (``"threads"``, ``"synchronous"``) for runs without ``distributed``.
* Otherwise an active ``distributed.Client`` is used, as Dask users expect.
* Failing that, a run whose input fits one task runs *in process*, on the CPU or on the
  current GPU (:func:`placement`): no worker processes, no Dask graph (its tasks run as they
  are made: :mod:`dtri.runtime.tasks`), and on the CPU the compiled kernels spread over this
  process's cores (``dtri.kernel-threads`` in ``dask.config``). Nothing is started, so a
  script needs no ``if __name__ == "__main__":`` guard; ``--explain`` says why it stayed.
* Otherwise (an input too big for one task, ``workers``, or memory caps) an embedded local
  cluster is started for the run: ``dask_cuda.LocalCUDACluster`` (one worker per visible GPU,
  ``CUDA_VISIBLE_DEVICES`` respected) for the GPU backend, ``distributed.LocalCluster`` (one
  single-threaded worker process per core) for the CPU.
* ``backend="auto"`` takes the GPU when one is usable, but leaves an input smaller than
  ``dtri.gpu-min-edges`` (``dask.config``) on the CPU, which counts it faster
  (:func:`choose_backend`).
* :class:`MemoryCaps` shape the memory of a cluster started here: a host memory limit above
  which workers spill stored results to disk, and on GPU workers a device memory limit above
  which dask-cuda moves them to host memory and an RMM pool that caps the GPU memory dtri uses.

:func:`open_runtime` opens all of it from the run's :class:`~dtri.options.Options` and yields a
:class:`Runtime`: what the planner and the task builders need to know of it.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, MutableMapping
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import asdict, dataclass, field, replace
from typing import Any, ClassVar

import dask
import psutil
from dask.utils import format_bytes, parse_bytes

import dtri.config  # noqa: F401 (registers the dtri.* defaults of dask.config)
from dtri.errors import ConfigurationError
from dtri.options import (
    LOCAL_SCHEDULERS,
    PROTOCOLS,
    RMM_ALIGNMENT,
    Backend,
    Options,
    refuse_local_cluster_options,
)
from dtri.runtime.budget import (
    TASK_SHARES,
    Budget,
    given_budget,
    resolve_budget,
    worker_budget,
)
from dtri.runtime.compat import lift_cached_property_locks
from dtri.runtime.driver import gpu_modules_installed
from dtri.runtime.host_meter import read_host_peaks
from dtri.runtime.host_plan import HostPlan, host_plan
from dtri.runtime.meter import MeasuredMemory, StageMeter, local_stage_peaks
from dtri.runtime.readings import read_readings
from dtri.runtime.scaling import WorkerChoice
from dtri.runtime.staging import (
    Staging,
    pinned_share,
    resolve_staging,
)
from dtri.runtime.tasks import Tasks, kept_placement
from dtri.runtime.timer import StageTimer
from dtri.runtime.transfers import MovedBytes
from dtri.runtime.wire_format import choose_wire_format
from dtri.runtime.worker_start import (
    claim_start_method,
    environ_kept,
    start_worker_server,
    worker_start,
)

GPU_MIN_EDGES = "dtri.gpu-min-edges"
"""``dask.config`` key: :func:`gpu_min_edges`. Its default (``dtri/dtri.yaml``) was measured by
``examples/benchmarks/in_process.py sizes`` (``in-process-h100.jsonl``): on one H100 and its
host's 16 cores, ``dtri.count`` of an R-MAT edge array in host memory took 3.6 ms on the CPU
against 6.0 ms on the GPU at 8,192 edges, and 8.4 ms against 6.2 ms at 16,384 (a second host:
4.6 against 6.3, 9.6 against 6.8); the GPU was ahead at every size above (40x at 16.8 M
edges)."""
IN_PROCESS_GPU_BYTES_PER_ROW = "dtri.in-process-gpu-bytes-per-row"
"""``dask.config`` key: the device bytes an input row holds at the peak of an in-process GPU
run, where every stage's results stay in GPU memory (:func:`placement`). Its default
(``dtri/dtri.yaml``) is above what a probe saw on one H100 (80 GB): the device memory in use
(``cudaMemGetInfo``, sampled every 2 ms, so the blocks cached by CuPy's pool and by CUDA's
stream-ordered pool count too) rose by 73.3 B an input row for R-MAT 25 and 69.5 B for R-MAT
26 (74.6 GB); R-MAT 24 rose by 28.4 GB, 106 B a row, most of it one task's budget. RMM's
statistics do not see CuPy's pool, so they could not measure it; this was a probe, not a
committed benchmark."""
SPILL_LOGGER = logging.getLogger("distributed.spill")
"""Dask's logger of failed spills, which dtri's spill buffer logs to as well."""
ADAPTIVE_MALLOC = "dtri.adaptive-malloc"
"""``dask.config`` key: whether the workers of a local cluster that dtri starts without a host
memory limit keep glibc's adaptive malloc. A Dask nanny sets ``MALLOC_TRIM_THRESHOLD_=65536``
in its workers, so that freed memory goes back to the system and their resident memory tells
their stored results' size; setting it also fixes glibc's mmap threshold at 128 KiB, so every
larger array is mapped afresh and its pages faulted in again. On this project's 2-core CPU,
R-MAT 20 on two CPU workers took 21.7-21.9 s with it and 11.5-11.8 s without (generating the
edges 12.3 s against 2.2 s), at a 12-22 % higher resident peak. With ``--memory-limit`` the
workers spill by their resident memory, so Dask's setting stays."""
DIRECT_DEVICE_WRITES = "dtri.direct-device-writes"
"""``dask.config`` key: whether a GPU run's Parquet writes (a saved graph's partitions, a
checkpoint's prepared graph) bypass the page cache. KvikIO, which writes them for pylibcudf,
does so by default (``O_DIRECT``), and the next process then reads them back from the disk.
dtri sets ``KVIKIO_AUTO_DIRECT_IO_WRITE`` to this where the environment leaves it unset
(:func:`set_device_io`). Its default, ``false``, writes through the cache, as the host's
writes go: on one H100, saving R-MAT 26 took 2.57 s and a count opened it next in 0.82 s,
against 3.83 s and 2.88 s past the cache (a probe, not a committed benchmark)."""
KVIKIO_DIRECT_WRITES = "KVIKIO_AUTO_DIRECT_IO_WRITE"
"""KvikIO's environment variable for ``O_DIRECT`` writes, read once, at its first file."""
DEVICE_READ_THREADS = "dtri.device-read-threads"
"""``dask.config`` key: the threads KvikIO reads a GPU run's files with (cuDF's Parquet reader
on the device: the input's files, a saved graph, a checkpoint), which copy the file's pages
to the device in pieces side by side. dtri sets ``KVIKIO_NTHREADS`` to this where the
environment leaves it unset (:func:`set_device_io`). In one process on one H200, reading the
4 edge files of a saved R-MAT 26 (3.5 GB, from the page cache) took 0.145 s with 8 threads
against 0.22 s with cuDF's own default, and 1.0 s with one (probes, not committed
benchmarks)."""
KVIKIO_THREADS = "KVIKIO_NTHREADS"
"""KvikIO's environment variable for its threads, read once, at its first file."""
KERNEL_THREADS = "dtri.kernel-threads"
"""``dask.config`` key: threads a compiled CPU kernel may use within one task.
Runs on the synchronous scheduler set it to this process's cores: one task runs at a time,
so the kernel has them all; elsewhere tasks run side by side, one per worker thread."""
DEFAULT_RMM_POOL = 0.5
"""Initial RMM pool of a dask-cuda worker that dtri starts without ``--rmm-pool-size``, as a
fraction of the GPU's memory; it grows as needed (no maximum), so it is no cap. Without a
pool every cuDF allocation is a ``cudaMalloc`` and every free a synchronizing ``cudaFree``,
and UCX opens a new CUDA IPC handle for each received buffer: on 4 H200s a pool took RMAT 25
from 1.387 s to 0.912 s, and 2.630 s to 2.126 s on one (``examples/benchmarks/``). dask-cuda
recommends a pool with NVLink for the same reason."""
@dataclass(frozen=True)
class MemoryCaps:
    """Memory options of a worker, in bytes per worker (``None``: Dask's or dask-cuda's default).

    dtri applies them to the local cluster it starts; for a running cluster they are read back
    from its workers (:func:`open_runtime`)."""

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
    ``temporary-directory``, else the system's temporary directory). dtri creates it and
    writes a file there before it starts a worker; CPU workers with a memory limit keep in
    memory what a full disk refuses (:func:`failsafe_spill_buffer`)."""

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


def default_device_memory_limit(rmm_pool_size: int, worker_budget: int) -> int:
    """Device memory limit for an RMM pool given without one: the pool less room for the
    running tasks, twice the per-worker memory budget, so that at most half the pool holds
    stored results; never below a quarter of the pool.

    dask-cuda's own default (80 % of the whole GPU) would be above a smaller pool: stored
    results would never move to host memory, and the pool would run out instead."""
    return max(rmm_pool_size - 2 * worker_budget, rmm_pool_size // 4)


def resolve_caps(caps: MemoryCaps, backend: str, given: Budget | None) -> MemoryCaps:
    """Check ``caps`` against the backend and the ``given`` budget (:func:`dtri.runtime.
    budget.given_budget`); fill in the device memory limit of an RMM pool
    (:func:`default_device_memory_limit`). Stored results wait in device memory only under
    device staging, so the limit leaves room for that staging's budget (a quarter of the
    pool by default), whatever the staging of the run that starts the workers: a later run
    on them may stage on the device."""
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
    if given is not None and given.per_worker >= pool:
        raise ConfigurationError(
            f"--memory-budget {format_bytes(given.per_worker)} is not below --rmm-pool-size "
            f"{format_bytes(pool)}: the plan would need more GPU memory than the pool holds")
    device = caps.device_memory_limit
    if device is None:
        device = default_device_memory_limit(
            pool, worker_budget(given, pool, Staging("device", Backend(backend))))
    elif device >= pool:
        raise ConfigurationError(
            f"--device-memory-limit {format_bytes(device)} is not below --rmm-pool-size "
            f"{format_bytes(pool)}: stored results would fill the pool before moving to host "
            "memory")
    return MemoryCaps(caps.memory_limit, device, pool, caps.spill_directory)


PROGRESS_READER = "progress"
"""The name under which the progress lines read the workers' host meters (apart from each
run's own reading)."""


@dataclass(frozen=True)
class Runtime:
    """The resources of one run, as the planner sees them."""

    backend: Backend
    """The backend, decided once (:func:`choose_backend`); a name given here is checked."""
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
    staged: str = "device"
    """Where stage results wait between tasks, ``host`` or ``device``
    (:func:`dtri.runtime.staging.resolve_staging`): :attr:`staging`."""
    budget: Budget = None  # type: ignore[assignment]  # resolved in __post_init__ if not given
    """The memory one worker and one task plan for (:mod:`dtri.runtime.budget`), resolved
    when the runtime opens; made here without ``--memory-budget`` where none is given."""
    meter: StageMeter | None = None
    """The stage meter of this process, where a local Dask scheduler runs the tasks here and
    something is measured (on a cluster each worker has its own: :mod:`dtri.runtime.meter`)."""
    metered: bool = False
    """Whether the workers measure their stages' device memory (have a meter plugin)."""
    host_metered: bool = False
    """Whether the workers measure their stages' host memory (have a host meter plugin)."""
    eager: bool = False
    """An in-process run on the synchronous scheduler: its tasks run as they are built, no
    Dask graph (:mod:`dtri.runtime.tasks`)."""
    allocator: Any = None
    """The CuPy allocator the tasks of an in-process GPU run allocate from (CuPy's memory
    pool: :func:`_device_pool`), or ``None`` for CuPy's current one."""
    reason: str = ""
    """One line on why the run goes where it goes (``--explain``)."""
    workers_choice: WorkerChoice | None = None
    """How many GPUs ``--workers auto`` kept of a local cluster started here, and why
    (:mod:`dtri.runtime.scaling`); ``None`` where nothing was chosen."""
    protocol: str | None = None
    """The comms between the workers (``tcp``, ``ucx``, ...: the scheme of the scheduler's
    address); ``None`` without a cluster."""
    protocol_note: str | None = None
    """One line on how the comms could be faster, where dtri started a cluster that could
    not use the best it knows (:func:`resolve_protocol`); ``None`` otherwise."""
    ledgers: bool = False
    """Whether the workers keep transfer ledgers (:mod:`dtri.runtime.transfers`)."""
    host_plan: HostPlan | None = None
    """How each worker's host memory limit is shared out, where dtri started the workers
    with one (:mod:`dtri.runtime.host_plan`)."""
    start_seconds: float | None = None
    """Seconds from starting the local cluster that dtri started for this run to knowing its
    workers (``--workers auto``'s choice included); ``None`` where it started none."""
    wire_format: str = ""
    """How data crosses between the workers (:mod:`dtri.kernels.wire`), decided when the
    runtime opens (:func:`~dtri.runtime.wire_format.choose_wire_format`) where not given."""
    wire_reason: str = ""
    """One line on why that wire format."""
    pinned: set[str] = field(default_factory=set, compare=False)
    """The workers that tasks of the run were pinned to (:meth:`dtri.runtime.tasks.Tasks.
    pinned` adds them; the stage timers watch them)."""
    placements: dict[str, str] = field(default_factory=dict, compare=False)
    """Where the run's placed tasks were placed, by key (:attr:`dtri.runtime.tasks.Tasks.
    placements`)."""
    shown: list[str] = field(default_factory=list, compare=False)
    """The stage of the run's last progress line, across its timers (:class:`dtri.runtime.
    timer.StageTimer`): a stage that goes on in the next analytic's timer is one line."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "backend", Backend(self.backend))
        if not self.wire_format:
            fmt, why = choose_wire_format(self.backend, self.protocol,
                                          self.client is None or self.eager)
            object.__setattr__(self, "wire_format", fmt)
            object.__setattr__(self, "wire_reason", why)
        if self.budget is None:
            object.__setattr__(self, "budget", resolve_budget(
                None, self.worker_memory, self.threads_per_worker, self.staging))

    @property
    def staging(self) -> Staging:
        """Where stage results wait, for tasks on this runtime's backend."""
        return Staging(self.staged, self.backend)

    def tasks(self) -> Tasks:
        """The task builder of a stage of this run."""
        return Tasks(self.staging, self.addresses, self.eager, self.meter, self.allocator,
                     self.budget.per_task if self.host_plan is not None else None,
                     self.wire_format, self.pinned, self.placements)

    def timer(self, progress: bool = False) -> StageTimer:
        """A stage timer for this run (eager runs on the GPU wait for its queued work at the
        end of each stage)."""
        return StageTimer(self.client, progress, eager=self.eager,
                          synchronize=_synchronize_device if self.eager and
                          self.backend.on_gpu else None,
                          host_note=self._host_note if self.host_metered else None,
                          pinned=self.pinned, shown=self.shown)

    def _host_note(self) -> str:
        """The workers' host memory since the last stage ended, for its progress line:
        the peak resident memory of the busiest worker and the bytes spilled to disk and
        read back (a run that spills shows it as it goes)."""
        host = read_host_peaks(self.client, PROGRESS_READER)
        if not host.peaks.overall:  # nothing measured (the first reading starts the reader)
            return ""
        spilled, read_back = host.spilled_bytes() or {}, host.read_back_bytes() or {}
        note = f", host peak {format_bytes(host.peaks.overall)}"
        if spilled.get("total") or read_back.get("total"):
            note += (f", spilled {format_bytes(spilled.get('total', 0))}, read back "
                     f"{format_bytes(read_back.get('total', 0))}")
        return note

    def readings(self) -> tuple[MeasuredMemory, MovedBytes]:
        """What the meters measured since the last call, in one round trip to the workers
        (:func:`dtri.runtime.readings.read_readings`): the peak memory of each stage, the
        device's (:mod:`dtri.runtime.meter`) and the host's (:mod:`dtri.runtime.host_meter`),
        and the bytes moved between workers per stage and receiving worker
        (:mod:`dtri.runtime.transfers`; not measured without a cluster)."""
        if self.client is None:
            return local_stage_peaks(self.meter), MovedBytes(False)
        if not (self.metered or self.host_metered or self.ledgers):
            return MeasuredMemory(None), MovedBytes(False)
        return read_readings(self.client, self.metered, self.host_metered, self.ledgers)

    @property
    def capped(self) -> bool:
        """GPU workers whose memory an RMM pool that cannot grow caps."""
        return self.backend.on_gpu and self.caps.rmm_pool_size is not None


def gpu_available() -> bool:
    """True when cuDF, dask-cuDF and CuPy import and at least one GPU is visible."""
    if not gpu_modules_installed():
        return False
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def set_device_io() -> None:
    """KvikIO's settings in this process's environment, where it does not set them:
    ``KVIKIO_AUTO_DIRECT_IO_WRITE`` from ``dtri.direct-device-writes``
    (:data:`DIRECT_DEVICE_WRITES`) and ``KVIKIO_NTHREADS`` from ``dtri.device-read-threads``
    (:data:`DEVICE_READ_THREADS`). They hold for a run in this process, and for the workers
    of a local cluster, which inherit them; workers started elsewhere keep their own
    environment."""
    direct = bool(dask.config.get(DIRECT_DEVICE_WRITES))
    os.environ.setdefault(KVIKIO_DIRECT_WRITES, "true" if direct else "false")
    os.environ.setdefault(KVIKIO_THREADS, str(int(dask.config.get(DEVICE_READ_THREADS))))


def gpu_min_edges() -> int:
    """``dtri.gpu-min-edges`` from ``dask.config``: inputs of fewer edges than this run on the
    CPU under ``backend="auto"`` though a GPU is usable (an input on the GPU stays there)."""
    return int(dask.config.get(GPU_MIN_EDGES))


def choose_backend(requested: str, input_on_gpu: bool, rows: int | None = None
                   ) -> tuple[Backend, str]:
    """The :class:`~dtri.options.Backend` for a requested ``auto``/``cpu``/``gpu`` (checked
    by :class:`~dtri.options.Options`) and an input of ``rows`` edges (``None``: not known
    before it is read), with one line on why."""
    if requested == "gpu" or (requested == "auto" and input_on_gpu):
        if not gpu_available():
            raise ConfigurationError(
                "the GPU backend needs cuDF, dask-cuDF, dask-cuda and CuPy with a visible GPU "
                '(pip install "dtri[cuda13]"); use --backend cpu to run on pandas'
            )
        return Backend.GPU, ("--backend gpu" if requested == "gpu"
                             else "auto: the input is on the GPU")
    if requested == "cpu":
        return Backend.CPU, "--backend cpu"
    if not gpu_available():
        return Backend.CPU, "auto: no usable GPU"
    smallest = gpu_min_edges()
    if rows is not None and rows < smallest:
        return Backend.CPU, (f"auto: {rows} edges, fewer than {GPU_MIN_EDGES} = {smallest}, "
                             "below which the CPU measured faster")
    return Backend.GPU, "auto: a usable GPU"


def resolve_backend(requested: str, input_on_gpu: bool, rows: int | None = None) -> Backend:
    """``cpu`` or ``gpu`` for a requested ``auto``/``cpu``/``gpu`` (:func:`choose_backend`)."""
    return choose_backend(requested, input_on_gpu, rows)[0]


def active_client() -> Any:
    """The active ``distributed.Client`` (as Dask would use it), or ``None``. There is none
    while ``distributed`` has not been imported, so it is not imported to find out."""
    if "distributed" not in sys.modules:
        return None
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


def cuda_major() -> int | None:
    """The CUDA major version of the installed CuPy's runtime (12, 13), ``None`` without
    CuPy."""
    try:
        import cupy

        return int(cupy.cuda.runtime.runtimeGetVersion()) // 1000
    except Exception:  # no CuPy, or no CUDA runtime it can load
        return None


def ucx_package() -> str:
    """The distributed-ucxx package for the installed CUDA (``distributed-ucxx-cu13`` where
    that is not known)."""
    return f"distributed-ucxx-cu{cuda_major() or 13}"


@dataclass(frozen=True)
class ProtocolChoice:
    """The comms of a cluster that dtri starts, and why it is not the best one, if not."""

    name: str
    """``tcp`` or ``ucx``."""
    note: str | None = None
    """One line for the user, with the command that would give the better comms."""


def resolve_protocol(requested: str, backend: str, workers: int | None) -> ProtocolChoice:
    """``tcp`` or ``ucx`` for an embedded cluster. ``auto`` picks UCX for several GPU workers
    when it is installed: Dask's TCP comm moves GPU data at about 1 GB/s through host memory,
    UCX over NVLink at about 100 GB/s (measured on 4 H200, examples/benchmarks/README.md).
    Where it is not installed, ``auto`` takes TCP, and the choice's note says so with the
    command that installs it."""
    if requested not in PROTOCOLS:
        raise ConfigurationError(
            f"protocol must be one of {', '.join(PROTOCOLS)}, got {requested!r}")
    if requested == "ucx" and not ucx_available():
        raise ConfigurationError(
            f"the UCX protocol needs distributed-ucxx (pip install {ucx_package()}); "
            "use --protocol tcp")
    if requested != "auto":
        return ProtocolChoice(requested)
    several = (workers or (_visible_gpus() if backend == "gpu" else 1)) > 1
    if backend != "gpu" or not several:
        return ProtocolChoice("tcp")
    if ucx_available():
        return ProtocolChoice("ucx")
    return ProtocolChoice("tcp", (
        "the GPU workers talk TCP, through host memory: distributed-ucxx is not installed "
        f"(pip install {ucx_package()} for UCX over NVLink)"))


def unguarded_script_line() -> int | None:
    """The line of the running script that called dtri from its top level outside an
    ``if __name__ == "__main__":`` block, if that is how dtri was called (else ``None``).
    Worker processes that a local cluster spawns import the script again, and would run
    that line again: Dask fails with "Nanny failed to start"."""
    import ast
    import inspect

    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or not path or not os.path.isfile(path):
        return None  # an interactive session, python -c, or a notebook
    frame = inspect.currentframe()
    while frame is not None and not (frame.f_globals is vars(main)
                                     and frame.f_code.co_name == "<module>"):
        frame = frame.f_back
    if frame is None:
        return None
    line = frame.f_lineno
    try:
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return None
    for statement in tree.body:
        if statement.lineno <= line <= (statement.end_lineno or statement.lineno):
            guarded = isinstance(statement, ast.If) and "__main__" in ast.unparse(statement.test)
            return None if guarded else line
    return None


@functools.cache
def _failsafe_spill_buffer() -> type:
    """Dask's ``SpillBuffer``, made to keep results in memory wherever the disk refuses them.

    Dask does so when a result is stored and spilling it (or an older one) fails: it logs
    "Spill to disk failed; keeping data in memory". Reading a spilled result back also
    spills older ones to make room, and there a full disk's ``OSError`` (``ENOSPC``,
    ``EDQUOT``, ``EFBIG``) goes unhandled: the task that needed the result fails, and the
    count stops with a bare "[Errno 28] No space left on device" that names neither the
    disk nor an option (distributed 2026.8). zict keeps each result whose spill failed in
    memory, so the one read back is still at hand."""
    from distributed.spill import SpillBuffer

    class FailsafeSpillBuffer(SpillBuffer):
        def __getitem__(self, key: Any) -> object:
            try:
                return super().__getitem__(key)
            except OSError:
                # in memory now, or still on disk (read without spilling) when it outweighs
                # the target; a result that cannot be read raises again here
                value = self.fast[key] if key in self.fast else self.slow[key]
                SPILL_LOGGER.error("Spill to disk failed; keeping data in memory",
                                   exc_info=True)
                return value

    return FailsafeSpillBuffer


def failsafe_spill_buffer(worker_local_directory: str,
                          stored_bytes: int) -> MutableMapping[Any, object]:
    """The store of a CPU worker that keeps ``stored_bytes`` of results in memory (a Dask
    worker's ``data``; :attr:`dtri.runtime.host_plan.HostPlan.stored`): the spill buffer
    Dask would build for it (the same directory and ``max-spill``) with that target, one
    that keeps results in memory when its disk is full (:func:`_failsafe_spill_buffer`)."""
    max_spill = dask.config.get("distributed.worker.memory.max-spill")
    return _failsafe_spill_buffer()(
        os.path.join(worker_local_directory, "storage"), target=stored_bytes,
        max_spill=False if max_spill is False else parse_bytes(max_spill))


def local_host_plan(backend: str, caps: MemoryCaps, given: Budget | None,
                    staging: str = "auto") -> HostPlan | None:
    """How the host memory limit of the workers of a local cluster is shared out
    (:func:`dtri.runtime.host_plan.host_plan`, which refuses one too small); ``None``
    without a limit. ``caps`` must have been through :func:`resolve_caps`; the workers run
    one thread each, and plan for the budget they will have (:func:`dtri.runtime.budget.
    resolve_budget`: the ``given`` one, else a share of the GPU's memory or of the limit)."""
    limit = caps.memory_limit
    if limit is None:
        return None
    staged = resolve_staging(staging, backend, caps.rmm_pool_size is not None)
    memory = limit if backend == "cpu" else (lambda: caps.rmm_pool_size or _device_memory())
    budget = resolve_budget(given, memory, 1, staged)
    return host_plan(limit, backend, staged.moves, budget.per_worker, threads=1,
                     budget_given=budget.given, budget_fraction=budget.share_of_memory)


IMPORTED_AHEAD = {"cpu": ("pandas", "dask.dataframe"), "gpu": ("pandas", "cudf", "dask_cudf")}
"""What a run on a local cluster imports next, by backend: the frames that carry its input;
pandas first, before what imports it with pyarrow (another thread importing pandas then
waits for it, rather than deadlocking with this one:
:func:`dtri.runtime.worker_start.claim_start_method`)."""


OPERATOR_MODULES = ("cupyx.scipy.special",)
"""What CuPy imports on a process's first operator between an array and a Python number
(SciPy's special functions through cupyx, and SciPy with them)."""


def import_on_thread(names: tuple[str, ...], thread_name: str, daemon: bool
                     ) -> threading.Thread:
    """Import ``names`` in order on a thread of its own, named ``thread_name``, while this
    process goes on. A thread that imports a module another is importing waits for it, as
    Python's import locks make it; the first import that fails ends the thread, and is left
    for the import that needs the module to raise."""

    def load() -> None:
        for name in names:
            try:
                importlib.import_module(name)
            except Exception:  # raised again where the module is needed
                return

    thread = threading.Thread(target=load, name=thread_name, daemon=daemon)
    thread.start()
    return thread


def import_ahead(backend: str) -> threading.Thread:
    """Import :data:`IMPORTED_AHEAD` on a thread of its own (:func:`import_on_thread`),
    started as the local cluster starts: the cluster waits seconds on its worker processes
    (four GPU workers: 5 to 9 s, a probe on 4 x H200), in which this process would otherwise
    sit idle before importing the same modules (cuDF alone 2.5 s there; Dask's DataFrame
    1.3 s on this 2-core machine)."""
    return import_on_thread(IMPORTED_AHEAD[backend], "dtri-import-ahead", daemon=True)


def import_operator_modules() -> threading.Thread:
    """Import :data:`OPERATOR_MODULES` on a thread of its own (:func:`import_on_thread`), for
    a caller about to wait on the device or a file (which lets go of Python's lock). CuPy's
    first operator spent that import holding the lock: the open of a saved R-MAT 26 on one
    H200 took 0.25 s to 0.3 s less with it done during the read. The thread is not a
    daemon: the process ends after the import, never during it."""
    return import_on_thread(OPERATOR_MODULES, "dtri-import-operators", daemon=False)


def quiet_ucx() -> None:
    """UCX writes its warnings to standard output, where ``--json`` goes: the one it gives
    every run (a variable that dask-cuda sets and it does not read) is turned off, in this
    process and the workers it starts (set before their forkserver starts: they keep its
    environment), where the environment does not say otherwise."""
    os.environ.setdefault("UCX_WARN_UNUSED_ENV_VARS", "n")


def cluster_settings(caps: MemoryCaps, plan: HostPlan | None) -> dict[str, Any]:
    """The ``dask.config`` a local cluster starts under: its host ``plan``'s, and glibc's
    adaptive malloc kept in its workers where no host limit is given
    (:data:`ADAPTIVE_MALLOC`)."""
    settings = plan.dask_config() if plan is not None else {}
    if caps.memory_limit is None and dask.config.get(ADAPTIVE_MALLOC):
        settings = {**settings, "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}
    return settings


WORKER_PRELOAD = "distributed.worker.preload"


def worker_preloads() -> list[str]:
    """The preloads of a local cluster's workers: those configured, and dtri's own, which
    has them ignore SIGINT (:mod:`dtri.runtime.local_worker`)."""
    from dtri.runtime.local_worker import PRELOAD

    configured = list(dask.config.get(WORKER_PRELOAD, default=None) or [])
    return configured if PRELOAD in configured else [*configured, PRELOAD]


CLOSE_TRIES = 3
"""How often :func:`close_cluster` tries to close a cluster before it stops its workers."""


def close_cluster(cluster: Any) -> None:
    """Close a local cluster however far it started. An interrupt while it starts can leave
    a worker closing as the cluster closes, which distributed asserts against (its own
    close at exit then printed a traceback): the close is tried again, and at last its
    worker processes are stopped and it is marked closed."""
    from distributed.core import Status

    for _ in range(CLOSE_TRIES):
        try:
            cluster.close(timeout=10)
            return
        except Exception:  # a half-started cluster fails in many ways
            time.sleep(0.2)
    import psutil

    for worker in list(getattr(cluster, "workers", {}).values()):
        pid = getattr(getattr(worker, "process", None), "pid", None)
        with suppress(psutil.Error, TypeError, ValueError):
            psutil.Process(pid).kill()
    cluster.status = Status.closed


@contextmanager
def clusters_closed_on_failure() -> Iterator[None]:
    """A local cluster that fails or is interrupted while it starts is closed here: its
    constructor never returned it, so nothing else holds it."""
    from distributed.deploy.spec import SpecCluster

    before = set(SpecCluster._instances)
    try:
        yield
    except BaseException:
        for cluster in set(SpecCluster._instances) - before:
            close_cluster(cluster)
        raise


def _start_local_cluster(backend: str, workers: int | None, protocol: str,
                         caps: MemoryCaps | None = None, plan: HostPlan | None = None,
                         folder: str | None = None) -> Any:
    """A local cluster for one run; ``caps`` must have been through :func:`resolve_caps`.
    Workers with a host memory limit keep the stored results their ``plan`` gives them in
    memory (:func:`local_host_plan` where not given), the rest on disk. Its workers keep
    their folders (spilled data, locks) in ``folder`` (:func:`workers_folder`)."""
    if (line := unguarded_script_line()) is not None:
        script = os.path.basename(sys.modules["__main__"].__file__ or "")
        raise ConfigurationError(
            f"{script}:{line} starts a local Dask cluster, whose worker processes import "
            f"{script} again: put the code that calls dtri under "
            'if __name__ == "__main__":, or give scheduler="synchronous" to run in this '
            "process")
    protocol = resolve_protocol(protocol, backend, workers).name
    caps = caps or MemoryCaps()
    memory: dict[str, Any] = {}
    if caps.memory_limit is not None:
        memory["memory_limit"] = caps.memory_limit
    if folder is not None or caps.spill_directory is not None:
        memory["local_directory"] = folder or caps.spill_directory
    if caps.memory_limit is not None and plan is None:
        plan = local_host_plan(backend, caps, None)
    # Each nanny copies the config when it is made and passes it to the worker it (re)starts;
    # the scheduler (in this process) reads it for as long as the cluster runs: open_runtime.
    if backend == "gpu" and protocol == "ucx":
        quiet_ucx()  # before the workers' server starts
    with dask.config.set(cluster_settings(caps, plan)), worker_start(backend), \
            dask.config.set({WORKER_PRELOAD: worker_preloads()}), clusters_closed_on_failure():
        if backend == "gpu":
            from dask_cuda import LocalCUDACluster

            ucx = {"enable_tcp_over_ucx": True, "enable_nvlink": True,
                   "enable_infiniband": False} if protocol == "ucx" else {}
            if caps.device_memory_limit is not None:
                memory["device_memory_limit"] = caps.device_memory_limit
            if plan is not None:
                memory["data"] = _gpu_worker_store(caps, plan)
            # CuPy's arrays from the pool too; a given pool cannot grow, so the cap is real
            memory.update(rmm_pool_size=caps.rmm_pool_size or DEFAULT_RMM_POOL,
                          rmm_maximum_pool_size=caps.rmm_pool_size,
                          rmm_allocator_external_lib_list=["cupy"])
            return LocalCUDACluster(
                n_workers=workers, protocol=protocol, dashboard_address=":0",
                silence_logs=logging.CRITICAL, **ucx, **memory,
            )
        from distributed import LocalCluster

        if caps.memory_limit is not None and plan is not None:  # a plan made above
            memory["data"] = (failsafe_spill_buffer, {"stored_bytes": plan.stored})
        return LocalCluster(
            n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
            protocol=protocol, dashboard_address=":0", silence_logs=logging.CRITICAL, **memory,
        )


def _gpu_worker_store(caps: MemoryCaps, plan: HostPlan) -> tuple[type, dict[str, Any]]:
    """The store of a GPU worker under a host limit (:class:`~dtri.runtime.tiered_store.
    TieredStore`), with dask-cuda's device memory limit, holding the stored results that
    ``plan`` gives host memory there, not the whole memory limit, beside the process's
    other memory (its page-locked pool, its libraries)."""
    from dask_cuda.utils import parse_device_memory_limit

    from dtri.runtime.tiered_store import TieredStore

    device = parse_device_memory_limit(caps.device_memory_limit or "default", device_index=0)
    return TieredStore, {"device_memory_limit": device, "memory_limit": plan.stored}


def _fewer_gpus(cluster: Any, runtime: Runtime, input_rows: int) -> Runtime:
    """The local cluster scaled down to the GPUs that the time model predicts fastest for
    ``input_rows`` over its measured link (:mod:`dtri.runtime.scaling`), and described
    again; the choice kept on the runtime."""
    from dtri.runtime.link import link_bandwidth
    from dtri.runtime.scaling import choose_workers

    choice = choose_workers(input_rows, runtime.workers, link_bandwidth(runtime),
                            None if runtime.staging.on_host else runtime.worker_memory)
    if choice.workers < runtime.workers:
        cluster.scale(choice.workers)
        client = runtime.client
        deadline = time.monotonic() + WORKERS_GONE_SECONDS
        while len(cluster_workers(client)) > choice.workers:
            if time.monotonic() > deadline:
                raise ConfigurationError(
                    f"the local cluster did not scale down to {choice.workers} workers in "
                    f"{WORKERS_GONE_SECONDS} s; give --workers {runtime.workers}")
            time.sleep(0.05)
        runtime = replace(_describe_client(client, runtime.backend, None),
                          protocol_note=runtime.protocol_note)
    return replace(runtime, workers_choice=choice)


WORKERS_GONE_SECONDS = 60
"""How long :func:`_fewer_gpus` waits for the workers it let go to leave."""


def _synchronize_device() -> None:
    import cupy

    cupy.cuda.get_current_stream().synchronize()


def _device_name() -> str:
    import cupy

    device = cupy.cuda.Device()
    name = cupy.cuda.runtime.getDeviceProperties(device.id)["name"]
    return f"GPU {device.id} ({name.decode() if isinstance(name, bytes) else name})"


def _device_memory() -> int:
    from dtri.runtime.gpu import device_memory_bytes

    return device_memory_bytes()


def _worker_memory(backend: str, *, dask_worker: Any) -> dict[str, Any]:
    """One worker's memory caps as it runs (and its GPU's memory on the GPU backend)."""
    data = dask_worker.data  # dtri's TieredStore, or dask-cuda's DeviceHostFile
    device_limit = getattr(data, "device_limit",
                           getattr(getattr(data, "device_buffer", None), "n", None))
    pool = None
    for plugin in dask_worker.plugins.values():  # dask-cuda's RMMSetup, after its setup
        maximum = getattr(plugin, "maximum_pool_size", None)
        if type(plugin).__name__ == "RMMSetup" and isinstance(maximum, int):
            pool = maximum
    return {
        "memory_limit": dask_worker.memory_manager.memory_limit,
        "device_memory_limit": device_limit,
        "rmm_pool_size": pool,
        "spill_directory": os.path.dirname(dask_worker.local_directory),
        "device_memory": _device_memory() if backend == "gpu" else None,
    }


def _smallest(values: list[Any]) -> Any:
    present = [v for v in values if v is not None]
    return min(present) if present else None


def cluster_workers(client: Any) -> dict[str, dict[str, Any]]:
    """The cluster's workers now, by address, with what the scheduler knows of each (threads,
    memory limit, ...), asked of the scheduler itself. ``Client.scheduler_info`` fetches them,
    then returns the client's cached identity, which the client's periodic update replaces
    with one that lists no worker: read between the two, it lists none (a two-worker test's
    memory report came back empty once in about 1,300 tests)."""
    identity = client.sync(client.scheduler.identity, n_workers=-1)
    return dict(identity["workers"])


def _describe_client(client: Any, backend: str, workers: int | None) -> Runtime:
    info = cluster_workers(client)
    if not info:
        client.wait_for_workers(1, timeout=60)
        info = cluster_workers(client)
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
    return Runtime(
        backend=Backend(backend), client=client, workers=len(info),
        threads_per_worker=max(w["nthreads"] for w in info.values()),
        worker_memory=int(memory), dashboard=getattr(client, "dashboard_link", None),
        addresses=tuple(sorted(info)), caps=caps,
        protocol=str(getattr(client.scheduler, "address", "")).partition("://")[0] or None,
    )


@contextmanager
def _environ_kept() -> Iterator[Callable[[], None]]:
    """This process's environment as it was, given back on exit and by the callable yielded:
    a Dask nanny sets the variables of ``distributed.nanny.pre-spawn-environ``
    (``OMP_NUM_THREADS=1``, ...) in its own process before it spawns a worker, so a local
    cluster left them in the caller's process, where they slowed its own threaded code and
    reached every child it started afterwards (GNU ``nproc`` answered 1)."""
    keys = {*dask.config.get("distributed.nanny.pre-spawn-environ", {}), "PYTHONHASHSEED"}
    with environ_kept(keys) as restore:
        yield restore


def workers_folder(spill_directory: str | None) -> str:
    """A new folder for the worker folders of one local cluster, in ``spill_directory`` or
    Dask's temporary directory, removed when the cluster closes, however the run ends: a
    worker stopped as it started (an interrupt) left its folder and lock behind."""
    root = spill_directory or dask.config.get("temporary-directory", None) \
        or tempfile.gettempdir()
    os.makedirs(root, exist_ok=True)  # Dask's temporary directory need not exist yet
    return tempfile.mkdtemp(prefix="dtri-workers-", dir=root)


def _prepare_spill_directory(path: str | None) -> None:
    """Create the workers' spill directory if need be (in a parent that exists: a typo in a
    path is not a tree of new folders), and write a byte to a file there: a
    directory that cannot take one (not writable, a full disk, a read-only file system) is
    one line naming the option, not a failure in each worker later. ``None``: the default
    location, where Dask's scheduler would otherwise fail to start with a traceback when
    no temporary directory is writable."""
    if path is None:
        try:
            dask.config.get("temporary-directory", None) or tempfile.gettempdir()
        except OSError as error:  # gettempdir could write to none of its candidates
            raise ConfigurationError(f"the workers have nowhere to spill to "
                                     f"({error.strerror or error}): give --spill-directory"
                                     ) from None
        return
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(path) and not os.path.exists(parent):
        raise ConfigurationError(f"--spill-directory {path}: its parent {parent} does not "
                                 "exist (dtri creates the directory, not its parents)")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as error:
        raise ConfigurationError(f"--spill-directory {path}: cannot create it: "
                                 f"{error.strerror or error}") from None
    try:
        with tempfile.TemporaryFile(dir=path, prefix=".dtri-spill-check-") as probe:
            probe.write(b"\0")
            probe.flush()
    except OSError as error:
        raise ConfigurationError(f"--spill-directory {path}: cannot write a file there: "
                                 f"{error.strerror or error}") from None


REFUSED_SECONDS = 2
"""How long :func:`refuse_if_refused` waits for a scheduler's port to answer."""


def refuse_if_refused(address: str) -> None:
    """A TCP scheduler address whose host refuses the connection, refused in one line at
    once: Dask's client tries again until its connect timeout (31 s for a port where nothing
    listens). A host that does not answer within :data:`REFUSED_SECONDS` is left to that
    timeout, whose message says so."""
    import socket

    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        scheme, location = parse_address(address)
        host, port = parse_host_port(location)
    except (ValueError, TypeError):
        return  # not host:port: Dask says what is wrong with it
    if scheme not in ("tcp", "tls"):
        return
    try:
        socket.create_connection((host, port), timeout=REFUSED_SECONDS).close()
    except ConnectionRefusedError:
        raise ConfigurationError(f"cannot reach the Dask scheduler at {address}: the "
                                 "connection was refused (nothing listens at that port)"
                                 ) from None
    except OSError:
        return  # slow or unreachable: Dask's client waits, and says so


CONNECT_SECONDS = 30
"""How long a run waits to reach a running Dask scheduler before it gives up."""


def scheduler_file_address(path: str | None) -> str:
    """The scheduler's address in a scheduler file (``dask scheduler --scheduler-file``),
    read once: Dask's client would wait for a missing file forever, and fail on a garbled one
    with a bare ``AssertionError``."""
    import json

    try:
        with open(str(path), encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise ConfigurationError(
            f"--scheduler-file {path} does not exist: start the scheduler with "
            f"'dask scheduler --scheduler-file {path}' first, or give --scheduler ADDRESS"
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigurationError(f"--scheduler-file {path}: cannot read it: "
                                 f"{getattr(error, 'strerror', None) or error}") from None
    try:
        address = json.loads(text).get("address")
    except (ValueError, AttributeError):
        address = None
    if not isinstance(address, str) or not address:
        raise ConfigurationError(
            f"--scheduler-file {path} is not a scheduler file: it holds no JSON object with "
            "the scheduler's \"address\" (dask scheduler --scheduler-file writes one)")
    return address


def _refuse_caps_for(caps: MemoryCaps, where: str) -> None:
    """Memory caps only shape a cluster that dtri starts: fail if the run goes elsewhere (a
    scheduler from ``DASK_SCHEDULER_ADDRESS``, the active client; :class:`Options` refuses
    those it names itself)."""
    refuse_local_cluster_options(caps.given(), where)


def _local_scheduler(name: str) -> Any:
    """The function of a local Dask scheduler, by name."""
    if name == "threads":
        from dask.threaded import get

        return get
    from dask.local import get_sync

    return get_sync


LOCAL_WORKERS_PER_CORE = "dtri.local-workers-per-core"
"""``dask.config`` key: the most single-threaded workers a local CPU cluster may run on one core
(:func:`check_local_workers`). Workers that share cores run (tests lay out 2 x 2 grids of 5
workers on 2 cores), but their processes start one after the other: 100 on 2 cores gave up after
237 s with Dask's "Timed out trying to connect"."""


def check_local_workers(backend: str, workers: int | None) -> None:
    """Refuse a local cluster of more workers than this machine runs: more than one a
    visible GPU on the GPU (dask-cuda gives each GPU one worker), more than
    ``dtri.local-workers-per-core`` a core on the CPU. Their processes would not start in
    time, and Dask would say only that it timed out connecting to them."""
    if workers is None:
        return
    if backend == "gpu":
        most = _visible_gpus()
        what = f"{most} visible GPUs (one worker each)"
    else:
        per_core = int(dask.config.get(LOCAL_WORKERS_PER_CORE))
        most = usable_cores() * per_core
        what = (f"{usable_cores()} cores run ({per_core} single-threaded workers a core, "
                f"{LOCAL_WORKERS_PER_CORE})")
    if workers > most:
        raise ConfigurationError(
            f"--workers {workers} is more than this machine's {what}: give --workers {most} "
            "or fewer, or --scheduler for a running cluster")


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def in_process_budget(backend: str = "cpu", staging: str = "auto") -> int:
    """Bytes one task of an in-process run may plan for by default: the share of this
    machine's memory, or of the current GPU's, that a worker's budget takes under the
    ``staging`` asked for (:func:`dtri.runtime.budget.resolve_budget`; a quarter but for
    host staging on the GPU)."""
    memory = _device_memory() if backend == "gpu" else psutil.virtual_memory().total
    return worker_budget(None, memory, resolve_staging(staging, backend, capped=False))


def runs_on_this_machine(options: Options) -> bool:
    """Whether ``options`` run on this machine (in this process or on a local cluster that
    dtri starts), not on a running cluster (named, or the active client's)."""
    address = options.scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS")
    if address in LOCAL_SCHEDULERS:
        return True
    return not (address or options.scheduler_file) and active_client() is None


def machine_room(options: Options) -> tuple[int, str]:
    """The bytes of data this machine can hold for a run, with what they are: its memory
    and the free disk where a local cluster's workers would spill (none where no temporary
    directory is writable: the cluster's start says so)."""
    memory = psutil.virtual_memory().total
    try:
        spill = options.spill_directory or dask.config.get("temporary-directory", None) \
            or tempfile.gettempdir()
    except OSError:  # gettempdir could write to none of its candidates
        return memory, f"this machine's memory ({format_bytes(memory)})"
    existing = os.path.abspath(spill)
    while not os.path.isdir(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    disk = psutil.disk_usage(existing).free
    return memory + disk, (f"this machine's memory ({format_bytes(memory)}) and free disk at "
                           f"{spill} ({format_bytes(disk)})")


def options_caps(options: Options) -> MemoryCaps:
    """The memory caps ``options`` give (:func:`memory_caps`)."""
    return memory_caps(options.memory_limit, options.device_memory_limit,
                       options.rmm_pool_size, options.spill_directory)


def named_placement(options: Options, caps: MemoryCaps) -> tuple[str | None, str] | None:
    """Where ``options`` (with their ``caps``) send a run whatever its input, as
    :func:`placement` gives it; ``None`` where they name nothing and no client is active,
    so that the input's size decides."""
    scheduler = options.scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS")
    if scheduler in LOCAL_SCHEDULERS:
        return scheduler, f"in this process, on Dask's {scheduler} scheduler (--scheduler)"
    if scheduler or options.scheduler_file:
        return scheduler, f"the Dask cluster at {scheduler or options.scheduler_file}"
    active = active_client() is not None
    if options.worker_count is not None:
        if active:  # its first workers: _describe_client
            return None, (f"the active distributed.Client's cluster, {options.worker_count} "
                          "of its workers (--workers)")
        return None, f"a local cluster of {options.worker_count} workers (--workers)"
    if caps.given():
        return None, f"a local cluster, for {', '.join(caps.given())} to shape its workers"
    if active:
        return None, "the active distributed.Client's cluster"
    return None


def placement(options: Options, backend: str, caps: MemoryCaps, input_rows: int | None,
              row_bytes: int) -> tuple[str | None, str]:
    """Where a run goes: a scheduler (an address, a local scheduler's name, or ``None`` for
    a cluster to start or the active client's), with one line on why. With nothing named, a
    run whose input fits one task's budget (``input_rows`` of ``row_bytes`` each; ``None``:
    not known before it is read) runs in this process, on the CPU or the current GPU. The
    budget is the default share of the machine's or the GPU's memory
    (:func:`in_process_budget`), or ``--memory-budget`` where that is larger: the user's word
    that one task may plan for it (a smaller one still runs here, in more partitions).

    On the GPU a larger input runs in this process too, in tasks of that budget, where the
    current GPU holds the whole graph (:data:`IN_PROCESS_GPU_BYTES_PER_ROW`): starting a local
    cluster costs more than its GPUs save. On one H100, ``dtri count --generate rmat:26
    --backend gpu`` in a new process took 3.80 s in this process against 14.73 s with
    ``--workers 1`` (``placement-h100.jsonl``); two H100s over UCX count R-MAT 26 from their
    memory in 1.66 s against one's 2.48 s (``multi-gpu-head-h100x2.jsonl``)."""
    if (named := named_placement(options, caps)) is not None:
        return named
    if input_rows is None:
        return None, "a local cluster: the input's size is not known before it is read"
    given = given_budget(options)
    default = in_process_budget(backend, options.staging)
    budget = max(given.per_task if given else 0, default)
    if input_rows * row_bytes > budget:
        if backend == "gpu" and (held := input_rows * int(dask.config.get(
                IN_PROCESS_GPU_BYTES_PER_ROW))) <= (memory := _device_memory()):
            return "synchronous", (
                f"this process, on {_device_name()}, no cluster: the graph ({input_rows} edges, "
                f"{format_bytes(held)} at {IN_PROCESS_GPU_BYTES_PER_ROW}) fits its memory "
                f"({format_bytes(memory)}), in tasks of {format_bytes(budget)}; a local "
                "cluster's start costs more than more GPUs save")
        return None, (f"a local cluster: {input_rows} edges need more than one task's budget "
                      f"in this process ({format_bytes(budget)})")
    where = "this process" if backend == "cpu" else f"this process, on {_device_name()}"
    fits = f"fits one task's budget ({format_bytes(budget)})"
    if given is not None and given.per_task < budget:
        fits = (f"fits the default budget of the {'GPU' if backend == 'gpu' else 'machine'}'s "
                f"memory ({format_bytes(budget)}); its tasks plan for --memory-budget "
                f"{format_bytes(given.per_task)}")
    return "synchronous", (f"{where}, no cluster: the input ({input_rows} edges or fewer) "
                           f"{fits}")


@contextmanager
def open_runtime(options: Options, input_on_gpu: bool = False, input_rows: int | None = 0,
                 row_bytes: int = 0, *, one_input: bool = True) -> Iterator[Runtime]:
    """Connect to (or start) the Dask scheduler that ``options`` name; close what was started
    here when the block ends. Where they name none, a run whose input fits one task
    (``input_rows`` edges of ``row_bytes`` each) runs in process (:func:`placement`).

    The backend is ``options.backend`` (``auto``: the GPU when the input is on it, or when a
    GPU is usable and, for a run of ``one_input``, the input has at least
    :func:`gpu_min_edges` edges: a session's later graphs may be larger than its first).
    ``options.protocol`` and the memory caps apply to a cluster started here (a
    running one has its own; caps given for one raise :class:`ConfigurationError`); the
    memory budget only sizes the device memory limit of an RMM pool given without one
    (:func:`default_device_memory_limit`). The staging is resolved against the workers' caps
    (:func:`dtri.runtime.staging.resolve_staging`), then the memory budget against the
    workers' memory, threads and staging (:func:`dtri.runtime.budget.resolve_budget`); under
    host staging on GPU workers each worker gets its staging state
    (:class:`dtri.runtime.plugin.StagingPlugin`) for as long as the block lasts."""
    backend, backend_reason = choose_backend(options.backend, input_on_gpu,
                                             input_rows if one_input else None)
    if backend.on_gpu:
        set_device_io()
    caps = options_caps(options)
    given = given_budget(options)
    scheduler, reason = placement(options, backend, caps, input_rows, row_bytes)
    with _opened(backend, scheduler, options.scheduler_file, options.worker_count,
                 options.protocol, caps, given, input_rows, options.staging) as runtime:
        chosen = f"; {runtime.workers_choice.reason}" if runtime.workers_choice else ""
        if runtime.start_seconds is not None:
            chosen += f"; the cluster started in {runtime.start_seconds:.1f} s"
        staging = resolve_staging(options.staging, backend, runtime.capped)
        runtime = replace(runtime, staged=staging.where,
                          budget=resolve_budget(given, runtime.worker_memory,
                                                runtime.threads_per_worker, staging),
                          reason=f"{reason}; {backend} backend ({backend_reason}){chosen}")
        if runtime.staging.on_host and options.join == "wedges":
            raise ConfigurationError(
                "host staging (the default with a capped RMM pool) counts with the fused "
                "join: give --join intersect or auto, or --staging device")
        # an in-process GPU run beyond one task's budget reads its graph through cuDF
        beyond_one_task = (input_rows or 0) * row_bytes > runtime.budget.per_task
        with _staging_state(runtime), _reads_ahead(runtime), \
                kept_placement(runtime.client), \
                _stage_meter(runtime) as runtime, _transfer_ledgers(runtime) as runtime, \
                _device_pool(runtime, beyond_one_task) as runtime:
            yield runtime


@contextmanager
def _stage_meter(runtime: Runtime) -> Iterator[Runtime]:
    """Each worker's stage meters (:class:`dtri.runtime.plugin.MeterPlugin` for the device,
    :class:`dtri.runtime.plugin.HostMeterPlugin` for the host) for as long as the block
    lasts, or this process's device meter (a Dask callback) under a local scheduler; yields
    the runtime that reads them."""
    from dtri.runtime.meter import (
        METER_NAME,
        LocalMeter,
        make_probe,
        meter_choice,
        probe_source,
    )

    choice = meter_choice()
    if runtime.client is None:
        # auto measures no in-process GPU run: its arrays come from CuPy's memory pool
        # (_device_pool), which RMM's statistics do not see; dtri.meter=rmm measures it
        pooled = runtime.eager and runtime.backend.on_gpu and choice == "auto"
        probe = None if pooled else make_probe(runtime.backend, choice)
        if probe is None:
            yield runtime
            return
        meter = StageMeter(probe, probe_source(probe))
        with LocalMeter(meter):
            yield replace(runtime, meter=meter)
        return
    if choice == "off":
        yield runtime  # nothing to measure
        return
    from dtri.runtime.host_meter import HOST_METER_NAME
    from dtri.runtime.plugin import HostMeterPlugin, MeterPlugin

    with ExitStack() as stack:
        stack.enter_context(_worker_plugin(runtime.client, HOST_METER_NAME, HostMeterPlugin))
        runtime = replace(runtime, host_metered=True)
        if choice != "auto" or runtime.backend.on_gpu:
            stack.enter_context(_worker_plugin(runtime.client, METER_NAME,
                                               lambda: MeterPlugin(runtime.backend, choice)))
            runtime = replace(runtime, metered=True)
        yield runtime


@contextmanager
def _transfer_ledgers(runtime: Runtime) -> Iterator[Runtime]:
    """Each worker's transfer ledger (:class:`dtri.runtime.plugin.TransferPlugin`) for as
    long as the block lasts; yields the runtime that reads them. Without a cluster nothing
    moves between workers."""
    from dtri.runtime.transfers import TRANSFERS_NAME

    if runtime.client is None:
        yield runtime
        return
    from dtri.runtime.plugin import TransferPlugin

    with _worker_plugin(runtime.client, TRANSFERS_NAME, TransferPlugin):
        yield replace(runtime, ledgers=True)


@contextmanager
def _device_pool(runtime: Runtime, large: bool = False) -> Iterator[Runtime]:
    """An in-process GPU run that measures nothing allocates its arrays from CuPy's memory
    pool, whose unused blocks go back to the device when the run closes (its tasks, that is,
    once cuDF is imported: :meth:`dtri.runtime.tasks.Tasks._run`). Importing cuDF points
    CuPy at RMM, where every allocation is a ``cudaMalloc`` and every free a
    synchronizing ``cudaFree`` (without a pool); a small graph's count makes over a hundred
    of each: wiki-Vote's in-session count took 13.9 ms through RMM and 5.4-6.8 ms from the
    pool on one H100, its per-vertex triangles 21 ms and 9.5-13 ms. A run measured through
    RMM (``dtri.meter=rmm``) keeps allocating through it.

    cuDF's own allocations (reading Parquet, a saved graph) come from CUDA's stream-ordered
    allocator for the run (:func:`_stream_ordered_allocations`) where the input is ``large``
    (more than one task's budget) or RMM is loaded already."""
    if not (runtime.eager and runtime.backend.on_gpu and runtime.meter is None):
        yield runtime
        return
    import cupy

    pool = cupy.get_default_memory_pool()
    try:
        with _stream_ordered_allocations(large or "rmm" in sys.modules):
            yield replace(runtime, allocator=pool.malloc)
    finally:
        pool.free_all_blocks()


@contextmanager
def _stream_ordered_allocations(wanted: bool) -> Iterator[None]:
    """RMM's resource for this GPU set to CUDA's stream-ordered allocator (a pool the driver
    keeps, no memory set aside) for as long as the block lasts, where ``wanted`` and RMM still
    has its default, a ``cudaMalloc`` for each allocation and a synchronizing ``cudaFree``
    for each free; a resource the user set is kept. Arrays allocated in the block keep
    their resource when it ends. In process on one H100, opening a saved R-MAT 26 took 3.1 s
    under the default and 0.6 s under this one (a probe, not a committed benchmark)."""
    if not wanted:
        yield
        return
    try:
        import rmm.mr
    except ImportError:  # no RMM: nothing allocates through it
        yield
        return
    current = rmm.mr.get_current_device_resource()
    if type(current) is not rmm.mr.CudaMemoryResource:
        yield
        return
    rmm.mr.set_current_device_resource(rmm.mr.CudaAsyncMemoryResource())
    try:
        yield
    finally:
        rmm.mr.set_current_device_resource(current)


@contextmanager
def _staging_state(runtime: Runtime) -> Iterator[None]:
    """Each worker's :class:`~dtri.runtime.staging.StagingState` (its device cache, its share
    of a task's budget, and its arena of page-locked memory) while host staging moves data
    to GPU workers; this process's under a local scheduler."""
    from dtri.runtime.staging import PLUGIN_NAME, end_local_staging, start_local_staging

    if not runtime.staging.moves:
        yield
        return
    limit = runtime.budget.per_task // TASK_SHARES.device_cache
    if runtime.client is None:
        start_local_staging(limit, pinned_share())
        try:
            yield
        finally:
            end_local_staging()
        return
    from dtri.runtime.plugin import StagingPlugin

    # the pool that a local cluster's host plan counts, else a share of each worker's memory
    plan = runtime.host_plan
    pool = plan.staging if plan is not None and plan.staging else None
    share = pinned_share()
    with _worker_plugin(runtime.client, PLUGIN_NAME,
                        lambda: StagingPlugin(limit, share, pool)):
        yield


@contextmanager
def _reads_ahead(runtime: Runtime) -> Iterator[None]:
    """Each GPU worker's reads ahead (:class:`dtri.runtime.plugin.ReadAheadPlugin`) for as
    long as the block lasts, where ``dtri.read-ahead`` has them: the workers of a local
    cluster started under a host limit, whose store is dtri's, read the next task's inputs
    back from disk while a task runs. Other runs register nothing (a plugin costs round
    trips to the scheduler)."""
    if runtime.client is None or not runtime.backend.on_gpu or runtime.host_plan is None \
            or not dask.config.get("dtri.read-ahead"):
        yield
        return
    from dtri.runtime.plugin import ReadAheadPlugin
    from dtri.runtime.tiered_store import READ_AHEAD_NAME

    with _worker_plugin(runtime.client, READ_AHEAD_NAME, ReadAheadPlugin):
        yield


@contextmanager
def _worker_plugin(client: Any, name: str, make: Callable[[], Any]) -> Iterator[None]:
    """The worker plugin ``make()`` on every worker of ``client`` (and on those that join)
    for as long as the block lasts, registered as ``name``; where an enclosing runtime on
    the same cluster registered it already, that one is used, and it takes it down."""
    if client.run_on_scheduler(_has_worker_plugin, name):
        yield
        return
    client.register_plugin(make(), name=name)
    try:
        yield
    finally:
        client.unregister_worker_plugin(name)


def _has_worker_plugin(name: str, dask_scheduler: Any = None) -> bool:
    """Whether the scheduler hands a worker plugin of this name to its workers."""
    return name in dask_scheduler.worker_plugins


@contextmanager
def _opened(backend: str, scheduler: str | None, scheduler_file: str | None,
            workers: int | None, protocol: str, caps: MemoryCaps,
            given: Budget | None, input_rows: int | None = None,
            staging: str = "auto") -> Iterator[Runtime]:
    """:func:`open_runtime` before the staging is resolved. A local GPU cluster started here
    without a worker count keeps the GPUs that :func:`dtri.runtime.scaling.choose_workers`
    predicts fastest for ``input_rows`` (a session's first input). A host memory limit is
    shared out (:func:`local_host_plan`, ``staging`` the one asked for) before the cluster
    starts, and refused there if too small."""
    address = scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS")
    caps = resolve_caps(caps, backend, given)
    if address in LOCAL_SCHEDULERS:
        _refuse_caps_for(caps, f"--scheduler {address} (no workers)")
    elif address or scheduler_file:
        _refuse_caps_for(caps, f"the cluster at {address or scheduler_file}")
    starts_cluster = not (address or scheduler_file) and active_client() is None
    plan: HostPlan | None = None
    chosen: ProtocolChoice | None = None  # a cluster started here: its comms' choice
    forked = False
    if starts_cluster:
        check_local_workers(backend, workers)
        _prepare_spill_directory(caps.spill_directory)  # before the forkserver writes there
        plan = local_host_plan(backend, caps, given, staging)
        chosen = resolve_protocol(protocol, backend, workers)
        if backend == "gpu" and chosen.name == "ucx":
            quiet_ucx()
        with dask.config.set(cluster_settings(caps, plan)):  # its workers' modules, imported
            forked = start_worker_server(backend) is not None  # while distributed is imported
    with ExitStack() as stack:
        if backend == "gpu" or address in LOCAL_SCHEDULERS:
            # p2p needs distributed workers, and on cuDF it is far slower than the task shuffle.
            stack.enter_context(dask.config.set({"dataframe.shuffle.method": "tasks"}))
        if address in LOCAL_SCHEDULERS:
            # the scheduler function itself: Dask would import distributed to look a name up
            stack.enter_context(dask.config.set(scheduler=_local_scheduler(address)))
            if address != "threads":  # one task at a time: its kernels take every core
                stack.enter_context(dask.config.set({KERNEL_THREADS: usable_cores()}))
            threads = 1 if address != "threads" else usable_cores()
            memory = _device_memory() if backend == "gpu" else psutil.virtual_memory().total
            yield Runtime(Backend(backend), None, 1, threads, memory, eager=address != "threads")
            return
        # a scheduler of this process's own (LocalCluster) may wait on a property lock that
        # the client holds: lifted where Dask's distributed scheduler runs, not for the local
        # schedulers, which materialize a graph on the thread that asks for it
        lift_cached_property_locks()
        from distributed import Client

        if address or scheduler_file:
            target = address or scheduler_file_address(scheduler_file)
            refuse_if_refused(target)
            try:
                client = Client(target, timeout=f"{CONNECT_SECONDS}s")
            except OSError as error:
                raise ConfigurationError(
                    f"cannot reach the Dask scheduler at {address or scheduler_file}: {error} "
                    f"(waited Dask's connect timeout, {CONNECT_SECONDS} s)") from None
            stack.callback(client.close)
        elif chosen is not None:  # starts_cluster
            if plan is not None:
                stack.enter_context(dask.config.set(plan.dask_config()))
            restore_environ = stack.enter_context(_environ_kept())
            starting = time.perf_counter()
            if forked:  # before import_ahead's thread imports
                claim_start_method()
            import_ahead(backend)
            folder = workers_folder(caps.spill_directory)
            stack.callback(shutil.rmtree, folder, ignore_errors=True)  # after the close
            cluster = _start_local_cluster(backend, workers, chosen.name, caps, plan, folder)
            restore_environ()
            stack.callback(close_cluster, cluster)
            client = Client(cluster)
            stack.callback(client.close)
        else:
            client = active_client()
            _refuse_caps_for(caps, "the active distributed.Client's cluster")
        # as_current, not dask.config: a nanny copies the config into the workers it restarts
        stack.enter_context(client.as_current())
        runtime = _describe_client(client, backend, workers)
        if chosen is not None:
            runtime = replace(runtime, protocol_note=chosen.note, host_plan=plan)
            if backend == "gpu" and workers is None and runtime.workers > 1 and input_rows:
                runtime = _fewer_gpus(cluster, runtime, input_rows)
            runtime = replace(runtime, start_seconds=round(time.perf_counter() - starting, 3))
        yield runtime
