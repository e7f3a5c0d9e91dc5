"""Read edge lists (SNAP text, CSV/TSV, Matrix Market, Parquet) into a lazy Dask DataFrame.

Every reader yields exactly two int64 columns, ``src`` and ``dst``, holding the vertex ids as
written in the file.  Text files are cut into newline-aligned byte ranges, one task each, and
parsed by a fast parser: NumPy's ``loadtxt`` for small blocks (it needs no pandas, so a small
in-process run never imports it), pandas' C parser, about three times faster, for larger ones
(``dtri.read.numpy-parser-max-bytes`` in ``dask.config``). A block the fast parser does not
read cleanly is re-read line by line, so that a bad input is reported as ``path:line:
message`` rather than silently dropped, rounded or reinterpreted. :func:`parse_block_arrays`
gives a block as arrays (in-process runs), :func:`read_edges` the read as a Dask DataFrame.
A truncated or corrupt compressed stream, a Matrix Market entry outside the declared matrix
and an entry count other than the declared nnz are errors too.
"""

from __future__ import annotations

import csv
import functools
import gzip
import io
import itertools
import lzma
import math
import os
import re
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, cast

import dask
import numpy as np
from dask.base import tokenize
from dask.utils import parse_bytes
from fsspec import AbstractFileSystem
from fsspec.core import has_magic, url_to_fs
from fsspec.utils import infer_compression, read_block

import dtri.config  # noqa: F401 (registers the dtri.* defaults of dask.config)
from dtri.errors import ConfigurationError, InputError, InputNotFoundError
from dtri.input.edges import EdgeArrays
from dtri.input.gzip_index import build_index, open_at, points_for
from dtri.kernels.dispatch import compiled_kernels_loaded

if TYPE_CHECKING:
    import dask.dataframe as dd
    import pandas as pd

FORMATS: tuple[str, ...] = ("snap", "csv", "tsv", "mtx", "parquet")
BACKENDS: tuple[str, ...] = ("pandas", "cudf")
INT64_MAX = 2**63 - 1
WHITESPACE = "whitespace"

_EXTENSIONS = {".mtx": "mtx", ".csv": "csv", ".tsv": "tsv", ".parquet": "parquet", ".pq": "parquet"}
_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)
_BLANKS = re.compile(rb"[ \t]+")
_PERCENT_TO_HASH = bytes.maketrans(b"%", b"#")
_BOM = b"\xef\xbb\xbf"  # a UTF-8 byte order mark, which pandas also skips
_CHUNK = 1 << 20
MIN_TEXT_BYTES_PER_EDGE = 4
"""The fewest bytes a line holding an edge can take (``"1 2\n"``): a text block of ``b`` bytes
holds at most ``b / 4`` edges."""
NUMPY_PARSER_MAX_BYTES = "dtri.read.numpy-parser-max-bytes"
"""``dask.config`` key: text blocks up to this many bytes are parsed by NumPy, larger ones by
pandas: below it NumPy's parser, slower per byte, costs less than importing pandas."""


def _meta() -> pd.DataFrame:
    """The empty ``src, dst`` frame a read's Dask DataFrame describes itself with."""
    import pandas as pd

    return pd.DataFrame({"src": np.empty(0, np.int64), "dst": np.empty(0, np.int64)})


@dataclass(frozen=True)
class MatrixShape:
    """The size line ``rows cols nnz`` of a Matrix Market file."""

    rows: int
    cols: int
    nnz: int  # the number of entry lines


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


class _LineError(Exception):
    """A bad data line; the caller adds the path and line number."""


# ---------------------------------------------------------------------------- finding files


def _display_name(fs: AbstractFileSystem, path: str) -> str:
    protocols = fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)
    return path if "file" in protocols else fs.unstrip_protocol(path)


def _hidden(relative: str) -> bool:
    return any(part.startswith((".", "_")) for part in relative.split("/"))


def _directory_files(fs: AbstractFileSystem, path: str) -> list[str]:
    """Regular files under a directory, sorted, skipping names that start with '.' or '_'."""
    root = path.rstrip("/") + "/"
    found = fs.find(path, withdirs=False, detail=True)
    return sorted(
        p
        for p, info in found.items()
        if info.get("type") == "file" and not _hidden(p[len(root) :] if p.startswith(root) else p)
    )


def _files_at(fs: AbstractFileSystem, path: str) -> list[str]:
    if fs.isfile(path):
        return [path]
    if fs.isdir(path):
        return _directory_files(fs, path)
    if not has_magic(path):
        return []
    files: list[str] = []
    for match, info in sorted(fs.glob(path, detail=True).items()):
        if info.get("type") == "directory":
            files.extend(_directory_files(fs, match))
        else:
            files.append(match)
    return files


def filesystem(url: str, storage_options: dict | None = None
               ) -> tuple[AbstractFileSystem, str]:
    """fsspec's file system of ``url`` and the path in it; a protocol whose package is not
    installed is one line naming the package (fsspec raises an ``ImportError`` deep in a
    traceback)."""
    try:
        return url_to_fs(url, **(storage_options or {}))
    except ImportError as error:
        from fsspec.registry import known_implementations

        protocol = url.split("://", 1)[0] if "://" in url else "file"
        module = known_implementations.get(protocol, {}).get("class", "").split(".")[0]
        install = f" (pip install {module})" if module and module != "fsspec" else ""
        raise ConfigurationError(f"{url}: {protocol}:// needs a package that is not "
                                 f"installed: {error}{install}") from None


def expand_paths(
    urlpath: str | os.PathLike | list[str], storage_options: dict | None = None
) -> list[tuple[AbstractFileSystem, str, str]]:
    """(filesystem, path, display name) of every file a path, glob, directory or list names."""
    items = list(urlpath) if isinstance(urlpath, list | tuple) else [urlpath]
    found: list[tuple[AbstractFileSystem, str, str]] = []
    for item in [os.fspath(given) for given in items]:
        fs, path = filesystem(item, storage_options)
        files = _files_at(fs, path)
        if not files:
            raise InputNotFoundError("no such file or no files match", path=item)
        found.extend((fs, p, item if p == path else _display_name(fs, p)) for p in files)
    return found


