"""Task-graph building blocks: stage-named tasks, reduction trees and all-to-all exchanges.

Every task's key names its stage (``dtri-<stage>-<token>-<index>``), for the Dask dashboard.
Exchanges are plain Dask tasks, so their data travels by Dask's transfers and a lost worker's
pieces are recomputed like any other task:

* a *split* task cuts one partition into one piece per receiver (a dict ``{receiver: piece}``);
* a ``pick`` task per (sender, receiver) takes one piece where the split lives, so only that
  piece travels (:meth:`Tasks.pick_pieces`);
* a *combine* task per receiver takes its pieces from every sender; receiver ``j`` runs on
  the owner of partition ``j`` (:func:`partition_owner`), so the receivers spread over every
  worker.

:class:`Tasks` builds them for one run, from its workers and its
:class:`~dtri.runtime.staging.Staging`, which wraps every task function. An in-process run's
:class:`Tasks` are *eager*: each task runs when it is built, and no Dask graph is made (its
tokens and scheduler pass cost karate's count 13 ms against 2 ms of work).
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from dataclasses import dataclass, field
from operator import getitem
from typing import Any, TypeVar

import dask
from dask.base import tokenize

from dtri.kernels.dispatch import array_module
from dtri.kernels.wire import pack_counts, pack_vertex_set, unpack
from dtri.runtime.meter import StageMeter
from dtri.runtime.stages import FAST_PREFIX
from dtri.runtime.staging import Staging, folded
from dtri.runtime.timer import out_of_memory

FAN_IN = 32
"""Inputs per task of a reduction tree."""
Place = TypeVar("Place", bound=Hashable)
"""A worker as a tree's placement knows it: an address, or a worker's number in a model."""


def partition_owner(partition: int, workers: int) -> int:
    """The worker (its number) that owns sorted partition ``partition`` of a run on ``workers``
    workers: the partitions are dealt in rounds of one per worker, forward in even rounds and
    backward in odd ones (``0 1 1 0 0 1 ...`` on two workers).

    The partitions share the wedge work evenly, but their edges fall from the first to the
    last. The back-and-forth deal pairs large with small, so the exchanges that move edges
    even out too (R-MAT 26 on two workers: 581 M edges against 468 M, not 667 M and 382 M)."""
    workers = max(workers, 1)
    turn, place = divmod(partition, workers)
    return workers - 1 - place if turn % 2 else place
EAGER_TOKEN = "0" * 32
"""The token in an eager task's name: its stage is read from the name as from any task's
(:func:`dtri.runtime.stages.stage_of`), and nothing is hashed to make it."""


@dataclass(frozen=True)
class Tasks:
    """Builds the tasks of one run: ``workers`` are the workers' addresses, worker ``w`` the
    owner of the partitions :func:`partition_owner` gives it (empty for a local scheduler: no
    placement); ``staging`` wraps every task."""

    staging: Staging
    workers: tuple[str, ...] = ()
    eager: bool = False
    """Run each task when it is built and return its value (an in-process run)."""
    meter: StageMeter | None = None
    """Where an eager run's tasks report their start and end (its stage meter, if any)."""
    allocator: Any = None
    """The CuPy allocator an eager run's tasks allocate from (``None``: CuPy's current one;
    :attr:`dtri.runtime.opened.Runtime.allocator`)."""
    fold_budget: int | None = None
    """The bytes of inputs one fold may take (the run's per-task memory budget) where the
    workers spill past a host memory limit: a larger fold is cut (:meth:`reduce_over`).
    ``None`` (no limit): a worker folds its items in one task, since cut folds only cost more
    crossings of the bus (docs/history.md: 2.84 s against 0.51 s)."""
    wire_format: str = "raw"
    """How data that crosses between workers is packed (:mod:`dtri.kernels.wire`): the
    run's :attr:`dtri.runtime.opened.Runtime.wire_format`."""
    pinned_workers: set[str] = field(default_factory=set, compare=False)
    """The workers that :meth:`pinned` pinned tasks to (the run's set, shared with its stage
    timers, which fail a stage whose pinned worker left)."""
    placements: dict[str, str] = field(default_factory=dict, compare=False)
    """The worker each task placed by this run's tasks was placed on, by its key (the run's
    dict): where :meth:`pick_pieces` places the picks of a split."""

    def task(self, stage: str, func: Callable[..., Any], *args: Any, key: tuple,
             on_host: bool = False, kind: str | None = None, at: str | None = None) -> Any:
        """A delayed call whose key names its stage (``dtri-<stage>-<token>-<index...>``),
        wrapped by the staging (``on_host``: a task that only looks at or picks from its
        inputs, or moves its own data, runs as it is); eager: the call's value. ``kind="pick"``
        names a task that takes one piece of a split: ``split-stage-<token>-dtri-<stage>-
        <token>-...`` (:data:`~dtri.runtime.stages.FAST_PREFIX`; its stage is read as any
        other's, :func:`~dtri.runtime.stages.stage_of`). ``at``: :func:`placed_on` that worker."""
        if at is not None:
            with placed_on(at):
                return self.task(stage, func, *args, key=key, on_host=on_host, kind=kind)
        func = self.staging.wrap(func, on_host,
                                 moves_own_data=any(isinstance(arg, Staging) for arg in args))
        index = "-".join(str(part) for part in key)
        token = EAGER_TOKEN if self.eager else tokenize(func, *args)
        name = f"dtri-{stage}-{token}-{index}"
        if kind == "pick":
            name = f"{FAST_PREFIX}-{token}-{name}"
        if self.eager:
            return self._run(name, stage, func, args)
        placed = dask.get_annotations().get("workers")
        if placed:
            self.placements[name] = placed[0]
        return dask.delayed(func, pure=True)(*args, dask_key_name=name)

    def _run(self, name: str, stage: str, func: Callable[..., Any], args: tuple) -> Any:
        """One eager task, measured by the meter as a task of that name; a ``MemoryError``
        becomes the one line that names its stage, as the stage timer makes it elsewhere."""
        meter = self.meter
        if meter is not None:
            meter.started(name)
        try:
            # the pool replaces only the RMM allocator that importing cuDF gives CuPy (without
            # cuDF, CuPy allocates from its pool already); cuDF's import sets CuPy's global
            # allocator, which CuPy refuses inside using_allocator, so it must come before
            if self.allocator is None or "cudf" not in sys.modules:
                return func(*args)
            from cupy.cuda import using_allocator

            with using_allocator(self.allocator):
                return func(*args)
        except MemoryError as error:
            raise out_of_memory(stage, error, in_process=True) from error
        finally:
            if meter is not None:
                meter.finished(name)

    def collection(self, values: Sequence[Any], meta: Any, name: str) -> Any:
        """A Dask DataFrame or Series of one partition per value: persisted delayed results,
        or an eager run's values (:class:`EagerValues`: a graph of the values themselves,
        named by a fresh token, so nothing is hashed, and no task built or run to get them:
        half the cost of computing a small graph's per-vertex Series from delayed values)."""
        import dask.dataframe as dd

        if self.eager:
            layer = EagerValues(f"dtri-{name}-{uuid.uuid4().hex}", values)
            return dd.from_graph(layer, meta, (None,) * (len(layer) + 1), list(layer),
                                 f"dtri-{name}")
        return dd.from_delayed(list(values), meta=meta, verify_meta=False)

    def tree(self, stage: str, func: Callable[..., Any], items: Sequence[Any],
             fan_in: int = FAN_IN, on_host: bool = False,
             places: Sequence[str | None] | None = None) -> Any:
        """``func`` applied over ``items`` as a tree of fan-in ``fan_in``; ``func`` must
        combine any number of its own results (a sum, a union). With ``places`` (the worker
        holding each item), each task runs where most of its inputs are, the first of them on
        a tie (:func:`gathering_worker`): where a vertex-wide sum lands is then decided here,
        the same way every run, rather than by Dask's tie-breaks, and the bytes model of the
        preparation (:mod:`dtri.prepared.moved`) follows the same rule."""
        level, items = 0, list(items)
        where: list[str | None] = list(places) if places is not None else [None] * len(items)
        while len(items) > 1 or level == 0:
            built, built_where = [], []
            for i in range(0, max(len(items), 1), fan_in):
                worker = gathering_worker(where[i: i + fan_in])
                built.append(self.task(stage, func, *items[i: i + fan_in], key=(level, i),
                                       on_host=on_host, at=worker))
                built_where.append(worker)
            items, where = built, built_where
            level += 1
        return items[0]

    def placed(self, partition: int) -> AbstractContextManager:
        """Tasks built inside run on the owner of ``partition`` when it is alive (Dask may
        still move them: ``allow_other_workers``, so a lost worker's tasks run elsewhere)."""
        return placed_on(self.owner(partition))

    def on_worker(self, worker: int) -> AbstractContextManager:
        """Tasks built inside run on worker number ``worker`` (as :meth:`placed`)."""
        return placed_on(self.workers[worker % len(self.workers)] if self.workers else None)

    def pinned(self, worker: int) -> AbstractContextManager:
        """Tasks built inside run on worker number ``worker`` and nowhere else: the 2D
        decomposition's blocks and rounds, whose inputs are shifted to that worker on
        purpose (placed loosely, work stealing moved rounds, which pulled their blocks again).
        A stage that waits for them fails where that worker leaves
        (:class:`~dtri.runtime.timer.StageTimer`)."""
        if not self.workers:
            return nullcontext()
        address = self.workers[worker % len(self.workers)]
        self.pinned_workers.add(address)
        return dask.annotate(workers=[address], allow_other_workers=False)

    def owner(self, partition: int) -> str | None:
        """The worker that owns ``partition`` (``None`` without workers)."""
        return self.workers[partition_owner(partition, len(self.workers))] if self.workers else None

    def pick_pieces(self, stage: str, splits: Mapping[int, Any],
                    receivers: Mapping[int, Iterable[int]]) -> dict[tuple[int, int], Any]:
        """Piece ``j`` of each delayed split ``splits[i]`` (a ``{j: piece}``), for every ``j``
        in ``receivers[i]``, as its own task (``pick``, run where the split lives, so only
        that piece travels), keyed ``(i, j)``. A pick's task prefix is one that Dask's
        scheduler counts as taking a microsecond (:data:`~dtri.runtime.stages.FAST_PREFIX`),
        so it never steals one to an idle worker, which would pull the whole split. A pick is
        placed where its split was placed (:attr:`placements`), for the same reason.

        The picks run split by split (a priority falling with ``i``): a worker short of memory
        spills a split whole, and picking receiver by receiver would bring every split back
        once per receiver."""
        top = max(splits, default=0) + 1
        picks = {}
        for i, split in splits.items():
            where = self.placements.get(str(getattr(split, "key", "")))
            with dask.annotate(priority=top - i), placed_on(where):
                picks.update({(i, j): self.task(stage, getitem, split, j, key=(i, j),
                                                on_host=True, kind="pick")
                              for j in receivers[i]})
        return picks

    def exchange(self, stage: str, splits: Sequence[Any], combine: Callable[..., Any],
                 receivers: int, *args: Any, indexed: bool = False,
                 on_host: bool = False) -> list[Any]:
        """All-to-all: receiver ``j`` gets ``combine(*args, piece_0j, ..., piece_(s-1)j)``
        (``indexed``: ``combine(*args, j, pieces...)``), where ``splits[i]`` is a delayed
        ``{j: piece}`` with every receiver present; receiver ``j`` runs on the owner of
        partition ``j``. The pieces are picked split by split (:meth:`pick_pieces`)."""
        everyone = range(receivers)
        picks = self.pick_pieces(stage, dict(enumerate(splits)),
                                 {i: everyone for i in range(len(splits))})
        return [self.task(stage, combine, *args, *((j,) if indexed else ()),
                          *(picks[i, j] for i in range(len(splits))), key=("combine", j),
                          on_host=on_host, at=self.owner(j)) for j in everyone]

    def reduce_scatter(self, stage: str, func: Callable[..., Any],
                       combine: Callable[..., Any], items: Sequence[Any], args: tuple,
                       holders: Sequence[str | None], key: str, fmt: str,
                       fan_in: int = FAN_IN, sizes: Sequence[int] | None = None,
                       ) -> list[Any]:
        """``combine`` over ``func(item, *args)`` for every item (a vertex-wide sum of
        counts), as slices: the sum of vertex range ``k`` on the ``k``-th worker holding
        items, packed in the wire format ``fmt`` (:func:`dtri.kernels.wire.pack_counts`).

        * each worker holding items sums its own (:meth:`reduce_over`, on that worker) and
          cuts the sum into one slice per such worker, by vertex range (``scatter``);
        * worker ``k`` adds up slice ``k`` of every worker's sum (``slice-sum``).

        A task that needs the whole sum takes every slice-sum and joins them itself
        (:func:`joined_slices`): about a byte a vertex crosses to it, where a tree brought
        every holder's whole sum to one root and the root's copy to every reader. (A separate
        joining task would be small enough for Dask to steal.) Without workers or with one
        holder, it is :meth:`reduce_over`'s sum, alone."""
        by_holder = by_place(holders)
        if not self.workers or len(by_holder) < 2 or None in by_holder:
            return [self.reduce_over(stage, func, combine, items, args, holders, key, fan_in,
                                     sizes)]
        owners = list(by_holder)
        cuts = {}
        for w, (holder, members) in enumerate(by_holder.items()):
            partial = self.reduce_over(stage, func, combine, [items[i] for i in members], args,
                                       [holder] * len(members), f"{key}-{w}", fan_in,
                                       None if sizes is None else [sizes[i] for i in members])
            cuts[w] = self.task(stage, vertex_slices, partial, len(owners), fmt,
                                key=(key, "scatter", w), on_host=True, at=holder)
        picks = self.pick_pieces(stage, cuts, dict.fromkeys(cuts, range(len(owners))))
        return [self.task(stage, slice_sum, combine, fmt, *(picks[w, k] for w in cuts),
                          key=(key, "slice-sum", k), on_host=True, at=holder)
                for k, holder in enumerate(owners)]

    def reduce_over(self, stage: str, func: Callable[..., Any], combine: Callable[..., Any],
                    items: Sequence[Any], args: tuple, holders: Sequence[str | None],
                    key: str, fan_in: int = FAN_IN, sizes: Sequence[int] | None = None) -> Any:
        """``combine`` over ``func(item, *args)`` for every item (a vertex-wide sum or union),
        as a tree: one leaf per item, placed on the worker holding it (``holders``: Dask
        would otherwise move a partition to where a larger vertex-wide argument is), or, where
        the staging folds per worker, one leaf per worker in ``holders`` that folds its items
        on the device one at a time (:func:`dtri.runtime.staging.folded`).

        A task's inputs stay in memory until it ends, whatever Dask spills meanwhile. So where
        the items' ``sizes`` (bytes, where known) add up to more than :attr:`fold_budget`, a
        worker folds them in several leaves of at most that many bytes each
        (:func:`fold_groups`), summed on that worker before the tree goes across the workers
        (else R-MAT 26 under a 12 GiB host limit grew to 13.2 GiB)."""
        if not self.staging.folds_per_worker:  # each leaf where its item is, not the args
            leaves = [self.task(stage, func, item, *args, key=(key, i), at=holder)
                      for i, (item, holder) in enumerate(zip(items, holders, strict=True))]
            return self.tree(stage, combine, leaves, fan_in, places=holders)
        by_holder = by_place(holders)
        leaves = []
        for w, (holder, members) in enumerate(by_holder.items()):
            groups = fold_groups(members, sizes, self.fold_budget)
            folds = [self.task(stage, folded, self.staging, combine, func, args,
                               *(items[i] for i in group), key=(key, "owner", w)
                               if len(groups) == 1 else (key, "owner", w, g), on_host=True,
                               at=holder) for g, group in enumerate(groups)]
            leaves.append(folds[0] if len(folds) == 1 else
                          self.tree(stage, combine, folds, fan_in, places=[holder] * len(folds)))
        return self.tree(stage, combine, leaves, fan_in, places=list(by_holder))


