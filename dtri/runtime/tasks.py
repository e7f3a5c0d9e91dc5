"""Task-graph building blocks: stage-named tasks, reduction trees and all-to-all exchanges.

Every task's key names its stage (``dtri-<stage>-<token>-<index>``) so the Dask dashboard tells
the story. Exchanges between partitions are plain Dask tasks, so their data travels through
Dask's own transfer machinery (TCP, or UCX with NVLink where dask-cuda workers use it) and a
lost worker's pieces are recomputed like any other task:

* a *split* task cuts one partition into one piece per receiver (a dict ``{receiver: piece}``);
* a ``pick`` task per (sender, receiver) takes one piece where the split lives, so only that
  piece travels (split by split: :func:`pick_pieces`);
* a *combine* task per receiver takes its pieces from every sender; receiver ``j`` is placed
  on worker ``j`` (round robin, :func:`placed`), so the receivers, and the partitions they
  make, spread over every worker rather than piling up where Dask's tie-break puts them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from operator import getitem
from typing import Any

import dask
from dask.base import tokenize

from dtri.runtime.staging import wrap

FAN_IN = 32
"""Inputs per task of a reduction tree."""


def task(stage: str, func: Callable[..., Any], *args: Any, key: tuple) -> Any:
    """A delayed call whose key names its stage (``dtri-<stage>-<token>-<index...>``); under
    host staging it runs on the device with host data in and out
    (:func:`dtri.runtime.staging.wrap`)."""
    func = wrap(func)  # in OnDevice under host staging (dtri.runtime.staging)
    index = "-".join(str(part) for part in key)
    name = f"dtri-{stage}-{tokenize(func, *args)}-{index}"
    return dask.delayed(func, pure=True)(*args, dask_key_name=name)


def tree(stage: str, func: Callable[..., Any], items: Sequence[Any],
         fan_in: int = FAN_IN) -> Any:
    """``func`` applied over ``items`` as a tree of fan-in ``fan_in``; ``func`` must combine
    any number of its own results (a sum, a union)."""
    level, items = 0, list(items)
    while len(items) > 1 or level == 0:
        items = [task(stage, func, *items[i: i + fan_in], key=(level, i))
                 for i in range(0, max(len(items), 1), fan_in)]
        level += 1
    return items[0]


def placed(workers: Sequence[str], owner: int) -> AbstractContextManager:
    """Tasks built inside run on ``workers[owner % len(workers)]`` when it is alive (Dask
    may still move them: ``allow_other_workers``, so a lost worker's tasks run elsewhere);
    no placement without a worker list (a local scheduler)."""
    if not workers:
        return nullcontext()
    return dask.annotate(workers=[workers[owner % len(workers)]], allow_other_workers=True)


def pick_pieces(stage: str, splits: Mapping[int, Any],
                receivers: Mapping[int, Iterable[int]]) -> dict[tuple[int, int], Any]:
    """Piece ``j`` of each delayed split ``splits[i]`` (a ``{j: piece}``), for every ``j`` in
    ``receivers[i]``, as its own task (``pick``, run where the split lives, so only that piece
    travels), keyed ``(i, j)``.

    The picks run split by split (a priority falling with ``i``): a split is a single stored
    result, which a worker short of memory moves to host memory or disk whole, and picking
    receiver by receiver would bring every split back once per receiver (RMAT 24 under a
    2 GiB RMM pool, 64 by 64 pieces: 25 picks a second). Split by split, each split comes
    back once, and its pieces are stored, and moved, one by one."""
    top = max(splits, default=0) + 1
    picks = {}
    for i, split in splits.items():
        with dask.annotate(priority=top - i):
            picks.update({(i, j): task(stage, getitem, split, j, key=("pick", i, j))
                          for j in receivers[i]})
    return picks


def exchange(stage: str, splits: Sequence[Any], combine: Callable[..., Any],
             receivers: int, *args: Any, workers: Sequence[str] = ()) -> list[Any]:
    """All-to-all: receiver ``j`` gets ``combine(*args, piece_0j, ..., piece_(s-1)j)``, where
    ``splits[i]`` is a delayed ``{j: piece}`` with every receiver present; receiver ``j`` runs
    on ``workers[j % len(workers)]``. The pieces are picked split by split
    (:func:`pick_pieces`)."""
    everyone = range(receivers)
    picks = pick_pieces(stage, dict(enumerate(splits)), {i: everyone for i in range(len(splits))})
    combined = []
    for j in everyone:
        with placed(workers, j):
            combined.append(task(stage, combine, *args,
                                 *(picks[i, j] for i in range(len(splits))),
                                 key=("combine", j)))
    return combined