# ---------------------------------------------------------------------------- formats


def _format_from_name(path: str) -> str | None:
    name = path.rstrip("/").lower()
    if infer_compression(name) is not None:
        name = os.path.splitext(name)[0]
    return _EXTENSIONS.get(os.path.splitext(name)[1])


def detect_format(path: str | os.PathLike, storage_options: dict | None = None) -> str:
    """Guess a format from the file name (after .gz/.bz2); a directory of parquet files is
    'parquet'; anything unrecognised is 'snap', the plain whitespace-separated edge list."""
    path = os.fspath(path)
    by_name = _format_from_name(path)
    if by_name is not None:
        return by_name
    fs, fspath = filesystem(path, storage_options)
    if fs.isdir(fspath) and any(
        _format_from_name(p) == "parquet" for p in _directory_files(fs, fspath)
    ):
        return "parquet"
    return "snap"


# ---------------------------------------------------------------------------- opening files


def _corrupt_stream(error: BaseException) -> bool:
    """True for the errors a decompressor raises on a truncated or corrupt stream: EOFError
    (gzip, bz2, xz cut short), zlib/lzma/zip errors, BadGzipFile, and bz2's bare OSError("Invalid
    data stream"), which unlike a file system's OSError has no errno."""
    if isinstance(error, EOFError | zlib.error | lzma.LZMAError | zipfile.BadZipFile):
        return True
    return isinstance(error, gzip.BadGzipFile) or (type(error) is OSError and not error.errno)


@contextmanager
def _open_text(
    fs: AbstractFileSystem, path: str, name: str, compression: str | None
) -> Iterator[IO[bytes]]:
    """Open a file to read, decompressing.  A truncated or corrupt stream, met anywhere in the
    ``with`` body, raises an InputError naming the file (a bare EOFError would reach the user
    as click's "Aborted!"); every other error passes unchanged."""
    try:
        with fs.open(path, "rb", compression=compression) as f:
            yield f
    except (EOFError, OSError, zlib.error, lzma.LZMAError, zipfile.BadZipFile) as error:
        if compression is None or not _corrupt_stream(error):
            raise
        message = f"the {compression} stream is truncated or corrupt ({error})"
        raise InputError(message, name) from error


# ---------------------------------------------------------------------------- file preambles


def _strip_comment(line: bytes, comments: bytes) -> bytes:
    """The line up to its first comment character (b"#", or b"#%" where '%' also comments)."""
    marked = line.translate(_PERCENT_TO_HASH) if b"%" in comments else line
    cut = marked.find(b"#")
    return line if cut < 0 else line[:cut]


def _decode(line: bytes) -> str:
    return line.decode("utf-8", "backslashreplace").rstrip("\r\n")


EXCERPT_CHARS = 40
"""The most characters of a line, or of a field, that an error shows."""

_MAGIC = {b"PAR1": "a Parquet file: give --format parquet (format='parquet' in Python)",
          b"\x1f\x8b": "gzip data: name the file *.gz",
          b"BZh": "bz2 data: name the file *.bz2",
          b"\xfd7zXZ\x00": "xz data: name the file *.xz",
          b"PK\x03\x04": "a zip file: name it *.zip"}
"""What a file is by its first bytes, and how to read it."""


def _shown_char(char: str) -> str:
    """One character of an excerpt: itself if printable, else escaped (an undecodable byte
    as ``\\xNN``)."""
    if "\udc80" <= char <= "\udcff":  # a byte that is not UTF-8 (surrogateescape)
        return f"\\x{ord(char) - 0xDC00:02x}"
    return char if char.isprintable() else char.encode("unicode_escape").decode("ascii")


def _excerpt(text: bytes | str, quote: str = "'") -> str:
    """A line or field as an error shows it: at most :data:`EXCERPT_CHARS` characters, what is
    not printable text escaped, quoted, and ``...`` after a longer one."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "surrogateescape")
    text = text.strip(" \t\r\n")
    shown = "".join(map(_shown_char, text[:EXCERPT_CHARS]))
    return f"{quote}{shown}{quote}{'...' if len(text) > EXCERPT_CHARS else ''}"


def _binary_hint(line: bytes, first: bool) -> str | None:
    """What to do about a line that is not text (the first line of a file: by its magic
    bytes), or ``None`` for a line of text."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and all(c.isprintable() or c in "\t\r\n\f\v" for c in text):
        return None
    for magic, what in _MAGIC.items():
        if first and line.startswith(magic):
            return f"binary data, not text: this looks like {what}"
    return ("binary data, not text: is this a Parquet or compressed file? give --format "
            "parquet, or name a compressed file by its extension (.gz, .bz2, .xz, .zip)")


def _first_data_line(
    f: IO[bytes], sep: str, comments: bytes, lineno: int = 0, pos: int = 0
) -> tuple[bytes | None, int, int]:
    """Read on to the first line that is neither blank nor a comment.

    Returns (that line or None at EOF, its 1-based number, the offset just after it).
    """
    for line in iter(f.readline, b""):
        lineno, pos = lineno + 1, pos + len(line)
        line = line.removeprefix(_BOM) if lineno == 1 else line
        if _split_fields(_strip_comment(line, comments), sep):
            return line, lineno, pos
    return None, lineno, pos


def _split_fields(body: bytes, sep: str) -> list[str]:
    """Fields of a line whose comment is already cut off; [] for a blank line."""
    body = body.removesuffix(b"\n").removesuffix(b"\r")
    if not body.strip(b" \t"):
        return []
    if sep == WHITESPACE:
        return [_decode(t) for t in _BLANKS.split(body.strip(b" \t"))]
    row = next(csv.reader([body.decode("utf-8", "surrogateescape")], delimiter=sep))
    return [field.strip(" \t") for field in row]


