"""Read text edge lists (SNAP, CSV/TSV, Matrix Market), plain or compressed, in blocks.

Text files are cut into newline-aligned byte ranges, one task each, and parsed by a fast
parser: NumPy's ``loadtxt`` for small blocks (it needs no pandas, so a small in-process run
never imports it), pandas' C parser, about three times faster, for larger ones
(``dtri.read.numpy-parser-max-bytes`` in ``dask.config``). A block the fast parser does not
read cleanly is re-read line by line, so that a bad input is reported as ``path:line:
message`` rather than silently dropped, rounded or reinterpreted. :func:`parse_block_arrays`
gives a block as arrays (in-process runs), :func:`parse_block` as a frame. A truncated or
corrupt compressed stream, a Matrix Market entry outside the declared matrix and an entry
count other than the declared nnz are errors too.
"""

from __future__ import annotations

import csv
import functools
import io
import math
import re
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

import dask
import numpy as np
from dask.base import tokenize
from fsspec import AbstractFileSystem
from fsspec.utils import infer_compression, read_block

from dtri.errors import InputError
from dtri.input.edges import EdgeArrays
from dtri.input.gzip_index import build_index, open_at, points_for
from dtri.input.matrix_market import (
    MatrixShape,
    check_entry,
    check_entry_count,
    read_mtx_preamble,
    within,
)
from dtri.input.sources import INT64_MAX, edges_meta, open_text, resolve_columns
from dtri.input.text_lines import (
    BOM,
    PERCENT_TO_HASH,
    WHITESPACE,
    LineError,
    binary_hint,
    excerpt,
    first_data_line,
    looks_like_header,
    split_fields,
    strip_comment,
    vertex_id,
)
from dtri.kernels.dispatch import compiled_kernels_ready

if TYPE_CHECKING:
    import dask.dataframe as dd
    import pandas as pd


_CHUNK = 1 << 20
MIN_TEXT_BYTES_PER_EDGE = 4
"""The fewest bytes a line holding an edge can take (``"1 2\n"``): a text block of ``b`` bytes
holds at most ``b / 4`` edges."""
NUMPY_PARSER_MAX_BYTES = "dtri.read.numpy-parser-max-bytes"
"""``dask.config`` key: text blocks up to this many bytes are parsed by NumPy, larger ones by
pandas: below it NumPy's parser, slower per byte, costs less than importing pandas."""


@dataclass(frozen=True)
class Layout:
    """How the data lines of one text file split into fields, and what they must satisfy."""

    sep: str  # WHITESPACE, "," or "\t"
    comments: bytes  # characters that start a comment running to the end of the line
    usecols: tuple[int, int]  # 0-based positions of the source and target fields
    shape: MatrixShape | None = None  # Matrix Market: fields 0 and 1 lie in 1..rows, 1..cols


@dataclass(frozen=True)
class TextBlock:
    """One task's share of a text file: lines starting after ``offset``, for ``length`` bytes.

    Offsets count decompressed bytes.  Like ``fsspec.utils.read_block``, a block at offset 0
    starts at the first byte, any other at the byte after the first newline at or after its
    offset; it ends after the first newline at or after ``offset + length`` (``None``: at EOF).
    """

    fs: AbstractFileSystem
    path: str
    name: str  # the path as shown in errors
    compression: str | None
    offset: int
    length: int | None
    layout: Layout
    seek_points: bytes | None = None
    """A gzip file's seek points for this block (:mod:`dtri.input.gzip_index`): it decompresses
    from the last point before ``offset``, not from the start of the stream."""


