"""How the worker processes of a local cluster start: forked from one server process that
imported their modules once, or each spawned afresh (Dask's default).

A spawned dask-cuda worker imports distributed and cuDF before it listens (3.4 s on a 4 x
H200 host). Python's ``forkserver`` start method forks each worker from a server that
imported ``dtri.worker-preload-<backend>`` once. :func:`start_worker_server` starts it as
soon as a run knows it will start a local cluster, so that it imports them while this
process starts the scheduler; :func:`worker_start` has the nannies fork from it (R-MAT 28
over four workers: 19.1 s against 24.4 s spawned, ``multi-gpu-cli-forkserver-h200x4.jsonl``).

The server must not touch CUDA, since a forked child cannot use its parent's CUDA context:
its environment sets ``RAPIDS_NO_INITIALIZE``, and ucxx is not in the list. A forked worker
starts with the server's environment, where a spawned one starts with what its nanny sets
first (``distributed.nanny.pre-spawn-environ``). The server is started with those; a later
cluster of this process that needs others (a host memory limit sets
``MALLOC_TRIM_THRESHOLD_``) spawns its workers.
"""

from __future__ import annotations

import functools
import importlib.util
import multiprocessing
import multiprocessing.forkserver
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dask.config
import yaml

try:
    from yaml import CSafeLoader as SafeLoader
except ImportError:  # PyYAML without libyaml
    from yaml import SafeLoader  # type: ignore[assignment]

from dtri.options import Backend

WORKER_START = {"cpu": "dtri.worker-start-cpu", "gpu": "dtri.worker-start-gpu"}
"""How the workers of a local cluster start, by backend: ``forkserver`` or ``spawn``."""
WORKER_PRELOAD = {"cpu": "dtri.worker-preload-cpu", "gpu": "dtri.worker-preload-gpu"}
"""The modules the forkserver imports once for the workers it forks, by backend."""
PRE_SPAWN_ENVIRON = "distributed.nanny.pre-spawn-environ"
START_METHOD = "distributed.worker.multiprocessing-method"
NO_CUDA_AT_IMPORT = {"RAPIDS_NO_INITIALIZE": "1"}
"""What keeps cuDF from touching the GPU when the server imports it."""
HASH_SEED = "6640"
"""The ``PYTHONHASHSEED`` a Dask nanny gives its workers where none is set."""


class WorkerServer:
    """This process's forkserver, where dtri started it, and the environment it was started
    with (multiprocessing keeps one forkserver a process)."""

    environ: dict[str, str] | None = None


def forks_workers(backend: Backend) -> bool:
    """Whether the workers of a local cluster on ``backend`` start forked
    (:data:`WORKER_START`, where this platform has the ``forkserver`` start method)."""
    return (dask.config.get(WORKER_START[backend]) == "forkserver"
            and "forkserver" in multiprocessing.get_all_start_methods())


@functools.cache
def pre_spawn_defaults() -> dict[str, Any]:
    """distributed's defaults for :data:`PRE_SPAWN_ENVIRON`, read once from its
    ``distributed.yaml`` without importing distributed (which registers them with
    ``dask.config`` when imported: the server starts while this process imports it)."""
    spec = importlib.util.find_spec("distributed")
    if spec is None or spec.origin is None:
        return {}
    path = Path(spec.origin).parent / "distributed.yaml"
    defaults = yaml.load(path.read_text(encoding="utf-8"), Loader=SafeLoader)
    return dict(defaults["distributed"]["nanny"]["pre-spawn-environ"])


def server_environ() -> dict[str, str]:
    """The variables the server starts with for workers started under the configuration in
    force: a nanny's pre-spawn variables (a value of this process's environment wins, a
    ``None`` value drops the variable, as the nanny reads them), its hash seed, and
    :data:`NO_CUDA_AT_IMPORT`."""
    given = {**pre_spawn_defaults(), **dask.config.get(PRE_SPAWN_ENVIRON, {})}
    environ = {key: os.environ.get(key, str(value)) for key, value in given.items()
               if value is not None}
    if environ.get("PYTHONHASHSEED") in (None, "0"):
        environ["PYTHONHASHSEED"] = HASH_SEED
    return {**environ, **NO_CUDA_AT_IMPORT}


