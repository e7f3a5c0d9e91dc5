"""The pipeline: read → canonicalize → orient → sort → plan → edge bins → wedges/bins/join → reduce.

A graph that fits one partition runs canonicalize/orient/sort as one ``dtri-prepare`` task of
array operations (:mod:`dtri.prepare.local`); larger ones run the same operations per partition,
joined by array exchanges (:func:`prepare_partitions`). Each stage is persisted on the
workers and the next one is queued behind it in the same breath (:class:`StageTimer`): the
client waits only where it needs values (input sizes, the partition summaries, the count),
and a stage's data is released once the stages after it no longer need it; no stage gathers
the edge list in one process. The
counting phase is a task graph whose keys are named after their stage (``dtri-wedges``,
``dtri-bins``, ``dtri-join``, ``dtri-reduce``), so the Dask dashboard tells the story:

* ``dtri-edge-bins-k``: bin ``k`` of the packed, sorted edge keys (one bin of the edge set);
* ``dtri-wedges-(p, j)``: batch ``j`` of partition ``p``'s closure keys, a wedge-number range
  sized by prefix sums to fit the memory budget, radix-split into bins; it reads only the
  rows of its sources (``dtri-wedges-rows-(p, j)``, cut where the partition lives);
* ``dtri-bins-(p, j, k)``: bin ``k`` of that batch, picked where the batch lives so that only
  that bin travels;
* ``dtri-join-(p, j, k)``: how many of those keys are edges of bin ``k``;
* ``dtri-intersect-(p, k)``: instead of the three above, for partitions the planner gives to
  the fused join (:mod:`dtri.kernels.intersect`): triangles closed by partition ``p``'s edges whose
  target lies in bin ``k``, by list intersection against bin ``k`` as CSR (``dtri-edge-csr``);
* ``dtri-reduce``: the exact sum, a tree of Python ints.
"""

from __future__ import annotations

import itertools
import sys
import time
from contextlib import redirect_stdout
from dataclasses import asdict, dataclass, field, replace
from operator import getitem
from typing import Any

import dask
import dask.dataframe as dd
from dask.dataframe.dispatch import concat

from dtri.analytics.plan import (  # noqa: F401  (the planner's names stay importable from here)
    INTERSECT_MIN_WEDGES,
    JOINS,
    REDUCE_FAN_IN,
    CountPlan,
    build_plan,
    choose_join,
    chunk_rows,
    staged_plan,
)
from dtri.errors import ConfigurationError, ListTooLongError, OutOfMemoryError
from dtri.kernels.bins import pack_edges, radix_split
from dtri.kernels.canonicalize import (
    check_integer_columns,
    merge_vertices,
    partition_vertices,
    split_edge_keys,
    unique_edge_keys,
    vertex_count,
)
from dtri.kernels.csr import (
    PartitionSummary,
    csr_summary,
    frame_csr,
    partition_summary,
    sorted_csr,
    sorted_edges,
)
from dtri.kernels.dispatch import array_module, column_to_array, is_gpu_frame
from dtri.kernels.intersect import BinCSR, bin_csr, count_group, count_intersections
from dtri.kernels.join import count_closed
from dtri.kernels.orient import (
    WORK_MODELS,
    add_counts,
    degree_counts,
    input_id_of_rank,
    intersection_work,
    orient_keys,
    oriented_intersection_work,
    oriented_out_degree,
    oriented_split,
    out_degree_counts,
    source_bounds,
    split_by_source,
    vertex_ranks,
    wedge_work,
)
from dtri.kernels.wedges import closure_keys, list_ends
from dtri.prepare.local import prepare_partition_with_ids
from dtri.runtime.session import Session, resolve_staging
from dtri.runtime.staging import (
    CACHE_SHARE_OF_BUDGET,
    end_staging,
    folded,
    host_frame,
    runs_on_host,
    staged,
    start_staging,
)
from dtri.runtime.tasks import FAN_IN, exchange, pick_pieces, placed, task, tree


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
    backend: str
    workers: int
    orientation: str
    join: str
    memory_budget: int
    seconds: dict[str, float] = field(default_factory=dict)
    plan: dict[str, Any] = field(default_factory=dict)
    """The counting phase's plan with its estimates
    (:meth:`dtri.analytics.plan.CountPlan.to_dict`)."""
    caps: dict[str, Any] = field(default_factory=dict)
    """The workers' memory caps, bytes or ``None``: ``memory_limit``, ``device_memory_limit``,
    ``rmm_pool_size`` (:class:`dtri.runtime.session.MemoryCaps`)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict."""
        return asdict(self)


