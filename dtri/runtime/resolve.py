"""What this machine has (:func:`machine_facts`) and where a run goes: the backend
(:func:`choose_backend`), the protocol, the memory this machine offers and the placement of a
run (:func:`placement`): in this process, on a local cluster to start, or on a running one.
A run's decisions are made once, before anything starts, into one :class:`RunDecision`
(:func:`dtri.runtime.session.decide_run`)."""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import dask
import psutil
from dask.utils import format_bytes

from dtri.errors import ConfigurationError
from dtri.kernels.tuning import tuned
from dtri.options import LOCAL_SCHEDULERS, PROTOCOLS, Backend, Options
from dtri.runtime.budget import Budget, resolve_budget
from dtri.runtime.caps import MemoryCaps, memory_caps
from dtri.runtime.driver import gpu_modules_installed
from dtri.runtime.staging import resolve_staging

GPU_MIN_EDGES = "dtri.gpu-min-edges"
"""``dask.config`` key: :func:`gpu_min_edges`. Its default (``dtri/dtri.yaml``) was measured by
``examples/benchmarks/in_process.py sizes`` (``in-process-h100.jsonl``): on one H100 host a
count took 3.6 ms on the CPU against 6.0 ms on the GPU at 8,192 edges, and 8.4 ms against
6.2 ms at 16,384; the GPU was ahead at every size above."""


IN_PROCESS_GPU_BYTES_PER_ROW = 75
"""The device bytes an input row holds at the peak of an in-process GPU run, where every
stage's results stay in GPU memory (:func:`placement`; ``in-process-gpu-bytes-per-row``). It
is above what a probe (not a committed benchmark) saw on one H100: the device memory in use,
pools included, rose by 73.3 B an input row for R-MAT 25 and 69.5 B for R-MAT 26."""


DIRECT_DEVICE_WRITES = "dtri.direct-device-writes"
"""``dask.config`` key: whether a GPU run's Parquet writes (a saved graph's partitions, a
checkpoint's prepared graph) bypass the page cache. KvikIO, which writes them for pylibcudf,
does so by default (``O_DIRECT``), and the next process then reads them back from the disk.
dtri sets ``KVIKIO_AUTO_DIRECT_IO_WRITE`` to this where the environment leaves it unset
(:func:`set_device_io`). Its default, ``false``, writes through the cache (on one H100,
saving R-MAT 26 and opening it next took 2.57 s and 0.82 s, against 3.83 s and 2.88 s)."""


KVIKIO_DIRECT_WRITES = "KVIKIO_AUTO_DIRECT_IO_WRITE"
"""KvikIO's environment variable for ``O_DIRECT`` writes, read once, at its first file."""


DEVICE_READ_THREADS = "dtri.device-read-threads"
"""``dask.config`` key: the threads KvikIO reads a GPU run's files with (cuDF's Parquet reader
on the device: the input's files, a saved graph, a checkpoint), which copy the file's pages
to the device in pieces side by side. dtri sets ``KVIKIO_NTHREADS`` to this where the
environment leaves it unset (:func:`set_device_io`): a saved R-MAT 26's edge files read in
0.145 s with 8 threads on one H200, against 0.22 s with cuDF's default and 1.0 s with one."""


KVIKIO_THREADS = "KVIKIO_NTHREADS"
"""KvikIO's environment variable for its threads, read once, at its first file."""


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


@dataclass(frozen=True)
class MachineFacts:
    """What a run's decisions read of this machine and process (:func:`machine_facts`), so
    that the decisions themselves are pure: a test gives its own. The costly ones are read
    only where a decision needs them (a GPU's memory costs a CUDA context). ``memory``: this
    machine's, in bytes; ``scheduler_address``: ``DASK_SCHEDULER_ADDRESS``, where set."""

    gpu_usable: Callable[[], bool]
    device_memory: Callable[[], int]
    device_name: Callable[[], str]
    visible_gpus: Callable[[], int]
    ucx: Callable[[], bool]
    memory: int
    active_client: bool
    scheduler_address: str | None


@functools.cache
def machine_memory() -> int:
    """This machine's memory in bytes, read once a process (psutil reads ``/proc/meminfo``:
    a fifth of a millisecond, each count of a small graph read it three times)."""
    return psutil.virtual_memory().total


def machine_facts() -> MachineFacts:
    """This machine's :class:`MachineFacts`; each costly one is read once, when first
    needed."""
    once = functools.cache
    return MachineFacts(once(gpu_available), once(_device_memory), once(_device_name),
                        once(_visible_gpus), once(ucx_available), machine_memory(),
                        active_client() is not None, os.environ.get("DASK_SCHEDULER_ADDRESS"))


