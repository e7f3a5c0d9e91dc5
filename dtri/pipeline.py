"""The pipeline: read → canonicalize → orient → sort → plan → edge bins → wedges/bins/join → reduce.

A graph that fits one partition runs canonicalize/orient/sort as one ``dtri-prepare`` task of
array operations (:mod:`dtri.prepare`); larger ones go through the DataFrame stages.
Each DataFrame stage is persisted on the workers before the next one starts, which times it
and lets its predecessor be released; no stage gathers the edge list in one process. The
counting phase is a task graph whose keys are named after their stage (``dtri-wedges``,
``dtri-bins``, ``dtri-join``, ``dtri-reduce``), so the Dask dashboard tells the story:

* ``dtri-edge-bins-k``: bin ``k`` of the packed, sorted edge keys (one bin of the edge set);
* ``dtri-wedges-(p, j)``: batch ``j`` of partition ``p``'s closure keys, a wedge-number range
  sized by prefix sums to fit the memory budget, radix-split into bins;
* ``dtri-bins-(p, j, k)``: bin ``k`` of that batch, picked where the batch lives so that only
  that bin travels;
* ``dtri-join-(p, j, k)``: how many of those keys are edges of bin ``k``;
* ``dtri-intersect-(p, k)``: instead of the three above, for partitions the planner gives to
  the fused join (:mod:`dtri.intersect`): triangles closed by partition ``p``'s edges whose
  target lies in bin ``k``, by list intersection against bin ``k`` as CSR (``dtri-edge-csr``);
* ``dtri-reduce``: the exact sum, a tree of Python ints.
"""

from __future__ import annotations

import itertools
import sys
import time
from contextlib import redirect_stdout
from dataclasses import asdict, dataclass, field
from operator import getitem
from typing import Any

import dask
import dask.dataframe as dd
from dask.base import tokenize

from dtri.bins import pack_edges, radix_split, slice_bin
from dtri.canonicalize import canonicalize, check_integer_columns
from dtri.dispatch import array_module, column_to_array
from dtri.intersect import bin_csr, count_intersections
from dtri.join import count_closed
from dtri.orient import orient, vertex_degrees, vertex_ranks
from dtri.plan import (  # noqa: F401  (the planner's names stay importable from here)
    INTERSECT_MIN_WEDGES,
    JOINS,
    MAX_KEY_BITS,
    REDUCE_FAN_IN,
    CountPlan,
    build_plan,
    choose_join,
)
from dtri.prepare import prepare_partition
from dtri.session import Session
from dtri.sort import PartitionSummary, partition_summary, sort_adjacency
from dtri.wedges import closure_keys


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
    """The counting phase's plan with its estimates (:meth:`dtri.plan.CountPlan.to_dict`)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict."""
        return asdict(self)


class StageTimer:
    """Persists each stage's collections on the cluster, with wall time and optional progress."""

    def __init__(self, session: Session, progress: bool):
        self.session = session
        self.progress = progress
        self.seconds: dict[str, float] = {}

    def persist(self, stage: str, *collections: Any) -> tuple[Any, ...]:
        start = time.perf_counter()
        persisted = self._run(dask.persist, *collections)
        self._add(stage, start)
        return persisted

    def compute(self, stage: str, *collections: Any) -> tuple[Any, ...]:
        start = time.perf_counter()
        values = self._run(dask.compute, *collections)
        self._add(stage, start)
        return values

    def _add(self, stage: str, start: float) -> None:
        """Wall time of a stage, added up when a stage runs in several steps."""
        elapsed = time.perf_counter() - start
        self.seconds[stage] = round(self.seconds.get(stage, 0.0) + elapsed, 6)

    def _run(self, action: Any, *collections: Any) -> tuple[Any, ...]:
        client = self.session.client
        if client is None:
            if not self.progress:
                return action(*collections)
            from dask.diagnostics import ProgressBar

            with ProgressBar(out=sys.stderr):
                return action(*collections)
        if action is dask.persist:
            results = client.persist(list(collections))
            futures = results
        else:
            futures = client.compute(list(collections))
        if self.progress:
            from distributed import progress

            with redirect_stdout(sys.stderr):  # keep stdout for the result (and --json)
                progress(futures)
                print(file=sys.stderr)
        from distributed import futures_of, wait

        wait(futures)
        for future in futures_of(futures):
            if future.status == "error":  # wait() returns on failed tasks too: raise theirs
                raise future.exception()
        return tuple(results) if action is dask.persist else tuple(client.gather(futures))