def out_of_memory(stage: str, error: MemoryError) -> OutOfMemoryError:
    """A task's ``MemoryError`` (an RMM pool's, CuPy's, the host's) as one line a user can act
    on."""
    return OutOfMemoryError(
        f"a task of the {stage} stage ran out of memory ({str(error).strip() or 'MemoryError'});"
        " give the workers more memory (--rmm-pool-size, --memory-limit) or each task less (a "
        "smaller --memory-budget)")


class StageTimer:
    """Runs the stages' collections on the cluster and times each stage, with optional progress.

    With a cluster, :meth:`submit` hands a stage to the scheduler and returns at once: the
    next stage is built on its futures and queued behind it, so no round trip to the client
    separates dependent stages. :meth:`settle` (which :meth:`compute` ends with) then waits
    for the submitted stages in order; each stage's seconds run from the end of the stage
    before it (or from its submission, for the first) to its own end. The timer lets go of a
    stage's futures once it has finished, so a stage's data lives as long as the caller keeps
    it or a later stage still needs it. Without a cluster (a local scheduler) every stage
    runs when submitted.
    """

    def __init__(self, session: Session, progress: bool):
        self.session = session
        self.progress = progress
        self.seconds: dict[str, float] = {}
        self._pending: list[tuple[str, list[Any]]] = []
        self._since: float | None = None

    def submit(self, stage: str, *collections: Any) -> tuple[Any, ...]:
        """Start persisting a stage's collections; returns them persisted (holding futures)."""
        client = self.session.client
        if client is None:
            return self._run_locally(dask.persist, stage, *collections)
        return tuple(self._queue(stage, client.persist, collections))

    def compute(self, stage: str, *collections: Any) -> tuple[Any, ...]:
        """Compute a stage's collections (after the stages submitted before it) and return
        their values."""
        client = self.session.client
        if client is None:
            return self._run_locally(dask.compute, stage, *collections)
        futures = self._queue(stage, client.compute, collections)
        self.settle()
        return tuple(client.gather(futures))

    def _queue(self, stage: str, hand_over: Any, collections: tuple[Any, ...]) -> list[Any]:
        """Hand a stage to the scheduler (``client.persist`` or ``client.compute``) for
        :meth:`settle` to wait for; the clock starts with the first stage handed over."""
        if self._since is None:
            self._since = time.perf_counter()
        submitted = hand_over(list(collections))
        self._pending.append((stage, submitted))
        return submitted

    def settle(self) -> None:
        """Wait for the submitted stages in order, timing each; raise the first task error."""
        from distributed import futures_of, wait

        pending, self._pending = self._pending, []
        for stage, collections in pending:
            futures = futures_of(collections)
            if self.progress:  # one bar per stage
                from distributed import progress

                with redirect_stdout(sys.stderr):  # keep stdout for the result (and --json)
                    progress(futures)
                    print(file=sys.stderr)
            wait(futures)
            for future in futures:
                if future.status == "error":  # wait() returns on failed tasks too: raise
                    self._since = None
                    error = future.exception()
                    if isinstance(error, MemoryError):
                        raise out_of_memory(stage, error) from error
                    raise error
            self._add(stage)
        self._since = None

    def _add(self, stage: str) -> None:
        """Wall time of a stage, added up when a stage runs in several steps."""
        now = time.perf_counter()
        assert self._since is not None
        self.seconds[stage] = round(self.seconds.get(stage, 0.0) + now - self._since, 6)
        self._since = now

    def _run_locally(self, action: Any, stage: str, *collections: Any) -> tuple[Any, ...]:
        self._since = time.perf_counter()
        try:
            if not self.progress:
                results = action(*collections)
            else:
                from dask.diagnostics import ProgressBar

                with ProgressBar(out=sys.stderr):
                    results = action(*collections)
        except MemoryError as error:
            raise out_of_memory(stage, error) from error
        self._add(stage)
        self._since = None
        return tuple(results)


def bin_slices(frame: Any, bins: tuple[int, ...], src_shift: int, bits: int) -> dict:
    """One sorted partition's packed keys cut at the edges of the bins it overlaps (bin ``k``
    holds sources ``[k << src_shift, (k + 1) << src_shift)``): contiguous slices of the
    source-sorted partition, so only each bin's share travels to the bin."""
    src, dst = column_to_array(frame["src"]), column_to_array(frame["dst"])
    xp = array_module(src)
    bounds = xp.asarray([k << src_shift for k in bins] + [(bins[-1] + 1) << src_shift])
    cuts = xp.searchsorted(src, bounds).tolist()
    return {k: pack_edges(src[cuts[i]: cuts[i + 1]], dst[cuts[i]: cuts[i + 1]], bits)
            for i, k in enumerate(bins)}