def choose_backend(requested: str, input_on_gpu: bool, rows: int | None = None,
                   facts: MachineFacts | None = None) -> tuple[Backend, str]:
    """The :class:`~dtri.options.Backend` for a requested ``auto``/``cpu``/``gpu`` (checked
    by :class:`~dtri.options.Options`) and an input of ``rows`` edges (``None``: not known
    before it is read) on this machine (``facts``), with one line on why."""
    asked = None if requested == "auto" else Backend(requested)
    gpu_usable = (facts or machine_facts()).gpu_usable
    if asked is Backend.GPU or (asked is None and input_on_gpu):
        if not gpu_usable():
            raise ConfigurationError(
                "the GPU backend needs cuDF, dask-cuDF, dask-cuda and CuPy with a visible GPU "
                '(pip install "dtri[cuda13]"); use --backend cpu to run on pandas'
            )
        return Backend.GPU, ("--backend gpu" if asked is Backend.GPU
                             else "auto: the input is on the GPU")
    if asked is Backend.CPU:
        return Backend.CPU, "--backend cpu"
    if not gpu_usable():
        return Backend.CPU, "auto: no usable GPU"
    smallest = gpu_min_edges()
    if rows is not None and rows < smallest:
        return Backend.CPU, (f"auto: {rows} edges, fewer than {GPU_MIN_EDGES} = {smallest}, "
                             "below which the CPU measured faster")
    return Backend.GPU, "auto: a usable GPU"


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
    reason: str = ""
    """One line on why these comms."""


def resolve_protocol(requested: str, backend: Backend, workers: int | None,
                     facts: MachineFacts | None = None) -> ProtocolChoice:
    """``tcp`` or ``ucx`` for an embedded cluster. ``auto`` picks UCX for several GPU workers
    when it is installed: Dask's TCP comm moves GPU data at about 1 GB/s through host memory,
    UCX over NVLink at about 100 GB/s (measured on 4 H200, examples/benchmarks/README.md).
    Where it is not installed, ``auto`` takes TCP, and the choice's note says so with the
    command that installs it."""
    facts = facts or machine_facts()
    if requested not in PROTOCOLS:
        raise ConfigurationError(
            f"protocol must be one of {', '.join(PROTOCOLS)}, got {requested!r}")
    if requested == "ucx" and not facts.ucx():
        raise ConfigurationError(
            f"the UCX protocol needs distributed-ucxx (pip install {ucx_package()}); "
            "use --protocol tcp")
    if requested != "auto":
        return ProtocolChoice(requested, reason=f"--protocol {requested}")
    several = (workers or (facts.visible_gpus() if backend.on_gpu else 1)) > 1
    if not backend.on_gpu or not several:
        return ProtocolChoice("tcp", reason="auto: CPU workers" if not backend.on_gpu
                              else "auto: one GPU worker")
    if facts.ucx():
        return ProtocolChoice("ucx", reason="auto: several GPU workers, and distributed-ucxx")
    note = ("the GPU workers talk TCP, through host memory: distributed-ucxx is not installed "
            f"(pip install {ucx_package()} for UCX over NVLink)")
    return ProtocolChoice("tcp", note, f"auto: {note}")


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


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def in_process_budget(backend: Backend, staging: str, facts: MachineFacts) -> int:
    """Bytes one task of an in-process run may plan for by default: the share of this
    machine's memory, or of the current GPU's (``facts``), that a worker's budget takes
    under the ``staging`` asked for (:func:`dtri.runtime.budget.resolve_budget`; a quarter
    but for host staging on the GPU)."""
    memory = facts.device_memory if backend.on_gpu else facts.memory
    return resolve_budget(None, memory, 1, resolve_staging(staging, backend, False)).per_worker


def machine_room(options: Options) -> tuple[int, str]:
    """The bytes of data this machine can hold for a run, with what they are: its memory
    and the free disk where a local cluster's workers would spill (none where no temporary
    directory is writable: the cluster's start says so)."""
    memory = machine_memory()
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


def named_placement(options: Options, caps: MemoryCaps, facts: MachineFacts | None = None
                    ) -> tuple[str | None, str] | None:
    """Where ``options`` (with their ``caps``) send a run whatever its input, as
    :func:`placement` gives it; ``None`` where they name nothing and no client is active
    (``facts``), so that the input's size decides."""
    facts = facts or machine_facts()
    scheduler = options.scheduler or facts.scheduler_address
    if scheduler in LOCAL_SCHEDULERS:
        return scheduler, f"in this process, on Dask's {scheduler} scheduler (--scheduler)"
    if scheduler or options.scheduler_file:
        return scheduler, f"the Dask cluster at {scheduler or options.scheduler_file}"
    active = facts.active_client
    if options.worker_count is not None:
        if active:  # its first workers: _describe_client
            return None, (f"the active distributed.Client's cluster, {options.worker_count} "
                          "of its workers (--workers)")
        return None, f"a local cluster of {options.worker_count} workers (--workers)"
    if caps.given():
        return None, f"a local cluster, for {', '.join(caps.given())} to shape its workers"
    return (None, "the active distributed.Client's cluster") if active else None