def vertex_slices(counts: Any, slices: int, fmt: str) -> dict[int, Any]:
    """A vertex-wide array cut into ``slices`` ranges of about equal length, each packed in
    the wire format ``fmt`` (the scatter of :meth:`Tasks.reduce_scatter`)."""
    counts = unpack(counts)
    length = int(counts.shape[0])
    return {k: pack_counts(counts[length * k // slices: length * (k + 1) // slices].copy(), fmt)
            for k in range(slices)}


def slice_sum(combine: Callable[..., Any], fmt: str, *slices: Any) -> Any:
    """One vertex range's slices of every worker's sum, combined and packed again."""
    return pack_counts(combine(*(unpack(piece) for piece in slices)), fmt)


def joined_slices(*sums: Any) -> Any:
    """The whole vertex-wide sum from its ranges' slice-sums (:meth:`Tasks.reduce_scatter`),
    in order, packed or not."""
    arrays = [unpack(piece) for piece in sums]
    return arrays[0] if len(arrays) == 1 else array_module(arrays[0]).concatenate(arrays)


@dataclass(frozen=True)
class PackedResult:
    """A task function whose result crosses between workers packed in the wire format
    (:mod:`dtri.kernels.wire`): its packed arguments are unpacked first, and its result, a
    vertex-wide count array (``counts``) or a vertex set (``vertex-set``), packed. Trees
    of vertex sets and of counts that go to one task are made of these."""

    func: Callable[..., Any]
    kind: str
    fmt: str

    def __call__(self, *args: Any) -> Any:
        result = self.func(*(unpack(arg) for arg in args))
        if self.kind == "counts":
            return pack_counts(result, self.fmt)
        return pack_vertex_set(result, self.fmt)


def fold_groups(members: Sequence[int], sizes: Sequence[int] | None,
                budget: int | None) -> list[list[int]]:
    """``members`` (indexes into ``sizes``) cut, in order, into runs whose sizes add up to at
    most ``budget``, each run at least one member; one run where ``sizes`` or ``budget`` is
    not known."""
    if sizes is None or budget is None:
        return [list(members)]
    groups: list[list[int]] = []
    held = 0
    for i in members:
        if not groups or held + sizes[i] > budget:
            groups.append([])
            held = 0
        groups[-1].append(i)
        held += sizes[i]
    return groups or [[]]


def by_place(places: Sequence[str | None]) -> dict[str | None, list[int]]:
    """The indexes of ``places`` by place, in the order each place first comes."""
    found: dict[str | None, list[int]] = {}
    for i, place in enumerate(places):
        found.setdefault(place, []).append(i)
    return found


def gathering_worker(places: Sequence[Place | None]) -> Place | None:
    """Where a task whose inputs are held at ``places`` runs: the worker holding most of
    them, the first of those on a tie; ``None`` where no place is known."""
    known = [place for place in places if place is not None]
    return max(known, key=lambda place: (known.count(place), -known.index(place)),
               default=None)


class EagerValues(Mapping):
    """An eager run's values as a task graph of one key each, ``(name, 0), (name, 1), ...``,
    which Dask tokenizes by ``name`` (a fresh one per collection) rather than by hashing the
    values."""

    def __init__(self, name: str, values: Sequence[Any]):
        self.name = name
        self.graph = {(name, p): value for p, value in enumerate(values)}

    def __getitem__(self, key: tuple) -> Any:
        return self.graph[key]

    def __iter__(self) -> Iterator[tuple]:
        return iter(self.graph)

    def __len__(self) -> int:
        return len(self.graph)

    def __dask_tokenize__(self) -> str:
        return self.name


KEEP_PLACEMENT = "dtri.keep-placement"


@contextmanager
def kept_placement(client: Any) -> Iterator[None]:
    """Dask's work stealing and its active memory manager paused on the cluster of
    ``client`` for as long as the block lasts (``dtri.keep-placement``), and each started
    again after it where it ran before. Every task of a run is placed where its data is
    (:func:`placed_on`, :meth:`Tasks.pinned`). Work stealing moved tasks to idle workers,
    which then pulled their inputs, and the memory manager dropped copies that a waiting task
    had fetched, which it fetched again. The placement stays loose, so a lost worker's tasks
    still run elsewhere. A scheduler that runs no code of the client's
    (``distributed.scheduler.pickle`` off) keeps stealing."""
    if client is None or not dask.config.get(KEEP_PLACEMENT):
        yield
        return

    async def pause(dask_scheduler: Any) -> bool:
        stealing = dask_scheduler.extensions.get("stealing")
        if stealing is None or "stealing" not in dask_scheduler.periodic_callbacks:
            return False
        stopped = stealing.stop()  # a coroutine in the distributed dtri requires
        if hasattr(stopped, "__await__"):
            await stopped
        return True

    async def resume(dask_scheduler: Any) -> None:
        started = dask_scheduler.extensions["stealing"].start()
        if hasattr(started, "__await__"):
            await started

    try:
        stealing = bool(client.run_on_scheduler(pause))
    except Exception:  # the scheduler refuses to run it: it keeps stealing
        stealing = False
    try:
        managing = bool(client.amm.running())
        if managing:
            client.amm.stop()
    except Exception:  # a scheduler without the memory manager
        managing = False
    try:
        yield
    finally:
        if stealing:
            with suppress(Exception):
                client.run_on_scheduler(resume)
        if managing:
            with suppress(Exception):
                client.amm.start()


def placed_on(worker: str | None) -> AbstractContextManager:
    """Tasks built inside run on ``worker`` when it is alive (or elsewhere once it is not);
    where Dask chooses when ``worker`` is ``None`` (not known: no cluster)."""
    if worker is None:
        return nullcontext()
    return dask.annotate(workers=[worker], allow_other_workers=True)
