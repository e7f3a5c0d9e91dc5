"""The read stage: the input persisted on the workers, its partitions, their rows and holders.

The input is not repartitioned: the preparation's senders are groups of input partitions
taken together on the worker that holds them (:func:`input_groups`), each group at most one
task's budget. A persisted input is used as it is, its partitions taken as futures (or, in
process, as the values its graph holds: :func:`held_partitions`). The number of sorted
partitions is fitted to the workers and the budget (:func:`fitted_partitions`). An
in-process run's partitions are delayed :class:`~dtri.input.frames.EdgeArrays`
(:func:`dtri.input.frames.local_input`), computed here.

Under a host memory limit a persisted input is what spills first. There the input is read
(or generated) again by each pass that reads it (:func:`recomputes_input`,
``dtri.recompute-input``), each pass from its own copy of the input's tasks (Dask's
``clone``), whose partitions are freed once that pass has read them.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, NamedTuple

import dask

from dtri.input.edges import EdgeArrays
from dtri.input.frames import arrays_on
from dtri.kernels.dispatch import array_module
from dtri.kernels.wedges import list_bytes
from dtri.runtime.budget import MAX_PLAN_TASKS, TASK_SHARES, Budget, max_plan_tasks
from dtri.runtime.opened import Runtime
from dtri.runtime.tasks import FAN_IN, Tasks, by_place, fold_groups, placed_on
from dtri.runtime.timer import StageTimer

if TYPE_CHECKING:
    import dask.dataframe as dd

BYTES_PER_EDGE_IN_FLIGHT = 16 * 8
"""Working memory per input edge in the preparation stages: an int64 pair, copied a few times
by the casts, packs, splits and sorts."""

MIN_ROWS_PER_PARTITION = 1 << 22
"""Below this many input rows per worker, one partition (one task, no exchange) is faster than
spreading the preparation over the workers."""

MAX_PARTITIONS = 1024
"""Most sorted partitions a graph is cut into: every exchange picks a piece per pair of
partitions (a million picks at this many), so a budget that would need more is too small
for the input (:func:`check_budget`)."""

VERTEX_ARRAY_COPIES = 3
"""A merge or sum of vertex-wide arrays holds its inputs, their concatenation or sum, and a
sort's scratch: about three times its inputs' size."""


class Inputs(NamedTuple):
    """The input partitions as the preparation receives them."""

    frame: dd.DataFrame | None
    """``None`` for in-process array partitions."""
    partitions: list[Any]
    """Futures where there is a cluster (delayed objects otherwise), in partition order."""
    rows: list[int]
    holders: list[str | None]
    """The worker holding each partition (``None`` where unknown)."""
    recomputed: bool = False
    """The partitions are tasks that read the input, not held results: each pass that reads
    them takes its own copy (:func:`input_copies`)."""


def task_slots(runtime: Runtime) -> int:
    """Tasks that the workers run side by side: each CPU worker's threads (a CPU task's
    kernels take one thread), one per GPU worker (its tasks share the one GPU)."""
    threads = 1 if runtime.backend.on_gpu else max(runtime.threads_per_worker, 1)
    return max(runtime.workers, 1) * threads


def fitted_partitions(rows: int, runtime: Runtime, task_budget: int) -> int:
    """How many sorted partitions to make: enough that each fits one task's budget, and one
    per task slot (:func:`task_slots`) when the graph is large enough for them to share its
    preparation; one partition otherwise. Several partitions come in a multiple of the
    workers, since each worker owns one partition of every round of ``workers``
    (:func:`~dtri.runtime.tasks.partition_owner`; three on two workers would leave one
    worker with twice the other's share).

    One partition takes the one-task path (:mod:`dtri.prepared.local`); the analytics still
    spread over every worker through their bins, groups and source ranges.
    """
    wanted = -(-rows * BYTES_PER_EDGE_IN_FLIGHT // task_budget)
    spread = min(task_slots(runtime), rows // MIN_ROWS_PER_PARTITION)
    if wanted <= 1 and spread <= 1:
        return 1
    workers = max(runtime.workers, 1)
    return -(-max(wanted, spread) // workers) * workers


def minimum_budget(rows: int) -> int:
    """The least a task may plan for with ``rows`` input edges: their bytes in flight over at
    most :data:`MAX_PARTITIONS` partitions."""
    return -(-rows * BYTES_PER_EDGE_IN_FLIGHT // MAX_PARTITIONS)


def least_task_budget(rows: int) -> int:
    """The least task budget that every check of a budget before the count's plan accepts,
    for ``rows`` input edges, so that a refusal names one the next run takes: the minimum
    (:func:`minimum_budget`), few enough partitions for the exchanges
    (:func:`check_exchange_tasks`), and the longest adjacency list the count can meet
    (:func:`dtri.analytics.plan.check_lists_fit`), at most √(2m) targets under the degree
    orientation (each of a vertex's d later neighbours has degree d or more)."""
    exchanges = -(-rows * BYTES_PER_EDGE_IN_FLIGHT // max(1, math.isqrt(max_plan_tasks())))
    longest = list_bytes(math.isqrt(2 * rows) + 1)
    return max(minimum_budget(rows), exchanges, longest)


def check_exchange_tasks(rows: int, partitions: int, budget: Budget) -> None:
    """Refuse, before any exchange, a preparation whose all-to-all exchanges would each have
    more tasks than ``dtri.max-plan-tasks`` (a piece per sender and receiver: about
    ``partitions²``), naming the least ``--memory-budget`` (per worker) that makes few enough
    partitions. The count's own plan is checked again once its wedges are known
    (:func:`dtri.analytics.plan.check_plan_tasks`)."""
    ceiling = max_plan_tasks()
    if partitions * partitions <= ceiling:
        return
    from dask.utils import format_bytes

    from dtri.errors import ConfigurationError

    least = least_task_budget(rows)
    raise ConfigurationError(
        f"{rows:,} input edges in {partitions} partitions make about "
        f"{partitions * partitions:,} tasks in each exchange of the preparation, more than "
        f"{MAX_PLAN_TASKS} = {ceiling:,}: scheduling them would take longer than the count; "
        f"give --memory-budget {format_bytes(budget.per_worker_for(least))} or more, or "
        f"raise {MAX_PLAN_TASKS}")


def check_budget(rows: int | None, estimated: bool, budget: Budget | None,
                 runtime: Runtime | None = None) -> None:
    """Refuse, up front and in one line, a ``budget`` below the minimum for ``rows`` input
    edges (:func:`minimum_budget`), naming the least ``--memory-budget`` or, where the
    budget follows the workers' memory (of ``runtime``), the least ``--rmm-pool-size`` /
    ``--memory-limit``. Before a runtime is opened only the budget given in the run's
    decision is checked (:attr:`dtri.runtime.resolve.RunDecision.given`; ``None`` where there
    is none): a task gets at most that."""
    if not rows or budget is None:
        return
    from dask.utils import format_bytes

    from dtri.errors import ConfigurationError

    needed = minimum_budget(rows)
    if budget.per_task >= needed:
        return
    about = f"{'about ' if estimated else ''}{rows:,} input edges"
    why = (f"{about} at {BYTES_PER_EDGE_IN_FLIGHT} B each in flight need a task budget of "
           f"at least {format_bytes(needed)}, to fit in {MAX_PARTITIONS} partitions")
    if budget.given or runtime is None:
        raise ConfigurationError(f"--memory-budget {format_bytes(budget.per_worker)} is below "
                                 f"the minimum for this input: {why}; give --memory-budget "
                                 f"{budget.per_worker_for(least_task_budget(rows))} or more")
    least = budget.memory_for(needed)
    if runtime.capped and (pool := runtime.caps.rmm_pool_size) is not None:
        raise ConfigurationError(
            f"--rmm-pool-size {format_bytes(pool)} is below the minimum "
            f"for this input: {why}; give --rmm-pool-size {format_bytes(least)} or more")
    memory = "GPU memory" if runtime.backend.on_gpu else "memory"
    raise ConfigurationError(
        f"the workers' {memory} ({format_bytes(runtime.worker_memory)}) is below the minimum "
        f"for this input: {why}; give the workers {format_bytes(least)} or more "
        "(--memory-limit), or more workers")


def vertex_fan_in(rows: int, task_budget: int) -> int:
    """Fan-in of the trees over vertex-wide arrays (the vertex-id sets, degree, out-degree and
    work counts), so that one of their tasks fits the budget: such an array holds at most two
    8-byte entries per input edge, whatever the tree level. Small graphs keep the wide
    default; graphs whose vertex arrays approach the budget merge them two at a time."""
    widest = 16 * max(rows, 1)
    return max(2, min(FAN_IN, task_budget // (VERTEX_ARRAY_COPIES * widest)))


def partition_lengths(*frames: Any) -> list[int]:
    """Rows of each of some input partitions."""
    return [len(frame) for frame in frames]


def concat_frames(*frames: Any) -> Any:
    """Input partitions taken together (:class:`EdgeArrays`, or pandas or cuDF frames by
    Dask's ``concat`` dispatch)."""
    if len(frames) == 1:
        return frames[0]
    if isinstance(frames[0], EdgeArrays):
        xp = array_module(frames[0].src)
        return EdgeArrays(xp.concatenate([f.src for f in frames]),
                          xp.concatenate([f.dst for f in frames]))
    from dask.dataframe.dispatch import concat

    return concat(list(frames))


def split_rows(parts: list[Any], pieces: int) -> list[Any]:
    """In-process partitions (:class:`EdgeArrays`, or the pandas or cuDF frames an eager run
    read) cut into about ``pieces`` of equal rows (views, no copy)."""
    rows = sum(len(part) for part in parts)
    step = max(1, -(-rows // max(pieces, 1)))
    return [EdgeArrays(part.src[i: i + step], part.dst[i: i + step])
            if isinstance(part, EdgeArrays) else part.iloc[i: i + step]
            for part in parts for i in range(0, len(part), step)]


def input_groups(rows: list[int], holders: list[str | None], limit: int) -> list[list[int]]:
    """The input partitions grouped into the senders of the preparation: by the worker that
    holds them, so that grouping moves nothing, in index order, each group at most ``limit``
    rows (what one task may hold; :func:`dtri.runtime.tasks.fold_groups` cuts a holder's
    partitions). Fewer, larger senders keep the vertex merge cheap (it costs about one
    vertex set per sender), and merge more of an edge's copies before the sort's exchange."""
    return [group for members in by_place(holders).values()
            for group in fold_groups(members, rows, limit)]


def persisted_expression(edges: dd.DataFrame) -> Any:
    """The expression of a persisted ``edges`` (Dask's ``FromGraph``: the persisted frame
    itself, not one made from it, such as a filter or a projection); ``None`` otherwise."""
    try:
        from dask.dataframe.dask_expr.io.io import FromGraph
    except ImportError:  # another Dask's layout: the general path, which is always right
        return None
    expression = getattr(edges, "expr", None)
    return expression if isinstance(expression, FromGraph) else None


def held_partitions(edges: dd.DataFrame) -> list[Any] | None:
    """The partitions of ``edges`` persisted in this process (by a local scheduler), in
    partition order: the values its graph holds, each of the frame's own type (pandas or
    cuDF); ``None`` for any other frame (not persisted, persisted on a cluster, whose graph
    holds futures, or made from a persisted frame). Persisting such a frame again would hash
    every byte of every partition to name the copy."""
    expression = persisted_expression(edges)
    if expression is None:
        return None
    layer, keys = expression.operand("layer"), expression.operand("keys")
    if len(keys) != edges.npartitions:
        return None
    kind = type(edges._meta)
    values = [layer.get(key) for key in keys]
    return values if all(isinstance(value, kind) for value in values) else None


def persisted_partitions(edges: dd.DataFrame) -> list[Any] | None:
    """The futures that hold the partitions of an already persisted ``edges``, in partition
    order; ``None`` if it is not persisted (taken through the frame's own keys, each
    partition costs an alias task). A frame made from a persisted one (a filter, a
    projection) has the same futures but is not its partitions: only the persisted frame
    itself (Dask's ``FromGraph`` expression) is."""
    from distributed import futures_of

    if persisted_expression(edges) is None:
        return None
    futures = futures_of(edges)
    by_index = {future.key[1]: future for future in futures
                if isinstance(future.key, tuple) and len(future.key) == 2}
    names = {future.key[0] for future in by_index.values()}
    if len(names) != 1 or sorted(by_index) != list(range(edges.npartitions)) \
            or len(futures) != edges.npartitions:
        return None
    return [by_index[i] for i in range(edges.npartitions)]


def spread_persist(frame: dd.DataFrame, workers: tuple[str, ...],
                   timer: StageTimer) -> dd.DataFrame:
    """A lowered ``frame`` persisted with its partitions read on the workers in contiguous
    blocks, block ``w`` on worker ``w`` (part of the ``read`` stage), so each worker reads,
    and then sends from, an equal share of the input; the result is a persisted frame, as
    ``persist`` gives. Left to the scheduler, quick reads pile up on whichever worker is free
    first, which then does most of the canonicalize stage's sending."""
    import dask.dataframe as dd
    from dask.utils import key_split
    from distributed import futures_of

    parts = frame.to_delayed()
    futures: list[Any] = []
    for w, worker in enumerate(workers):
        block = parts[w * len(parts) // len(workers): (w + 1) * len(parts) // len(workers)]
        if block:
            with placed_on(worker):
                futures.extend(futures_of(part)[0] for part in timer.submit("read", *block))
    timer.settle()
    keys = [future.key for future in futures]
    return dd.from_graph(dict(zip(keys, futures, strict=True)), frame._meta, frame.divisions,
                         keys, key_split(frame._name))


def input_placement(partitions: list[Any], runtime: Runtime,
                    ) -> tuple[list[str | None], list[int]]:
    """The worker holding each input partition given as a future, and its bytes as the
    scheduler has them (``None`` and 0 where unknown: a partition given otherwise, or no
    cluster)."""
    unknown: tuple[list[str | None], list[int]] = ([None] * len(partitions),
                                                   [0] * len(partitions))
    if runtime.client is None:
        return unknown
    from distributed import Future, wait

    futures = [part for part in partitions if isinstance(part, Future)]
    if not futures:
        return unknown
    wait(futures)  # the scheduler knows a partition's bytes once it is computed
    keys = [part.key if isinstance(part, Future) else None for part in partitions]
    who = runtime.client.who_has(futures)
    sizes = runtime.client.nbytes([future.key for future in futures], summary=False)
    return ([next(iter(who[key])) if key is not None and who.get(key) else None
             for key in keys],
            [int(sizes.get(key, 0)) if key is not None else 0 for key in keys])


def input_rows(partitions: list[Any], holders: list[str | None], sizes: list[int],
               task_budget: int, tasks: Tasks, timer: StageTimer) -> list[int]:
    """Rows of each input partition (part of the ``read`` stage), counted where they live:
    one task per group of :func:`input_groups` (a holder's partitions, at most half a task's
    budget of bytes by ``sizes``, since a worker that spilled them brings a task's inputs
    back to the device together). A task per partition costs a scheduler round trip each:
    0.15 s for RMAT 26's 64 partitions on 4 GPUs."""
    groups = input_groups(sizes, holders, task_budget // TASK_SHARES.read_group)
    counted = [tasks.task("read", partition_lengths, *(partitions[p] for p in members),
                          key=("rows", g), on_host=True, at=holders[members[0]])
               for g, members in enumerate(groups)]
    rows = [0] * len(partitions)
    for members, lengths in zip(groups, timer.compute("read", *counted), strict=True):
        for p, length in zip(members, lengths, strict=True):
            rows[p] = length
    return rows


RECOMPUTE_INPUT = "dtri.recompute-input"
"""``dask.config`` key: ``auto`` (GPU workers under a host memory limit), ``always`` or
``never``: whether the preparation reads its input again for each pass that reads it."""
RECOMPUTE_SETTINGS = ("auto", "always", "never")


def recomputes_input(runtime: Runtime) -> bool:
    """Whether a run on ``runtime`` reads its input again for each pass (``dtri.recompute-input``;
    only on a cluster, and ``auto`` only where dtri started GPU workers under
    ``--memory-limit``, with a host plan: reading Parquet again, or generating R-MAT again,
    on a GPU costs less than writing the input to disk and reading it back, and text parsed
    on the CPU costs more). A local cluster's workers have a memory limit without one
    (dask-cuda's default: the host's memory shared out); that alone does not count."""
    setting = dask.config.get(RECOMPUTE_INPUT)
    if setting not in RECOMPUTE_SETTINGS:
        from dtri.errors import ConfigurationError

        raise ConfigurationError(f"{RECOMPUTE_INPUT} must be one of "
                                 f"{', '.join(RECOMPUTE_SETTINGS)}, got {setting!r}")
    if runtime.client is None or setting == "never":
        return False
    return setting == "always" or (runtime.backend.on_gpu and runtime.host_plan is not None)


def input_copies(partitions: list[Any], recomputed: bool, seed: str) -> list[Any]:
    """``partitions`` for one pass: where they are ``recomputed``, a copy of their tasks of
    its own (keys renamed by ``seed``), so the pass reads the input again and Dask keeps no
    partition past it; else the partitions themselves."""
    if not recomputed:
        return partitions
    from dask.graph_manipulation import clone

    copies = clone(*partitions, seed=seed)
    return list(copies) if len(partitions) > 1 else [copies]


def made_from_worker_data(frame: dd.DataFrame) -> bool:
    """Whether ``frame`` is made from data already on the workers (scattered or persisted),
    which its tasks cannot read again: a copy of its tasks was refused with "lost
    dependencies" (:func:`dtri.runtime.compat.reads_keys_outside`)."""
    from dtri.runtime.compat import reads_keys_outside

    return reads_keys_outside(frame.__dask_graph__())


def recomputed_inputs(frame: dd.DataFrame, tasks: Tasks, timer: StageTimer) -> Inputs:
    """The ``read`` stage of a run that reads its input again for each pass
    (:func:`recomputes_input`): the partitions as tasks, and their rows counted by reading
    them once, each freed as it is counted."""
    partitions = list(frame.to_delayed())
    counted = [tasks.task("read", partition_lengths, part, key=("rows", p), on_host=True)
               for p, part in enumerate(input_copies(partitions, True, "rows"))]
    rows = [length for (length,) in timer.compute("read", *counted)]
    return Inputs(frame, partitions, rows, [None] * len(partitions), recomputed=True)


def read_inputs(edges: dd.DataFrame | list[Any], runtime: Runtime, tasks: Tasks,
                timer: StageTimer, task_budget: int) -> Inputs:
    """The ``read`` stage: ``edges`` persisted on the workers (unless it is already), and its
    partitions (futures where there is a cluster) with their rows and holders; or, for an
    in-process run's delayed :class:`EdgeArrays`, those computed here. An eager run computes
    any other frame's partitions and takes their values (of a frame persisted in this
    process: :func:`held_partitions`), persisting nothing; a run on the threads scheduler
    takes their delayed objects. A run that reads its input again for each pass persists
    nothing (:func:`recomputed_inputs`)."""
    if isinstance(edges, list):
        parts = list(timer.compute("read", *edges))
        with timer.timed("read"):  # where the backend computes (host text to the GPU)
            parts = [arrays_on(part, runtime.backend) for part in parts]
        return Inputs(None, parts, [len(part) for part in parts], [None] * len(parts))
    frame: dd.DataFrame = edges  # a Dask DataFrame, persisted below unless it is already
    if runtime.client is not None:
        partitions = persisted_partitions(frame)
    elif (held := held_partitions(frame)) is not None:
        partitions = held if tasks.eager else frame.to_delayed()
    else:
        partitions = None
    if partitions is None and recomputes_input(runtime):
        lowered = frame.optimize()
        if not made_from_worker_data(lowered):
            return recomputed_inputs(lowered, tasks, timer)
    if partitions is None and runtime.client is not None and len(tasks.workers) > 1:
        frame = spread_persist(frame.optimize(), tasks.workers, timer)
        partitions = persisted_partitions(frame)
    if partitions is None and tasks.eager:
        # the partitions' values, computed, not persisted: an eager run's tasks take values,
        # and persisting here names the persisted frame by a token of those values, which
        # hashes every byte read: 3.7 s of a 5.4 s read of R-MAT 26's Parquet on an H100
        partitions = list(timer.compute("read", *frame.optimize().to_delayed()))
        return Inputs(None, partitions, [len(part) for part in partitions],
                      [None] * len(partitions))
    if partitions is None:
        # Lower the input first: some readers (dask-cuDF's Parquet) merge files into fewer
        # partitions when lowered, and partition keys must be those that exist after persist.
        (frame,) = timer.submit("read", frame.optimize())
        timer.settle()
        partitions = (persisted_partitions(frame) if runtime.client is not None
                      else None) or frame.to_delayed()
    holders, sizes = input_placement(partitions, runtime)
    rows = input_rows(partitions, holders, sizes, task_budget, tasks, timer)
    return Inputs(frame, partitions, rows, holders)