def _read_mtx_preamble(f: IO[bytes], name: str) -> tuple[int, MatrixShape | None]:
    """Check the Matrix Market banner and size line; return the offset of the first entry and
    the declared shape (None when the file ends before a size line: no entries either)."""
    banner = f.readline()
    words = _decode(banner.removeprefix(_BOM)).lower().split()
    if not words or words[0] != "%%matrixmarket" or len(words) < 4 or words[1] != "matrix":
        raise InputError("expected a '%%MatrixMarket matrix coordinate ...' first line", name, 1)
    if words[2] != "coordinate":
        raise InputError(
            f"Matrix Market format {_excerpt(words[2])} is not supported, only 'coordinate' "
            "(a dense 'array' matrix is not an edge list)",
            name,
            1,
        )
    line, lineno, pos = _first_data_line(f, WHITESPACE, b"#%", lineno=1, pos=len(banner))
    if line is None:
        return pos, None
    size = _split_fields(_strip_comment(line, b"#%"), WHITESPACE)
    if len(size) != 3 or not all(_INTEGER.fullmatch(s) and int(s) >= 0 for s in size):
        raise InputError(
            f"expected a size line 'rows cols nnz' (non-negative integers), got {_excerpt(line)}",
            name,
            lineno,
        )
    rows, cols, nnz = map(int, size)
    return pos, MatrixShape(rows, cols, nnz)


def _looks_like_header(fields: list[str]) -> bool:
    """True when every field is a non-empty name that does not parse as a number."""

    def numeric(field: str) -> bool:
        try:
            float(field)
        except ValueError:
            return False
        return True

    return bool(fields) and all(field and not numeric(field) for field in fields)


def _resolve_columns(
    columns: tuple[str | int, str | int] | None, header: list[str] | None, name: str
) -> tuple[int, int]:
    """0-based positions of the source and target columns."""
    if columns is None:
        return (0, 1)
    if len(columns) != 2:
        raise InputError(f"columns must name exactly two columns, got {columns!r}", name)
    positions = []
    for column in columns:
        if isinstance(column, int):
            if column < 0:
                raise InputError(f"column positions are 0-based, got {column}", name)
            positions.append(column)
        elif header is None:
            raise InputError(f"column {column!r} given by name, but the file has no header", name)
        elif column not in header:
            raise InputError(f"no column {column!r}; the columns are {header}", name)
        else:
            positions.append(header.index(column))
    if positions[0] == positions[1]:
        raise InputError(f"source and target are the same column {columns!r}", name)
    return (positions[0], positions[1])


