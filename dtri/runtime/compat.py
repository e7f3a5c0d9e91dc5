"""Work-arounds for the Python and library versions dtri supports.

Python 3.11's ``functools.cached_property`` guards every instance of a class with one
class-wide lock (bpo-43468; Python 3.12 removed the lock). dask-expr computes divisions
(e.g. the quantiles of ``sort_values``) inside such properties, by submitting work to the
scheduler and waiting; when the scheduler runs in the same process (``LocalCluster``) and
materializes an expression that needs the same property, both sides wait forever. Lifting
the lock gives 3.11 the 3.12 behaviour: a property may, rarely, be computed twice.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import weakref
from collections.abc import Mapping
from typing import Any

LIFTED: weakref.WeakSet[type] = weakref.WeakSet()
"""The expression classes whose locks are lifted already (classes are the process's: a class
once lifted stays lifted, so each call looks only at the classes made since; weak, so that
it keeps none alive)."""


def lift_cached_property_locks() -> int:
    """On Python < 3.12, drop the class-wide locks of dask-expr's cached properties.

    Idempotent and cheap (a class is looked at once: about a millisecond for the 340
    classes of dask's DataFrame expressions, then a walk of the class tree); returns how many
    locks it lifted (0 on Python >= 3.12).
    """
    if sys.version_info >= (3, 12):
        return 0
    from dask._expr import Expr

    classes: set[type] = set()
    pending: list[type] = [Expr]
    while pending:
        cls = pending.pop()
        if cls not in classes:
            classes.add(cls)
            pending.extend(cls.__subclasses__())
    lifted = 0
    for cls in [cls for cls in classes if cls not in LIFTED]:
        LIFTED.add(cls)
        for attribute in vars(cls).values():
            if isinstance(attribute, functools.cached_property) and not isinstance(
                getattr(attribute, "lock", None), contextlib.nullcontext
            ):
                attribute.lock = contextlib.nullcontext()  # type: ignore[attr-defined]
                lifted += 1
    return lifted


def reads_keys_outside(graph: Mapping[Any, Any]) -> bool:
    """Whether a task graph reads keys that it does not compute (data already on the
    workers: scattered or persisted). Distributed's ``futures_of`` finds no future in a
    Dask DataFrame made with ``from_delayed`` from futures (Dask 2026.8): its graph names
    their keys only. Dask's task spec (``dask._task_spec``, the form the scheduler takes
    graphs in) lists each task's dependencies; where it cannot, the graph is taken to read
    such keys."""
    try:
        from dask._task_spec import convert_legacy_graph
    except ImportError:  # another Dask's layout
        return True
    tasks = convert_legacy_graph(dict(graph))
    return any(key not in tasks for task in tasks.values() for key in task.dependencies)