def text_layout(
    fs: AbstractFileSystem,
    path: str,
    name: str,
    fmt: str,
    columns: tuple[str | int, str | int] | None,
    header: bool | None,
) -> tuple[Layout, int]:
    """The file's layout and the offset where its data lines start (after any header)."""
    compression = infer_compression(path)
    if fmt in ("snap", "mtx"):
        start, shape = 0, None
        if fmt == "mtx":
            with open_text(fs, path, name, compression) as f:
                start, shape = read_mtx_preamble(f, name)
        if columns is not None and not all(isinstance(c, int) for c in columns):
            raise InputError(f"{fmt} files have no column names; give 0-based positions", name)
        usecols = resolve_columns(columns, None, name)
        return Layout(WHITESPACE, b"#%", usecols, shape), start
    sep = "," if fmt == "csv" else "\t"
    names, start = None, 0
    if header is not False:
        with open_text(fs, path, name, compression) as f:
            line, _, end = first_data_line(f, sep, b"#")
        fields = [] if line is None else split_fields(strip_comment(line, b"#"), sep)
        if header or (header is None and looks_like_header(fields)):
            names, start = fields, end
    return Layout(sep, b"#", resolve_columns(columns, names, name)), start


# ---------------------------------------------------------------------------- planning blocks


def plan_text_file(
    fs: AbstractFileSystem, path: str, name: str, layout: Layout, start: int, blocksize: int
) -> list[TextBlock]:
    """Cut one file's data lines (from offset ``start``) into blocks, as read_edges describes."""
    compression = infer_compression(path)
    size = fs.size(path)
    if compression is not None and size == 0:  # an empty plain file is an empty graph
        raise InputError(f"the file is empty (0 bytes), not a {compression} stream: truncated "
                         "or never written", name)
    first = start - 1 if start > 0 else 0  # the header's newline, so data starts at `start`

    def block(k: int, length: int | None, points: bytes | None = None) -> TextBlock:
        offset = first + k * blocksize
        return TextBlock(fs, path, name, compression, offset, length, layout, points)

    if compression is None:
        count = max(1, math.ceil((size - first) / blocksize))
        return [block(k, blocksize) for k in range(count)]
    if size < blocksize / 4:
        return [block(0, None)]
    if compression == "gzip":  # decompressed once here; each block from its own seek point
        with fs.open(path, "rb") as f:
            text, index = build_index(f, name, blocksize)
        if index is None:
            return [block(0, None)]
        count = max(1, math.ceil((text - first) / blocksize))
        points = points_for(index, [first + k * blocksize for k in range(count)])
        return [block(k, blocksize, points[k]) for k in range(count)]
    count = math.ceil(4 * size / blocksize)
    return [block(k, blocksize if k < count - 1 else None) for k in range(count)]


# ---------------------------------------------------------------------------- reading blocks


def _skip(f: IO[bytes], count: int) -> bool:
    """Read and drop ``count`` bytes; False when the stream ends first."""
    while count > 0:
        chunk = f.read(min(count, _CHUNK))
        if not chunk:
            return False
        count -= len(chunk)
    return True


def _split_after_newline(f: IO[bytes], data: bytes, at: int) -> tuple[bytes, bytes]:
    """Read on until ``data`` has a newline at index >= at; split just after it (or at EOF)."""
    search = at
    while (i := data.find(b"\n", search)) < 0:
        chunk = f.read(_CHUNK)
        if not chunk:
            return data, b""
        search, data = max(len(data), at), data + chunk
    return data[: i + 1], data[i + 1 :]


def _read_stream_block(f: IO[bytes], offset: int, length: int | None) -> bytes:
    """``read_block(f, offset, length, b"\\n")`` for a stream read only forward (decompressing)."""
    if not _skip(f, offset):
        return b""
    data, start = b"", offset
    if offset > 0:
        head, data = _split_after_newline(f, b"", 0)
        if not head.endswith(b"\n"):
            return b""
        start = offset + len(head)
    if length is None:
        return data + f.read()
    want = offset + length - start  # the block ends at the first newline at index >= want
    if want < 0 or offset + length == 0:
        return b""
    while len(data) < want and (chunk := f.read(want - len(data))):
        data += chunk
    return _split_after_newline(f, data, want)[0]