def placement(options: Options, backend: Backend, caps: MemoryCaps, given: Budget | None,
              input_rows: int | None, row_bytes: int, facts: MachineFacts
              ) -> tuple[str | None, str]:
    """Where a run goes on this machine (``facts``): a scheduler (an address, a local
    scheduler's name, or ``None`` for a cluster to start or the active client's), with one
    line on why. With nothing named, a run whose input fits one task's budget (``input_rows``
    of ``row_bytes`` each; ``None``: not known before it is read) runs in this process, on
    the CPU or the current GPU. The budget is the default share of the machine's or the GPU's
    memory (:func:`in_process_budget`), or the ``given`` one (``--memory-budget``) where that
    is larger: the user's word that one task may plan for it (a smaller one still runs here,
    in more partitions).

    On the GPU a larger input runs in this process too, in tasks of that budget, where the
    current GPU holds the whole graph (:data:`IN_PROCESS_GPU_BYTES_PER_ROW`): starting a local
    cluster costs more than its GPUs save (R-MAT 26 on one H100: 3.80 s here against 14.73 s
    with ``--workers 1``, ``placement-h100.jsonl``)."""
    if (named := named_placement(options, caps, facts)) is not None:
        return named
    if input_rows is None:
        return None, "a local cluster: the input's size is not known before it is read"
    default = in_process_budget(backend, options.staging, facts)
    budget = max(given.per_task if given else 0, default)
    if input_rows * row_bytes > budget:
        row = tuned("in-process-gpu-bytes-per-row", IN_PROCESS_GPU_BYTES_PER_ROW)
        if backend.on_gpu and (held := input_rows * row) <= (memory := facts.device_memory()):
            return "synchronous", (
                f"this process, on {facts.device_name()}, no cluster: the graph ({input_rows} "
                f"edges, {format_bytes(held)} at {row} B an edge) fits its memory "
                f"({format_bytes(memory)}), in tasks of {format_bytes(budget)}; a local "
                "cluster's start costs more than more GPUs save")
        return None, (f"a local cluster: {input_rows} edges need more than one task's budget "
                      f"in this process ({format_bytes(budget)})")
    where = "this process" if not backend.on_gpu else f"this process, on {facts.device_name()}"
    fits = f"fits one task's budget ({format_bytes(budget)})"
    if given is not None and given.per_task < budget:
        fits = (f"fits the default budget of the {'GPU' if backend == 'gpu' else 'machine'}'s "
                f"memory ({format_bytes(budget)}); its tasks plan for --memory-budget "
                f"{format_bytes(given.per_task)}")
    return "synchronous", (f"{where}, no cluster: the input ({input_rows} edges or fewer) "
                           f"{fits}")


@dataclass(frozen=True)
class RunDecision:
    """What a run decided, once, before anything starts (:func:`dtri.runtime.session.
    decide_run`), each choice with one line on why. The runtime carries it
    (:attr:`dtri.runtime.opened.Runtime.decision`), and what comes later reads it, not the
    options. ``given``: the budget as given (``--memory-budget``; ``None``: a share of the
    workers' memory, resolved once they are known: :attr:`~dtri.runtime.opened.Runtime.
    budget`); ``caps``: the local cluster's, checked and completed (:func:`~dtri.runtime.caps.
    resolve_caps`); ``staging``: as asked, resolved against the workers' caps; ``scheduler``:
    :func:`placement`'s; ``protocol``: the comms of the cluster that dtri starts (``None``
    where it starts none); ``input_rows``: the first input's (``None``: not known)."""

    backend: Backend
    backend_reason: str
    given: Budget | None
    budget_reason: str
    caps: MemoryCaps
    caps_reason: str
    staging: str
    staging_reason: str
    scheduler: str | None
    scheduler_file: str | None
    workers: int | None
    placement_reason: str
    protocol: ProtocolChoice | None
    input_rows: int | None
    row_bytes: int

    @property
    def on_this_machine(self) -> bool:
        """Whether the run goes to this process or to a local cluster that dtri starts."""
        return self.scheduler in LOCAL_SCHEDULERS or self.protocol is not None

    def to_dict(self) -> dict[str, Any]:
        """The record as plain data (``--explain``): each choice, with its reason."""
        where = {"scheduler": self.scheduler, "scheduler_file": self.scheduler_file,
                 "workers": self.workers}
        return {name: {"value": value, "reason": reason} for name, value, reason in (
            ("backend", self.backend, self.backend_reason),
            ("budget", self.given and self.given.per_worker, self.budget_reason),
            ("caps", self.caps.to_dict(), self.caps_reason),
            ("staging", self.staging, self.staging_reason),
            ("placement", where, self.placement_reason),
            ("protocol", self.protocol and self.protocol.name,
             self.protocol.reason if self.protocol else "dtri starts no cluster"))}
