"""Counter-based hashes: splitmix64's finaliser of ``uint64`` counters, with ``uint64`` array
arithmetic that wraps identically in NumPy and CuPy, so a hash is bit for bit the same on the
CPU and the GPU. The generators draw their edges from them (:mod:`dtri.input.generate`), the
colourful sampling its colours (:mod:`dtri.input.colours`) and the wedge sampling its wedges
(:mod:`dtri.kernels.sampling`)."""

from __future__ import annotations

from typing import Any

_MASK64 = (1 << 64) - 1
_GAMMA = 0x9E3779B97F4A7C15  # splitmix64's increment (the golden ratio in 64 bits)
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB


def splitmix64_int(x: int) -> int:
    """splitmix64's finaliser of one Python int (exact, modulo 2**64)."""
    z = (x + _GAMMA) & _MASK64
    z = ((z ^ (z >> 30)) * _MIX1) & _MASK64
    z = ((z ^ (z >> 27)) * _MIX2) & _MASK64
    return z ^ (z >> 31)


def splitmix64(xp: Any, x: Any) -> Any:
    """splitmix64's finaliser of a ``uint64`` array, for ``xp`` = ``numpy`` or ``cupy``.

    Only ``+``, ``*``, ``^`` and ``>>`` on ``uint64`` arrays and ``uint64`` scalars, which wrap
    modulo 2**64 in both libraries: the result is bit for bit the same on CPU and GPU.
    """
    u64 = xp.uint64
    z = x + u64(_GAMMA)
    z = (z ^ (z >> u64(30))) * u64(_MIX1)
    z = (z ^ (z >> u64(27))) * u64(_MIX2)
    return z ^ (z >> u64(31))


def stream_key(seed: int, stream: int, draw: int) -> int:
    """The 64-bit key of one stream of draws: a hash of (seed, stream tag, draw index)."""
    key = splitmix64_int(seed & _MASK64)
    key = splitmix64_int(key ^ (stream & _MASK64))
    return splitmix64_int(key ^ (draw & _MASK64))


def edge_hash(xp: Any, edges: Any, seed: int, stream: int, draw: int) -> Any:
    """``uint64`` hashes of (seed, stream, draw, e) for a ``uint64`` array of edge numbers e.

    Stream (seed, stream, draw) is splitmix64's own sequence started at its key: the hash of
    edge ``e`` is the finaliser of ``key + e * gamma``.
    """
    key = stream_key(seed, stream, draw)
    return splitmix64(xp, edges * xp.uint64(_GAMMA) + xp.uint64(key))
