"""Where a run goes: the Dask scheduler, the partition backend, the memory caps and budget.

A run goes to the ``scheduler`` named (an address, ``DASK_SCHEDULER_ADDRESS``,
``scheduler_file``, or a local Dask scheduler such as ``"threads"``), else to the active
``distributed.Client``, as Dask users expect, else *in process* where its input fits one task
(:func:`placement`: no worker processes and no Dask graph, so a script needs no ``if __name__
== "__main__":`` guard), else to a local cluster started for it, shaped by its
:class:`MemoryCaps`: ``dask_cuda.LocalCUDACluster`` (one worker per visible GPU) or
``distributed.LocalCluster`` (one single-threaded worker per core; ``workers`` of them share
the cores). ``backend="auto"`` is :func:`choose_backend`'s.

:func:`decide_run` decides all of it, once, from the run's :class:`~dtri.options.Options`, its
input and this machine's facts, before anything starts; :func:`open_runtime` then only starts
or connects to what it names, and yields a :class:`Runtime` that carries the decision: what
the planner and the task builders need to know of it.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from typing import Any

import dask
from dask.utils import format_bytes

from dtri.errors import ConfigurationError
from dtri.options import LOCAL_SCHEDULERS, Backend, Options
from dtri.runtime.budget import TASK_SHARES, given_budget
from dtri.runtime.caps import MemoryCaps, resolve_caps
from dtri.runtime.compat import lift_cached_property_locks
from dtri.runtime.connect import (
    CONNECT_SECONDS,
    _describe_client,
    _local_scheduler,
    _refuse_caps_for,
    refuse_if_refused,
    scheduler_file_address,
)
from dtri.runtime.host_plan import HostPlan
from dtri.runtime.local_cluster import (
    _environ_kept,
    _fewer_gpus,
    _prepare_spill_directory,
    _start_local_cluster,
    check_local_workers,
    close_cluster,
    cluster_settings,
    import_ahead,
    local_host_plan,
    quiet_ucx,
    workers_folder,
)
from dtri.runtime.meter import StageMeter
from dtri.runtime.opened import Runtime
from dtri.runtime.resolve import (
    MachineFacts,
    RunDecision,
    _device_memory,
    active_client,
    choose_backend,
    machine_facts,
    machine_memory,
    options_caps,
    placement,
    resolve_protocol,
    set_device_io,
    usable_cores,
)
from dtri.runtime.staging import pinned_share, resolve_staging
from dtri.runtime.tasks import kept_placement
from dtri.runtime.worker_start import claim_start_method, start_worker_server

KERNEL_THREADS = "dtri.kernel-threads"
"""``dask.config`` key: threads a compiled CPU kernel may use within one task.
Runs on the synchronous scheduler set it to this process's cores: one task runs at a time,
so the kernel has them all; elsewhere tasks run side by side, one per worker thread."""


def decide_run(options: Options, input_on_gpu: bool = False, input_rows: int | None = 0,
               row_bytes: int = 0, one_input: bool = True,
               facts: MachineFacts | None = None) -> RunDecision:
    """The run's decisions (:class:`RunDecision`), made once before anything starts, from
    ``options``, the input (on the GPU or not; ``input_rows`` edges of ``row_bytes`` each,
    ``None``: not known before it is read) and this machine's ``facts`` (read here where not
    given: :func:`machine_facts`). Pure: it starts, connects to and reads nothing.

    Under ``auto`` the backend is the GPU when the input is on it, or when a GPU is usable
    and, for a run of ``one_input``, the input has at least :func:`gpu_min_edges` edges (a
    session's later graphs may be larger than its first). ``options.protocol`` and the
    memory caps apply to a cluster started here; caps given for another raise
    :class:`ConfigurationError`."""
    facts = facts or machine_facts()
    backend, backend_reason = choose_backend(options.backend, input_on_gpu,
                                             input_rows if one_input else None, facts)
    asked: MemoryCaps = options_caps(options)  # the caps as given, then completed
    given = given_budget(options)
    scheduler, reason = placement(options, backend, asked, given, input_rows, row_bytes, facts)
    caps = resolve_caps(asked, backend, given)
    where = scheduler or options.scheduler_file
    if scheduler in LOCAL_SCHEDULERS:
        _refuse_caps_for(caps, f"--scheduler {scheduler} (no workers)")
    elif where:
        _refuse_caps_for(caps, f"the cluster at {where}")
    elif facts.active_client:
        _refuse_caps_for(caps, "the active distributed.Client's cluster")
    return RunDecision(
        backend, backend_reason, given,
        f"--memory-budget {format_bytes(given.per_worker)} a worker" if given else
        "a share of each worker's memory, resolved once the workers are known",
        caps, f"{', '.join(asked.given())}: the local cluster's" if asked.given() else "none",
        options.staging, f"--staging {options.staging}" if options.staging != "auto" else
        "auto: host on GPU workers under an RMM pool, else device", scheduler,
        options.scheduler_file, options.worker_count, reason,
        None if where or facts.active_client else
        resolve_protocol(options.protocol, backend, options.worker_count, facts),
        input_rows, row_bytes)


@contextmanager
def open_runtime(options: Options, *, decision: RunDecision | None = None
                 ) -> Iterator[Runtime]:
    """Connect to (or start) the Dask scheduler that the run's ``decision`` names (made here
    from ``options`` alone where not given: :func:`decide_run`); close what was started here
    when the block ends. The staging is resolved against the workers' caps
    (:func:`dtri.runtime.staging.resolve_staging`), and with it the runtime's budget
    (:attr:`Runtime.budget`); under host staging on GPU workers each worker gets its
    staging state (:class:`dtri.runtime.plugin.StagingPlugin`) for as long as the block
    lasts."""
    decision = decision or decide_run(options)
    backend = decision.backend
    if backend.on_gpu:
        set_device_io()
    with _opened(decision) as runtime:
        chosen = f"; {runtime.workers_choice.reason}" if runtime.workers_choice else ""
        if runtime.start_seconds is not None:
            chosen += f"; the cluster started in {runtime.start_seconds:.1f} s"
        staging = resolve_staging(decision.staging, backend, runtime.capped)
        runtime = replace(runtime, staged=staging.where, decision=decision, reason=(
            f"{decision.placement_reason}; {backend} backend ({decision.backend_reason}){chosen}"))
        if runtime.staging.on_host and options.join == "wedges":
            raise ConfigurationError(
                "host staging (the default with a capped RMM pool) counts with the fused "
                "join: give --join intersect or auto, or --staging device")
        # an in-process GPU run beyond one task's budget reads its graph through cuDF
        beyond_one_task = (decision.input_rows or 0) * decision.row_bytes \
            > runtime.budget.per_task
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
    CuPy at RMM, where every allocation is a ``cudaMalloc`` and every free a synchronizing
    ``cudaFree``: wiki-Vote's count took 13.9 ms through RMM and 5.4-6.8 ms from the pool on
    one H100. A run measured through RMM (``dtri.meter=rmm``) keeps allocating through it.

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
def _opened(decision: RunDecision) -> Iterator[Runtime]:
    """:func:`open_runtime` before the staging is resolved: starts or connects to what the
    ``decision`` names. A local GPU cluster started here without a worker count keeps the
    GPUs that :func:`dtri.runtime.scaling.choose_workers` predicts fastest for the first
    input's rows. A host memory limit is shared out (:func:`local_host_plan`) before the
    cluster starts, and refused there if too small."""
    backend, address, caps, rows = (decision.backend, decision.scheduler, decision.caps,
                                    decision.input_rows)
    workers, chosen = decision.workers, decision.protocol  # chosen: a cluster started here
    where = address or decision.scheduler_file
    plan: HostPlan | None = None
    forked = False
    if chosen is not None:
        check_local_workers(backend, workers)
        _prepare_spill_directory(caps.spill_directory)  # before the forkserver writes there
        plan = local_host_plan(backend, caps, decision.given, decision.staging)
        if backend.on_gpu and chosen.name == "ucx":
            quiet_ucx()
        with dask.config.set(cluster_settings(caps, plan)):  # its workers' modules, imported
            forked = start_worker_server(backend) is not None  # while distributed is imported
    with ExitStack() as stack:
        if backend.on_gpu or address in LOCAL_SCHEDULERS:
            # p2p needs distributed workers, and on cuDF it is far slower than the task shuffle.
            stack.enter_context(dask.config.set({"dataframe.shuffle.method": "tasks"}))
        if address in LOCAL_SCHEDULERS:
            # the scheduler function itself: Dask would import distributed to look a name up
            stack.enter_context(dask.config.set(scheduler=_local_scheduler(address)))
            if address != "threads":  # one task at a time: its kernels take every core
                stack.enter_context(dask.config.set({KERNEL_THREADS: usable_cores()}))
            threads = 1 if address != "threads" else usable_cores()
            memory = _device_memory() if backend.on_gpu else machine_memory()
            yield Runtime(Backend(backend), None, 1, threads, memory, eager=address != "threads")
            return
        # a scheduler of this process's own (LocalCluster) may wait on a property lock that
        # the client holds: lifted where Dask's distributed scheduler runs, not for the local
        # schedulers, which materialize a graph on the thread that asks for it
        lift_cached_property_locks()
        from distributed import Client

        if where:
            target = address or scheduler_file_address(decision.scheduler_file)
            refuse_if_refused(target)
            try:
                client = Client(target, timeout=f"{CONNECT_SECONDS}s")
            except OSError as error:
                raise ConfigurationError(
                    f"cannot reach the Dask scheduler at {where}: {error} "
                    f"(waited Dask's connect timeout, {CONNECT_SECONDS} s)") from None
            stack.callback(client.close)
        elif chosen is not None:
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
        # as_current, not dask.config: a nanny copies the config into the workers it restarts
        stack.enter_context(client.as_current())
        runtime = _describe_client(client, backend, workers)
        if chosen is not None:
            runtime = replace(runtime, protocol_note=chosen.note, host_plan=plan)
            if backend.on_gpu and workers is None and runtime.workers > 1 and rows:
                runtime = _fewer_gpus(cluster, runtime, rows)
            runtime = replace(runtime, start_seconds=round(time.perf_counter() - starting, 3))
        yield runtime
