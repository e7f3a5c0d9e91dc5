"""The triangle count of a prepared graph: plan → edge bins → wedges/bins/join (or the fused
intersection) → reduce.

The planner (:mod:`dtri.analytics.plan`) decides the counting phase from the partition
summaries alone; this module builds its task graph, whose keys are named after their stage:
``dtri-edge-bins`` (worker ``w``'s copy of bin ``k``, :mod:`dtri.analytics.bin_layout`),
``dtri-edge-keys``, ``dtri-wedges``, ``dtri-bins`` and ``dtri-join``, or ``dtri-intersect``
for the partitions of the fused join, or under host staging ``dtri-count`` (one group of
consecutive partitions against a worker's partitions, :func:`count_group`), then
``dtri-reduce``. ``docs/design.md`` ("The count") says what each stage does.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from dtri.analytics.bin_layout import REDUCE_FAN_IN
from dtri.analytics.cannon import cannon_rounds, decomposition
from dtri.analytics.plan import CountPlan, build_plan, check_plan_tasks
from dtri.analytics.staged_plan import chunk_rows, staged_plan
from dtri.errors import ConfigurationError, ListTooLongError
from dtri.kernels.bins import radix_split
from dtri.kernels.compiled import LOADER, NUMPY_JOIN
from dtri.kernels.csr import CSR, as_csr, edge_window, joined, keys_of, rows_of, stored
from dtri.kernels.dispatch import array_module
from dtri.kernels.intersect import intersect
from dtri.kernels.join import count_closed
from dtri.kernels.traffic import JoinCount, bytes_read, summed
from dtri.kernels.wedges import closure_keys
from dtri.options import Backend
from dtri.prepared.checkpoint import UnitResults, resumed_line
from dtri.runtime.staging import Staging
from dtri.runtime.tasks import partition_owner

if TYPE_CHECKING:
    from dtri.prepared.graph import GraphData
    from dtri.runtime.budget import Budget
    from dtri.runtime.opened import Runtime
    from dtri.runtime.timer import StageTimer


@dataclass
class CountResult:
    """A count and the statistics of the run that produced it."""

    triangles: int | None
    """The exact count; ``None`` when the run only planned (``explain=True``)."""
    vertices: int
    edges: int
    wedges: int
    bins: int
    batches: int
    partitions: int
    backend: Backend
    workers: int
    orientation: str
    """The orientation used (``auto`` resolved)."""
    order: str
    """The vertex order used (``auto`` resolved)."""
    join: str
    memory_budget: int
    decomposition: str = "1d"
    """How the join was spread over the workers: ``1d`` or ``2d`` (a Cannon grid,
    :mod:`dtri.analytics.cannon`); the plan's ``decomposition`` says why."""
    seconds: dict[str, float] = field(default_factory=dict)
    plan: dict[str, Any] = field(default_factory=dict)
    """The counting phase's plan with its estimates
    (:meth:`dtri.analytics.plan.CountPlan.to_dict`)."""
    caps: dict[str, Any] = field(default_factory=dict)
    """The workers' memory caps, bytes or ``None``: ``memory_limit``, ``device_memory_limit``,
    ``rmm_pool_size`` (:class:`dtri.runtime.caps.MemoryCaps`)."""
    peak_device_bytes: dict[str, int] | None = None
    """Measured on the workers: per stage (the ``dtri-<stage>`` of its tasks' keys, ``read``
    for the readers) the most device memory in use while its tasks ran, and ``overall``;
    ``None`` where nothing measures (:mod:`dtri.runtime.meter`)."""
    task_device_bytes: dict[str, int] | None = None
    """Per stage the most device memory one of its tasks added to what was in use when it
    started: what the memory budget bounds."""
    peak_device_source: str | None = None
    """How they were measured: ``rmm`` (RMM's statistics), ``tracemalloc``, or ``None``."""
    peak_host_bytes: dict[str, int] | None = None
    """Measured on the workers: per stage the most resident host memory a worker process
    held while its tasks ran (sampled, :mod:`dtri.runtime.host_meter`), and ``overall``;
    ``None`` in this process."""
    spilled_bytes: dict[str, int] | None = None
    """Per stage the bytes the workers spilled to disk while its tasks ran, and ``total``;
    ``None`` in this process."""
    read_back_bytes: dict[str, int] | None = None
    """Per stage the bytes the workers read back from disk, and ``total``."""
    worker_host_bytes: dict[str, int] | None = None
    """Each worker's peak resident host memory over the run, by address."""
    read: dict[str, int] = field(default_factory=dict)
    """How the read stage cut the input: ``partitions``, ``rows``, ``largest_rows``."""
    host_tasks: dict[str, int] = field(default_factory=dict)
    """Per stage the tasks that ran out of device memory and went on on the host (with the
    same result, more slowly): measured where the workers have a stage meter."""
    placement: str = ""
    """Where the run went (this process, a local cluster, a running one) and on which
    backend, and why (:func:`dtri.runtime.resolve.placement`)."""
    protocol: str | None = None
    """The comms between the workers (``tcp``, ``ucx``); ``None`` in this process."""
    protocol_note: str | None = None
    """Where dtri started several GPU workers on TCP because distributed-ucxx is not
    installed: one line saying so, with the command that installs it; else ``None``."""
    moved_bytes: dict[str, dict[str, int]] | None = None
    """Measured on the workers: per stage (the ``dtri-<stage>`` of the keys of the data
    moved) the bytes each worker, by address, received from the others, for the preparation
    and the count; ``{}`` where nothing moved, ``None`` in this process
    (:mod:`dtri.runtime.transfers`)."""
    link_bandwidth: float | None = None
    """Bytes per second of those transfers: their bytes over their durations added up;
    ``None`` where nothing moved."""
    resumed: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The stages this run skipped, found finished in its ``--checkpoint``: per stage the
    ``seconds`` they took when they ran (what skipping saved), and for a stage partly done the
    ``tasks`` reused ``of`` all; empty without a checkpoint or where nothing was skipped."""
    join_bytes_read: int | None = None
    """The bytes the ``wedges_join`` stage's fused join read from device memory, by the model
    of :mod:`dtri.kernels.traffic`, summed over its tasks on the workers; ``None`` where any
    of its work is not modelled (the CPU, the wedges-and-bins join, the 2D rounds, units
    reused from a checkpoint) or the run only planned."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict."""
        return asdict(self)


