"""The bytes model of the preparation: what the busiest worker receives in each of its stages.

The preparation (:mod:`dtri.prepared.distributed`) moves two kinds of data between workers:

* vertex-wide arrays, summed or merged by trees (:meth:`dtri.runtime.tasks.Tasks.reduce_over`)
  and then read by every worker that holds a sender: the vertex set (marks, one byte per id up
  to the largest, or ascending int64 ids), and arrays of one entry per vertex: degrees, ranks
  and out-degrees as int32 where they fit (``4 n`` bytes; :func:`dtri.kernels.counting.
  narrow_counts`), the fused join's work as float32 (``4 n``);
* the edges, once, in the sort's exchange: each sender's oriented int64 keys, cut by source
  range, piece ``j`` to the owner of sorted partition ``j``.

:func:`moved_prepare` replays the stages' tasks on a model of the workers and adds up, per
stage, what each worker receives; it returns the most one worker receives in each stage, as
:func:`dtri.analytics.cannon.moved_1d` does for the count's. A tree's task runs where most of
its inputs are, the first of them on a tie: the rule by which
:meth:`dtri.runtime.tasks.Tasks.tree` places it
(:func:`dtri.runtime.tasks.gathering_worker`), so the model knows who receives each sum.
Each tree leaf and each split of the sort runs where its sender's keys are (they are placed
there); a single task's place (the one-task path) is taken to be where most of its input
bytes are, Dask's rule, then the first such worker.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from dtri.kernels.canonicalize import MARKS_BYTES_PER_ID, dense_range
from dtri.kernels.counting import INT32_MAX
from dtri.runtime.tasks import gathering_worker, partition_owner

BYTES_PER_VERTEX = 8
"""A vertex-wide int64 count or rank."""
BYTES_PER_NARROW_VERTEX = 4
"""A vertex-wide count, rank or out-degree as the trees send it where it fits (int32), or
the fused join's work (float32)."""
BYTES_PER_KEY = 8
"""A packed edge key in the sort's pieces: int64."""
BYTES_PER_INPUT_ROW = 16
"""An input row: ``src`` and ``dst``, int64 each (the one-task path's inputs)."""
PREPARE_STAGES = ("vertices", "canonicalize", "rank", "orient", "sort", "degree", "plan")
"""The stages the model predicts, in the order they run (the one-task path: ``prepare``)."""


def key_bytes(rows: list[int] | None) -> list[int] | None:
    """The bytes of keys of items of ``rows`` keys each (``None``: not known), as the folds'
    cuts take them (:meth:`dtri.runtime.tasks.Tasks.reduce_over`)."""
    return None if rows is None else [r * BYTES_PER_KEY for r in rows]


@dataclass(frozen=True)
class PreparationShape:
    """What the model needs of a preparation, known once it has run (on the client, without
    reading the workers' data)."""

    workers: int
    """Workers of the run; sorted partition ``p`` is owned by worker
    :func:`~dtri.runtime.tasks.partition_owner` ``(p, workers)``."""
    sender_rows: tuple[int, ...]
    """Input rows of each sender (a group of input partitions on one worker); on the one-task
    path, of each input partition."""
    sender_holders: tuple[int, ...]
    """The worker (index) holding each sender; -1 where unknown."""
    fan_in: int
    """Fan-in of the trees over vertex-wide arrays."""
    folds_per_worker: bool
    """Whether a tree's leaves fold per worker (one leaf a worker) or stay one per item
    (:attr:`dtri.runtime.staging.Staging.folds_per_worker`)."""
    work_model: str
    """``intersect``: the work is a tree of its own; ``wedges``: one task on the out-degrees."""
    largest_id: int
    """The largest input vertex id (what a vertex set's marks cost)."""
    one_task: bool = False
    """The whole graph prepared by one task (``prepare``): only its inputs move."""
    sample_stride: int = 0
    """The stride of the keys' sample that the sort's ranges were cut from, in one task
    (:func:`dtri.prepared.distributed.sampled_bounds`); 0: from every key, by trees."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict."""
        return asdict(self)