def _task(stage: str, func: Any, *args: Any, key: tuple) -> Any:
    """A delayed call whose key names its stage (``dtri-<stage>-<token>-<index...>``)."""
    index = "-".join(str(part) for part in key)
    name = f"dtri-{stage}-{tokenize(func, *args)}-{index}"
    return dask.delayed(func, pure=True)(*args, dask_key_name=name)


def edge_bin(k: int, shift: int, bits: int, *partitions: Any) -> Any:
    """Bin ``k`` of the packed edge keys, ascending, from the partitions that overlap it."""
    pieces = []
    for frame in partitions:
        keys = pack_edges(column_to_array(frame["src"]), column_to_array(frame["dst"]), bits)
        pieces.append(slice_bin(keys, k, shift))
    return array_module(pieces[0]).concatenate(pieces)


def edge_bin_csr(keys: Any, bits: int, low: int, high: int) -> Any:
    """Bin keys as CSR for the fused join."""
    return bin_csr(keys, bits, low, high)


def intersect_bin(frame: Any, csr: Any) -> int:
    """Triangles closed by one partition's edges that point into one bin."""
    return count_intersections(column_to_array(frame["src"]), column_to_array(frame["dst"]), csr)


def wedge_bins(frame: Any, first: int, last: int, bits: int, shift: int, nbins: int) -> dict:
    """Closure keys of wedges ``first .. last - 1`` of one partition, radix-split into bins."""
    src = column_to_array(frame["src"])
    dst = column_to_array(frame["dst"])
    return radix_split(closure_keys(src, dst, first, last, bits), shift, nbins)


def pick_bin(bins: dict, k: int) -> Any:
    """One bin of a split batch (``None`` when the batch has no key there)."""
    return bins.get(k)


def join_bin(closure: Any, edge_keys: Any) -> int:
    """Closed wedges among one batch's keys of one bin."""
    return 0 if closure is None else count_closed(closure, edge_keys)


def total(*counts: int) -> int:
    """Exact sum of partial counts."""
    return sum(int(c) for c in counts)


def reduce_tree(counts: list[Any]) -> Any:
    """Sum delayed counts in a tree of fan-in ``REDUCE_FAN_IN`` (``dtri-reduce`` tasks)."""
    level = 0
    while len(counts) > 1 or level == 0:
        counts = [
            _task("reduce", total, *counts[i : i + REDUCE_FAN_IN], key=(level, i))
            for i in range(0, max(len(counts), 1), REDUCE_FAN_IN)
        ]
        level += 1
    return counts[0]


BYTES_PER_EDGE_IN_FLIGHT = 16 * 8
"""Working memory per input edge in the DataFrame stages: an int64 pair, copied a few times by
the shuffles, merges and sorts."""