def count(graph: GraphData, *, explain: bool = False) -> CountResult:
    """Count the triangles of a prepared graph (:class:`dtri.prepared.graph.GraphData`);
    ``explain``: plan only (no edge bin, wedge or join is built) and return the plan with
    ``triangles=None``."""
    started = time.perf_counter()
    timer = graph.timer()
    plan = plan_count(graph, timer)
    spread = decomposition(graph, plan, timer)
    read: int | None = None  # the join's bytes read
    if not explain:
        # the join's units are kept in the checkpoint, if any, under a digest of the plan
        resume = None if graph.checkpoint is None or spread.kind == "2d" else \
            graph.checkpoint.units("count", {"plan": plan.to_dict(), "staging":
                                             graph.staging.where})
        if spread.kind == "2d":
            joins = cannon_rounds(graph, spread.side, timer)
        elif graph.staging.on_host:
            joins = staged_joins(plan, graph, resume)
        else:
            joins = binned_joins(plan, graph, timer, resume)
        stage = "cannon_rounds" if spread.kind == "2d" else "wedges_join"
        (triangles,) = timer.compute(stage, graph.tasks.tree("reduce", total, joins,
                                                             REDUCE_FAN_IN, on_host=True))
        read = None if spread.kind == "2d" else bytes_read(triangles)
        graph.cache["count"] = int(triangles)
        if resume is not None and (reused := resume.resumed()) is not None:
            graph.resumed[stage] = reused
            resumed_line(stage, reused["seconds"], graph.options.progress,
                         f"{reused['tasks']} of {reused['of']} tasks")
        if not plan.backend.on_gpu and not LOADER.ready(wait=False):
            # the next count waits for numba's kernels, loaded meanwhile on a thread
            NUMPY_JOIN.add(sum(b.last - b.first for b in plan.batches))
            LOADER.start_ahead()
    seconds = graph.seconds_with(timer.seconds, started)
    memory = graph.memory()
    moved = graph.moves()
    return CountResult(
        triangles=None if explain else int(triangles), vertices=plan.vertices,
        edges=plan.edges, wedges=plan.wedges, bins=plan.nbins, batches=len(plan.batches),
        partitions=plan.partitions, backend=plan.backend, workers=plan.workers,
        orientation=graph.orientation, order=graph.order, join=plan.join,
        memory_budget=plan.memory_budget, decomposition=spread.kind, seconds=seconds,
        plan={**plan.to_dict(), "choices": graph.choices(),
              "placement": graph.runtime.reason, "decomposition": spread.to_dict(),
              "run": graph.runtime.decision and graph.runtime.decision.to_dict(),
              "wire_format": graph.runtime.wire_format,
              "wire_reason": graph.runtime.wire_reason,
              "moved_prepare": graph.predicted_moves(),
              "host_memory": (graph.runtime.host_plan.to_dict()
                              if graph.runtime.host_plan else None),
              "workers_choice": (graph.runtime.workers_choice.to_dict()
                                 if graph.runtime.workers_choice else None)},
        caps=graph.runtime.caps.sizes(), peak_device_bytes=memory.peak_device_bytes(),
        task_device_bytes=memory.task_device_bytes(), peak_device_source=memory.source,
        **memory.host.fields(), read=dict(graph.read), host_tasks=memory.host_tasks(),
        placement=graph.runtime.reason, protocol=graph.runtime.protocol,
        protocol_note=graph.runtime.protocol_note, moved_bytes=moved.moved_bytes(),
        link_bandwidth=moved.link_bandwidth(), resumed=dict(graph.resumed),
        join_bytes_read=read)



