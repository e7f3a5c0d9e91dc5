"""Compact forms of what crosses the network between workers: the wire format.

Three kinds of data travel, each with a packed form: **rows** (sorted adjacency, a degree per
row and its ascending targets: :func:`pack_rows`), **counts** (a vertex-wide array of
non-negative counts: :func:`pack_counts`) and **vertex sets** (marks or ascending ids:
:func:`pack_vertex_set`, :func:`pack_ascending`). The format is one of :data:`WIRE_FORMATS`:

* ``raw``: the arrays as they are;
* ``narrow``: each array in the smallest unsigned type that holds its values (a block's
  targets as local ids), marks as bits. Device arrays stay on the device (NVLink);
* ``zstd`` or ``lz4``: ``narrow``, each row's targets delta coded and the bytes of each value
  grouped by significance, then compressed on the host by Zstandard (level
  :data:`ZSTD_LEVEL`) or LZ4; a device array goes to the host and back.

A packed value is a plain tuple ``(WIRE_TAG, codec, header, *payloads)``, whose bytes the
transfer ledger (:mod:`dtri.runtime.transfers`) counts as they are sent. :func:`unpack` gives
back exactly what was packed; anything else passes through it unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dtri.kernels.dispatch import array_module, is_device_object, to_host

WIRE_TAG = "dtri-wire"
"""The first item of every packed value."""
WIRE_FORMATS = ("raw", "narrow", "zstd", "lz4")
"""The wire formats (the option adds ``auto``: :func:`dtri.runtime.session` decides)."""
ZSTD_LEVEL = 1
"""Zstandard's level: its fastest, which packed R-MAT 18's blocks to 1.2-1.3 bytes a target
against 1.2 at level 3, in a third of the time."""

NARROW_TYPES = (np.uint8, np.uint16, np.uint32, np.int64)
"""The types a narrowed array takes, the smallest that holds its values: past 32 bits a
signed type, which adds to int64 without turning into floats."""


def unsigned_for(largest: int) -> Any:
    """The smallest of :data:`NARROW_TYPES` that holds ``largest`` (at least 0)."""
    for kind in NARROW_TYPES:
        if largest <= np.iinfo(kind).max:
            return np.dtype(kind)
    raise ValueError(f"{largest} does not fit 63 bits")


def check_format(fmt: str) -> str:
    """``fmt`` if it is a wire format, else a ``ValueError`` naming them."""
    if fmt not in WIRE_FORMATS:
        raise ValueError(f"wire format must be one of {', '.join(WIRE_FORMATS)}, got {fmt!r}")
    return fmt


def is_packed(value: Any) -> bool:
    """Whether ``value`` is a packed value (:func:`unpack` undoes it)."""
    return (type(value) is tuple and len(value) >= 3 and isinstance(value[0], str)
            and value[0] == WIRE_TAG)


# ------------------------------------------------------------------------- bytes on the host

def _compress(codec: str, array: Any) -> bytes:
    """An array's bytes, grouped by significance (byte ``k`` of every value together: the
    high bytes of small values are runs of zeros), compressed on the host."""
    host = np.ascontiguousarray(to_host(array))
    width = host.dtype.itemsize
    data = host.view(np.uint8).reshape(-1, width).T.copy() if width > 1 and host.size \
        else host.view(np.uint8)
    if codec == "zstd":
        import zstandard

        return zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(data.tobytes())
    import lz4.frame

    return lz4.frame.compress(data.tobytes())


def _decompress(codec: str, payload: bytes, dtype: Any, length: int, device: bool) -> Any:
    """The array :func:`_compress` packed, on the device where it came from there."""
    dtype = np.dtype(dtype)
    if codec == "zstd":
        import zstandard

        raw = zstandard.ZstdDecompressor().decompress(payload,
                                                      max_output_size=length * dtype.itemsize)
    else:
        import lz4.frame

        raw = lz4.frame.decompress(payload)
    data = np.frombuffer(raw, dtype=np.uint8)
    width = dtype.itemsize
    if width > 1 and length:
        data = np.ascontiguousarray(data.reshape(width, length).T)
    host = data.view(dtype).reshape(length)
    if device:
        import cupy

        return cupy.asarray(host)
    return host.copy() if not host.flags.writeable else host


def _payload(codec: str, array: Any) -> Any:
    """One narrowed array as it travels: itself (``narrow``), or compressed."""
    return array if codec == "narrow" else _compress(codec, array)


def _array(codec: str, payload: Any, dtype: Any, length: int, device: bool) -> Any:
    """An array from :func:`_payload`."""
    return payload if codec == "narrow" else _decompress(codec, payload, dtype, length, device)


def _narrowed(values: Any) -> Any:
    """Non-negative integers in the smallest unsigned type that holds them."""
    xp = array_module(values)
    largest = int(values.max()) if values.shape[0] else 0
    return values.astype(xp.dtype(unsigned_for(largest).name), copy=False)


# ------------------------------------------------------------------------------------ rows

def row_offsets(degree: Any) -> Any:
    """The int64 offsets of rows of ``degree`` entries each (one more than the rows)."""
    xp = array_module(degree)
    offsets = xp.zeros(degree.shape[0] + 1, dtype=xp.int64)
    offsets[1:] = xp.cumsum(degree.astype(xp.int64))
    return offsets


def row_deltas(targets: Any, offsets: Any) -> Any:
    """Each row's targets (ascending within the row) as gaps: the first of a row as it is,
    the others as the gap to the one before (int64)."""
    xp = array_module(targets)
    wide = targets.astype(xp.int64)
    gaps = wide.copy()
    if gaps.shape[0] > 1:
        gaps[1:] -= wide[:-1]
    degree = offsets[1:] - offsets[:-1]
    starts = offsets[:-1][degree > 0]
    gaps[starts] = wide[starts]
    return gaps


def undo_row_deltas(gaps: Any, offsets: Any) -> Any:
    """The targets from :func:`row_deltas` (int64)."""
    xp = array_module(gaps)
    total = xp.cumsum(gaps.astype(xp.int64))
    if not total.shape[0]:
        return total
    degree = offsets[1:] - offsets[:-1]
    filled = degree > 0
    starts = offsets[:-1][filled]
    before = total[starts] - gaps[starts]  # the running sum before each row
    if not is_device_object(total):  # NumPy repeats by counts: one pass
        total -= xp.repeat(before, degree[filled])
        return total
    # CuPy's repeat takes no counts: each entry's row among the rows that have entries
    row = xp.searchsorted(offsets[1:][filled], xp.arange(total.shape[0]), side="right")
    return total - before[row]


def pack_rows(degree: Any, targets: Any, fmt: str) -> Any:
    """Rows of sorted targets as they travel (see the module docstring): ``degree`` per row
    (non-negative integers), ``targets`` grouped by row, ascending within each, non-negative.
    :func:`unpack_rows` gives back ``(degree, targets)``, in their own dtypes."""
    if check_format(fmt) == "raw":
        return degree, targets
    device = is_device_object(targets)
    header = (str(degree.dtype), str(targets.dtype), int(degree.shape[0]),
              int(targets.shape[0]), device)
    narrow_degree = _narrowed(degree)
    values = _narrowed(targets if fmt == "narrow" else row_deltas(targets, row_offsets(degree)))
    return (WIRE_TAG, fmt, ("rows", *header, str(narrow_degree.dtype), str(values.dtype)),
            _payload(fmt, narrow_degree), _payload(fmt, values))


def unpack_rows(value: Any) -> tuple[Any, Any]:
    """``(degree, targets)`` of :func:`pack_rows` (a ``raw`` pair passes through)."""
    if not is_packed(value):
        degree, targets = value
        return degree, targets
    _, codec, header, degree_payload, target_payload = value
    _, degree_type, target_type, rows, entries, device, narrow_degree, narrow_values = header
    degree = _array(codec, degree_payload, narrow_degree, rows, device)
    values = _array(codec, target_payload, narrow_values, entries, device)
    degree = degree.astype(degree_type)
    if codec != "narrow":
        values = undo_row_deltas(values, row_offsets(degree))
    return degree, values.astype(target_type)


# ---------------------------------------------------------------------------------- counts

def pack_counts(counts: Any, fmt: str) -> Any:
    """A vertex-wide array of non-negative integer counts as it travels; :func:`unpack`
    gives it back in its own dtype. Other arrays (floats) travel as they are under
    ``narrow``, and compressed as they are under ``zstd`` and ``lz4``."""
    if check_format(fmt) == "raw" or counts.ndim != 1:
        return counts
    integral = counts.dtype.kind in "iu" and (not counts.shape[0] or int(counts.min()) >= 0)
    values = _narrowed(counts) if integral else counts
    if fmt == "narrow" and values.dtype == counts.dtype:
        return counts
    header = ("counts", str(counts.dtype), int(counts.shape[0]), is_device_object(counts),
              str(values.dtype))
    return WIRE_TAG, fmt, header, _payload(fmt, values)


def _unpack_counts(codec: str, header: tuple, payload: Any) -> Any:
    _, dtype, length, device, narrow_type = header
    return _array(codec, payload, narrow_type, length, device).astype(dtype)


# ----------------------------------------------------------------- vertex sets, ascending ids

def pack_ascending(values: Any, fmt: str) -> Any:
    """Ascending integers (a vertex set's ids, a sample of sorted keys) as they travel: the
    first as it is, the rest as gaps, narrowed (and compressed)."""
    if check_format(fmt) == "raw":
        return values
    xp = array_module(values)
    length = int(values.shape[0])
    gaps = values.astype(xp.int64)
    if length > 1:
        gaps = gaps.copy()
        gaps[1:] -= values[:-1]
    narrow = _narrowed(gaps) if length and int(gaps.min()) >= 0 else gaps
    header = ("ascending", length, is_device_object(values), str(values.dtype),
              str(narrow.dtype))
    return WIRE_TAG, fmt, header, _payload(fmt, narrow)


def pack_vertex_set(vertices: Any, fmt: str) -> Any:
    """A vertex set (:func:`dtri.kernels.canonicalize.partition_vertices`: marks, or
    ascending int64 ids) as it travels: marks as bits, ids as gaps
    (:func:`pack_ascending`)."""
    if check_format(fmt) == "raw" or vertices.dtype.kind != "b":
        return pack_ascending(vertices, fmt)
    xp = array_module(vertices)
    length = int(vertices.shape[0])
    bits = (xp.packbits(vertices) if hasattr(xp, "packbits") else
            xp.asarray(np.packbits(to_host(vertices))))
    header = ("marks", length, is_device_object(vertices), int(bits.shape[0]))
    return WIRE_TAG, fmt, header, _payload(fmt, bits)


def _unpack_marks(codec: str, header: tuple, payload: Any) -> Any:
    _, length, device, nbytes = header
    bits = _array(codec, payload, np.uint8, nbytes, device)
    return array_module(bits).unpackbits(bits)[:length].astype(bool)


def _unpack_ascending(codec: str, header: tuple, payload: Any) -> Any:
    _, length, device, dtype, narrow_type = header
    gaps = _array(codec, payload, narrow_type, length, device)
    xp = array_module(gaps)
    return xp.cumsum(gaps.astype(xp.int64)).astype(dtype)


# ------------------------------------------------------------------------ the sort's pieces

def pack_sorted_keys(keys: Any, bits: int, low: int, high: int, fmt: str) -> Any:
    """Ascending oriented keys ``(src << bits) | dst`` whose sources lie in ``[low, high)``
    (a piece of the sort's exchange) as they travel: as rows (:func:`pack_rows`), a degree
    per source of the range and the targets of each, which need no source at all. ``raw``:
    the keys as they are."""
    if check_format(fmt) == "raw":
        return keys
    xp = array_module(keys)
    src = (keys >> bits) - low
    degree = (xp.bincount(src, minlength=high - low) if src.shape[0]
              else xp.zeros(high - low, dtype=xp.int64))
    return pack_rows(degree.astype(xp.int32), keys & ((1 << bits) - 1), fmt)


def unpack_sorted_keys(value: Any, bits: int, low: int) -> Any:
    """The int64 keys of :func:`pack_sorted_keys` (raw keys pass through)."""
    if not is_packed(value):
        return value
    degree, dst = unpack_rows(value)
    xp = array_module(dst)
    src = xp.repeat(xp.arange(low, low + degree.shape[0], dtype=xp.int64),
                    degree.astype(xp.int64)) if xp.__name__ == "numpy" else \
        xp.searchsorted(row_offsets(degree)[1:], xp.arange(dst.shape[0]), side="right") + low
    return (src << bits) | dst.astype(xp.int64)


# ---------------------------------------------------------------------------------- unpack

def unpack(value: Any) -> Any:
    """A packed count array or vertex set as it was (:func:`pack_counts`,
    :func:`pack_vertex_set`); rows unpack to ``(degree, targets)``; anything else as it
    is."""
    if not is_packed(value):
        return value
    codec, header = value[1], value[2]
    if header[0] == "rows":
        return unpack_rows(value)
    if header[0] == "counts":
        return _unpack_counts(codec, header, value[3])
    if header[0] == "marks":
        return _unpack_marks(codec, header, value[3])
    return _unpack_ascending(codec, header, value[3])


def packed_rows(value: Any) -> int:
    """The entries (targets) of rows packed by :func:`pack_rows` (or of a raw pair)."""
    return int(value[2][4]) if is_packed(value) else int(value[1].shape[0])


def packed_bytes(value: Any) -> int:
    """The bytes of a packed value's payloads (or of a plain array, or a tuple of them): what
    it costs on the wire, less Dask's few bytes of framing."""
    if isinstance(value, bytes):
        return len(value)
    if isinstance(value, tuple):
        items = value[3:] if is_packed(value) else value
        return sum(packed_bytes(item) for item in items)
    return int(getattr(value, "nbytes", 0))
