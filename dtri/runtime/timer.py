"""The stage timer: runs each stage's collections on the cluster, queued behind each other,
and times each stage; a task's ``MemoryError`` becomes one line naming its stage."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stdout, suppress
from typing import Any

import dask

from dtri.errors import OutOfMemoryError
from dtri.kernels.compiled import compile_seconds

COMPILE_STAGE = "compile"
"""Where a run in this process reports the time its stages spent compiling kernels (or
loading them from the disk cache: :mod:`dtri.kernels.compiled`), not in the stages."""
log = logging.getLogger("dtri.stages")
"""One INFO line per stage as it ends (``stage seconds``), for logs of long runs."""


SHOWN_STEP_SECONDS = 0.01
"""A stage that runs in several steps shows its first as its progress line, and a later
step in a line of its own (with the stage's seconds in all) only where it took this long
or made rows: ``read`` had shown twice and ``plan`` three times, the later lines 0.00 s."""


def stage_rows(values: tuple[Any, ...]) -> int | None:
    """The rows of a stage's values where each is an array, a table or an edge list (their
    lengths summed); ``None`` where any is something else (a count, a tuple of parts, a Dask
    collection, whose length would compute it)."""
    if not values or any(isinstance(value, (tuple, list, dict, str, bytes))
                         or not hasattr(value, "__len__") or dask.is_dask_collection(value)
                         for value in values):
        return None
    return sum(len(value) for value in values)


def out_of_memory(stage: str, error: MemoryError, in_process: bool = False
                  ) -> OutOfMemoryError:
    """A task's ``MemoryError`` (an RMM pool's, CuPy's, the host's) as one line a user can act
    on. ``in_process``: a task of a run in this process, where every stage's results stay in
    memory; a local cluster's workers move them to host memory and disk."""
    what = f"a task of the {stage} stage ran out of memory ({str(error).strip() or 'MemoryError'})"
    if in_process:
        return OutOfMemoryError(
            f"{what} in this process, which keeps every stage's results in memory; run on a "
            "local cluster (--workers 1), whose workers move them to host memory and disk, or "
            "give each task less (a smaller --memory-budget)")
    return OutOfMemoryError(
        f"{what}; give the workers more memory (--rmm-pool-size, --memory-limit) or each task "
        "less (a smaller --memory-budget)")


WORKERS_CHECK_SECONDS = 2.0
"""How often a waiting stage checks that the run's workers are still there."""


