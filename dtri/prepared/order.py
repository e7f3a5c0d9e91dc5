"""The ``order`` stage: each sorted partition's schedule in the graph's vertex order
(:mod:`dtri.kernels.order`), computed where the partition lives.

The targets' work is a vertex-wide sum over the partitions (a tree, like the degrees); each
partition then sorts its own rows and is stored again with its schedule (the same arrays, one
more), so every analytic that intersects it runs its pieces in that order.
"""

from __future__ import annotations

from typing import Any

from dtri.kernels.counting import add_counts
from dtri.kernels.csr import as_csr, longest_list, stored
from dtri.kernels.order import in_work, schedule
from dtri.prepared.moved import key_bytes
from dtri.runtime.tasks import Tasks
from dtri.runtime.timer import StageTimer

AUTO_ORDER = "rank"
"""What ``--order auto`` picks (see :func:`choose_order`)."""


def in_work_of(part: tuple, vertices: int) -> Any:
    """:func:`dtri.kernels.order.in_work` of a stored partition."""
    return in_work(as_csr(part), vertices)


def scheduled(part: tuple, order: str, work: Any, degree: Any, low: int, high: int) -> tuple:
    """A stored partition over the ranks ``[low, high)`` with its schedule."""
    csr = as_csr(part)
    return stored(csr._replace(schedule=schedule(csr, order, work[low:high],
                                                 degree[low:high])))


def choose_order(order: str, summaries: list[Any]) -> tuple[str, str]:
    """The order to use and why: ``order`` as given, or for ``auto`` the order measured
    fastest overall (examples/benchmarks/results/orientation-order-h200.jsonl): ``rank``, since the
    pieces of the hash kernel are cut to equal work already and a schedule costs a sort of the
    rows and a pass over the edges."""
    if order != "auto":
        return order, order
    return AUTO_ORDER, (f"auto: {AUTO_ORDER} (pieces of equal work; longest list "
                        f"{longest_list(summaries)})")


def order_partitions(parts: list[Any], bounds: list[int], vertices: int, degree: Any,
                     order: str, tasks: Tasks, timer: StageTimer, fan_in: int,
                     rows: list[int] | None = None) -> list[Any]:
    """The partitions with their schedules in ``order`` (the ``order`` stage); as they are
    for ``rank``. ``rows``: each partition's edges, where known."""
    if order == "rank":
        return parts
    owners = [tasks.owner(p) for p in range(len(parts))]
    work = tasks.reduce_over("order", in_work_of, add_counts, parts, (vertices,), owners,
                             "work", fan_in, key_bytes(rows))
    return list(timer.submit("order", *(
        tasks.task("order", scheduled, part, order, work, degree, bounds[p], bounds[p + 1],
                   key=(p,), at=tasks.owner(p)) for p, part in enumerate(parts))))