def count_triangles_of(graph: GraphData) -> int:
    """The exact number of triangles of ``graph``, counted once (then cached)."""
    if "count" not in graph.cache:
        count(graph)  # caches its count
    return graph.cache["count"]

def plan_count(graph: GraphData, timer: StageTimer) -> CountPlan:
    """The plan of the counting phase (host staging: groups of partitions; else radix bins),
    timed as part of ``plan``; a list too long for the budget is named by its input id."""
    runtime = graph.runtime
    try:
        with timer.timed("plan"):
            plan = _plan(graph, runtime, runtime.budget)
            check_plan_tasks(plan, lambda budget: _plan(graph, runtime, budget))
    except ListTooLongError as error:  # name the vertex by its input id
        (vertex,) = timer.compute("plan", graph.tasks.task(
            "plan", input_id_of_rank, graph.ids, error.rank, key=("name",), on_host=True))
        raise ConfigurationError(f"{error} (vertex {vertex} of the input)") from None
    return plan


def _plan(graph: GraphData, runtime: Runtime, budget: Budget) -> CountPlan:
    """The plan itself under ``budget`` (host staging: groups of partitions; else radix
    bins)."""
    if graph.staging.on_host:
        return staged_plan(graph.summaries, graph.vertices, workers=runtime.workers,
                           budget=budget, backend=runtime.backend)
    return build_plan(graph.summaries, graph.vertices, workers=runtime.workers,
                      budget=budget, backend=runtime.backend, bins=graph.options.bins,
                      join=graph.options.join,
                      compiled=True if runtime.client is not None else None)  # choose_join


def input_id_of_rank(ids: Any, rank: int) -> int:
    """The input id of the vertex of rank ``rank``."""
    return int(ids[rank])


# ------------------------------------------------------- device staging: radix bins of the edges

def bin_slices(part: tuple, bins: tuple[int, ...], src_shift: int) -> dict[int, tuple]:
    """One sorted partition cut at the edges of the bins it overlaps (bin ``k`` holds the
    sources ``[k << src_shift, (k + 1) << src_shift)``), each slice a stored CSR of its own,
    so that only each bin's share travels to the bin."""
    csr = as_csr(part)
    return {k: stored(rows_of(csr, k << src_shift, (k + 1) << src_shift)) for k in bins}


def edge_bin(low: int, high: int, *slices: tuple) -> tuple:
    """Bin ``[low, high)`` of the edges as one stored CSR, from its slices in partition order."""
    return stored(joined(low, high, [as_csr(s) for s in slices]))


def bin_keys(csr: tuple, bits: int) -> Any:
    """The packed keys of a bin, ascending (what the wedges join searches)."""
    return keys_of(as_csr(csr), bits)


def batch_rows(part: tuple, start: int, stop: int) -> tuple:
    """Rows ``[start, stop)`` of one sorted partition (whole adjacency lists) as ``(src,
    dst)``: cut where the partition lives, so a wedge batch pulls only the rows it reads."""
    return edge_window(as_csr(part), start, stop)


def wedge_bins(rows: tuple, first: int, last: int, bits: int, shift: int, nbins: int) -> dict:
    """Closure keys of wedges ``first .. last - 1`` of a window of rows (:func:`batch_rows`,
    wedges numbered from its first row), radix-split into bins."""
    src, dst = rows
    return radix_split(closure_keys(src, dst, first, last, bits), shift, nbins)


