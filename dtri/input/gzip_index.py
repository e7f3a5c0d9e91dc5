"""Seek points into gzip streams, so a large ``.gz`` edge list is read in blocks that each
decompress only their own stretch: linear work, where decompressing every block from the start
of the stream would be quadratic.

The read's planner decompresses each large gzip file once (:func:`build_index`, with
``indexed_gzip``: a seek point, the 32 KiB of text before it, every ``spacing`` bytes of text)
and gives each block only the seek point it starts from (:func:`points_for`, about 32 KiB
whatever the file's size); a block's task opens the file at that point (:func:`open_at`).

The points travel in ``indexed_gzip``'s export format (``GZIDX`` version 1): a header, the
points (compressed and uncompressed offsets, bit offset, whether a window follows), then the
windows. :func:`points_for` keeps the stream's first point and the last one at or before the
block's offset; where the format is not the one it knows, the whole index goes instead
(correct, only larger).
"""

from __future__ import annotations

import io
import struct
from bisect import bisect_right
from collections.abc import Sequence
from contextlib import contextmanager
from typing import IO, Any

from dtri.errors import InputError

MIN_SPACING = 1 << 20
"""Text bytes between seek points, at least (a block reads on from its point to its start)."""

_HEADER = struct.Struct("<5sBBQQIII")  # id, version, flags, sizes, spacing, window, points
_POINT = struct.Struct("<QQBB")  # compressed offset, text offset, bits, has a window
_ID, _VERSION = b"GZIDX", 1


def _errors() -> tuple[type[BaseException], ...]:
    """What ``indexed_gzip`` raises on a truncated or corrupt stream."""
    import indexed_gzip

    return (indexed_gzip.ZranError, EOFError, OSError)


def build_index(f: IO[bytes], name: str, spacing: int) -> tuple[int, bytes | None]:
    """Decompress the gzip stream of ``f`` once: its text size and its seek points, one every
    ``spacing`` bytes of text (at least :data:`MIN_SPACING`); ``(0, None)`` for a stream
    without text (``indexed_gzip`` never completes its index)."""
    import indexed_gzip

    try:
        stream = indexed_gzip.IndexedGzipFile(fileobj=f, spacing=max(spacing, MIN_SPACING))
        stream.build_full_index()
        try:
            size = stream.seek(0, io.SEEK_END)
        except indexed_gzip.NotCoveredError:  # an empty stream's index is never complete
            return 0, None
        exported = io.BytesIO()
        stream.export_index(fileobj=exported)
    except _errors() as error:
        raise InputError(f"the gzip stream is truncated or corrupt ({error})", name) from error
    return size, exported.getvalue()


def points_for(index: bytes, offsets: Sequence[int]) -> list[bytes]:
    """The seek points of ``index`` each block at a text offset of ``offsets`` needs: the
    first and the last at or before its offset (the whole index, for every block, if its
    format is not ``GZIDX`` version 1). The index is read once for all the blocks."""
    try:
        ident, version, flags, packed, text, spacing, window, count = _HEADER.unpack_from(index)
    except struct.error:
        return [index] * len(offsets)
    if ident != _ID or version != _VERSION:
        return [index] * len(offsets)
    points = [_POINT.unpack_from(index, _HEADER.size + i * _POINT.size) for i in range(count)]
    at, windows = _HEADER.size + count * _POINT.size, []
    for point in points:
        windows.append(index[at: at + window] if point[3] else b"")
        at += window if point[3] else 0
    if at != len(index) or not points:
        return [index] * len(offsets)
    starts = [point[1] for point in points]  # ascending text offsets, the first one 0
    chosen = []
    for offset in offsets:
        before = max(bisect_right(starts, offset) - 1, 0)
        keep = sorted({0, before})
        chosen.append(b"".join([_HEADER.pack(ident, version, flags, packed, text, spacing,
                                             window, len(keep)),
                                *(_POINT.pack(*points[i]) for i in keep),
                                *(windows[i] for i in keep)]))
    return chosen


@contextmanager
def open_at(f: IO[bytes], points: bytes, name: str) -> Any:
    """The text of the gzip stream of ``f`` as a seekable file, from ``points``
    (:func:`points_for`): seeking past them decompresses on from the last."""
    import indexed_gzip

    try:
        with indexed_gzip.IndexedGzipFile(fileobj=f, auto_build=True) as stream:
            stream.import_index(fileobj=io.BytesIO(points))
            yield stream
    except _errors() as error:
        if isinstance(error, OSError) and getattr(error, "errno", None):
            raise  # the file system's error, not the stream's
        raise InputError(f"the gzip stream is truncated or corrupt ({error})", name) from error