class Flow:
    """Workers as the model sees them: what each received, per stage."""

    def __init__(self, workers: int):
        self.workers = workers
        self.received: dict[str, list[int]] = {}

    def receive(self, stage: str, worker: int, nbytes: int) -> None:
        self.received.setdefault(stage, [0] * self.workers)[worker] += nbytes

    def place(self, inputs: Sequence[tuple[int, int]]) -> int:
        """The worker a task of ``inputs`` (worker, bytes) runs on: most input bytes there,
        then the first."""
        local = [0] * self.workers
        for worker, nbytes in inputs:
            local[worker] += nbytes
        return min(range(self.workers), key=lambda w: (-local[w], w))

    def tree(self, stage: str, leaves: Sequence[tuple[int, int]], out: int,
             fan_in: int) -> int:
        """A tree of fan-in ``fan_in`` over ``leaves`` (worker, bytes) whose every task makes
        ``out`` bytes (as :meth:`dtri.runtime.tasks.Tasks.tree` groups them: consecutive
        items, level by level); each task receives its inputs held elsewhere. Returns the
        root's worker."""
        items, level = list(leaves), 0
        while len(items) > 1 or level == 0:
            placed = []
            for i in range(0, max(len(items), 1), fan_in):
                group = items[i: i + fan_in]
                worker = gathering_worker([source for source, _ in group])
                assert worker is not None  # every leaf has its worker
                for source, nbytes in group:
                    if source != worker:
                        self.receive(stage, worker, nbytes)
                placed.append((worker, out))
            items, level = placed, level + 1
        return items[0][0]

    def spread(self, stage: str, holder: int, nbytes: int, readers: set[int]) -> None:
        """An array of ``nbytes`` on ``holder`` read by tasks on ``readers``: one copy to each
        reader that is not its holder."""
        for worker in readers - {holder}:
            self.receive(stage, worker, nbytes)

    def busiest(self) -> dict[str, int]:
        """Per stage, the most one worker received."""
        return {stage: max(values) for stage, values in self.received.items()}


def vertex_set_bytes(largest: int, rows: int, vertices: int) -> int:
    """A vertex set of ``rows`` edges' ids (:func:`dtri.kernels.canonicalize.partition_vertices`):
    marks, one byte per id up to ``largest``, where that is at most
    :data:`~dtri.kernels.canonicalize.MARKS_BYTES_PER_ID` bytes per id read; else its
    distinct ids, int64, taken as the fewer of the graph's vertices and the ids read."""
    if dense_range(largest, 2 * rows, MARKS_BYTES_PER_ID):
        return largest + 1
    return BYTES_PER_VERTEX * min(vertices, 2 * rows)


def leaves_of(items: Sequence[tuple[int, int]], folds: bool) -> list[tuple[int, int]]:
    """A tree's leaves from its items (worker, bytes): one per item, or, folded, one per
    worker holding items (in the order the workers first appear), of the largest item's
    bytes (a sum or union is as wide as its widest part)."""
    if not folds:
        return list(items)
    widest: dict[int, int] = {}
    for worker, nbytes in items:
        widest[worker] = max(widest.get(worker, 0), nbytes)
    return list(widest.items())