def _text_layout(
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
            with _open_text(fs, path, name, compression) as f:
                start, shape = _read_mtx_preamble(f, name)
        if columns is not None and not all(isinstance(c, int) for c in columns):
            raise InputError(f"{fmt} files have no column names; give 0-based positions", name)
        usecols = _resolve_columns(columns, None, name)
        return Layout(WHITESPACE, b"#%", usecols, shape), start
    sep = "," if fmt == "csv" else "\t"
    names, start = None, 0
    if header is not False:
        with _open_text(fs, path, name, compression) as f:
            line, _, end = _first_data_line(f, sep, b"#")
        fields = [] if line is None else _split_fields(_strip_comment(line, b"#"), sep)
        if header or (header is None and _looks_like_header(fields)):
            names, start = fields, end
    return Layout(sep, b"#", _resolve_columns(columns, names, name)), start


# ---------------------------------------------------------------------------- planning blocks


def _plan_text_file(
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
    with _open_text(block.fs, block.path, block.name, block.compression) as f:
        if block.compression is None:
            return read_block(f, block.offset, block.length, delimiter=b"\n")
        return _read_stream_block(f, block.offset, block.length)


def _first_line_number(block: TextBlock) -> int:
    """1-based line number of the block's first line: counts newlines, so used on errors only."""
    if block.offset == 0:
        return 1
    newlines, left = 0, block.offset
    with _open_text(block.fs, block.path, block.name, block.compression) as f:
        while left > 0 and (chunk := f.read(min(left, _CHUNK))):
            newlines, left = newlines + chunk.count(b"\n"), left - len(chunk)
    return newlines + 2  # the block starts after the first newline at or after its offset


# ---------------------------------------------------------------------------- parsing blocks


def _valid_ids(column: Any) -> bool:
    kind = column.dtype.kind
    if kind == "i":
        return len(column) == 0 or column.min() >= 0
    return kind == "u" and (len(column) == 0 or column.max() <= INT64_MAX)


def _within(column: Any, size: int) -> bool:
    """True when every value is an integer in 1..size (Matrix Market indices are 1-based)."""
    if column.dtype.kind not in "iu":
        return False
    return len(column) == 0 or (int(column.min()) >= 1 and int(column.max()) <= size)


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
        data = data.translate(_PERCENT_TO_HASH)
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
    digits (:func:`dtri.kernels.parse.parse_id_pairs`, in a process that has loaded numba's
    kernels; about a tenth of NumPy's time), else NumPy's for small blocks, pandas'
    otherwise (:data:`NUMPY_PARSER_MAX_BYTES`); None when the result is anything but clean
    non-negative ids (and, for Matrix Market, entries inside the declared shape), or the
    block has blanks the fast parsers read otherwise than the exact one
    (:func:`_blanks_are_plain`)."""
    if layout.sep == WHITESPACE and layout.shape is None and compiled_kernels_loaded():
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
    if shape is not None and not (_within(table[0], shape.rows) and _within(table[1], shape.cols)):
        return None  # the exact parser finds the entry and its line
    return src.astype(np.int64, copy=False), dst.astype(np.int64, copy=False)


def _not_ids(line: str) -> _LineError:
    return _LineError(f"expected two non-negative integer vertex ids, got {line}")


def _vertex_id(token: str, line: str) -> int:
    if not _INTEGER.fullmatch(token):
        raise _not_ids(line)
    value = int(token)
    if value < 0:
        raise _LineError(f"negative vertex id {_excerpt(token, '')} (vertex ids must be >= 0), "
                         f"in {line}")
    if value > INT64_MAX:
        raise _LineError(f"vertex id {_excerpt(token, '')} is larger than 2**63-1, in {line}")
    return value


def _check_entry(fields: list[str], line: str, shape: MatrixShape) -> None:
    """Raise for a Matrix Market entry whose row (field 0) or column (field 1) is not an
    integer inside the declared ``rows x cols`` (1-based)."""
    if not (_INTEGER.fullmatch(fields[0]) and _INTEGER.fullmatch(fields[1])):
        raise _not_ids(line)
    row, col = int(fields[0]), int(fields[1])
    if 1 <= row <= shape.rows and 1 <= col <= shape.cols:
        return
    if min(shape.rows, shape.cols) == 0:
        valid = "which has no entries"
    elif shape.rows == shape.cols:
        valid = f"rows and columns are 1..{shape.rows}"
    else:
        valid = f"rows are 1..{shape.rows}, columns 1..{shape.cols}"
    raise _LineError(
        f"entry ({row}, {col}) is outside the declared {shape.rows} x {shape.cols} matrix "
        f"({valid})"
    )


def _edge(line: bytes, layout: Layout) -> tuple[int, int] | None:
    """The (source, target) of one line; None for blank and comment lines."""
    fields = _split_fields(_strip_comment(line, layout.comments), layout.sep)
    if not fields:
        return None
    i, j = layout.usecols
    text = _excerpt(line)
    if len(fields) <= max(i, j):
        wanted = "two" if (i, j) == (0, 1) else str(max(i, j) + 1)
        raise _LineError(f"expected at least {wanted} columns (source and target), got {text}")
    if layout.shape is not None:  # fields has two or more: max(i, j) >= 1
        _check_entry(fields, text, layout.shape)
    return _vertex_id(fields[i], text), _vertex_id(fields[j], text)


def _parse_exact(data: bytes, block: TextBlock) -> tuple[Any, Any]:
    """Line by line: the right rows, or an InputError for the first bad line."""
    edges = []
    data = data.removeprefix(_BOM) if block.offset == 0 else data
    for index, line in enumerate(data.split(b"\n")):
        try:
            edge = _edge(line, block.layout)
        except _LineError as error:
            if block.seek_points is not None:
                _check_stream_end(block)  # a cut-short stream, not the line, is the trouble
            hint = _binary_hint(line, block.offset == 0 and index == 0)
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


# ---------------------------------------------------------------------------- parquet


PARQUET_BYTES_PER_ROW = 16
"""A row of a Parquet read in memory: two int64 ids (the unit ``blocksize`` counts)."""

MAX_ROW_GROUP_SLICES = 64
"""A row group is read in at most this many slices. Each slice decodes the group from its
start up to its own last row (Parquet pages are found by scanning), so ``k`` slices decode the
group ``(k + 1) / 2`` times over; beyond this many, rewriting the file costs less."""

STREAM_BATCH_ROWS = 1 << 16
"""Rows per batch when a slice of a row group is decoded batch by batch."""

PARQUET_PIECE_ROWS = 1 << 25
"""Most rows of a Parquet read's partition (512 MiB as int64 ids), so that a read spreads
over the workers; fewer where a task's memory budget says so."""


@dataclass(frozen=True)
class RowSlice:
    """Rows ``[start, stop)`` of row group ``group`` of one Parquet file (a whole group where
    they are all of it)."""

    url: str
    name: str  # the file as errors show it
    group: int
    start: int
    stop: int
    group_rows: int

    @property
    def rows(self) -> int:
        return self.stop - self.start

    @property
    def whole(self) -> bool:
        return self.start == 0 and self.stop == self.group_rows


@dataclass(frozen=True)
class ParquetPlan:
    """The Parquet files of one read, their id columns, the name errors show, and their row
    groups ``(url, name, group, rows)`` in order, to be cut into pieces of at most
    ``piece_rows`` rows (:meth:`pieces`)."""

    urls: tuple[str, ...]
    columns: tuple[str, str]
    label: str
    groups: tuple[tuple[str, str, int, int], ...] = ()
    piece_rows: int = 1
    mixed_types: bool = False
    """Whether the files hold the id columns as integers of different types (read file by
    file, each as int64)."""

    @property
    def rows(self) -> int:
        return sum(rows for *_, rows in self.groups)

    def pieces(self) -> list[tuple[RowSlice, ...]]:
        """The read's partitions (:func:`parquet_pieces`; raises for a row group too large to
        slice)."""
        return parquet_pieces(list(self.groups), self.piece_rows)


@contextmanager
def _parquet_errors(name: str) -> Iterator[None]:
    """pyarrow's refusal of a file that is not Parquet (or is cut short) as an InputError
    naming the file."""
    import pyarrow as pa

    try:
        yield
    except pa.ArrowInvalid as error:
        raise InputError(f"not a readable Parquet file ({error})", name) from None


def _footer_facts(fs: AbstractFileSystem, path: str, name: str, columns: list[str]
                  ) -> tuple[Any, list[int], str | None]:
    """From one Parquet file's footer: its Arrow schema, the rows of each row group, and a
    negative id its statistics record (if any)."""
    import pyarrow.parquet as pq

    with fs.open(path, "rb") as f, _parquet_errors(name):
        meta = pq.ParquetFile(f).metadata
        schema = meta.schema.to_arrow_schema()
    rows, negative = [], None
    for group in range(meta.num_row_groups):
        row_group = meta.row_group(group)
        rows.append(row_group.num_rows)
        for k in range(meta.num_columns):
            chunk = row_group.column(k)
            stats = chunk.statistics
            if (chunk.path_in_schema in columns and stats is not None and stats.has_min_max
                    and isinstance(stats.min, int) and stats.min < 0 and negative is None):
                negative = f"negative vertex id {stats.min} in column {chunk.path_in_schema!r}"
    return schema, rows, negative


def parquet_pieces(groups: list[tuple[str, str, int, int]], piece_rows: int
                   ) -> list[tuple[RowSlice, ...]]:
    """The row groups ``(url, name, group, rows)`` of a read, in order, cut into pieces of at
    most ``piece_rows`` rows: consecutive small groups (of any files) taken together, a group
    larger than that cut into slices of about equal rows. A group that would need more than
    :data:`MAX_ROW_GROUP_SLICES` slices is refused with how to rewrite its file."""
    from dask.utils import format_bytes

    pieces: list[tuple[RowSlice, ...]] = []
    current: list[RowSlice] = []
    size = 0
    for url, name, group, rows in groups:
        if not rows:
            continue
        if rows > piece_rows:
            slices = -(-rows // piece_rows)
            if slices > MAX_ROW_GROUP_SLICES:
                shown = format_bytes(rows * PARQUET_BYTES_PER_ROW)
                raise InputError(
                    f"row group {group} holds {rows:,} rows ({shown} as int64 ids), more "
                    f"than {MAX_ROW_GROUP_SLICES} "
                    f"pieces of the {piece_rows:,} rows a read task may hold under this memory "
                    "budget; rewrite the file with smaller row groups, e.g. pyarrow.parquet."
                    "write_table(table, path, row_group_size=1_000_000), or give a larger "
                    "--memory-budget", name)
            if current:
                pieces.append(tuple(current))
                current, size = [], 0
            step = -(-rows // slices)
            pieces.extend((RowSlice(url, name, group, start, min(start + step, rows), rows),)
                          for start in range(0, rows, step))
            continue
        if current and size + rows > piece_rows:
            pieces.append(tuple(current))
            current, size = [], 0
        current.append(RowSlice(url, name, group, 0, rows, rows))
        size += rows
    if current:
        pieces.append(tuple(current))
    return pieces


def _check_id_types(schema: Any, picked: list[str], name: str) -> None:
    """Refuse id columns of a Parquet file that are not integers (any width: each file is
    read as int64)."""
    import pyarrow as pa

    for column in picked:
        kind = schema.field(column).type
        if not pa.types.is_integer(kind):
            shown = np.dtype(kind.to_pandas_dtype()) if pa.types.is_floating(kind) else kind
            raise InputError(f"column {column!r} has type {shown}, not integer ids", name)


def _check_same_columns(schema: Any, picked: list[str], name: str, first: str) -> None:
    """Refuse a Parquet file of a read that lacks the id columns of its first file
    (``first``), or holds them as other than integers."""
    names = [str(n) for n in schema.names]
    if not set(picked) <= set(names):
        raise InputError(f"has columns {names}, expected {picked} as in {first}", name)
    _check_id_types(schema, picked, name)


def _plan_parquet(
    files: list[tuple[AbstractFileSystem, str, str]],
    columns: tuple[str | int, str | int] | None,
    piece_rows: int,
) -> ParquetPlan:
    """Check the schema (integer id columns) and the footers (no negative ids) of the files,
    and list their row groups, to be cut into pieces of at most ``piece_rows`` rows."""
    import pyarrow.parquet as pq

    label = files[0][2] if len(files) == 1 else f"{files[0][2]} (one of {len(files)} files)"
    fs, path, first = files[0]
    with fs.open(path, "rb") as handle, _parquet_errors(first):
        schema = pq.read_schema(handle)
    names = [str(name) for name in schema.names]
    if columns is None:
        columns = ("src", "dst") if {"src", "dst"} <= set(names) else (0, 1)
    positions = _resolve_columns(columns, names, label)
    if max(positions) >= len(names):
        raise InputError(f"no column {max(positions)}; the columns are {names}", label)
    picked = [names[k] for k in positions]
    _check_id_types(schema, picked, label)
    groups: list[tuple[str, str, int, int]] = []
    types = set()
    for fs, path, name in files:
        schema, rows, negative = _footer_facts(fs, path, name, picked)
        if name != first:
            _check_same_columns(schema, picked, name, first)
        types.add(tuple(str(schema.field(column).type) for column in picked))
        if negative is not None:
            raise InputError(negative, name)
        url = fs.unstrip_protocol(path)
        groups.extend((url, name, g, n) for g, n in enumerate(rows))
    urls = tuple(fs.unstrip_protocol(path) for fs, path, _ in files)
    return ParquetPlan(urls, (picked[0], picked[1]), label, tuple(groups), max(1, piece_rows),
                       len(types) > 1)


def _open_parquet(url: str, storage_options: dict | None) -> tuple[Any, Any]:
    """A Parquet file to read with pyarrow: by its own path where it is local (pyarrow's
    native reader), else through fsspec; the handle to close (or ``None``)."""
    import pyarrow.parquet as pq

    fs, path = filesystem(url, storage_options)
    if (local := local_path(fs, path)) is not None:
        return pq.ParquetFile(local, buffer_size=1 << 20, pre_buffer=False), None
    handle = fs.open(path, "rb")
    return pq.ParquetFile(handle, buffer_size=1 << 20, pre_buffer=False), handle


def _piece_tables(piece: tuple[RowSlice, ...], columns: list[str],
                  storage_options: dict | None) -> list[tuple[str, Any]]:
    """One piece's id columns as Arrow tables, read on the host, with the names of their
    files: the whole row groups of each file in one call (decoded on several threads), a
    slice of a row group batch by batch (only the batches that overlap it are kept)."""
    import pyarrow as pa

    tables = []
    for url, grouped in itertools.groupby(piece, key=lambda s: s.url):
        reader, handle = _open_parquet(url, storage_options)
        try:
            slices = list(grouped)
            name = slices[0].name
            if all(s.whole for s in slices):
                tables.append((name, reader.read_row_groups([s.group for s in slices],
                                                            columns=columns, use_threads=True)))
                continue
            for s in slices:
                kept, row = [], 0
                for batch in reader.iter_batches(batch_size=STREAM_BATCH_ROWS,
                                                 row_groups=[s.group], columns=columns):
                    low, high = max(s.start - row, 0), min(s.stop - row, batch.num_rows)
                    if high > low:
                        kept.append(batch.slice(low, high - low))
                    row += batch.num_rows
                    if row >= s.stop:
                        break
                schema = pa.schema([reader.schema_arrow.field(c) for c in columns])
                tables.append((name, pa.Table.from_batches(kept, schema=schema)))
        finally:
            if handle is not None:
                handle.close()
    return tables


def read_parquet_piece(piece: tuple[RowSlice, ...], plan: ParquetPlan,
                       storage_options: dict | None, backend: str) -> Any:
    """One piece of a planned Parquet read as an ``src, dst`` frame (a ``read-edges`` task):
    cuDF, whose reader decodes whole row groups on the device (a piece's device memory is
    bounded by its rows), or pandas, read by pyarrow on the host (so are slices of a row
    group, then copied to the device once)."""
    source, target = plan.columns
    if backend == "cudf" and all(s.whole for s in piece):
        import cudf

        files: dict[str, list[int]] = {}
        for s in piece:
            files.setdefault(s.url, []).append(s.group)
        reads = [list(files)] if not plan.mixed_types else [[url] for url in files]
        frames = [_checked_ids(cudf.read_parquet(urls, columns=list(plan.columns),
                                                 row_groups=[files[url] for url in urls],
                                                 storage_options=storage_options)
                               .rename(columns={source: "src", target: "dst"}),
                               plan.label, plan.columns)
                  for urls in reads]
        return frames[0] if len(frames) == 1 else cudf.concat(frames, ignore_index=True)
    import pandas as pd

    arrays = read_parquet_arrays(piece, plan, storage_options)  # checked file by file
    frame = pd.DataFrame({"src": arrays.src, "dst": arrays.dst})  # a copy of its own
    if backend == "cudf":
        import cudf

        return cudf.from_pandas(frame)
    return frame


def _checked_ids(frame: Any, label: str, names: tuple[str, str]) -> Any:
    """Check a cuDF partition of a Parquet read for nulls, negatives and overflow; int64
    ids."""
    for column, original in zip(("src", "dst"), names, strict=True):
        ids = frame[column]
        _check_id_column(ids, original, label, bool(ids.isna().any()))
    return frame.astype("int64")


def _check_id_column(ids: Any, original: str, label: str, nulls: bool) -> None:
    """Refuse a column of ids with nulls, a negative id, or an unsigned id past int64."""
    if nulls:
        raise InputError(f"missing (null) vertex id in column {original!r}", label)
    if len(ids) and ids.min() < 0:
        raise InputError(f"negative vertex id {ids.min()} in column {original!r}", label)
    if len(ids) and ids.dtype.kind == "u" and ids.max() > INT64_MAX:
        raise InputError(f"vertex id {ids.max()} is larger than 2**63-1", label)


def arrow_integers(chunked: Any) -> np.ndarray:
    """An Arrow column of integers without nulls as one NumPy array, read from its chunks'
    data buffers (``to_numpy`` would import pandas, 0.2 s to 0.4 s, to check its types)."""
    views = []
    for chunk in chunked.chunks:
        dtype = np.dtype(str(chunk.type))  # int8 .. uint64: the schema was checked
        views.append(np.frombuffer(chunk.buffers()[1], dtype=dtype, count=len(chunk),
                                   offset=chunk.offset * dtype.itemsize))
    if not views:
        return np.zeros(0, dtype=np.dtype(str(chunked.type)))
    return views[0] if len(views) == 1 else np.concatenate(views)


def read_parquet_arrays(piece: tuple[RowSlice, ...], plan: ParquetPlan,
                        storage_options: dict | None) -> EdgeArrays:
    """One piece of a planned Parquet read as int64 ``src``, ``dst`` arrays, read by pyarrow
    on the host, each file's ids checked (nulls, negatives, ids past int64) before they are
    joined: an in-process CPU run's ``read-edges`` task, which needs no DataFrame (Dask's
    DataFrame and pandas take about 1 s to import on this project's 2-core machine), and
    the host's part of :func:`read_parquet_piece`."""
    columns: list[list[np.ndarray]] = [[], []]
    for name, table in _piece_tables(piece, list(plan.columns), storage_options):
        for kept, original in zip(columns, plan.columns, strict=True):
            chunked = table.column(original)
            nulls = bool(chunked.null_count)
            ids = np.zeros(0, dtype=np.int64) if nulls else arrow_integers(chunked)
            _check_id_column(ids, original, name, nulls)
            kept.append(ids.astype(np.int64, copy=False))
    src, dst = (np.concatenate(kept) if len(kept) > 1 else kept[0] if kept
                else np.zeros(0, dtype=np.int64) for kept in columns)
    return EdgeArrays(src, dst)


def read_parquet_device_arrays(piece: tuple[RowSlice, ...], plan: ParquetPlan,
                               storage_options: dict | None) -> EdgeArrays:
    """One piece of a planned Parquet read as int64 CuPy ``src``, ``dst`` arrays: an
    in-process GPU run's ``read-edges`` task. Whole row groups of this machine's files are
    decoded on the device by pylibcudf (cuDF's reader, without the import of cuDF's frames
    and Dask's DataFrame, about 1.5 s), and each file's ids get the host's checks
    (:func:`_check_id_column`: negatives, ids past int64). Other pieces are read on the host
    (:func:`read_parquet_arrays`) and copied once, as are files the device reader refuses
    and ids with nulls: the host's read names the file and the fault."""
    from dtri.runtime.gpu import device_array

    files: dict[str, list[RowSlice]] = {}
    for s in piece:
        files.setdefault(s.url, []).append(s)
    paths = {url: path for url in files
             if (path := local_path(*filesystem(url, storage_options))) is not None}
    if piece and all(s.whole for s in piece) and len(paths) == len(files):
        batches = [list(files)] if not plan.mixed_types else [[url] for url in files]
        try:
            read = [_device_ids([paths[url] for url in urls],
                                [[s.group for s in files[url]] for url in urls],
                                list(plan.columns)) for urls in batches]
        except (OSError, RuntimeError, ValueError, KeyError):
            read = None  # read again on the host, which names the file and the fault
        if read is not None:
            import cupy

            for urls, ids in zip(batches, read, strict=True):
                _check_device_ids(ids, [files[url] for url in urls], plan.columns)
            kept = [[column.astype(cupy.int64, copy=False) for column in ids] for ids in read]
            if len(kept) == 1:
                return EdgeArrays(*kept[0])
            return EdgeArrays(*(cupy.concatenate([ids[k] for ids in kept]) for k in (0, 1)))
    arrays = read_parquet_arrays(piece, plan, storage_options)
    return EdgeArrays(device_array(arrays.src), device_array(arrays.dst))


def _check_device_ids(ids: tuple[Any, Any], files: list[list[RowSlice]],
                      columns: tuple[str, str]) -> None:
    """The host's checks of :func:`_check_id_column` on the device's id columns of a read,
    file by file (``files``: each file's row groups, in the read's order), so that an error
    names the file."""
    start = 0
    for groups in files:
        stop = start + sum(s.rows for s in groups)
        for column, original in zip(ids, columns, strict=True):
            _check_id_column(column[start:stop], original, groups[0].name, False)
        start = stop


DEVICE_PARQUET_MIN_ROWS = "dtri.device-parquet-min-rows"
"""``dask.config`` key: the rows from which an in-process GPU run decodes Parquet files on the
device (:func:`decodes_on_device`); below it pyarrow's read on the host and one copy cost
less than the device reader's start."""


def decodes_on_device(rows: int) -> bool:
    """Whether an in-process GPU run decodes ``rows`` rows of Parquet files on the device
    (raw edges or a saved graph): from :data:`DEVICE_PARQUET_MIN_ROWS`."""
    return rows >= int(dask.config.get(DEVICE_PARQUET_MIN_ROWS))


def local_path(fs: AbstractFileSystem, path: str) -> str | None:
    """``path`` itself where ``fs`` is this machine's file system (pylibcudf reads and
    writes it directly, through KvikIO where it can), else ``None``."""
    protocols = fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)
    return path if {"file", "local"} & set(protocols) else None


_DEVICE_ID_TYPES = {f"{kind}{bits}": np.dtype(f"{kind.lower()[0]}{bits // 8}")
                    for kind in ("INT", "UINT") for bits in (8, 16, 32, 64)}
"""The NumPy types of integer id columns, by the name of their pylibcudf type."""


def _device_ids(paths: list[str], groups: list[list[int]], columns: list[str]
                ) -> tuple[Any, Any]:
    """The row groups ``groups`` of the files ``paths`` (of one id type), read and decoded
    on the device: their two id columns as CuPy arrays of the files' type, unchecked.
    Raises ``ValueError`` for a null or a column not of integers, ``KeyError`` for a
    missing column, and what the reader raises."""
    import pylibcudf as plc

    from dtri.runtime.gpu import column_array

    options = plc.io.parquet.ParquetReaderOptions.builder(
        plc.io.SourceInfo(paths)).column_names(columns).build()
    options.set_row_groups(groups)
    read = plc.io.parquet.read_parquet(options)
    found = dict(zip(read.column_names(include_children=False), read.columns, strict=True))
    first, second = (column_array(found[name], _DEVICE_ID_TYPES) for name in columns)
    return first, second


def _parquet_collection(plan: ParquetPlan, storage_options: dict | None, backend: str
                        ) -> dd.DataFrame:
    """Parquet as ``src, dst``: one ``read-edges`` task per piece of the plan."""
    import dask.dataframe as dd

    meta = _meta() if backend == "pandas" else _meta().pipe(_to_backend_meta, backend)
    pieces = plan.pieces()
    if not pieces:
        return dd.from_pandas(meta, npartitions=1)
    return dd.from_map(read_parquet_piece, pieces, plan=plan,
                       storage_options=storage_options, backend=backend, meta=meta,
                       label="read-edges", enforce_metadata=False)


def _to_backend_meta(meta: pd.DataFrame, backend: str) -> Any:
    import cudf

    return cudf.from_pandas(meta)


# ---------------------------------------------------------------------------- entry point


def read_edges(
    urlpath: str | os.PathLike | list[str],
    format: str = "auto",
    *,
    columns: tuple[str | int, str | int] | None = None,
    header: bool | None = None,
    blocksize: int | str = "64MiB",
    storage_options: dict | None = None,
    dataframe_backend: str = "pandas",
    max_rows: int | None = None,
) -> dd.DataFrame:
    """Lazily read edge lists into a Dask DataFrame with int64 columns ``src`` and ``dst``.

    ``urlpath`` is a path, glob, directory or fsspec URL, or a list of those.  ``format`` is
    one of FORMATS or "auto" (by file name, see detect_format).  ``columns`` picks the source
    and target by name (csv/tsv with a header, parquet) or 0-based position.  ``header``
    (csv/tsv only): None treats the first non-comment line as a header when every field of it
    is a non-numeric name.  Only parquet is read with ``dataframe_backend``; text is parsed
    with pandas.  When nothing matches here but a distributed client is active, the read is
    planned on a worker, for files only the cluster's workers see.

    Uncompressed text is split into ``blocksize`` byte ranges aligned to newlines, and so is
    the text of a gzip file: the planner decompresses it once to find seek points (one every
    ``blocksize`` bytes of text, :mod:`dtri.input.gzip_index`), and each block decompresses
    from the point before it, so the work stays linear in the file. Other compressed streams
    (bz2, xz, ...) cannot be entered in the middle: a file smaller than blocksize/4 is one
    block, and a larger one ceil(4 * compressed size / blocksize) blocks, block k
    decompressing from the start up to decompressed offset k * blocksize and the last one
    reading on to EOF: quadratic decompression work in exchange for parallel parsing and about
    one block of text per task.  Recompress such inputs with gzip, or as many smaller files.

    Parquet is read by row groups (:func:`parquet_pieces`): consecutive groups, of one file or
    of several, taken together up to :data:`PARQUET_PIECE_ROWS` rows per partition, a larger
    group cut into slices.  ``max_rows`` (the rows one task of the run may hold, from its
    memory budget) caps every partition, whatever the files' layout: a text block is then at
    most ``max_rows`` × 4 bytes (``"1 2\\n"``, the shortest line of an edge), a Parquet piece
    at most ``max_rows`` rows.
    """
    if dataframe_backend not in BACKENDS:
        raise ConfigurationError(f"unknown dataframe backend {dataframe_backend!r}")
    size = parse_bytes(blocksize) if isinstance(blocksize, str) else int(blocksize)
    if size <= 0:
        raise ConfigurationError(f"blocksize must be positive, got {blocksize!r}")
    if isinstance(urlpath, list | tuple):
        urlpath = [os.fspath(p) for p in urlpath]
    options: dict[str, Any] = {"columns": columns, "header": header, "blocksize": size,
                               "storage_options": storage_options, "max_rows": max_rows}
    try:
        plan = plan_read(urlpath, format, **options)
    except InputNotFoundError:
        # Not here, but the cluster's workers may see it (a disk mounted on them alone).
        from dtri.runtime.resolve import active_client

        if (client := active_client()) is None:
            raise
        plan = client.submit(plan_read, urlpath, format, **options, pure=False).result()
    return collection_from_plan(plan, storage_options, dataframe_backend)


ReadPlan = tuple[TextBlock, ...] | ParquetPlan
"""What planning a read learns by opening the inputs: the text blocks, or the parquet files."""


def plan_read(
    urlpath: str | os.PathLike | list[str],
    format: str = "auto",
    *,
    columns: tuple[str | int, str | int] | None = None,
    header: bool | None = None,
    blocksize: int = 64 << 20,
    storage_options: dict | None = None,
    max_rows: int | None = None,
) -> ReadPlan:
    """Find the files, check their formats, cut text into blocks and Parquet into pieces of
    row groups: all the file access a read needs before its tasks run (sizes as
    :func:`read_edges` says). Plain data, so a worker can plan for a client that does not see
    the files."""
    if format != "auto" and format not in FORMATS:
        raise ConfigurationError(f"unknown format {format!r}; expected 'auto' or one of {FORMATS}")
    if columns is not None:  # NumPy integers count as positions too
        # (two, as annotated: :func:`_resolve_columns` says so where one reads them)
        columns = cast("tuple[str | int, str | int]",
                       tuple(int(c) if isinstance(c, np.integer) else c for c in columns))
    files = expand_paths(urlpath, storage_options)
    formats = [format if format != "auto" else _format_from_name(p) or "snap" for _, p, _ in files]
    if "parquet" in formats:
        if set(formats) != {"parquet"}:
            raise InputError("cannot read parquet and text files together", files[0][2])
        return _plan_parquet(files, columns, min(PARQUET_PIECE_ROWS,
                                                 max_rows or PARQUET_PIECE_ROWS))
    if max_rows is not None:
        blocksize = max(1, min(blocksize, max_rows * MIN_TEXT_BYTES_PER_EDGE))
    blocks: list[TextBlock] = []
    for (fs, path, name), fmt in zip(files, formats, strict=True):
        layout, start = _text_layout(fs, path, name, fmt, columns, header)
        blocks.extend(_plan_text_file(fs, path, name, layout, start, blocksize))
    return tuple(blocks)


def collection_from_plan(plan: ReadPlan, storage_options: dict | None = None,
                         dataframe_backend: str = "pandas") -> dd.DataFrame:
    """The Dask DataFrame of a planned read; each task opens its own block or piece."""
    import dask.dataframe as dd

    if isinstance(plan, ParquetPlan):
        return _parquet_collection(plan, storage_options, dataframe_backend)
    if not plan:  # no data blocks (e.g. an empty Matrix Market file)
        return dd.from_pandas(_meta(), npartitions=1)
    if any(block.layout.shape is not None or block.seek_points is not None for block in plan):
        return _counted_collection(plan)
    return dd.from_map(parse_block, list(plan), meta=_meta(), label="read-edges",
                       enforce_metadata=False)


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


def _check_entry_count(name: str, nnz: int, rows: list[int]) -> None:
    """Raise when a Matrix Market file's blocks hold other than its declared nnz entries."""
    if (found := sum(rows)) != nnz:
        raise InputError(f"declares {nnz} entries (nnz) but has {found}", name)


def _check_stream_end(block: TextBlock) -> None:
    """Raise when a gzip file read by seek points is truncated or corrupt: its blocks read
    only their own stretches, and a stream cut short ends without an error there."""
    with _open_text(block.fs, block.path, block.name, block.compression) as f:
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
            check = dask.delayed(_check_entry_count)(
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


def _counted_collection(blocks: tuple[TextBlock, ...]) -> dd.DataFrame:
    """The frame of :func:`checked_blocks`."""
    import dask.dataframe as dd

    return dd.from_delayed(checked_blocks(blocks), meta=_meta(), verify_meta=False,
                           prefix="read-edges")