def _read_block_bytes(block: TextBlock) -> bytes:
    if block.seek_points is not None:
        with block.fs.open(block.path, "rb") as raw, \
                open_at(raw, block.seek_points, block.name) as f:
            # from the byte before the offset: its line, if it ends there, is not this block's
            f.seek(max(block.offset - 1, 0))
            return _read_stream_block(f, min(block.offset, 1), block.length)
    with open_text(block.fs, block.path, block.name, block.compression) as f:
        if block.compression is None:
            return read_block(f, block.offset, block.length, delimiter=b"\n")
        return _read_stream_block(f, block.offset, block.length)


def _first_line_number(block: TextBlock) -> int:
    """1-based line number of the block's first line: counts newlines, so used on errors only."""
    if block.offset == 0:
        return 1
    newlines, left = 0, block.offset
    with open_text(block.fs, block.path, block.name, block.compression) as f:
        while left > 0 and (chunk := f.read(min(left, _CHUNK))):
            newlines, left = newlines + chunk.count(b"\n"), left - len(chunk)
    return newlines + 2  # the block starts after the first newline at or after its offset


# ---------------------------------------------------------------------------- parsing blocks


def _valid_ids(column: Any) -> bool:
    kind = column.dtype.kind
    if kind == "i":
        return len(column) == 0 or column.min() >= 0
    return kind == "u" and (len(column) == 0 or column.max() <= INT64_MAX)


def _columns_numpy(data: bytes, layout: Layout, usecols: list[int]) -> list[Any]:
    """The columns ``usecols`` of a block, by NumPy's ``loadtxt``."""
    if not _data_line(layout.comments).search(data):
        # comments and blank lines only: no edge (loadtxt would warn "input contained no
        # data"; a filter around it would change the warning filters of every thread)
        return [np.empty(0, dtype=np.int64) for _ in usecols]
    whitespace = layout.sep == WHITESPACE
    # only the comment characters the block holds: NumPy's C parser takes one (or none),
    # and several send every line through a Python filter (ca-HepTh: 38 ms against 12 ms)
    comments = [chr(c) for c in layout.comments if c in data]
    table = np.loadtxt(io.BytesIO(data), dtype=np.int64, ndmin=2, usecols=usecols,
                       delimiter=None if whitespace else layout.sep,
                       comments=comments[0] if len(comments) == 1 else comments or None,
                       quotechar=None if whitespace else '"', encoding="utf-8")
    return [table[:, k] for k in range(len(usecols))]


@functools.cache
def _data_line(comments: bytes) -> re.Pattern[bytes]:
    """A line whose first character after blanks starts neither a comment nor the line's
    end: a line that holds data."""
    return re.compile(rb"^[ \t\r\f\v]*[^" + re.escape(comments) + rb" \t\r\f\v\n]", re.M)


def _columns_pandas(data: bytes, layout: Layout, usecols: list[int]) -> list[Any]:
    """The columns ``usecols`` of a block, by pandas' C parser."""
    import pandas as pd

    if layout.sep == WHITESPACE:
        data = data.translate(PERCENT_TO_HASH)
    table = pd.read_csv(
        io.BytesIO(data),
        sep=r"\s+" if layout.sep == WHITESPACE else layout.sep,
        header=None,
        usecols=usecols,
        comment="#",
        lineterminator="\n",
        quoting=csv.QUOTE_NONE if layout.sep == WHITESPACE else csv.QUOTE_MINIMAL,
        engine="c",
    )
    return [table[k].to_numpy() for k in usecols]


_PLAIN_BYTES = bytes(b for b in range(256) if b < 0x80 and b not in b"\v\f\x1c\x1d\x1e\x1f")
_BEYOND_ASCII = bytes(range(0x80, 0x100))
_UNICODE_SPACE = re.compile(
    rb"\xc2[\x85\xa0]|\xe1\x9a\x80|\xe2\x80[\x80-\x8a\xa8\xa9\xaf]|\xe2\x81\x9f|\xe3\x80\x80")
"""The UTF-8 of the characters besides ASCII that Python (and NumPy's parser) take for
whitespace."""


