"""The link between two workers of a cluster, measured once per cluster.

:func:`link_bandwidth` sends an array (CuPy on GPU workers, NumPy on CPU ones) of
``dtri.link-probe-bytes`` from the first worker to the second through Dask, as a task's
result that a task on the other worker reads, ``dtri.link-probe-repeats`` times. The
receiver's own log of the transfer gives its bytes and seconds; the best of the repeats is
the link's bandwidth (the first may include opening the connection). The scheduler keeps the
result (``Client.set_metadata``), so later runs on the same cluster read it instead of
measuring again.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import dask

from dtri.errors import ConfigurationError
from dtri.options import Backend
from dtri.runtime.transfers import PROBE_STAGE

if TYPE_CHECKING:
    from dtri.runtime.opened import Runtime

PROBE_BYTES = "dtri.link-probe-bytes"
"""``dask.config`` key: the bytes the link probe sends per repeat."""
PROBE_REPEATS = "dtri.link-probe-repeats"
"""``dask.config`` key: how many times the link probe sends them."""
METADATA_KEY = "dtri-link-bandwidth"
"""Where the scheduler keeps the measured bandwidths, by backend
(``Client.get_metadata([METADATA_KEY, backend])``)."""


def probe_settings() -> tuple[int, int]:
    """``dtri.link-probe-bytes`` and ``dtri.link-probe-repeats`` from ``dask.config``."""
    from dask.utils import parse_bytes

    size = dask.config.get(PROBE_BYTES)
    nbytes = parse_bytes(size) if isinstance(size, str) else int(size)
    repeats = int(dask.config.get(PROBE_REPEATS))
    if nbytes <= 0 or repeats <= 0:
        raise ConfigurationError(f"{PROBE_BYTES} and {PROBE_REPEATS} must be positive, got "
                                 f"{size!r} and {repeats}")
    return nbytes, repeats


def probed_bandwidth(runtime: Runtime) -> float | None:
    """The bandwidth the link probe measured on the runtime's cluster, where it has run
    (kept by the scheduler); ``None`` otherwise. Probes nothing."""
    client = runtime.client
    if client is None or len(runtime.addresses) < 2:
        return None
    cached = client.get_metadata([METADATA_KEY, runtime.backend], None)
    return None if cached is None else float(cached)


def link_bandwidth(runtime: Runtime) -> float | None:
    """Bytes per second between two workers of the runtime's cluster, measured the first time
    it is asked on that cluster for that backend and kept by the scheduler; ``None`` with
    fewer than two workers (nothing moves)."""
    client = runtime.client
    if client is None or len(runtime.addresses) < 2:
        return None
    key = [METADATA_KEY, runtime.backend]
    cached = client.get_metadata(key, None)
    if cached is not None:
        return float(cached)
    nbytes, repeats = probe_settings()
    sender, receiver = runtime.addresses[:2]
    measured = max(_send_once(client, runtime.backend, nbytes, sender, receiver)
                   for _ in range(repeats))
    client.set_metadata(key, measured)
    return measured


# ------------------------------------------------------------------------------ client side

def _send_once(client: Any, backend: Backend, nbytes: int, sender: str, receiver: str) -> float:
    """One transfer of ``nbytes`` from ``sender`` to ``receiver``: its bytes per second, as
    the receiver logged it."""
    name = f"dtri-{PROBE_STAGE}-{uuid.uuid4().hex}"
    payload = client.submit(probe_payload, backend, nbytes, key=name, workers=[sender],
                            allow_other_workers=False, pure=False)
    received = client.submit(payload_bytes, payload, key=f"{name}-received",
                             workers=[receiver], allow_other_workers=False, pure=False)
    try:
        received.result()
        (logged,) = client.run(logged_transfer, name, workers=[receiver]).values()
    finally:
        client.cancel([payload, received])
    if logged is None:
        raise RuntimeError(f"internal error: the worker at {receiver} did not log receiving "
                           "the link probe's array; please report this")
    moved, seconds = logged
    return moved / max(seconds, 1e-9)


# ------------------------------------------------------------------------------ worker side

def probe_payload(backend: Backend, nbytes: int) -> Any:
    """The array the probe sends: ``nbytes`` bytes on the device (CuPy) or the host (NumPy)."""
    if backend.on_gpu:
        import cupy

        return cupy.ones(nbytes, dtype=cupy.uint8)
    import numpy

    return numpy.ones(nbytes, dtype=numpy.uint8)


def payload_bytes(payload: Any) -> int:
    """What the receiving task does with the array: nothing but read its size."""
    return int(payload.nbytes)


def logged_transfer(key: str, *, dask_worker: Any) -> tuple[int, float] | None:
    """The bytes and seconds of the transfer that brought ``key`` to this worker, from its
    log (the newest first); ``None`` where it has none."""
    for entry in reversed(dask_worker.transfer_incoming_log):
        if key in entry["keys"]:
            return int(entry["total"]), float(entry["stop"] - entry["start"])
    return None
