"""Dask's control messages sent at once, not held to be batched.

Dask's scheduler, workers and clients send their small control messages (a task to run, a
task done, a graph to run) in batches, at most one batch per interval on each connection: 5 ms
from the scheduler to a worker, 2 ms from a worker to the scheduler, 10 ms from a client and
2 ms back to it. The intervals are fixed in ``distributed``'s code. Each hop from a task to
the next that it feeds waits for up to two of them, and each round trip of the client for
two more. A preparation is a chain of short stages (vertex-wide trees, a ranking task, an
exchange), so a count over four GPUs took several such hops per stage: on one 4 x H100 host a
hop between two tasks took 5.6 ms, and a client's round trip 10 ms.

:data:`MESSAGE_INTERVAL` sets the longest a message waits instead. It applies to the local
clusters dtri starts, their scheduler and workers through the plugins
:class:`dtri.runtime.plugin.SchedulerMessages` and
:class:`~dtri.runtime.plugin.WorkerMessages`, and to the connection of dtri's own client. A
cluster that dtri did not start keeps Dask's intervals: other clients share its scheduler.

Messages that come while a batch is being written still go out together in the next one.
This module imports no ``distributed``: an in-process run reads the setting too."""

from __future__ import annotations

from typing import Any

import dask.config
from dask.utils import parse_timedelta

import dtri.config  # noqa: F401  (registers the dtri.* defaults)
from dtri.errors import ConfigurationError

MESSAGE_INTERVAL = "dtri.message-interval"
"""``dask.config`` key: the longest a control message waits to be batched (a time, such as
``0ms``), or ``None`` for Dask's own intervals."""


def message_interval() -> float | None:
    """:data:`MESSAGE_INTERVAL` in seconds, ``None`` where Dask's own intervals stay."""
    value = dask.config.get(MESSAGE_INTERVAL)
    if value is None:
        return None
    try:
        seconds = parse_timedelta(value, default="ms")
    except (ValueError, TypeError, KeyError, AttributeError):
        seconds = None
    if seconds is None or seconds < 0:
        raise ConfigurationError(
            f"{MESSAGE_INTERVAL} must be a time such as 0ms or 1ms, or null, got {value!r}")
    return float(seconds)


def quicken_cluster(cluster: Any, interval: float | None) -> None:
    """A local cluster (its scheduler in this process) sending its control messages within
    ``interval`` seconds (:func:`message_interval`); nothing where that is ``None``."""
    if interval is None:
        return
    from distributed.protocol.pickle import dumps

    from dtri.runtime.plugin import SchedulerMessages, WorkerMessages

    scheduler = cluster.scheduler
    cluster.sync(scheduler.register_scheduler_plugin, SchedulerMessages(interval),
                 SchedulerMessages.name, idempotent=False)
    cluster.sync(scheduler.register_worker_plugin, None, dumps(WorkerMessages(interval)),
                 WorkerMessages.name, idempotent=False)


def quicken_client(client: Any) -> None:
    """The client's own connection to the scheduler sending within :func:`message_interval`
    (it is this process's; the scheduler's side is :func:`quicken_cluster`'s)."""
    interval = message_interval()
    comm = getattr(client, "scheduler_comm", None)
    if interval is not None and comm is not None:
        comm.interval = interval