class StageTimer:
    """Runs the stages' collections on the cluster and times each stage, with optional progress:
    one ``dtri: STAGE SECONDS s`` line on stderr as each stage (or step of one) ends, with its
    rows where the stage's values are known here, and on a cluster Dask's bar before it and
    ``host_note()`` after it (the workers' host memory: :meth:`Runtime.timer`).

    With a cluster, :meth:`submit` hands a stage to the scheduler and returns at once, so the
    next stage is queued behind it with no round trip to the client. :meth:`settle` (which
    :meth:`compute` ends with) waits for the submitted stages in order; each stage's seconds
    run from the end of the stage before it to its own end. The timer lets go of a stage's
    futures once it has finished. Without a cluster every stage runs when submitted.

    ``eager``: the tasks ran as they were built (:class:`dtri.runtime.tasks.Tasks`), so a
    stage is handed values (collections, such as a reader's, are computed here), and
    ``synchronize`` (the GPU's) is called first so that its seconds hold the stage's work,
    not just its launches.
    """

    def __init__(self, client: Any, progress: bool = False, *, eager: bool = False,
                 synchronize: Callable[[], None] | None = None,
                 host_note: Callable[[], str] | None = None,
                 pinned: set[str] | None = None, shown: list[str] | None = None):
        self.client = client
        self.pinned = set() if pinned is None else pinned
        """The workers that tasks of the run are pinned to (:meth:`dtri.runtime.tasks.
        Tasks.pinned`, which adds them): a stage that waits while one of them has left
        fails (:meth:`_wait`)."""
        self.progress = progress
        self.host_note = host_note
        self.eager = eager
        self.synchronize = synchronize
        self.seconds: dict[str, float] = {}
        self._pending: list[tuple[str, list[Any]]] = []
        self._since: float | None = time.perf_counter() if eager else None
        self._compiled = compile_seconds()
        self._shown = [] if shown is None else shown
        """The stage of the last progress line (a list of one, shared by a run's timers)."""

    def submit(self, stage: str, *collections: Any) -> tuple[Any, ...]:
        """Start persisting a stage's collections; returns them persisted (holding futures)."""
        client = self.client
        if client is None:
            return self._run_locally(dask.persist, stage, *collections)
        return tuple(self._queue(stage, client.persist, collections))

    def compute(self, stage: str, *collections: Any) -> tuple[Any, ...]:
        """Compute a stage's collections (after the stages submitted before it) and return
        their values."""
        client = self.client
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
        pending, self._pending = self._pending, []
        if not pending:  # a local scheduler ran every stage when submitted
            if not self.eager:  # an eager run's next stage starts where this one ended
                self._since = None
            return
        from distributed import futures_of

        for stage, collections in pending:
            futures = futures_of(collections)
            if self.progress:  # one bar per stage, under the stage's name
                from distributed import progress

                print(f"{stage}:", file=sys.stderr, flush=True)
                with redirect_stdout(sys.stderr):  # keep stdout for the result (and --json)
                    try:
                        progress(futures)
                    except BaseException:  # an interrupt: the bar, cut, ends its line
                        print(file=sys.stderr, flush=True)
                        raise
            self._wait(stage, futures)
            for future in futures:
                if future.status == "error":  # wait() returns on failed tasks too: raise
                    self._since = None
                    error = future.exception()
                    if isinstance(error, MemoryError):
                        raise out_of_memory(stage, error) from error
                    raise error
            self._add(stage)
        self._since = None

    def _wait(self, stage: str, futures: list[Any]) -> None:
        """Wait for ``futures``; every :data:`WORKERS_CHECK_SECONDS`, check that the workers
        that tasks are pinned to are still there. Tasks pinned to a worker cannot run
        elsewhere, also when they must run again (a lost worker's results are recomputed),
        so a stage that waits for them would wait for ever: it raises
        :class:`~dtri.errors.WorkerLostError` instead. Without pinned tasks (a 1D count) a
        lost worker's work is recomputed on the others, as Dask does."""
        from distributed import wait

        while True:
            with suppress(TimeoutError):
                wait(futures, timeout=WORKERS_CHECK_SECONDS)
                return
            if not self.pinned or all(f.done() for f in futures):
                continue
            present = set(self.client.scheduler_info(n_workers=-1)["workers"])
            lost = sorted(address for address in self.pinned if address not in present)
            if lost:
                from dtri.errors import WorkerLostError

                self._since = None
                raise WorkerLostError(
                    f"worker {lost[0]} left the cluster during the {stage} stage, and tasks "
                    f"pinned to it (the 2D decomposition's blocks and rounds) cannot run "
                    f"elsewhere: run again, or give --decomposition 1d to recompute lost "
                    f"work on the workers left")

    def _add(self, stage: str, rows: int | None = None) -> float:
        """Add a stage's wall time (added up when a stage runs in several steps); return it."""
        now = time.perf_counter()
        assert self._since is not None
        seconds, self._since = now - self._since - self._compile_time(), now
        return self._record(stage, seconds, rows)

    def _record(self, stage: str, seconds: float, rows: int | None = None) -> float:
        """Add ``seconds`` to ``stage`` (a stage may run in several steps), log them and, with
        progress, print them with the ``rows`` made where known; return them."""
        self.seconds[stage] = round(self.seconds.get(stage, 0.0) + seconds, 6)
        host = "" if self.host_note is None or not (self.progress or log.isEnabledFor(
            logging.INFO)) else self.host_note()
        log.info("%s %.3f s%s", stage, seconds, host)
        if self.progress:
            again = self._shown == [stage]  # the same stage in another step
            if not again or rows is not None or seconds >= SHOWN_STEP_SECONDS:
                made = "" if rows is None else f", {rows} rows"
                total = f" ({self.seconds[stage]:.2f} s in all)" if again else ""
                print(f"dtri: {stage} {seconds:.2f} s{made}{total}{host}", file=sys.stderr,
                      flush=True)
            self._shown[:] = [stage]
        return seconds

    def _compile_time(self) -> float:
        """Seconds this process compiled kernels since the last call, added to ``compile``
        (where the tasks run here: a cluster's workers compile in their own processes)."""
        if self.client is not None:
            return 0.0
        total = compile_seconds()
        spent, self._compiled = total - self._compiled, total
        if spent > 0:
            self.seconds[COMPILE_STAGE] = round(self.seconds.get(COMPILE_STAGE, 0.0) + spent, 6)
        return spent

    @contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        """Time a block of work done here, on the client (planning), as part of ``stage``;
        an eager run's next stage starts after it."""
        started = time.perf_counter()
        self._compile_time()  # what compiled before is not this block's
        yield
        now = time.perf_counter()
        self._record(stage, now - started - self._compile_time())
        if self.eager:
            self._since = now

    def _run_locally(self, action: Any, stage: str, *collections: Any) -> tuple[Any, ...]:
        if self.eager:
            return self._run_eagerly(action, stage, collections)
        self._since = time.perf_counter()
        try:
            if not self.progress:
                results = action(*collections)
            else:
                from dask.diagnostics import ProgressBar

                with ProgressBar(out=sys.stderr):
                    results = action(*collections)
        except MemoryError as error:
            raise out_of_memory(stage, error, in_process=True) from error
        self._add(stage, stage_rows(tuple(results)))
        self._since = None
        return tuple(results)

    def _run_eagerly(self, action: Any, stage: str, values: tuple[Any, ...]) -> tuple[Any, ...]:
        """An eager run's stage: its values (collections among them computed or persisted
        here), timed from the end of the stage before it."""
        if any(dask.is_dask_collection(value) for value in values):
            try:
                values = tuple(action(*values))
            except MemoryError as error:
                raise out_of_memory(stage, error, in_process=True) from error
        if self.synchronize is not None:
            self.synchronize()
        self._add(stage, stage_rows(values))  # an eager timer's clock: never unset
        return values