def pick_bin(bins: dict, k: int) -> Any:
    """One bin of a split batch (``None`` when the batch has no key there)."""
    return bins.get(k)


def join_bin(closure: Any, edge_keys: Any) -> int:
    """Closed wedges among one batch's keys of one bin."""
    return 0 if closure is None else count_closed(closure, edge_keys)


def intersect_bin(part: tuple, csr: tuple, kernel: str) -> int:
    """Triangles closed by one partition's edges that point into one bin (on the CPU by the
    plan's ``kernel``), with the bytes the join read where it knows them
    (:class:`~dtri.kernels.traffic.JoinCount`)."""
    found = intersect(as_csr(part), as_csr(csr), kernel=kernel or "hash")
    return JoinCount(found.triangles, found.bytes_read)


def binned_joins(plan: CountPlan, graph: GraphData, timer: StageTimer,
                 resume: UnitResults | None = None) -> list[Any]:
    """The counting tasks of device staging: edge bins, then wedge batches joined against
    them or the fused join of each partition against the bins it reaches. ``resume``: the
    checkpoint's units (a wedge batch, a fused join): those finished are their counts, the
    others write theirs as they end."""
    tasks, parts = graph.tasks, graph.parts
    bits, shift, nbins = plan.bits, plan.shift, plan.nbins
    workers = max(plan.workers, 1)
    # placement on the partitions' owners once every worker owns one; else Dask spreads tasks
    owned = tasks if plan.owned else replace(tasks, workers=())
    overlapped: dict[int, list[int]] = {}  # partition -> the bins built from it, ascending
    for k in plan.builders:
        for p in plan.bin_partitions[k]:
            if any(p in plan.copy_parts[k, w] for w in plan.builders[k]):
                overlapped.setdefault(p, []).append(k)
    slices = {p: tasks.task("edge-bins", bin_slices, parts[p], tuple(bins_of_p), plan.src_shift,
                            key=("slices", p), at=owned.owner(p))
              for p, bins_of_p in overlapped.items()}
    picks = tasks.pick_pieces("edge-bins", slices, overlapped)
    edge_bins = {}  # (bin, worker): that worker's copy of the bin, from the slices
    for k, builders in plan.builders.items():
        for w in builders:
            with owned.on_worker(w):
                edge_bins[k, w] = tasks.task("edge-bins", edge_bin, *plan.bin_sources[k],
                                             *(picks[p, k] for p in plan.copy_parts[k, w]),
                                             key=(k, w))
    needed = {("csr", *kw): b for kw, b in edge_bins.items()} if plan.needs_csr else {}
    if plan.needs_edge_keys:
        needed.update({("keys", *kw): tasks.task("edge-keys", bin_keys, b, bits, key=kw)
                       for kw, b in edge_bins.items()})
    persisted: dict[tuple, Any] = dict(zip(needed, timer.submit(
        "edge_bins", *needed.values()), strict=True)) if needed else {}
    for k, p in plan.alone.items():
        if plan.needs_csr:
            persisted["csr", k] = parts[p]
        if plan.needs_edge_keys:
            persisted["keys", k] = tasks.task("edge-keys", bin_keys, parts[p], bits, key=(k,))

    def bin_for(kind: str, k: int, p: int) -> Any:
        """Bin ``k`` as partition ``p``'s tasks read it: the bin itself where it is a
        partition, else its copy on ``p``'s owner (the one copy where bins are not owned)."""
        if k in plan.alone:
            return persisted[kind, k]
        builders = plan.builders[k]
        here = partition_owner(p, workers)
        return persisted[kind, k, here if here in builders else builders[0]]

    joins = []
    for batch in plan.batches:
        p, j, base = batch.partition, batch.batch, batch.wedge_base
        if resume is not None and (saved := resume.saved(("wedges", p, j))) is not None:
            joins.append(saved)
            continue
        with owned.placed(p):  # on the partition's owner: nothing but the bins travels
            rows = tasks.task("wedges", batch_rows, parts[p], batch.row_start, batch.row_stop,
                              key=("rows", p, j))
            split = tasks.task("wedges", wedge_bins, rows, batch.first - base,
                               batch.last - base, bits, shift, nbins, key=(p, j))
            batch_joins = []
            for k in plan.reach[p]:  # the join too: only the bin's keys travel
                picked = tasks.task("bins", pick_bin, split, k, key=(p, j, k), on_host=True)
                batch_joins.append(tasks.task("join", join_bin, picked,
                                              bin_for("keys", k, p), key=(p, j, k)))
            joins.extend(batch_joins if resume is None
                         else [resume.kept(tasks, ("wedges", p, j), *batch_joins)])
    for p, s in enumerate(plan.summaries):
        if plan.strategy[p] == "intersect" and s.wedges:
            for k in plan.reach[p]:
                if resume is not None and \
                        (saved := resume.saved(("intersect", p, k))) is not None:
                    joins.append(saved)
                    continue
                with owned.placed(p):  # on the partition's owner: only the bin travels
                    found = tasks.task("intersect", intersect_bin, parts[p],
                                       bin_for("csr", k, p), plan.kernels[p], key=(p, k))
                    joins.append(found if resume is None
                                 else resume.kept(tasks, ("intersect", p, k), found))
    return joins