def _server_running() -> bool:
    return getattr(multiprocessing.forkserver._forkserver, "_forkserver_pid", None) is not None


@contextmanager
def environ_kept(keys: Iterable[str]) -> Iterator[Callable[[], None]]:
    """This process's variables ``keys`` as they were, given back on exit and by the callable
    yielded (a variable that was not set is unset again)."""
    saved = {key: os.environ.get(key) for key in keys}

    def restore() -> None:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

    try:
        yield restore
    finally:
        restore()


@contextmanager
def _environ_set(environ: dict[str, str]) -> Iterator[None]:
    with environ_kept(environ):
        os.environ.update(environ)
        yield


@contextmanager
def interrupts_ignored() -> Iterator[None]:
    """SIGINT ignored by this process while a child starts that keeps it ignored: the
    forkserver, whose workers then ignore it from birth (a process started with SIGINT
    ignored keeps it so, and the forkserver gives its children the handlers it started
    with). The forkserver's start takes milliseconds: an interrupt then is lost."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def start_worker_server(backend: Backend) -> dict[str, str] | None:
    """Start the forkserver that the workers of a local cluster about to start on ``backend``
    fork from, where they start forked (:func:`forks_workers`) and no forkserver runs in this
    process yet: it imports :data:`WORKER_PRELOAD` while this process goes on. Call it under
    the configuration the cluster will start under. Returns the environment those workers
    need (:func:`server_environ`) where dtri's server runs with it, else ``None``: they are
    spawned."""
    if not forks_workers(backend):
        return None
    environ = server_environ()
    if WorkerServer.environ is None and not _server_running():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([str(name) for name in
                                        dask.config.get(WORKER_PRELOAD[backend])])
        with _environ_set(environ), interrupts_ignored():
            multiprocessing.forkserver.ensure_running()
        WorkerServer.environ = environ
    return environ if WorkerServer.environ == environ else None


def claim_start_method() -> None:
    """Have distributed make its forkserver context here, on the calling thread, before any
    other thread imports. The first time it makes one it imports pandas, among others, in
    whichever thread starts a worker process, while :func:`dtri.runtime.local_cluster.
    import_ahead` imports cuDF (and with it pandas and pyarrow) on another: two threads
    importing those in opposite orders deadlock, and Python's break leaves pandas without its
    ``core`` module. Our server runs already, so the preload list distributed sets is not
    used."""
    from distributed.utils import get_mp_context

    with dask.config.set({START_METHOD: "forkserver"}):
        get_mp_context()


@contextmanager
def worker_start(backend: Backend) -> Iterator[None]:
    """The start method of the worker processes of a local cluster started in this block on
    ``backend``: forked from dtri's server where they start forked and the server runs with
    their environment (:func:`start_worker_server`, which starts it where it does not run),
    else spawned. The server's environment is set here too, so that a server multiprocessing
    starts again (one that died) has it; this process's own import of cuDF meanwhile skips
    its GPU check. A nanny that restarts its worker later spawns it."""
    environ = start_worker_server(backend)
    if environ is None:
        yield
        return
    with _environ_set(environ), dask.config.set({START_METHOD: "forkserver"}):
        yield


def stop_worker_server() -> None:
    """Stop dtri's forkserver, where it runs (the end of this process stops it too): the next
    local cluster whose workers start forked starts another, with its own environment."""
    if WorkerServer.environ is not None:
        stop = getattr(multiprocessing.forkserver._forkserver, "_stop", None)
        if stop is not None:
            stop()
        WorkerServer.environ = None
