"""Connecting to a cluster that runs already: an address, a scheduler file, a local Dask
scheduler, or the active client; and what its workers offer."""

from __future__ import annotations

import os
from typing import Any

from dtri.errors import ConfigurationError
from dtri.options import Backend, refuse_local_cluster_options
from dtri.runtime.caps import MemoryCaps
from dtri.runtime.opened import Runtime
from dtri.runtime.resolve import _device_memory, machine_memory


def _worker_memory(backend: Backend, *, dask_worker: Any) -> dict[str, Any]:
    """One worker's memory caps as it runs (and its GPU's memory on the GPU backend)."""
    data = dask_worker.data  # dtri's TieredStore, or dask-cuda's DeviceHostFile
    device_limit = getattr(data, "device_limit",
                           getattr(getattr(data, "device_buffer", None), "n", None))
    pool = None
    for plugin in dask_worker.plugins.values():  # dask-cuda's RMMSetup, after its setup
        maximum = getattr(plugin, "maximum_pool_size", None)
        if type(plugin).__name__ == "RMMSetup" and isinstance(maximum, int):
            pool = maximum
    return {
        "memory_limit": dask_worker.memory_manager.memory_limit,
        "device_memory_limit": device_limit,
        "rmm_pool_size": pool,
        "spill_directory": os.path.dirname(dask_worker.local_directory),
        "device_memory": _device_memory() if backend.on_gpu else None,
    }


def _smallest(values: list[Any]) -> Any:
    present = [v for v in values if v is not None]
    return min(present) if present else None


def cluster_workers(client: Any) -> dict[str, dict[str, Any]]:
    """The cluster's workers now, by address, with what the scheduler knows of each (threads,
    memory limit, ...), asked of the scheduler itself. ``Client.scheduler_info`` fetches them,
    then returns the client's cached identity, which the client's periodic update replaces
    with one that lists no worker: read between the two, it lists none (a two-worker test's
    memory report came back empty once in about 1,300 tests)."""
    identity = client.sync(client.scheduler.identity, n_workers=-1)
    return dict(identity["workers"])


def _describe_client(client: Any, backend: Backend, workers: int | None) -> Runtime:
    info = cluster_workers(client)
    if not info:
        client.wait_for_workers(1, timeout=60)
        info = cluster_workers(client)
    if workers:
        info = dict(list(info.items())[:workers])
    reports = list(client.run(_worker_memory, backend, workers=list(info)).values())
    caps = MemoryCaps(**{name: _smallest([r[name] for r in reports])
                         for name in ("memory_limit", "device_memory_limit", "rmm_pool_size")},
                      spill_directory=reports[0]["spill_directory"])
    memory = (caps.rmm_pool_size or min(r["device_memory"] for r in reports)) if backend.on_gpu \
        else caps.memory_limit or machine_memory()
    return Runtime(
        backend=Backend(backend), client=client, workers=len(info),
        threads_per_worker=max(w["nthreads"] for w in info.values()),
        worker_memory=int(memory), dashboard=getattr(client, "dashboard_link", None),
        addresses=tuple(sorted(info)), caps=caps,
        protocol=str(getattr(client.scheduler, "address", "")).partition("://")[0] or None,
    )


REFUSED_SECONDS = 2
"""How long :func:`refuse_if_refused` waits for a scheduler's port to answer."""


def refuse_if_refused(address: str) -> None:
    """A TCP scheduler address whose host refuses the connection, refused in one line at
    once: Dask's client tries again until its connect timeout (31 s for a port where nothing
    listens). A host that does not answer within :data:`REFUSED_SECONDS` is left to that
    timeout, whose message says so."""
    import socket

    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        scheme, location = parse_address(address)
        host, port = parse_host_port(location)
    except (ValueError, TypeError):
        return  # not host:port: Dask says what is wrong with it
    if scheme not in ("tcp", "tls"):
        return
    try:
        socket.create_connection((host, port), timeout=REFUSED_SECONDS).close()
    except ConnectionRefusedError:
        raise ConfigurationError(f"cannot reach the Dask scheduler at {address}: the "
                                 "connection was refused (nothing listens at that port)"
                                 ) from None
    except OSError:
        return  # slow or unreachable: Dask's client waits, and says so


CONNECT_SECONDS = 30
"""How long a run waits to reach a running Dask scheduler before it gives up."""


def scheduler_file_address(path: str | None) -> str:
    """The scheduler's address in a scheduler file (``dask scheduler --scheduler-file``),
    read once: Dask's client would wait for a missing file forever, and fail on a garbled one
    with a bare ``AssertionError``."""
    import json

    try:
        with open(str(path), encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise ConfigurationError(
            f"--scheduler-file {path} does not exist: start the scheduler with "
            f"'dask scheduler --scheduler-file {path}' first, or give --scheduler ADDRESS"
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigurationError(f"--scheduler-file {path}: cannot read it: "
                                 f"{getattr(error, 'strerror', None) or error}") from None
    try:
        address = json.loads(text).get("address")
    except (ValueError, AttributeError):
        address = None
    if not isinstance(address, str) or not address:
        raise ConfigurationError(
            f"--scheduler-file {path} is not a scheduler file: it holds no JSON object with "
            "the scheduler's \"address\" (dask scheduler --scheduler-file writes one)")
    return address


def _refuse_caps_for(caps: MemoryCaps, where: str) -> None:
    """Memory caps only shape a cluster that dtri starts: fail if the run goes elsewhere (a
    scheduler from ``DASK_SCHEDULER_ADDRESS``, the active client; :class:`Options` refuses
    those it names itself)."""
    refuse_local_cluster_options(caps.given(), where)


def _local_scheduler(name: str) -> Any:
    """The function of a local Dask scheduler, by name."""
    if name == "threads":
        from dask.threaded import get

        return get
    from dask.local import get_sync

    return get_sync
