"""The prepared graph: read, canonicalized, ranked, oriented and sorted once, persisted on the
workers, and reused by every analytic.

:func:`prepare_graph` runs the preparation (the read stage, then one ``dtri-prepare`` task for
a graph that fits one, or the exchange of :mod:`dtri.prepared.distributed`) and summarises each
sorted partition for the planners. :class:`GraphData` holds what it leaves on the workers:
the sorted partitions (partition ``p`` a CSR of the oriented edges of the ranks
``[bounds[p], bounds[p + 1])``, owned by worker ``p mod W``), by rank the input id and the
degree of every vertex, and the partitions' summaries, on the client. The analytics are
functions of it (:mod:`dtri.analytics`), whose results it caches (:meth:`GraphData.cached`)
until :meth:`GraphData.release`.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from operator import getitem
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from dtri.errors import DtriError
from dtri.kernels.canonicalize import check_integer_columns
from dtri.kernels.csr import PartitionSummary, longest_list, stored_summary
from dtri.kernels.dispatch import is_device_object
from dtri.kernels.orient import (
    adirection_epsilon,
    auto_orientation,
    hash_list_limit,
    orientation_reason,
)
from dtri.options import Backend, Options
from dtri.prepared.distributed import (
    Prepared,
    count_degrees,
    directed_again,
    prepare_partitions,
    sort_balance,
)
from dtri.prepared.inputs import (
    BYTES_PER_EDGE_IN_FLIGHT,
    check_budget,
    check_exchange_tasks,
    fitted_partitions,
    input_groups,
    read_inputs,
    split_rows,
    vertex_fan_in,
)
from dtri.prepared.local import (
    WholeGraph,
    host_prepare_edges,
    prepare_inputs,
    prepare_inputs_on_host,
)
from dtri.prepared.moved import (
    PreparationShape,
    WireFactors,
    count_factors,
    moved_prepare,
    per_slice_factors,
    piece_factors,
    slice_factors,
)
from dtri.prepared.order import choose_order, order_partitions
from dtri.prepared.saved import (
    EDGES_FOLDER,
    VERTICES_FOLDER,
    SavedGraphError,
    check_files,
    graph_metadata,
    read_metadata,
    read_partition,
    read_vertices,
    read_whole,
    write_metadata,
    write_partition,
)
from dtri.runtime.meter import MeasuredMemory
from dtri.runtime.opened import Runtime
from dtri.runtime.staging import Staging
from dtri.runtime.tasks import FAN_IN, Tasks
from dtri.runtime.timer import StageTimer
from dtri.runtime.transfers import MovedBytes

if TYPE_CHECKING:
    import dask.dataframe as dd

    from dtri.prepared.checkpoint import Checkpoint

Result = TypeVar("Result")

class PreparedFacts(NamedTuple):
    """What the plan stage computes of a prepared graph (:func:`prepare_graph`)."""

    vertices: int
    summaries: list[PartitionSummary]
    """One summary per sorted partition."""
    bounds: list[int]
    """The rank ranges of the partitions (:attr:`GraphData.bounds`)."""
    orientation: str
    reason: str
    """One line on why that orientation."""
    largest_id: int = -1
    """The largest input vertex id (what the bytes model's vertex sets cost)."""
    wire: WireFactors = WireFactors()
    """What the run's wire format makes of the preparation's payloads (the bytes model's)."""


class ReleasedGraphError(DtriError):
    """An analytic was asked of a graph whose data has been released."""


@dataclass(frozen=True, eq=False)
class GraphData:
    """A graph prepared on the workers (see the module docstring): data only, frozen until
    :meth:`release` lets go of it. The analytics are functions of it (:mod:`dtri.analytics`),
    and :class:`dtri.PreparedGraph` offers them as methods."""

    runtime: Runtime
    options: Options
    parts: list[Any]
    """Persisted sorted partitions (stored CSRs), partition ``p`` on worker ``p mod W``."""
    bounds: list[int]
    """The rank ranges of the partitions, ``partitions + 1`` ascending ranks from 0 to
    :attr:`vertices`."""
    summaries: list[PartitionSummary]
    vertices: int
    """Vertices of the graph's rank space (with :attr:`present`, those that belong to it)."""
    ids: Any
    """Persisted: the input id of every rank."""
    counted_degree: Any
    """Persisted: the degree of every rank, where the preparation counted it; ``None``:
    :attr:`degree` counts it when first read."""
    present: Any = None
    """Persisted: which ranks are vertices of this graph (a k-truss drops the vertices left
    without an edge); ``None``: all of them."""
    orientation: str = "degree"
    """The orientation the edges point by (``auto`` resolved to ``degree``, ``id`` or
    ``adirection``): what the ranks are."""
    orientation_reason: str = ""
    """One line on why that orientation (as given, or how ``auto`` chose it)."""
    order: str = "rank"
    """The vertex order the intersection kernel takes its work in (``auto`` resolved):
    ``rank``, ``degree`` or ``aorder`` (:mod:`dtri.kernels.order`)."""
    order_reason: str = ""
    """One line on why that order."""
    seconds: dict[str, float] = field(default_factory=dict)
    """Wall time of each preparation stage."""
    read: dict[str, int] = field(default_factory=dict)
    """How the read stage cut the input: ``partitions``, ``rows`` and ``largest_rows`` (the
    most rows one partition held)."""
    measured: MeasuredMemory = field(default_factory=lambda: MeasuredMemory(None))
    """The peak memory of each stage that ran for this graph, as the workers measured it
    (:meth:`memory`)."""
    moved: MovedBytes = field(default_factory=lambda: MovedBytes(False))
    """The bytes each stage run for this graph moved between workers (:meth:`moves`)."""
    cache: dict[str, Any] = field(default_factory=dict)
    """Results computed on this graph, by analytic (:mod:`dtri.analytics`)."""
    exit_stack: ExitStack | None = None
    """What :meth:`release` closes besides the data: the session the graph opened itself."""
    input_identity: dict[str, Any] | None = None
    """What the graph was prepared from (files by path, size and modification time; a
    generated graph by its spec and seed; in-memory edges by a hash of their values), where
    known: a saved graph keeps it (:mod:`dtri.prepared.checkpoint`)."""
    checkpoint: Checkpoint | None = None
    """The run's checkpoint (:class:`dtri.prepared.checkpoint.Checkpoint`), whose stages
    the analytics write and skip; ``None``: no checkpoint."""
    resumed: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The stages this run skipped, found finished in its checkpoint: per stage the
    ``seconds`` they took when they ran (what skipping them saved), and for a stage partly
    done the ``tasks`` reused ``of`` all (:attr:`dtri.analytics.count.CountResult.resumed`)."""
    shape: PreparationShape | None = None
    """What the preparation's bytes model needs of its run (:mod:`dtri.prepared.moved`);
    ``None`` where it is not modelled (a saved graph, a subgraph, the ``adirection``
    orientation's peeling)."""
    fan_in: int = FAN_IN
    """The fan-in of the trees over vertex-wide arrays
    (:func:`dtri.prepared.inputs.vertex_fan_in`)."""
    unreported: dict[str, float] = field(default_factory=dict)
    """Seconds of the stages run for this graph on an analytic's behalf since it was
    prepared (the ``degree`` stage, when first read), not yet in a result's seconds: the
    next result reports them (:meth:`seconds_with`)."""
    released: bool = False

    @property
    def task_budget(self) -> int:
        """Bytes one task may plan for: the runtime's, resolved once when it opened
        (:attr:`dtri.runtime.opened.Runtime.budget`)."""
        return self.runtime.budget.per_task

    # ----------------------------------------------------------------- facts

    @property
    def edges(self) -> int:
        """Edges of the simple undirected graph."""
        return sum(s.edges for s in self.summaries)

    @property
    def wedges(self) -> int:
        """Wedges of the oriented graph: the sum of C(out-degree, 2)."""
        return sum(s.wedges for s in self.summaries)

    @property
    def partitions(self) -> int:
        return len(self.parts)

    @property
    def degree(self) -> Any:
        """Persisted: the degree of every rank. Where the preparation's senders may have
        shared edges, the degrees that ranked the vertices counted such an edge more than
        once; the exact ones are then counted from the sorted partitions the first time an
        analytic reads them (the ``degree`` stage,
        :func:`dtri.prepared.distributed.count_degrees`), and not at all for a count."""
        self._check()
        if self.counted_degree is not None:
            return self.counted_degree
        return self.cached("degree", self._count_degree)

    def _count_degree(self) -> Any:
        timer = self.timer()
        started = time.perf_counter()
        degree = count_degrees(self.parts, self.vertices, self.tasks, timer, self.fan_in)
        timer.settle()
        self.unreported["degree"] = round(time.perf_counter() - started, 6)
        return degree

    @property
    def staging(self) -> Staging:
        return self.runtime.staging

    @property
    def backend(self) -> Backend:
        """The backend the graph was prepared on (its runtime's)."""
        return self.runtime.backend

    @property
    def tasks(self) -> Tasks:
        """The task builder of this graph's runtime."""
        return self.runtime.tasks()

    def choices(self) -> dict[str, Any]:
        """The orientation and order this graph was prepared with, why, and the partition
        summaries they were judged by (what ``--explain`` shows)."""
        from dtri.kernels.strategy import hash_max_members

        return {"orientation": self.orientation,
                "orientation_reason": self.orientation_reason, "order": self.order,
                "order_reason": self.order_reason,
                "longest_list": longest_list(self.summaries),
                "hash_max_members": hash_max_members(False),
                "wedges_per_edge": self.wedges / self.edges if self.edges else 0.0}

    def predicted_moves(self) -> dict[str, int]:
        """Per preparation stage, the bytes the busiest worker is predicted to receive
        (:func:`dtri.prepared.moved.moved_prepare`); empty where not modelled."""
        if self.shape is None:
            return {}
        moved = moved_prepare(self.shape, [s.edges for s in self.summaries], self.vertices)
        if self.counted_degree is None and "degree" not in self.cache:  # counted when
            moved["degree"] = 0  # first read: not yet
        return moved

    def memory(self) -> MeasuredMemory:
        """The peak memory of each stage run for this graph so far (its preparation and the
        analytics since), as the workers measured it (:mod:`dtri.runtime.meter`)."""
        self._read()
        return self.measured

    def moves(self) -> MovedBytes:
        """The bytes moved between workers by each stage run for this graph so far (its
        preparation and the analytics since), per receiving worker
        (:mod:`dtri.runtime.transfers`)."""
        self._read()
        return self.moved

    def _read(self) -> None:
        """Add what the workers' meters measured since they were last read (one round trip:
        :meth:`dtri.runtime.opened.Runtime.readings`)."""
        if not self.released:
            measured, moved = self.runtime.readings()
            self.measured.merge(measured)
            self.moved.merge(moved)

    def seconds_with(self, stages: dict[str, float], started: float) -> dict[str, float]:
        """What an analytic's result reports as its seconds: the preparation's stages, the
        analytic's ``stages`` (and :attr:`unreported`) added to them, and the ``total`` of the
        preparation and the analytic (begun at ``started``, ``time.perf_counter``)."""
        seconds = {stage: value for stage, value in self.seconds.items()
                   if stage != "prepare_total"}
        stages = {**self.unreported, **stages}
        self.unreported.clear()
        for stage, value in stages.items():
            seconds[stage] = round(seconds.get(stage, 0.0) + value, 6)
        seconds["total"] = round(self.seconds.get("prepare_total", 0.0)
                                 + time.perf_counter() - started, 6)
        return seconds

    def timer(self) -> StageTimer:
        """A stage timer for one analytic."""
        self._check()
        return self.runtime.timer(self.options.progress)

    def cached(self, key: str, make: Callable[[], Result]) -> Result:
        """``make()``, computed once for this graph: kept in :attr:`cache` under ``key``
        (an analytic's result, or a step that several share), and let go by
        :meth:`release`."""
        if key not in self.cache:
            self.cache[key] = make()
        return self.cache[key]

    def per_partition(self, stage: str, build: Callable[..., Any],
                      arguments: Sequence[tuple[Any, ...]],
                      timer: StageTimer | None = None) -> list[Any]:
        """One task ``build(*arguments[p])`` per partition ``p``, placed on the partition's
        owner and persisted there (an analytic's per-partition results). ``timer`` times the
        ``stage``, else a timer of its own; either waits for it before returning."""
        tasks = self.tasks
        built = [tasks.task(stage, build, *args, key=(p,), on_host=True, at=tasks.owner(p))
                 for p, args in enumerate(arguments)]
        timer = self.timer() if timer is None else timer
        persisted = list(timer.submit(stage, *built))
        timer.settle()
        return persisted

    def save(self, path: str) -> str:
        """:meth:`dtri.PreparedGraph.save`: each partition written by a task where it lives
        (:mod:`dtri.prepared.saved`)."""
        from dtri.output import reserve_output

        self._check()
        with reserve_output(path) as folder:
            self.write_to(folder.fs, folder.temporary_path)
            folder.commit()
        return path

    def write_to(self, fs: Any, root: str) -> None:
        """Write this graph's files under ``root`` on ``fs`` (a folder that exists), the
        metadata file last (the ``save`` stage)."""
        for folder in (EDGES_FOLDER, VERTICES_FOLDER):
            fs.makedirs(f"{root}/{folder}", exist_ok=True)
        tasks, bounds = self.tasks, self.bounds
        written = [tasks.task("save", write_partition, fs, root, p, part, self.ids, self.degree,
                              self.present, bounds[p], bounds[p + 1], key=(p,), on_host=True,
                              at=tasks.owner(p)) for p, part in enumerate(self.parts)]
        (edges,) = self.timer().compute("save", written)
        if sum(edges) != self.edges:
            raise RuntimeError(f"internal error: {sum(edges)} edges saved of {self.edges}")
        write_metadata(fs, root, graph_metadata(
            options=self.options, orientation=self.orientation,
            orientation_reason=self.orientation_reason, order=self.order,
            order_reason=self.order_reason, vertices=self.vertices, bounds=self.bounds,
            summaries=self.summaries, seconds=self.seconds, read=self.read,
            present=self.present is not None, input_identity=self.input_identity))

    def peeled_to(self, parts: list[Any], summaries: list[PartitionSummary], degree: Any,
                  present: Any, seconds: dict[str, float]) -> GraphData:
        """A subgraph of this graph over the same ranks, vertex ids and workers (a k-truss:
        :mod:`dtri.analytics.truss`): its own partitions, summaries and degrees, and which
        ranks are still vertices. Releasing it leaves this graph, and its session, open."""
        return GraphData(runtime=self.runtime, options=self.options, parts=list(parts),
                             bounds=self.bounds, summaries=list(summaries),
                             vertices=self.vertices, ids=self.ids, counted_degree=degree,
                             present=present, orientation=self.orientation,
                             orientation_reason=self.orientation_reason, seconds=seconds)

    # ----------------------------------------------------------------- life cycle

    def release(self) -> None:
        """Let go of the workers' data (partitions, vertex arrays, cached results) and close
        what this graph opened (a local cluster). Idempotent."""
        if self.released:
            return
        for name, value in (("released", True), ("parts", []), ("ids", None),
                            ("counted_degree", None), ("present", None)):
            object.__setattr__(self, name, value)  # the one change a frozen graph takes
        self.cache.clear()
        try:
            if self.exit_stack is not None:
                self.exit_stack.close()
        finally:
            if self.checkpoint is not None:
                self.checkpoint.close()

    def __enter__(self) -> GraphData:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def _check(self) -> None:
        if self.released:
            raise ReleasedGraphError("this graph has been released; prepare it again")

    def __repr__(self) -> str:
        state = "released" if self.released else f"{self.partitions} partitions"
        return (f"GraphData(vertices={self.vertices}, edges={self.edges}, "
                f"backend={self.backend!r}, {state})")


def prepare_graph(frame: dd.DataFrame | list[Any], runtime: Runtime,
                  options: Options) -> GraphData:
    """Read, canonicalize, rank, orient and sort ``frame`` (a Dask DataFrame with integer
    ``src``, ``dst``, or an in-process run's delayed
    :class:`~dtri.input.frames.EdgeArrays`) on the workers of ``runtime``, and summarise the
    sorted partitions.

    The sorted partitions are ``options.npartitions`` if given, else fitted to the workers and
    the memory budget (:func:`dtri.prepared.inputs.fitted_partitions`). The input keeps its own
    partitioning unless a partition is too big for one task."""
    started = time.perf_counter()
    runtime.readings()  # what ran before this graph is not its own
    timer = runtime.timer(options.progress)
    staging = runtime.staging
    tasks = runtime.tasks()
    task_budget = runtime.budget.per_task

    if not isinstance(frame, list):  # a list: an in-process run's arrays, on the host already
        check_integer_columns(frame)
    if staging.on_host and not isinstance(frame, list):  # partitions to host memory as read
        # without their index (the host copy keeps the columns only), so without divisions: a
        # repartition by divisions below would slice every partition by index values that
        # its host copy no longer has (R-MAT 24 under a 2 GiB pool lost all partitions but
        # the first, whose index starts at 0)
        meta = frame._meta[["src", "dst"]]
        frame = frame.map_partitions(staging.input_partition, clear_divisions=True,
                                     meta=meta.to_pandas() if is_device_object(meta) else meta)
    inputs = read_inputs(frame, runtime, tasks, timer, task_budget)
    check_budget(sum(inputs.rows), False, runtime.budget, runtime)  # rows known now
    read = {"partitions": len(inputs.rows), "rows": sum(inputs.rows),
            "largest_rows": max(inputs.rows, default=0)}
    parts = options.npartitions or fitted_partitions(sum(inputs.rows), runtime, task_budget)
    senders: list[list[int]] = [[p] for p in range(len(inputs.rows))]  # the one task's
    if options.npartitions is None:
        check_exchange_tasks(sum(inputs.rows), parts, runtime.budget)
    if max(inputs.rows, default=0) * BYTES_PER_EDGE_IN_FLIGHT > task_budget:  # split big inputs
        pieces = -(-sum(inputs.rows) * BYTES_PER_EDGE_IN_FLIGHT // task_budget)
        inputs = read_inputs(split_rows(inputs.partitions, pieces) if inputs.frame is None
                             else inputs.frame.repartition(npartitions=pieces), runtime, tasks,
                             timer, task_budget)
    # read here, where the run started, not on the workers: what auto compares the degree
    # orientation's longest out-list with, and the slack of the adirection peeling
    orientation = options.orientation
    list_limit = hash_list_limit() if orientation == "auto" else None
    epsilon = adirection_epsilon() if orientation in ("auto", "adirection") else None
    fan_in = vertex_fan_in(sum(inputs.rows), task_budget)
    work_model = sort_balance(options.join, tasks.eager or (
        runtime.client is not None and runtime.workers * runtime.threads_per_worker == 1))
    if parts == 1:  # the whole graph in one task: no exchange needed
        small = runtime.backend.on_gpu and sum(inputs.rows) <= host_prepare_edges()
        whole = tasks.task("prepare", prepare_inputs_on_host if small else prepare_inputs,
                           orientation, list_limit, epsilon, *inputs.partitions, key=(0,))
        picked = WholeGraph(*timer.submit("prepare", *(
            tasks.task("prepare", getattr, whole, name, key=(name, 0), on_host=True)
            for name in WholeGraph._fields)))
        prepared = Prepared([picked.csr], picked.vertices, picked.ids, picked.degree, None,
                            picked.orientation, picked.reason)
        del whole, picked
    else:
        # host staging: a sender per input partition (budget-sized already: read pieces and
        # generated partitions are cut to a task's rows). A sender's keys task also holds the
        # vertex-wide id set and its dense table on the device, which the budget's 128 B an
        # edge do not count: R-MAT 28 under a 16 GiB pool canonicalized in 132 s from senders
        # of four partitions, 63 s from one each
        limit = 1 if staging.on_host else task_budget // BYTES_PER_EDGE_IN_FLIGHT
        groups = senders = input_groups(inputs.rows, inputs.holders, limit)
        # auto: degree, then the sorted partitions' longest list decides (below)
        prepared = prepare_partitions(
            inputs, groups, parts, "degree" if orientation == "auto" else orientation, tasks,
            timer, work_model, fan_in, epsilon)
    # what the bytes model needs of the senders: their rows and the worker holding each
    sender_rows = tuple(sum(inputs.rows[p] for p in group) for group in senders)
    sender_holders = tuple(tasks.workers.index(holder) if holder in tasks.workers else -1
                           for holder in (inputs.holders[group[0]] for group in senders))
    # let go of the input before the first wait: each input partition is then freed as soon as
    # the canonicalize stage has read it, not held through the preparation
    del inputs

    def summarised(prepared: Prepared) -> PreparedFacts:
        """The facts of ``prepared`` and its partitions' summaries, computed (the plan stage,
        which waits for every stage before it)."""
        summary_tasks = [tasks.task("plan", stored_summary, part, key=(p,))
                         for p, part in enumerate(prepared.parts)]
        largest = tasks.task("plan", largest_input_id, prepared.ids, key=("largest",),
                             on_host=True)
        # the bytes model's measure of the wire format, each where its data lies
        measured = tasks.wire_format != "raw" and prepared.degree_sum is not None
        pieces, counts = [], []
        if measured:
            holding = len(set(sender_holders))
            pieces += [tasks.task("plan", piece_factors, part, prepared.vertices, len(senders),
                                  holding, prepared.sample_stride, runtime.backend.on_gpu,
                                  tasks.wire_format, holding, key=("pieces", p),
                                  at=tasks.owner(p)) for p, part in enumerate(prepared.parts)]
            counts.append(tasks.task(  # where the summed degrees are
                "plan", count_factors, prepared.degree_sum, prepared.vertex_set, holding,
                len(senders), tasks.wire_format, key=("counts",), at=prepared.first_holder))
        works = [tasks.task("plan", slice_factors, piece, holding, tasks.wire_format,
                            key=("work", k))  # each where its slice is
                 for k, piece in enumerate(prepared.work_sum or ()) if measured]
        # each summary its own collection: a list would be gathered on a worker by a task
        # of its own first (Dask's finalize), a hop between the workers and the client
        vertices, bounds, orientation, reason, largest, *rest = timer.compute(
            "plan", prepared.vertices, prepared.bounds, prepared.orientation, prepared.reason,
            largest, *counts, *pieces, *works, *summary_tasks)
        wire = WireFactors()
        if measured:
            count, total, sender_set, merged_set, header = rest[0]
            keyed = rest[1: 1 + len(pieces)]
            sources = max(sum(k[6] for k in keyed), 1)
            out, out_total, work, work_total = per_slice_factors(keyed, holding, sources)
            slices = rest[1 + len(pieces): 1 + len(pieces) + len(works)]
            if slices:  # the work as it was summed, slice by slice
                work = tuple(mine / max(length, 1) for _, mine, length in slices)
                work_total = tuple(whole / max(length, 1) for whole, _, length in slices)
            wire = WireFactors(count, total, out, out_total, work, work_total, sender_set,
                               merged_set, tuple(k[0] for k in keyed),
                               sum(k[1] for k in keyed) / max(len(keyed), 1), header)
        summaries = rest[len(counts) + len(pieces) + len(works):]
        return PreparedFacts(int(vertices), [PartitionSummary(*s) for s in summaries],
                             [0, int(vertices)] if bounds is None else list(bounds),
                             orientation, reason, int(largest), wire)

    facts = summarised(prepared)
    if parts > 1 and list_limit is not None:  # auto: the longest list decides
        longest = longest_list(facts.summaries)
        if auto_orientation(longest, list_limit) == "adirection":  # lists too long: again
            # the degree-sorted partitions are freed as they are read
            prepared = directed_again(prepared, "adirection", tasks, timer, work_model,
                                      fan_in, epsilon, [s.edges for s in facts.summaries])
            facts = summarised(prepared)
        facts = facts._replace(reason=orientation_reason(facts.orientation, longest,
                                                         list_limit, prepared.rounds))
    partitions, ids, degree = prepared.parts, prepared.ids, prepared.degree
    shape = None if facts.orientation == "adirection" else PreparationShape(
        len(tasks.workers), sender_rows, sender_holders, fan_in, staging.folds_per_worker,
        work_model, facts.largest_id, parts == 1, prepared.sample_stride, facts.orientation,
        facts.wire)
    del prepared
    summaries, bounds, vertices = facts.summaries, facts.bounds, facts.vertices
    check_whole_adjacency(summaries)
    order, order_reason = choose_order(options.order, summaries)
    if degree is None and order != "rank":  # the order reads the degrees
        degree = count_degrees(partitions, vertices, tasks, timer, fan_in)
    partitions = order_partitions(partitions, bounds, vertices, degree, order, tasks, timer,
                                  fan_in, [s.edges for s in summaries])
    if order != "rank":
        timer.settle()
    seconds = dict(timer.seconds)
    seconds["prepare_total"] = round(time.perf_counter() - started, 6)
    measured, moved = runtime.readings()
    return GraphData(runtime=runtime, options=options, parts=partitions, bounds=bounds,
                         summaries=summaries, vertices=vertices, ids=ids,
                         counted_degree=degree, fan_in=fan_in,
                         orientation=facts.orientation, orientation_reason=facts.reason,
                         order=order,
                         order_reason=order_reason, seconds=seconds, read=read,
                         measured=measured, moved=moved, shape=shape)


def open_saved(path: str, runtime: Runtime, options: Options,
               metadata: dict[str, Any] | None = None) -> GraphData:
    """The saved graph at ``path`` (:mod:`dtri.prepared.saved`) on the workers of
    ``runtime``: partition ``p`` read by a task on its owner (the ``open`` stage), the vertex
    arrays by one task; nothing prepared again. ``metadata``: read already
    (:func:`saved_metadata`). Options that would shape the graph otherwise than it was saved
    are refused."""
    from dtri.input.sources import filesystem

    started = time.perf_counter()
    runtime.readings()  # what ran before this graph is not its own
    fs, root = filesystem(path, options.storage_options)
    root = root.rstrip("/") or root
    metadata = metadata or saved_metadata(path, options)
    partitions, bounds = metadata["partitions"], metadata["bounds"]
    summaries = metadata["summaries"]
    check_files(fs, root, path, partitions)
    tasks, timer = runtime.tasks(), runtime.timer(options.progress)
    on_device = runtime.staging.in_gpu_memory
    shown = path.rstrip("/")
    present = bool(metadata.get("present"))
    whole = tasks.task("open", read_whole, fs, root, bounds, [s.edges for s in summaries],
                       metadata["order"] != "rank", present, on_device, key=("whole",),
                       on_host=True) if tasks.eager else None
    if whole is not None:  # in process: each kind of file read at once
        timer.submit("open")
        parts, ids, degree, present_array = whole
        return opened_graph(runtime, options, metadata, parts, ids, degree, present_array,
                            timer, started)
    parts = [tasks.task("open", read_partition, fs, root, shown, p, bounds[p], bounds[p + 1],
                        summaries[p].edges, metadata["order"] != "rank", on_device, key=(p,),
                        on_host=True, at=tasks.owner(p)) for p in range(partitions)]
    vertex = tasks.task("open", read_vertices, fs, root, shown, partitions,
                        metadata["vertices"], present, on_device, key=("vertices",),
                        on_host=True)
    arrays = [tasks.task("open", getitem, vertex, i, key=(name,), on_host=True)
              for i, name in enumerate(("ids", "degree", "present")[:3 if present else 2])]
    persisted = timer.submit("open", *parts, *arrays)
    timer.settle()
    parts, (ids, degree, *rest) = list(persisted[:partitions]), persisted[partitions:]
    present_array = rest[0] if present else None
    del vertex, arrays
    return opened_graph(runtime, options, metadata, parts, ids, degree, present_array, timer,
                        started)


def opened_graph(runtime: Runtime, options: Options, metadata: dict[str, Any],
                 parts: list[Any], ids: Any, degree: Any, present: Any, timer: StageTimer,
                 started: float) -> GraphData:
    """The prepared graph of a saved graph's partitions and vertex arrays, read."""
    summaries = metadata["summaries"]
    seconds = dict(timer.seconds)
    seconds["prepare_total"] = round(time.perf_counter() - started, 6)
    read = {"partitions": metadata["partitions"], "rows": metadata["edges"],
            "largest_rows": max((s.edges for s in summaries), default=0)}
    measured, moved = runtime.readings()
    return GraphData(runtime=runtime, options=options, parts=parts,
                         bounds=metadata["bounds"], summaries=summaries,
                         vertices=int(metadata["vertices"]), ids=ids, counted_degree=degree,
                         present=present, orientation=metadata["orientation"],
                         orientation_reason=metadata["orientation_reason"],
                         order=metadata["order"], order_reason=metadata["order_reason"],
                         seconds=seconds, read=read, measured=measured, moved=moved,
                         input_identity=metadata.get("input"))


def saved_metadata(path: str, options: Options) -> dict[str, Any]:
    """The checked metadata of the saved graph at ``path``
    (:func:`dtri.prepared.saved.read_metadata`), and the options of the run checked against
    it: one that would shape the graph otherwise (another orientation, order, or a way of
    reading edges) is refused in one line."""
    from dtri.input.sources import filesystem

    fs, root = filesystem(path, options.storage_options)
    metadata = read_metadata(fs, root.rstrip("/") or root, path)
    resolved = {"orientation": metadata["orientation"], "order": metadata["order"],
                "npartitions": metadata["partitions"]}
    defaults = Options()
    for name in ("orientation", "order", "npartitions", "format", "columns", "header"):
        given = getattr(options, name)
        if given == getattr(defaults, name) or given == resolved.get(name, object()):
            continue
        saved = resolved.get(name)
        what = f"was saved with {name} {saved}" if saved is not None else \
            "is read as it was saved, not as edges"
        raise SavedGraphError(f"{path}: a saved graph {what}; {name} {given!r} would prepare "
                              "the input again: give the input itself, or leave the option out")
    return metadata


def largest_input_id(ids: Any) -> int:
    """The largest input vertex id of a graph's ids by rank (-1 for none)."""
    return int(ids.max()) if ids.shape[0] else -1


def check_whole_adjacency(summaries: list[PartitionSummary]) -> None:
    """The analytics need every source's edges in one partition; fail loudly if not."""
    ranges = [(s.first_src, s.last_src) for s in summaries if s.edges]
    for (_, last), (first, _) in itertools.pairwise(ranges):
        if first <= last:
            raise RuntimeError(
                f"internal error: source {first} is split across sorted partitions; "
                "please report this with the input that caused it"
            )
