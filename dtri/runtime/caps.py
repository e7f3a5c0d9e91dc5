"""The memory caps of a local cluster that dtri starts: a host memory limit, a device memory
limit and an RMM pool (:class:`MemoryCaps`), resolved against the run's budget."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from dask.utils import format_bytes, parse_bytes

from dtri.errors import ConfigurationError
from dtri.options import RMM_ALIGNMENT, Backend
from dtri.runtime.budget import Budget, resolve_budget
from dtri.runtime.staging import Staging

DEFAULT_RMM_POOL = 0.5
"""Initial RMM pool of a dask-cuda worker that dtri starts without ``--rmm-pool-size``, as a
fraction of the GPU's memory; it grows as needed (no maximum), so it is no cap. Without a
pool every allocation is a ``cudaMalloc``, every free a synchronizing ``cudaFree``, and UCX
opens a CUDA IPC handle for each received buffer: on 4 H200s a pool took RMAT 25 from
1.387 s to 0.912 s."""


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


def resolve_caps(caps: MemoryCaps, backend: Backend, given: Budget | None) -> MemoryCaps:
    """Check ``caps`` against the backend and the ``given`` budget (:func:`dtri.runtime.
    budget.given_budget`); fill in the device memory limit of an RMM pool
    (:func:`default_device_memory_limit`). Stored results wait in device memory only under
    device staging, so the limit leaves room for that staging's budget (a quarter of the
    pool by default), whatever the staging of the run that starts the workers: a later run
    on them may stage on the device."""
    gpu_only = [option for option in ("--device-memory-limit", "--rmm-pool-size")
                if option in caps.given()]
    if gpu_only and not backend.on_gpu:
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
            pool, resolve_budget(given, pool, 1, Staging("device", Backend(backend))).per_worker)
    elif device >= pool:
        raise ConfigurationError(
            f"--device-memory-limit {format_bytes(device)} is not below --rmm-pool-size "
            f"{format_bytes(pool)}: stored results would fill the pool before moving to host "
            "memory")
    return MemoryCaps(caps.memory_limit, device, pool, caps.spill_directory)