def edge_bin(*slices: Any) -> Any:
    """Bin ``k`` of the packed edge keys, ascending: its slices in partition order."""
    return array_module(slices[0]).concatenate(slices)


def edge_bin_csr(keys: Any, bits: int, low: int, high: int) -> tuple:
    """Bin keys as CSR for the fused join, as a plain tuple: Dask sends a tuple's GPU arrays
    by its CUDA serializers (UCX/NVLink), but pickles a NamedTuple whole, through the host."""
    return tuple(bin_csr(keys, bits, low, high))


def partition_list_ends(frame: Any) -> Any:
    """:func:`dtri.kernels.wedges.list_ends` of one sorted partition, shared by its bins' tasks."""
    return list_ends(column_to_array(frame["src"]))


def intersect_bin(frame: Any, ends: Any, csr: Any) -> int:
    """Triangles closed by one partition's edges that point into one bin."""
    return count_intersections(column_to_array(frame["src"]), column_to_array(frame["dst"]),
                               BinCSR(*csr), ends)


def batch_rows(frame: Any, start: int, stop: int) -> tuple:
    """Rows ``[start, stop)`` of one sorted partition (whole adjacency lists) as ``(src,
    dst)``: cut where the partition lives, so a wedge batch pulls only the rows it reads."""
    return column_to_array(frame["src"])[start:stop], column_to_array(frame["dst"])[start:stop]


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


@runs_on_host
def total(*counts: int) -> int:
    """Exact sum of partial counts."""
    return sum(int(c) for c in counts)


def reduce_tree(counts: list[Any]) -> Any:
    """Sum delayed counts in a tree (``dtri-reduce`` tasks)."""
    return tree("reduce", total, counts, REDUCE_FAN_IN)


BYTES_PER_EDGE_IN_FLIGHT = 16 * 8
"""Working memory per input edge in the preparation stages: an int64 pair, copied a few times
by the casts, packs, splits and sorts."""


MIN_ROWS_PER_PARTITION = 1 << 22
"""Below this many input rows per worker, one partition (one task, no exchange) is faster than
spreading the preparation over the workers."""