def moved_prepare(shape: PreparationShape, partition_edges: Sequence[int],
                  vertices: int) -> dict[str, int]:
    """Predicted bytes the busiest worker receives in each stage of the preparation (see the
    module docstring), for a graph of ``vertices`` vertices whose sorted partitions hold
    ``partition_edges`` edges. The terms, stage by stage (``n`` vertices; ``V = 4 n``, the
    counts and ranks as int32, or ``8 n`` past 2**31 vertices or a sender's edges; ``W = 4 n``,
    the work, float32):

    * ``vertices``: the tree over each sender's vertex set (:func:`vertex_set_bytes`);
    * ``canonicalize``: the merged vertex set, one copy to each worker holding a sender;
    * ``rank``: the tree of the senders' degree counts (``V`` each); the ranks are made
      where its root is, beside the vertex set;
    * ``orient``: the ranks (``V``), one copy to each worker holding a sender; the tree of
      out-degrees (``V`` each); with the fused join's work model, the out-degrees (``V``)
      to each worker holding a sender, then the tree of work (``W`` each). Where the
      ranges are cut from a sample of the keys (``shape.sample_stride``), the work's tree
      is one task instead, where the out-degrees are: each sender's sample (its keys, as
      the sort's term takes them, over the stride) goes there;
    * ``sort``: each sender's keys (int64), taken as its input rows times the graph's
      distinct edges per input row, cut in proportion to the sorted partitions' edges;
      piece ``j`` goes to the owner of partition ``j`` from every sender elsewhere;
    * ``degree`` (several senders): the tree of the sorted partitions' degree counts (``V``
      each), each partition's leaf on its owner;
    * ``plan``: the partitions' summaries go to the client, not between workers: 0.

    On the one-task path (``shape.one_task``) only ``prepare`` moves: the input partitions
    (16 B a row) not on the worker that holds the most rows. Nothing moves on one worker.
    """
    workers = shape.workers
    stages = ("prepare",) if shape.one_task else PREPARE_STAGES
    if workers <= 1:
        return dict.fromkeys(stages, 0)
    flow = Flow(workers)
    holders = [h if 0 <= h < workers else 0 for h in shape.sender_holders]
    rows = shape.sender_rows
    if shape.one_task:
        worker = flow.place([(h, BYTES_PER_INPUT_ROW * r) for h, r in zip(holders, rows,
                                                                          strict=True)])
        for h, r in zip(holders, rows, strict=True):
            if h != worker:
                flow.receive("prepare", worker, BYTES_PER_INPUT_ROW * r)
        return {"prepare": 0, **flow.busiest()}
    n, fan_in, folds = vertices, shape.fan_in, shape.folds_per_worker
    fits = vertices <= INT32_MAX + 1 and max(rows, default=0) <= INT32_MAX
    wide = (BYTES_PER_NARROW_VERTEX if fits else BYTES_PER_VERTEX) * vertices
    work = BYTES_PER_NARROW_VERTEX * vertices
    readers = set(holders)
    per_sender = [(h, wide) for h in holders]
    total_rows = max(sum(rows), 1)

    merged = vertex_set_bytes(shape.largest_id, sum(rows), n)
    sets = [(h, vertex_set_bytes(shape.largest_id, r, n)) for h, r in zip(holders, rows,
                                                                          strict=True)]
    where = flow.tree("vertices", leaves_of(sets, folds), merged, fan_in)
    flow.spread("canonicalize", where, merged, readers)

    ranked = flow.tree("rank", leaves_of(per_sender, folds), wide, fan_in)
    if ranked not in readers and ranked != where:
        flow.spread("rank", where, merged, {ranked})

    flow.spread("orient", ranked, wide, readers)
    out = flow.tree("orient", leaves_of(per_sender, folds), wide, fan_in)
    distinct = sum(partition_edges)
    if shape.sample_stride:  # one task beside the out-degrees takes every sender's sample
        for h, r in zip(holders, rows, strict=True):
            if h != out:
                flow.receive("orient", out, BYTES_PER_KEY * (r * distinct // total_rows)
                             // shape.sample_stride)
    elif shape.work_model == "intersect":
        flow.spread("orient", out, wide, readers)
        flow.tree("orient", leaves_of([(h, work) for h in holders], folds), work, fan_in)

    for j, edges in enumerate(partition_edges):
        owner = partition_owner(j, workers)
        for h, r in zip(holders, rows, strict=True):
            if h != owner:  # its keys, r·m/R, times this partition's share, edges/m
                flow.receive("sort", owner, BYTES_PER_KEY * r * edges // total_rows)

    if len(rows) > 1:
        owned = [(partition_owner(j, workers), wide) for j in range(len(partition_edges))]
        flow.tree("degree", leaves_of(owned, folds), wide, fan_in)
    return {**dict.fromkeys(stages, 0), **flow.busiest()}