def _blanks_are_plain(data: bytes) -> bool:
    """Whether a block's only blanks are those the exact parser knows (space, tab, a CR
    before LF): NumPy's parser also splits fields at any other whitespace (``\\v``, ``\\f``,
    ``\\x1c``-``\\x1f``, Unicode spaces) and pandas' at a CR inside a line, lines the exact
    parser refuses. Costs a pass or two over the block in C; a regular expression only over
    a block that holds bytes beyond ASCII."""
    returns = data.count(b"\r")
    if returns and returns != data.count(b"\r\n"):
        return False
    other = data.translate(None, _PLAIN_BYTES)
    if not other:
        return True
    if other.translate(None, _BEYOND_ASCII):  # \v, \f, \x1c-\x1f
        return False
    return not _UNICODE_SPACE.search(data)


def _parse_fast(data: bytes, layout: Layout) -> tuple[Any, Any] | None:
    """``src, dst`` int64 arrays by a fast parser: numba's one pass over whitespace-separated
    digits (:func:`dtri.kernels.parse.parse_id_pairs`, where numba's kernels are loaded),
    else NumPy's for small blocks, pandas' otherwise (:data:`NUMPY_PARSER_MAX_BYTES`); None
    when the result is anything but clean
    non-negative ids (and, for Matrix Market, entries inside the declared shape), or the
    block has blanks the fast parsers read otherwise than the exact one
    (:func:`_blanks_are_plain`)."""
    if layout.sep == WHITESPACE and layout.shape is None and \
            compiled_kernels_ready(len(data) // MIN_TEXT_BYTES_PER_EDGE):
        from dtri.kernels.parse import parse_id_pairs

        comments = (*layout.comments, *layout.comments)[:2]
        src, dst, clean = parse_id_pairs(np.frombuffer(data, dtype=np.uint8), *layout.usecols,
                                         *comments)
        if clean:
            return src, dst
    if not _blanks_are_plain(data):
        return None
    shape = layout.shape
    usecols = sorted({*layout.usecols, *((0, 1) if shape is not None else ())})
    small = len(data) <= dask.config.get(NUMPY_PARSER_MAX_BYTES)
    try:
        parsed = (_columns_numpy if small else _columns_pandas)(data, layout, usecols)
    except Exception:  # any trouble at all: the exact parser says what it is
        return None
    table = dict(zip(usecols, parsed, strict=True))
    src, dst = (table[c] for c in layout.usecols)
    if not (_valid_ids(src) and _valid_ids(dst)):
        return None
    if shape is not None and not (within(table[0], shape.rows) and within(table[1], shape.cols)):
        return None  # the exact parser finds the entry and its line
    return src.astype(np.int64, copy=False), dst.astype(np.int64, copy=False)


def _edge(line: bytes, layout: Layout) -> tuple[int, int] | None:
    """The (source, target) of one line; None for blank and comment lines."""
    fields = split_fields(strip_comment(line, layout.comments), layout.sep)
    if not fields:
        return None
    i, j = layout.usecols
    text = excerpt(line)
    if len(fields) <= max(i, j):
        wanted = "two" if (i, j) == (0, 1) else str(max(i, j) + 1)
        raise LineError(f"expected at least {wanted} columns (source and target), got {text}")
    if layout.shape is not None:  # fields has two or more: max(i, j) >= 1
        check_entry(fields, text, layout.shape)
    return vertex_id(fields[i], text), vertex_id(fields[j], text)


def _parse_exact(data: bytes, block: TextBlock) -> tuple[Any, Any]:
    """Line by line: the right rows, or an InputError for the first bad line."""
    edges = []
    data = data.removeprefix(BOM) if block.offset == 0 else data
    for index, line in enumerate(data.split(b"\n")):
        try:
            edge = _edge(line, block.layout)
        except LineError as error:
            if block.seek_points is not None:
                _check_stream_end(block)  # a cut-short stream, not the line, is the trouble
            hint = binary_hint(line, block.offset == 0 and index == 0)
            message = str(error) if hint is None else f"{error}; {hint}"
            raise InputError(message, block.name, _first_line_number(block) + index) from None
        if edge is not None:
            edges.append(edge)
    ids = np.array(edges, dtype=np.int64).reshape(-1, 2)
    return ids[:, 0].copy(), ids[:, 1].copy()


def parse_block_arrays(block: TextBlock) -> EdgeArrays:
    """Read and parse one block into int64 ``src``, ``dst`` arrays."""
    data = _read_block_bytes(block)
    parsed = _parse_fast(data, block.layout)
    return EdgeArrays(*(parsed if parsed is not None else _parse_exact(data, block)))


def parse_block(block: TextBlock) -> pd.DataFrame:
    """Read and parse one block into an int64 ``src``/``dst`` frame (a from_map task)."""
    import pandas as pd

    edges = parse_block_arrays(block)
    return pd.DataFrame({"src": edges.src, "dst": edges.dst})


# ---------------------------------------------------------------------------- entry counts


def _file_ranges(blocks: tuple[TextBlock, ...]) -> list[range]:
    """The blocks of each file, as index ranges: a file's blocks are consecutive, at increasing
    offsets (so a file listed twice in a row is two files)."""
    starts = [
        k
        for k, block in enumerate(blocks)
        if k == 0
        or (block.path, block.name) != (blocks[k - 1].path, blocks[k - 1].name)
        or block.offset <= blocks[k - 1].offset
    ]
    return [range(a, b) for a, b in zip(starts, [*starts[1:], len(blocks)], strict=True)]


def _check_stream_end(block: TextBlock) -> None:
    """Raise when a gzip file read by seek points is truncated or corrupt: its blocks read
    only their own stretches, and a stream cut short ends without an error there."""
    with open_text(block.fs, block.path, block.name, block.compression) as f:
        while f.read(_CHUNK):
            pass


def _after_check(part: Any, check: None) -> Any:
    """A block's partition, once its file's entry count is checked (the check is a
    dependency)."""
    return part


def checked_blocks(blocks: tuple[TextBlock, ...], parse: Any = parse_block) -> list[Any]:
    """``parse`` of each block as a delayed partition (a frame, or with
    :func:`parse_block_arrays` arrays), each Matrix Market file's entries counted against its
    nnz in the same graph, reading each block once: the block tasks parse, one check task per
    file sums its blocks' row counts, and each partition of that file is its block passed on
    once the check has run, so any compute of a partition raises a wrong count. A gzip file
    read by seek points is checked likewise, by one task that decompresses it to its end
    (beside the blocks, not before them)."""
    token = tokenize(blocks, parse)
    parsed = [
        dask.delayed(parse)(block, dask_key_name=(f"read-edges-parse-{token}", k))
        for k, block in enumerate(blocks)
    ]
    parts = list(parsed)
    for f, members in enumerate(_file_ranges(blocks)):
        first = blocks[members[0]]
        if first.layout.shape is not None:
            rows = [dask.delayed(len)(parsed[k], dask_key_name=(f"read-edges-rows-{token}", k))
                    for k in members]
            check = dask.delayed(check_entry_count)(
                first.name, first.layout.shape.nnz, rows,
                dask_key_name=(f"read-edges-check-{token}", f),
            )
        elif first.seek_points is not None:
            check = dask.delayed(_check_stream_end)(
                first, dask_key_name=(f"read-edges-check-{token}", f))
        else:
            continue
        for k in members:
            parts[k] = dask.delayed(_after_check)(
                parsed[k], check, dask_key_name=(f"read-edges-checked-{token}", k)
            )
    return parts


def counted_collection(blocks: tuple[TextBlock, ...]) -> dd.DataFrame:
    """The frame of :func:`checked_blocks`."""
    import dask.dataframe as dd

    return dd.from_delayed(checked_blocks(blocks), meta=edges_meta(), verify_meta=False,
                           prefix="read-edges")