def fitted_partitions(rows: int, session: Session, task_budget: int) -> int:
    """How many sorted partitions to make: enough that each fits one task's budget, and one
    per worker when the graph is large enough for the workers to share its preparation; one
    partition otherwise. Several partitions come in a multiple of the workers, since each
    worker owns the partitions ``w, w + workers, ...`` (three on two workers would leave one
    worker with twice the other's share).

    One partition takes the one-task path (:mod:`dtri.prepare.local`); the counting phase still
    spreads over every worker through its batches and bins.
    """
    wanted = -(-rows * BYTES_PER_EDGE_IN_FLIGHT // task_budget)
    spread = min(session.workers, rows // MIN_ROWS_PER_PARTITION)
    if wanted <= 1 and spread <= 1:
        return 1
    workers = max(session.workers, 1)
    return -(-max(wanted, spread) // workers) * workers


VERTEX_ARRAY_COPIES = 3
"""A merge or sum of vertex-wide arrays holds its inputs, their concatenation or sum, and a
sort's scratch: about three times its inputs' size."""


def vertex_fan_in(rows: int, task_budget: int) -> int:
    """Fan-in of the trees over vertex-wide arrays (the vertex-id sets, degree, out-degree and
    work counts), so that one of their tasks fits the budget: such an array holds at most two
    8-byte entries per input edge, whatever the tree level. Small graphs keep the wide
    default; graphs whose vertex arrays approach the budget merge them two at a time."""
    widest = 16 * max(rows, 1)
    return max(2, min(FAN_IN, task_budget // (VERTEX_ARRAY_COPIES * widest)))


@runs_on_host
def partition_lengths(*frames: Any) -> list[int]:
    """Rows of each of some input partitions."""
    return [len(frame) for frame in frames]


def input_rows(inputs: list[Any], holders: list[str | None], sizes: list[int],
               task_budget: int, timer: StageTimer) -> list[int]:
    """Rows of each input partition (part of the ``read`` stage), counted where they live:
    one task per group of :func:`input_groups` (a holder's partitions, at most half a task's
    budget of bytes by ``sizes``, since a worker that spilled them brings a task's inputs
    back to the device together). A task per partition costs a scheduler round trip each:
    0.15 s for RMAT 26's 64 partitions on 4 GPUs."""
    groups = input_groups(sizes, holders, task_budget // 2)
    tasks = []
    for g, members in enumerate(groups):
        holder = holders[members[0]]
        with placed([holder] if holder else (), 0):
            tasks.append(task("read", partition_lengths, *(inputs[p] for p in members),
                              key=("rows", g)))
    rows = [0] * len(inputs)
    for members, lengths in zip(groups, timer.compute("read", tasks)[0], strict=True):
        for p, length in zip(members, lengths, strict=True):
            rows[p] = length
    return rows


@runs_on_host
def concat_frames(*frames: Any) -> Any:
    """Input partitions taken together (pandas or cuDF, by Dask's ``concat`` dispatch)."""
    return frames[0] if len(frames) == 1 else concat(list(frames))


def prepare_inputs(orientation: str, *frames: Any) -> tuple[Any, int, Any, Any]:
    """:func:`dtri.prepare.local.prepare_partition_with_ids` of input partitions taken together."""
    return prepare_partition_with_ids(concat_frames(*frames), orientation)


def input_groups(rows: list[int], holders: list[str | None], limit: int) -> list[list[int]]:
    """The input partitions grouped into the senders of the first exchange: by the worker
    that holds them, so that grouping moves nothing, in index order, each group at most
    ``limit`` rows (what one task may hold). Fewer, larger senders keep the vertex merge
    cheap: each sender's distinct ids overlap the others' almost entirely on skewed graphs,
    so merging them costs about one vertex set per sender."""
    by_holder: dict[str | None, list[int]] = {}
    for p, holder in enumerate(holders):
        by_holder.setdefault(holder, []).append(p)
    groups: list[list[int]] = []
    for members in by_holder.values():
        current: list[int] = []
        size = 0
        for p in members:
            if current and size + rows[p] > limit:
                groups.append(current)
                current, size = [], 0
            current.append(p)
            size += rows[p]
        groups.append(current)
    return groups


def persisted_partitions(edges: dd.DataFrame) -> list[Any] | None:
    """The futures that hold the partitions of an already persisted ``edges``, in partition
    order; ``None`` if it is not persisted (or not on a cluster). A persisted frame names its
    partitions by aliases of the futures' keys: a task given a partition of it directly
    (``to_delayed``) also runs one alias task per partition, and persisting it again adds
    another layer (on RMAT 26, 192 alias tasks cost the read stage 0.15-0.3 s)."""
    from distributed import Future

    try:
        from dask._task_spec import Alias  # Dask's own rename node (not public API)
    except ImportError:  # another Dask: persist again rather than guess
        return None

    graph = edges.__dask_graph__()
    partitions = []
    for key in edges.__dask_keys__():
        node = graph.get(key)
        while isinstance(node, Alias):  # follow renames, never a task that computes
            node = graph.get(node.target)
        if not isinstance(node, Future):
            return None
        partitions.append(node)
    return partitions


def input_placement(inputs: list[Any], session: Session) -> tuple[list[str | None], list[int]]:
    """The worker holding each input partition given as a future, and its bytes as the
    scheduler has them (``None`` and 0 where unknown: a partition given otherwise, or no
    cluster)."""
    unknown: tuple[list[str | None], list[int]] = ([None] * len(inputs), [0] * len(inputs))
    if session.client is None:
        return unknown
    from distributed import Future

    futures = [part for part in inputs if isinstance(part, Future)]
    if not futures:
        return unknown
    who = session.client.who_has(futures)
    sizes = session.client.nbytes([future.key for future in futures], summary=False)
    keys = [part.key if isinstance(part, Future) else None for part in inputs]
    return ([next(iter(who[key])) if key is not None and who.get(key) else None
             for key in keys],
            [int(sizes.get(key, 0)) if key is not None else 0 for key in keys])


def read_inputs(edges: dd.DataFrame, session: Session, timer: StageTimer, task_budget: int,
                ) -> tuple[dd.DataFrame, list[Any], list[int], list[str | None]]:
    """The ``read`` stage: ``edges`` persisted on the workers (unless it is already), and its
    partitions (futures where there is a cluster) with their rows and holders."""
    inputs = persisted_partitions(edges) if session.client is not None else None
    if inputs is None:
        # Lower the input first: some readers (dask-cuDF's Parquet) merge files into fewer
        # partitions when lowered, and partition keys must be those that exist after persist.
        (edges,) = timer.submit("read", edges.optimize())
        timer.settle()
        inputs = (persisted_partitions(edges) if session.client is not None
                  else None) or edges.to_delayed()
    holders, sizes = input_placement(inputs, session)
    rows = input_rows(inputs, holders, sizes, task_budget, timer)
    return edges, inputs, rows, holders


def prepare_partitions(inputs: list[Any], groups: list[list[int]], parts: int,
                       orientation: str, timer: StageTimer, workers: tuple[str, ...] = (),
                       work_model: str = "wedges",
                       holders: list[str | None] | None = None, fan_in: int = FAN_IN,
                       staging: str | None = None,
                       ) -> tuple[list[Any], list[Any], tuple[Any, Any]]:
    """Canonicalize, rank, orient and sort edges held in the ``inputs`` partitions
    (the
    docstrings of :mod:`dtri.kernels.canonicalize`, :mod:`dtri.kernels.orient` and :mod:`dtri.kernels.csr` explain
    the steps) into ``parts`` sorted partitions, each holding one source range's whole
    adjacency lists; returns them, the vertex count, and the persisted vertex ids and ranks
    that name a vertex by its input id (:func:`dtri.kernels.orient.input_id_of_rank`; kept until the
    plan is made, a fraction of the edges' size).

    The first exchange goes from ``groups`` of input partitions (:func:`input_groups`, each
    taken together where its ``holders`` entry says it lives) to ``parts`` receivers, so the
    input is never repartitioned. Each stage is submitted behind the one before; every
    exchange sends each partition's pieces to their receivers once, through Dask; receiver
    ``j`` lives on ``workers[j]`` (round robin), which then owns sorted partition ``j``.
    ``work_model`` (one of :data:`dtri.kernels.orient.WORK_MODELS`) is what the sort's source ranges
    balance; ``fan_in`` is that of the trees over vertex-wide arrays (:func:`vertex_fan_in`).

    ``staging`` (the backend of host staging's tasks, ``None`` without it): the sorted
    partitions are CSRs (:func:`dtri.kernels.csr.sorted_csr`), and the per-partition vertex-wide
    counts are folded per owning worker (:func:`owner_counts`).
    """
    if work_model not in WORK_MODELS:
        raise ValueError(f"work_model must be one of {WORK_MODELS}, got {work_model!r}")
    senders = []
    holders = holders or [None] * len(inputs)
    for g, group in enumerate(groups):
        holder = holders[group[0]]
        with placed([holder] if holder else (), 0):
            senders.append(task("canonicalize", concat_frames, *(inputs[p] for p in group),
                                key=("inputs", g)))
    if staging is None:
        vertices = tree("vertices", merge_vertices,
                        [task("vertices", partition_vertices, sender, key=(g,))
                         for g, sender in enumerate(senders)], fan_in)
    else:  # each worker merges its senders' ids on the device, one sender at a time
        vertices = tree("vertices", merge_vertices, holder_folds(
            "vertices", merge_vertices, partition_vertices, senders, (),
            [holders[group[0]] for group in groups], staging, "ids"), fan_in)
    n = task("vertices", vertex_count, vertices, key=("count",))
    splits = [task("canonicalize", split_edge_keys, sender, vertices, parts, key=("split", g))
              for g, sender in enumerate(senders)]
    *keys, n, vertices = timer.submit("canonicalize", *exchange(
        "canonicalize", splits, unique_edge_keys, parts, workers=workers), n, vertices)
    del senders, splits

    def counts(stage: str, func: Any, items: list[Any], *args: Any, key: str = "") -> Any:
        """The sum over ``items`` of a vertex-wide ``func(item, *args)``, as a tree."""
        if staging is not None:
            return tree(stage, add_counts, owner_counts(stage, func, items, args, workers,
                                                        staging, key), fan_in)
        return tree(stage, add_counts, [task(stage, func, item, *args, key=(key, p) if key
                                             else (p,))
                                        for p, item in enumerate(items)], fan_in)

    degree = counts("rank", degree_counts, keys, n)
    (rank,) = timer.submit("rank", task("rank", vertex_ranks, degree, orientation, key=(0,)))

    if staging is None:
        oriented = [task("orient", orient_keys, k, rank, n, key=(p,))
                    for p, k in enumerate(keys)]
        out_degree = counts("orient", out_degree_counts, oriented, n)
        if work_model == "intersect":
            work = counts("orient", intersection_work, oriented, out_degree, n, key="work")
    else:  # host staging orients on the fly (dtri.kernels.orient.oriented_split)
        out_degree = counts("orient", oriented_out_degree, keys, rank, n)
        if work_model == "intersect":
            work = counts("orient", oriented_intersection_work, keys, rank, out_degree, n,
                          key="work")
    if work_model != "intersect":
        work = task("orient", wedge_work, out_degree, key=("work",))
    bounds = task("orient", source_bounds, work, parts, key=("bounds",))
    if staging is None:
        *oriented, bounds = timer.submit("orient", *oriented, bounds)
        del keys
        splits = [task("sort", split_by_source, o, bounds, n, key=("split", p))
                  for p, o in enumerate(oriented)]
    else:
        (bounds,) = timer.submit("orient", bounds)
        splits = [task("sort", oriented_split, k, rank, bounds, n, key=("split", p))
                  for p, k in enumerate(keys)]
        del keys
    combine = sorted_edges if staging is None else sorted_csr
    sorted_parts = timer.submit("sort", *exchange("sort", splits, combine, parts, n,
                                                   workers=workers))
    return list(sorted_parts), [n], (vertices, rank)


def owner_counts(stage: str, func: Any, items: list[Any], args: tuple, workers: tuple[str, ...],
                 staging: str, key: str = "") -> list[Any]:
    """Host staging's leaves of a tree of vertex-wide counts: per worker, one task that folds
    ``func(item, *args)`` over the items it owns (item ``p`` lives on ``workers[p % W]``, as the
    exchanges place their receivers) on the device, one item at a time
    (:func:`dtri.runtime.staging.folded`)."""
    holders = [workers[p % len(workers)] if workers else None for p in range(len(items))]
    return holder_folds(stage, add_counts, func, items, args, holders, staging, key or "counts")


def holder_folds(stage: str, combine: Any, func: Any, items: list[Any], args:
tuple,
                 holders: list[str | None], staging: str, key: str) -> list[Any]:
    """One :func:`dtri.runtime.staging.folded` task per worker in ``holders`` (the worker holding each
    item; ``None``: unknown), placed there, over the items it holds."""
    by_holder: dict[str | None, list[int]] = {}
    for i, holder in enumerate(holders):
        by_holder.setdefault(holder, []).append(i)
    leaves = []
    for w, (holder, members) in enumerate(by_holder.items()):
        with placed([holder] if holder else (), 0):
            leaves.append(task(stage, folded, staging, combine, func, args,
                               *(items[i] for i in members), key=(key, "owner", w)))
    return leaves


def check_whole_adjacency(summaries: list[PartitionSummary]) -> None:
    """The wedge stage needs every source's edges in one partition; fail loudly if not."""
    ranges = [(s.first_src, s.last_src) for s in summaries if s.edges]
    for (_, last), (first, _) in itertools.pairwise(ranges):
        if first <= last:
            raise RuntimeError(
                f"internal error: source {first} is split across sorted partitions; "
                "please report this with the input that caused it"
            )


def count_pipeline(edges: dd.DataFrame, session: Session, *, orientation: str = "degree",
                   bins: int | None = None, memory_budget: int | None = None,
                   join: str = "auto", partitions: int | None = None,
                   progress: bool = False, explain: bool = False,
                   staging: str = "auto") -> CountResult:
    """Run every stage on ``edges`` (a Dask DataFrame with integer ``src``, ``dst``).

    ``staging``: where stage results live between tasks (:mod:`dtri.runtime.staging`): ``host``,
    ``device`` or ``auto`` (``host`` on GPU workers with a capped RMM pool). Host staging
    runs the fused join, per group of partitions (:func:`dtri.analytics.plan.staged_plan`).

    ``explain``: stop after planning (read, canonicalize, orient, sort and the partition
    summaries run; no edge bin, wedge or join does) and return the plan with
    ``triangles=None``.

    ``partitions``: how many sorted partitions to make (the caller chose it); by default it is
    fitted to the workers and the memory budget (:func:`fitted_partitions`). The input keeps
    its own partitioning unless a partition is too big for one task.
    """
    session = replace(session, staging=resolve_staging(staging, session))
    host = session.staging == "host"
    if host and join == "wedges":
        raise ConfigurationError(
            "host staging (--staging host, the default with --rmm-pool-size) counts with the "
            "fused join: give --join intersect or auto, or --staging device")
    cached = host and session.backend == "gpu"
    # the device cache of vertex-wide arrays (a quarter of a task's budget) and the arena of
    # page-locked host memory live where the tasks run: the workers, or this process under a
    # local scheduler
    run = session.client.run if session.client is not None else (lambda f, *a: f(*a))
    if cached:
        run(start_staging, session.task_budget(memory_budget) // CACHE_SHARE_OF_BUDGET, True)
    try:
        with staged(session.backend if host else None):
            return _count(edges, session, orientation=orientation, bins=bins,
                          memory_budget=memory_budget, join=join, partitions=partitions,
                          progress=progress, explain=explain)
    finally:
        if cached:
            run(end_staging)


def _count(edges: dd.DataFrame, session: Session, *, orientation: str, bins: int | None,
           memory_budget: int | None, join: str, partitions: int | None, progress: bool,
           explain: bool) -> CountResult:
    """:func:`count_pipeline` with staging resolved (and, for host staging, turned on)."""
    started = time.perf_counter()
    timer = StageTimer(session, progress)
    task_budget = session.task_budget(memory_budget)
    host = session.staging == "host"

    check_integer_columns(edges)
    if host:  # the input's partitions go to host memory as they are read
        # without their index (host_frame keeps the columns only), so without divisions: a
        # repartition by divisions below would slice every partition by index values that
        # its host copy no longer has (R-MAT 24 under a 2 GiB pool lost all partitions but
        # the first, whose index starts at 0)
        meta = edges._meta[["src", "dst"]]
        edges = edges.map_partitions(host_frame, meta=meta.to_pandas() if is_gpu_frame(meta)
                                     else meta, clear_divisions=True)
    edges, inputs, rows, holders = read_inputs(edges, session, timer, task_budget)
    if partitions is None:
        partitions = fitted_partitions(sum(rows), session, task_budget)
    if max(rows, default=0) * BYTES_PER_EDGE_IN_FLIGHT > task_budget:  # split big inputs
        pieces = -(-sum(rows) * BYTES_PER_EDGE_IN_FLIGHT // task_budget)
        edges, inputs, rows, holders = read_inputs(edges.repartition(npartitions=pieces),
                                                   session, timer, task_budget)
    del edges
    if partitions == 1:  # the whole graph in one task: no exchange needed
        prepared = task("prepare", prepare_inputs, orientation, *inputs, key=(0,))
        parts = [task("prepare", getitem, prepared, 0, key=("edges", 0))]
        vertex_counts = [task("prepare", getitem, prepared, 1, key=("vertices", 0))]
        names = [task("prepare", getitem, prepared, i, key=("names", i)) for i in (2, 3)]
        if host:
            parts = [task("prepare", frame_csr, parts[0], key=("csr", 0))]
        edges_0, vertex_count, *names = timer.submit("prepare", *parts, *vertex_counts, *names)
        parts, vertex_counts, names = [edges_0], [vertex_count], tuple(names)
        del prepared
    else:
        work_model = ("intersect" if (session.backend == "gpu" or host) and join != "wedges"
                      else "wedges")
        # host staging: a sender per input partition (concatenating them is a host copy)
        limit = 1 if host else task_budget // BYTES_PER_EDGE_IN_FLIGHT
        groups = input_groups(rows, holders, limit)
        parts, vertex_counts, names = prepare_partitions(
            inputs, groups, partitions, orientation, timer, session.addresses, work_model,
            holders, vertex_fan_in(sum(rows), task_budget),
            staging=session.backend if host else None)
    del inputs

    summarize = csr_summary if host else partition_summary
    summary_tasks = [task("plan", summarize, part, key=(p,)) for p, part in enumerate(parts)]
    vertex_counts, summaries = timer.compute("plan", vertex_counts, summary_tasks)
    summaries = [PartitionSummary(*s) for s in summaries]
    check_whole_adjacency(summaries)
    try:
        if host:
            plan = staged_plan(summaries, sum(vertex_counts), workers=session.workers,
                               threads_per_worker=session.threads_per_worker,
                               backend=session.backend, task_budget=task_budget)
        else:
            plan = build_plan(summaries, sum(vertex_counts), workers=session.workers,
                              threads_per_worker=session.threads_per_worker,
                              backend=session.backend, task_budget=task_budget, bins=bins,
                              join=join)
    except ListTooLongError as error:  # name the vertex by its input id
        (vertex,) = timer.compute("plan", task("plan", input_id_of_rank, *names, error.rank,
                                               key=("name",)))
        raise ConfigurationError(f"{error} (vertex {vertex} of the input)") from None
    del names  # only needed to name a vertex in that error
    if explain:  # stop after planning: no edge bin, wedge or join is built
        timer.seconds["total"] = round(time.perf_counter() - started, 6)
        return _result(plan, None, orientation, timer.seconds, session)

    if host:
        joins = staged_joins(plan, parts, session)
        (triangles,) = timer.compute("wedges_join", reduce_tree(joins))
        timer.seconds["total"] = round(time.perf_counter() - started, 6)
        return _result(plan, int(triangles), orientation, timer.seconds, session)

    bits, shift, nbins = plan.bits, plan.shift, plan.nbins
    # placement on the partitions' owners once every worker owns one; else Dask spreads tasks
    workers = session.addresses if plan.owned else ()
    overlapped: dict[int, list[int]] = {}  # partition -> the bins it overlaps, ascending
    for k, owners in plan.bin_partitions.items():
        for p in owners:
            overlapped.setdefault(p, []).append(k)
    slices = {}
    for p, bins_of_p in overlapped.items():
        with placed(workers, p):
            slices[p] = task("edge-bins", bin_slices, parts[p], tuple(bins_of_p), plan.src_shift,
                             bits, key=("slices", p))
    picks = pick_pieces("edge-bins", slices, overlapped)
    edge_bins = {k: task("edge-bins", edge_bin, *(picks[p, k] for p in plan.bin_partitions[k]),
                         key=(k,))
                 for k in plan.bin_sources}
    csr_bins, ends = {}, {}
    if plan.needs_csr:
        csr_bins = {k: task("edge-csr", edge_bin_csr, keys, bits, *plan.bin_sources[k],
                            key=(k,))
                    for k, keys in edge_bins.items()}
        for p, summary in enumerate(summaries):
            if plan.strategy[p] == "intersect" and summary.wedges:
                with placed(workers, p):
                    ends[p] = task("edge-csr", partition_list_ends, parts[p], key=("ends", p))
    needed = {**({("keys", k): t for k, t in edge_bins.items()} if plan.needs_edge_keys else {}),
              **{("csr", k): t for k, t in csr_bins.items()},
              **{("ends", p): t for p, t in ends.items()}}
    persisted = dict(zip(needed, timer.submit("edge_bins", *needed.values()), strict=True))

    joins = []
    for batch in plan.batches:
        p, j, base = batch.partition, batch.batch, batch.wedge_base
        with placed(workers, p):  # on the partition's owner: nothing but the bins travels
            rows = task("wedges", batch_rows, parts[p], batch.row_start, batch.row_stop,
                        key=("rows", p, j))
            split = task("wedges", wedge_bins, rows, batch.first - base, batch.last - base,
                         bits, shift, nbins, key=(p, j))
        for k in plan.reach[p]:
            picked = task("bins", pick_bin, split, k, key=(p, j, k))
            joins.append(task("join", join_bin, picked, persisted["keys", k], key=(p, j, k)))
    for p, s in enumerate(summaries):
        if plan.strategy[p] == "intersect" and s.wedges:
            with placed(workers, p):  # on the partition's owner: only the bin travels
                joins.extend(task("intersect", intersect_bin, parts[p], persisted["ends", p],
                                  persisted["csr", k], key=(p, k)) for k in plan.reach[p])
    (triangles,) = timer.compute("wedges_join", reduce_tree(joins))
    timer.seconds["total"] = round(time.perf_counter() - started, 6)

    return _result(plan, int(triangles), orientation, timer.seconds, session)


def staged_joins(plan: CountPlan, parts: list[Any], session: Session) -> list[Any]:
    """Host staging's join (``dtri-count``): per group of consecutive partitions (the plan's
    bins) and per worker, one task that moves the group to the device as one CSR and counts
    the triangles closed there by the edges of that worker's partitions that reach it
    (:func:`dtri.kernels.intersect.count_group`)."""
    rows = chunk_rows(plan.task_budget)
    device = session.backend == "gpu"
    joins = []
    for k, w, own in plan.count_tasks:
        members = plan.bin_partitions[k]
        inputs = [*members, *(p for p in own if p not in members)]
        with placed(session.addresses, w):
            joins.append(task("count", count_group, device, rows, len(members),
                              tuple(inputs.index(p) for p in own),
                              *(parts[p] for p in inputs), key=(k, w)))
    return joins


def _result(plan: CountPlan, triangles: int | None, orientation: str,
            seconds: dict[str, float], session: Session) -> CountResult:
    return CountResult(
        triangles=triangles, vertices=plan.vertices, edges=plan.edges, wedges=plan.wedges,
        bins=plan.nbins, batches=len(plan.batches), partitions=plan.partitions,
        backend=plan.backend, workers=plan.workers, orientation=orientation, join=plan.join,
        memory_budget=plan.memory_budget, seconds=seconds, plan=plan.to_dict(),
        caps=session.caps.sizes(),
    )