def fitted_partitions(rows: int, session: Session, task_budget: int) -> int:
    """One partition when the graph fits one task's budget, else enough to fit, one per
    worker at least.

    One partition takes the one-task array path (:mod:`dtri.prepare`), which beats any
    shuffle; the counting phase still spreads over every worker through its batches and bins.
    """
    wanted = -(-rows * BYTES_PER_EDGE_IN_FLIGHT // task_budget)
    return 1 if wanted <= 1 else max(wanted, session.workers)


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
                   progress: bool = False, explain: bool = False) -> CountResult:
    """Run every stage on ``edges`` (a Dask DataFrame with integer ``src``, ``dst``).

    ``explain``: stop after planning (read, canonicalize, orient, sort and the partition
    summaries run; no edge bin, wedge or join does) and return the plan with
    ``triangles=None``.

    ``partitions``: keep the input's partitioning (the caller chose it); by default it is
    refitted to the workers and the memory budget (:func:`fitted_partitions`).
    """
    started = time.perf_counter()
    timer = StageTimer(session, progress)
    task_budget = session.task_budget(memory_budget)

    check_integer_columns(edges)
    # Lower the input first: some readers (dask-cuDF's Parquet) merge files into fewer
    # partitions when lowered, and partition keys must be those that exist after persist.
    (edges,) = timer.persist("read", edges.optimize())
    if partitions is None:
        rows = sum(timer.compute("read", [_task("read", len, part, key=("rows", p))
                                          for p, part in enumerate(edges.to_delayed())])[0])
        if (wanted := fitted_partitions(rows, session, task_budget)) != edges.npartitions:
            (edges,) = timer.persist("repartition", edges.repartition(npartitions=wanted))
    if edges.npartitions == 1:  # the whole graph in one task: no shuffle needed
        (prepared,) = edges.to_delayed()
        prepared = _task("prepare", prepare_partition, prepared, orientation, key=(0,))
        parts = [_task("prepare", getitem, prepared, 0, key=("edges", 0))]
        vertex_counts = [_task("prepare", getitem, prepared, 1, key=("vertices", 0))]
        *parts, vertex_count = timer.persist("prepare", *parts, *vertex_counts)
        vertex_counts = [vertex_count]
        del edges, prepared
    else:
        (canonical,) = timer.persist("canonicalize", canonicalize(edges))
        del edges
        (ranks,) = timer.persist("rank", vertex_ranks(vertex_degrees(canonical), orientation))
        (oriented,) = timer.persist("orient", orient(canonical, ranks))
        del canonical
        (sorted_edges,) = timer.persist("sort", sort_adjacency(oriented))
        del oriented
        parts = sorted_edges.to_delayed()
        vertex_counts = [_task("plan", len, part, key=("ranks", r))
                         for r, part in enumerate(ranks.to_delayed())]
        del ranks

    summary_tasks = [_task("plan", partition_summary, part, key=(p,))
                     for p, part in enumerate(parts)]
    vertex_counts, summaries = timer.compute("plan", vertex_counts, summary_tasks)
    summaries = [PartitionSummary(*s) for s in summaries]
    check_whole_adjacency(summaries)
    plan = build_plan(summaries, sum(vertex_counts), workers=session.workers,
                      threads_per_worker=session.threads_per_worker, backend=session.backend,
                      task_budget=task_budget, bins=bins, join=join)
    if explain:  # stop after planning: no edge bin, wedge or join is built
        timer.seconds["total"] = round(time.perf_counter() - started, 6)
        return _result(plan, None, orientation, timer.seconds)

    bits, shift, nbins = plan.bits, plan.shift, plan.nbins
    edge_bins = {k: _task("edge-bins", edge_bin, k, shift, bits,
                          *(parts[p] for p in plan.bin_partitions[k]), key=(k,))
                 for k in plan.bin_sources}
    csr_bins = {}
    if plan.needs_csr:
        csr_bins = {k: _task("edge-csr", edge_bin_csr, keys, bits, *plan.bin_sources[k],
                             key=(k,))
                    for k, keys in edge_bins.items()}
    needed = {**({("keys", k): t for k, t in edge_bins.items()} if plan.needs_edge_keys else {}),
              **{("csr", k): t for k, t in csr_bins.items()}}
    persisted = dict(zip(needed, timer.persist("edge_bins", *needed.values()), strict=True))

    joins = []
    for p, j, first, last in plan.batches:
        split = _task("wedges", wedge_bins, parts[p], first, last, bits, shift, nbins, key=(p, j))
        for k in plan.reach[p]:
            picked = _task("bins", pick_bin, split, k, key=(p, j, k))
            joins.append(_task("join", join_bin, picked, persisted["keys", k], key=(p, j, k)))
    for p, s in enumerate(summaries):
        if plan.strategy[p] == "intersect" and s.wedges:
            joins.extend(_task("intersect", intersect_bin, parts[p], persisted["csr", k],
                               key=(p, k)) for k in plan.reach[p])
    (triangles,) = timer.compute("wedges_join", reduce_tree(joins))
    timer.seconds["total"] = round(time.perf_counter() - started, 6)

    return _result(plan, int(triangles), orientation, timer.seconds)


def _result(plan: CountPlan, triangles: int | None, orientation: str,
            seconds: dict[str, float]) -> CountResult:
    return CountResult(
        triangles=triangles, vertices=plan.vertices, edges=plan.edges, wedges=plan.wedges,
        bins=plan.nbins, batches=len(plan.batches), partitions=plan.partitions,
        backend=plan.backend, workers=plan.workers, orientation=orientation, join=plan.join,
        memory_budget=plan.memory_budget, seconds=seconds, plan=plan.to_dict(),
    )
