"""The local cluster that dtri starts for a run: its settings, its workers' start and
folders, imports ahead of it, and its close, however the run ends."""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, MutableMapping
from contextlib import contextmanager, suppress
from dataclasses import replace
from typing import Any

import dask
import psutil
from dask.utils import parse_bytes

from dtri.errors import ConfigurationError
from dtri.options import Backend
from dtri.runtime.budget import Budget, resolve_budget
from dtri.runtime.caps import DEFAULT_RMM_POOL, MemoryCaps
from dtri.runtime.connect import _describe_client, cluster_workers
from dtri.runtime.host_plan import HostPlan, host_plan
from dtri.runtime.opened import Runtime
from dtri.runtime.resolve import _device_memory, _visible_gpus, resolve_protocol, usable_cores
from dtri.runtime.staging import resolve_staging
from dtri.runtime.worker_start import environ_kept, worker_start

SPILL_LOGGER = logging.getLogger("distributed.spill")
"""Dask's logger of failed spills, which dtri's spill buffer logs to as well."""


ADAPTIVE_MALLOC = "dtri.adaptive-malloc"
"""``dask.config`` key: whether the workers of a local cluster that dtri starts without a host
memory limit keep glibc's adaptive malloc. A Dask nanny sets ``MALLOC_TRIM_THRESHOLD_``,
which also fixes glibc's mmap threshold at 128 KiB, so every larger array is mapped afresh
(R-MAT 20 on two CPU workers: 21.7 s with it, 11.5 s without, at a 12-22 % higher resident
peak). With ``--memory-limit`` the workers spill by their resident memory, so Dask's
setting stays."""


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

    Dask does so when storing a result fails to spill, but reading a spilled result back also
    spills older ones, and there a full disk's ``OSError`` goes unhandled: the task fails with
    a bare "No space left on device" (distributed 2026.8). zict keeps each result whose
    spill failed in memory, so the one read back is still at hand."""
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


def local_host_plan(backend: Backend, caps: MemoryCaps, given: Budget | None,
                    staging: str = "auto") -> HostPlan | None:
    """How the host memory limit of the workers of a local cluster is shared out
    (:func:`dtri.runtime.host_plan.host_plan`, which refuses one too small); ``None``
    without a limit. ``caps`` must have been through :func:`resolve_caps`; the workers run
    one thread each, and plan for the budget they will have (:func:`dtri.runtime.budget.
    resolve_budget`: the ``given`` one, else a share of the GPU's memory or of the limit)."""
    if caps.memory_limit is None:
        return None
    staged = resolve_staging(staging, backend, caps.rmm_pool_size is not None)
    device = functools.cache(lambda: caps.rmm_pool_size or _device_memory())
    return host_plan(caps.memory_limit, backend, staged.moves, lambda limit: resolve_budget(
        given, device if backend.on_gpu else limit, 1, staged))


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


def import_ahead(backend: Backend) -> threading.Thread:
    """Import :data:`IMPORTED_AHEAD` on a thread of its own (:func:`import_on_thread`),
    started as the local cluster starts, while this process would otherwise wait seconds on
    the worker processes before importing the same modules."""
    return import_on_thread(IMPORTED_AHEAD[backend], "dtri-import-ahead", daemon=True)


def import_operator_modules() -> threading.Thread:
    """Import :data:`OPERATOR_MODULES` on a thread of its own (:func:`import_on_thread`), for
    a caller about to wait on the device or a file (which lets go of Python's lock), rather
    than CuPy's first operator importing them holding the lock. The thread is not a daemon:
    the process ends after the import, never during it."""
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


def worker_preloads(backend: Backend) -> list[str]:
    """The preloads of a local cluster's workers: those configured, and dtri's own, which
    has them ignore SIGINT (:mod:`dtri.runtime.local_worker`) and, on the CPU, load numba's
    kernels as they start (:mod:`dtri.runtime.cpu_worker`)."""
    from dtri.runtime.cpu_worker import PRELOAD as KERNELS
    from dtri.runtime.local_worker import PRELOAD

    configured = list(dask.config.get(WORKER_PRELOAD, default=None) or [])
    ours = [PRELOAD] if backend.on_gpu else [PRELOAD, KERNELS]
    return [*configured, *(name for name in ours if name not in configured)]


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


def _start_local_cluster(backend: Backend, workers: int | None, protocol: str,
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
    if backend.on_gpu and protocol == "ucx":
        quiet_ucx()  # before the workers' server starts
    with dask.config.set(cluster_settings(caps, plan)), worker_start(backend), \
            dask.config.set({WORKER_PRELOAD: worker_preloads(backend)}), \
            clusters_closed_on_failure():
        if backend.on_gpu:
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
        cores = usable_cores()
        workers = workers or cores
        return LocalCluster(
            n_workers=workers, threads_per_worker=max(1, cores // workers), processes=True,
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


LOCAL_WORKERS_PER_CORE = "dtri.local-workers-per-core"
"""``dask.config`` key: the most single-threaded workers a local CPU cluster may run on one core
(:func:`check_local_workers`). Workers that share cores run (tests lay out 2 x 2 grids of 5
workers on 2 cores), but their processes start one after the other: 100 on 2 cores gave up after
237 s with Dask's "Timed out trying to connect"."""


def check_local_workers(backend: Backend, workers: int | None) -> None:
    """Refuse a local cluster of more workers than this machine runs: more than one a
    visible GPU on the GPU (dask-cuda gives each GPU one worker), more than
    ``dtri.local-workers-per-core`` a core on the CPU. Their processes would not start in
    time, and Dask would say only that it timed out connecting to them."""
    if workers is None:
        return
    if backend.on_gpu:
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
