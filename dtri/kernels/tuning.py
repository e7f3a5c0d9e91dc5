"""The fitted constants of the kernels and of the runtime's models, and the one ``dask.config``
key that overrides them.

Each constant is declared beside the code that reads it, with how it was fitted. A user has no
reason to change one; a benchmark or a test does, to compare kernels, to re-fit a model or to
reach a code path.
It sets ``dtri.kernel-tuning``, a mapping from a constant's name to a value:
``dask.config.set({"dtri.kernel-tuning.hash-min-members": 1})``. :func:`tuned` reads it.
"""

from __future__ import annotations

from typing import TypeVar

from dask.utils import parse_bytes

KEY = "dtri.kernel-tuning"
"""``dask.config`` key: the overrides, by constant name (empty by default)."""

NAMES = ("hash-probes", "hash-min-members", "hash-probe-cost", "hash-piece-probes",
         "hash-warp-table-bits", "hash-slots-per-member", "hash-spread-max-bytes",
         "join-edge-cost-gpu", "join-edge-cost-cpu", "join-edge-cost-marks", "aorder-wave",
         "scaling-seconds-per-row", "scaling-bytes-per-row", "scaling-overhead-seconds",
         "scaling-resident-bytes-per-row", "in-process-gpu-bytes-per-row")
"""The constants that :data:`KEY` may override."""

T = TypeVar("T", bool, int, float)


def tuned(name: str, constant: T) -> T:
    """``constant``, the value of the kernel constant ``name``, unless :data:`KEY` overrides
    it. Raises :class:`~dtri.errors.ConfigurationError` for a name not in :data:`NAMES`."""
    import dask

    overrides = dask.config.get(KEY) or {}
    unknown = sorted(set(overrides) - set(NAMES))
    if unknown:
        from dtri.errors import ConfigurationError

        raise ConfigurationError(f"{KEY} has no constant {', '.join(unknown)}; "
                                 f"it has {', '.join(NAMES)}")
    if name not in overrides:
        return constant
    value = overrides[name]
    if isinstance(constant, bool):
        return str(value).lower() in ("1", "true", "yes", "on")
    if isinstance(value, str) and isinstance(constant, int):
        return type(constant)(parse_bytes(value))
    return type(constant)(value)