# ------------------------------------------------------- host staging: groups of partitions

def load_group(staging: Staging, bounds: tuple[int, int], parts: list[tuple]) -> CSR:
    """Consecutive partitions' CSRs as one CSR over their ranks ``bounds``, built on the
    device partition by partition."""
    moved = [as_csr(staging.to_device(p)) for p in parts]
    xp = array_module(moved[0].offsets) if moved else None
    return joined(bounds[0], bounds[1], moved, xp)


def own_partition(staging: Staging, group: CSR, starts: list[int], index: int,
                  part: tuple) -> CSR:
    """Partition ``index`` of a task's inputs on the device: read from the group's copy when
    it is one of the group's members (``index < len(starts)``), moved there otherwise."""
    csr = as_csr(part)
    if index < len(starts):
        start = starts[index]
        return CSR(group.dst[start: start + csr.edges], staging.to_device(csr.offsets),
                   csr.low)
    return as_csr(staging.to_device(part))


def member_starts(parts: list[tuple]) -> list[int]:
    """Where each member's targets start in its group's joined CSR."""
    starts, base = [], 0
    for part in parts:
        starts.append(base)
        base += int(part[0].shape[0])
    return starts


def count_group(staging: Staging, rows: int, kernel: str, bounds: tuple[int, int],
                group_size: int, own: tuple[int, ...], *parts: tuple) -> int:
    """One task of host staging's join: triangles closed by the edges of the ``own``
    partitions whose targets lie in the group of the first ``group_size`` of ``parts``
    (consecutive partitions over the ranks ``bounds``); ``own`` indexes ``parts``. The group
    goes to the device once, as one CSR; each other own partition follows it alone, so the
    task holds the group and one partition. ``kernel``: the plan's CPU kernel (``""`` on the
    GPU)."""
    members = list(parts[:group_size])
    group = load_group(staging, bounds, members)
    starts = member_starts(members)
    found = [intersect(own_partition(staging, group, starts, i, parts[i]), group,
                       chunk_rows=rows, kernel=kernel or "hash")
             for i in own if int(parts[i][0].shape[0])]
    return summed(JoinCount(f.triangles, f.bytes_read) for f in found)


def staged_joins(plan: CountPlan, graph: GraphData, resume: UnitResults | None = None
                 ) -> list[Any]:
    """Host staging's join (``dtri-count``): per group of consecutive partitions (the plan's
    bins) and per worker, one task that moves the group to the device as one CSR and counts
    the triangles closed there by the edges of that worker's partitions that reach it
    (:func:`count_group`). ``resume``: the checkpoint's units, one a task."""
    tasks, parts, bounds = graph.tasks, graph.parts, graph.bounds
    rows = chunk_rows(plan.task_budget)
    joins = []
    for k, w, own in plan.count_tasks:
        if resume is not None and (saved := resume.saved(("count", k, w))) is not None:
            joins.append(saved)
            continue
        members = plan.bin_partitions[k]
        inputs = [*members, *(p for p in own if p not in members)]
        with tasks.on_worker(w):
            found = tasks.task(
                "count", count_group, graph.staging, rows, plan.kernels[own[0]],
                (bounds[members[0]], bounds[members[-1] + 1]), len(members),
                tuple(inputs.index(p) for p in own), *(parts[p] for p in inputs), key=(k, w),
                on_host=True)
            joins.append(found if resume is None
                         else resume.kept(tasks, ("count", k, w), found))
    return joins


# ---------------------------------------------------------------------------------- reduce

def total(*counts: int) -> int:
    """Exact sum of partial counts, with the bytes their joins read where all say
    (:func:`~dtri.kernels.traffic.summed`)."""
    return summed(counts)
