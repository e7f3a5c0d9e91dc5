"""The stage of a task, from its key: ``dtri-<stage>-<token>-...`` gives ``<stage>``.

Every meter of the workers (device memory: :mod:`dtri.runtime.meter`; host memory:
:mod:`dtri.runtime.host_meter`; transfers: :mod:`dtri.runtime.transfers`) files what it
measures by the stage of the tasks that ran."""

from __future__ import annotations

import re
from typing import Any

from dask.utils import key_split

READ_KEYS = ("read-edges", "dtri-generate", "input_partition", "readparquet", "read-parquet",
             "read_parquet", "from-delayed", "from_pandas", "from-pandas", "repartition",
             "frompandas", "fromdelayed", "operation")
"""Key prefixes of the read stage's tasks (readers, the generator, the move to host memory)."""


COLLECTING_KEYS = ("list", "tuple", "dict", "finalize")
"""Key prefixes of the tasks with which Dask gathers a stage's results (not stages)."""


OUTPUT_STAGE = "output"
"""The stage of Dask's own tasks beyond the read: those that make a result's collection, sum
or first rows (``reset_index``, ``sum-tree``, ``first_rows``, ...)."""

FAST_PREFIX = "split-stage"
"""The task prefix of the tasks that pick one piece of a split (:meth:`dtri.runtime.tasks.
Tasks.pick_pieces`): one of those that Dask's scheduler counts as taking a microsecond
(``distributed.scheduler.default-task-durations``), which its work stealing never moves. A
pick's key goes on ``<prefix>-<token>-dtri-<stage>-<token>-...``, its stage read after the
first token."""

TOKEN = re.compile(r"[0-9a-f]{32}")
"""A Dask token (:func:`dask.base.tokenize`): where a ``dtri-<stage>-...`` key's stage ends."""


def stage_of(key: Any) -> str | None:
    """The stage a task belongs to, from its key: ``dtri-<stage>-<token>-...`` gives
    ``<stage>`` (every word before the token, so ``edge_bins`` and ``k-truss`` alike); the
    readers' and the generator's keys give ``read``; Dask's own gathering tasks ``None``;
    any other task :data:`OUTPUT_STAGE`."""
    name = key_split(key)
    if name == FAST_PREFIX:  # a pick: the dtri key after the first token
        first = key[0] if isinstance(key, tuple) and key else key
        if isinstance(first, str) and "-dtri-" in first:
            rest = first[first.index("-dtri-") + 1:]
            return stage_of((rest, *key[1:]) if isinstance(key, tuple) else rest)
    if name in COLLECTING_KEYS:
        return None
    if name.startswith(READ_KEYS):
        return "read"
    first = key[0] if isinstance(key, tuple) and key else key
    if isinstance(first, str) and first.startswith("dtri-"):
        words = []
        for word in first.split("-")[1:]:
            if TOKEN.fullmatch(word):
                break
            words.append(word)
        return "-".join(words) or OUTPUT_STAGE
    return OUTPUT_STAGE
