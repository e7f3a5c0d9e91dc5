"""Radix bins: closure keys and edge keys split by their most significant bits.

A packed key is ``(v << bits) | w``; its top ``log2(nbins)`` bits are the top bits of ``v``,
so bin ``k`` of the wedges can only hit edges in bin ``k`` of the edges, and each join task
needs one bin of the edge set, never all of it. The split of a wedge batch is one stable MSD
radix pass (stable argsort of the bin digit, a true radix sort in NumPy for 16-bit digits and
in CuPy/CUB), which keeps the keys of each bin contiguous without a full sort.
"""

from __future__ import annotations

from typing import Any

from dtri.errors import ConfigurationError
from dtri.kernels.dispatch import array_module

MAX_BIN_BITS = 16


def key_bits(vertices: int) -> int:
    """Width of a vertex id (dense ids ``0 .. vertices - 1``) inside a packed 64-bit key."""
    return max(1, (vertices - 1).bit_length())


def bin_shift(bits: int, nbins: int) -> int:
    """Right shift that turns a packed key into its bin number."""
    return 2 * bits - (nbins.bit_length() - 1)


def pack_edges(src: Any, dst: Any, bits: int, *, copy: bool = True) -> Any:
    """Packed keys ``(src << bits) | dst``; sorted when the edges are sorted by (src, dst).

    Packed in place in one int64 array: a copy of ``src``, or ``src`` itself with
    ``copy=False`` (for a temporary int64 array the caller no longer needs)."""
    xp = array_module(src)
    keys = src.astype(xp.int64, copy=copy)
    keys <<= bits
    keys |= dst.astype(xp.int64, copy=False)
    return keys


def unpack_keys(keys: Any, bits: int) -> tuple[Any, Any]:
    """``(src, dst)`` of packed keys: the inverse of :func:`pack_edges`."""
    return keys >> bits, keys & ((1 << bits) - 1)


def radix_split(keys: Any, shift: int, nbins: int) -> dict[int, Any]:
    """Stable split of ``keys`` into bins by ``keys >> shift``; only non-empty bins are kept."""
    xp = array_module(keys)
    if keys.shape[0] == 0:
        return {}
    digit = (keys >> shift).astype(xp.uint16 if nbins <= 1 << 16 else xp.int64)
    order = xp.argsort(digit, kind="stable")
    bounds = xp.searchsorted(digit[order], xp.arange(nbins + 1), side="left").tolist()
    return {k: piece for k, piece in gathered_pieces(keys, order, bounds).items()
            if piece.shape[0]}


def choose_bin_count(edges: int, workers: int, task_budget: int, requested: int | None,
                     bits: int, share: int) -> int:
    """Number of radix bins: the requested power of two, or enough that one bin of the edge
    keys (8 bytes each) uses at most ``1 / share`` of a task's budget (the planner's share,
    :attr:`dtri.runtime.budget.TaskShares.edge_bin`) and, with several workers, four bins
    per worker, so that the scheduler can even out bins of unequal work."""
    limit = 1 << min(bits, MAX_BIN_BITS)
    if requested is not None:
        if requested < 1 or requested & (requested - 1):
            raise ValueError(f"bins must be a power of two, got {requested}")
        return min(requested, limit)
    wanted = max(4 * workers if workers > 1 else 1,
                 -(-edges * 8 * share // max(task_budget, 1)))
    return min(1 << (wanted - 1).bit_length(), limit)


MAX_KEY_BITS = 31
"""Widest dense vertex id: two of them fill a signed 64-bit key."""


def checked_key_bits(vertices: int) -> int:
    """:func:`key_bits`, refusing graphs whose packed keys cannot fit 64 bits."""
    bits = key_bits(vertices)
    if bits > MAX_KEY_BITS:
        raise ConfigurationError(
            f"{vertices} vertices need {bits}-bit ids; packed keys support up to 2**31 vertices"
        )
    return bits


def split_by_digit(values: Any, digit: Any, parts: int) -> dict[int, Any]:
    """``values`` cut into ``parts`` pieces: piece ``j`` holds those whose ``digit`` is ``j``,
    in their order. Every piece is present, possibly empty, so no receiver waits on a missing
    one. The digits are sorted as 8- or 16-bit integers, which NumPy and CuPy radix-sort in
    one or two passes (a 64-bit digit costs eight)."""
    xp = array_module(values)
    if parts == 1:
        return {0: values}
    small = xp.uint8 if parts <= 1 << 8 else xp.uint16 if parts <= 1 << 16 else xp.int64
    digit = digit.astype(small, copy=False)
    order = xp.argsort(digit, kind="stable")
    cuts = xp.searchsorted(digit[order], xp.arange(parts, dtype=small), side="left").tolist()
    cuts.append(int(values.shape[0]))
    return gathered_pieces(values, order, cuts)


def gathered_pieces(values: Any, order: Any, cuts: list[int]) -> dict[int, Any]:
    """``values[order]`` cut at ``cuts`` (ascending, from 0 to the length), each piece
    gathered into an array of its own rather than a view of one reordered array. A piece is
    stored, sent and spilled on its own: a view would keep the whole reordered array alive
    on the device (or in RAM) after the others are spilled or consumed, while Dask and
    dask-cuda count only the view's bytes, and under a memory cap that untracked memory runs
    the pool out."""
    return {j: values[order[cuts[j]: cuts[j + 1]]] for j in range(len(cuts) - 1)}


def split_by_bounds(values: Any, by: Any, bounds: list[int]) -> dict[int, Any]:
    """``values`` cut into ``len(bounds) - 1`` pieces by range: piece ``j`` holds those whose
    ``by`` lies in ``[bounds[j], bounds[j + 1])`` (ascending bounds covering every ``by``)."""
    xp = array_module(values)
    parts = len(bounds) - 1
    if parts == 1:
        return {0: values}
    digit = xp.searchsorted(xp.asarray(bounds[1:-1], dtype=xp.int64), by, side="right")
    return split_by_digit(values, digit, parts)
