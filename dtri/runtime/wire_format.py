"""The wire format of a run (:mod:`dtri.kernels.wire`), decided once with the run's
resources: what its workers pack before data crosses between them.

``dtri.wire-format`` in ``dask.config`` names it, or ``auto`` decides by where the data
lives and the link between the workers:

* CPU workers: ``zstd``. Packing costs host time on both ends, but a target crosses as
  1.2-1.3 bytes instead of 4 (R-MAT 18's 2D blocks), and links between nodes are 10-100
  Gb/s;
* GPU workers over UCX: ``narrow``. The arrays stay on the device and cross NVLink as they
  are, in their smallest integer types; compressing would copy them through the host;
* GPU workers over TCP: ``zstd``. TCP copies device arrays to the host to send them anyway;
* no cluster (a run in this process): ``raw``, since nothing crosses.
"""

from __future__ import annotations

import dask

from dtri.errors import ConfigurationError
from dtri.kernels.wire import WIRE_FORMATS
from dtri.options import Backend

WIRE_FORMAT = "dtri.wire-format"


def choose_wire_format(backend: Backend, protocol: str | None, in_process: bool,
                       requested: str | None = None) -> tuple[str, str]:
    """The wire format (one of :data:`~dtri.kernels.wire.WIRE_FORMATS`) of a run on
    ``backend`` whose workers talk over ``protocol`` (``None``: no cluster), and one line
    on why. ``requested`` defaults to ``dtri.wire-format``."""
    requested = str(dask.config.get(WIRE_FORMAT) if requested is None else requested)
    if requested != "auto":
        if requested not in WIRE_FORMATS:
            raise ConfigurationError(f"{WIRE_FORMAT} must be auto or one of "
                                     f"{', '.join(WIRE_FORMATS)}, got {requested!r}")
        return requested, f"{WIRE_FORMAT}={requested}"
    if in_process:
        return "raw", "auto: a run in this process moves nothing between workers"
    if not Backend(backend).on_gpu:
        return "zstd", "auto: CPU workers (narrowed, delta coded, Zstandard)"
    if protocol == "ucx":
        return "narrow", "auto: GPU workers over UCX (device arrays narrowed, not copied)"
    return "zstd", (f"auto: GPU workers over {protocol or 'TCP'} (copied to the host to "
                    "cross anyway: compressed there)")
