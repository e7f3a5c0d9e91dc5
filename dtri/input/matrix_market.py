"""Matrix Market coordinate files, read as text edge lists (:mod:`dtri.input.text`): the
banner and size line before the entries, each entry inside the declared matrix, and the
entries counted against the declared nnz."""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, Any

from dtri.errors import InputError
from dtri.input.text_lines import (
    BOM,
    INTEGER,
    WHITESPACE,
    LineError,
    decode_line,
    excerpt,
    first_data_line,
    not_ids,
    split_fields,
    strip_comment,
)


@dataclass(frozen=True)
class MatrixShape:
    """The size line ``rows cols nnz`` of a Matrix Market file."""

    rows: int
    cols: int
    nnz: int  # the number of entry lines


def read_mtx_preamble(f: IO[bytes], name: str) -> tuple[int, MatrixShape | None]:
    """Check the Matrix Market banner and size line; return the offset of the first entry and
    the declared shape (None when the file ends before a size line: no entries either)."""
    banner = f.readline()
    words = decode_line(banner.removeprefix(BOM)).lower().split()
    if not words or words[0] != "%%matrixmarket" or len(words) < 4 or words[1] != "matrix":
        raise InputError("expected a '%%MatrixMarket matrix coordinate ...' first line", name, 1)
    if words[2] != "coordinate":
        raise InputError(
            f"Matrix Market format {excerpt(words[2])} is not supported, only 'coordinate' "
            "(a dense 'array' matrix is not an edge list)",
            name,
            1,
        )
    line, lineno, pos = first_data_line(f, WHITESPACE, b"#%", lineno=1, pos=len(banner))
    if line is None:
        return pos, None
    size = split_fields(strip_comment(line, b"#%"), WHITESPACE)
    if len(size) != 3 or not all(INTEGER.fullmatch(s) and int(s) >= 0 for s in size):
        raise InputError(
            f"expected a size line 'rows cols nnz' (non-negative integers), got {excerpt(line)}",
            name,
            lineno,
        )
    rows, cols, nnz = map(int, size)
    return pos, MatrixShape(rows, cols, nnz)


def within(column: Any, size: int) -> bool:
    """True when every value is an integer in 1..size (Matrix Market indices are 1-based)."""
    if column.dtype.kind not in "iu":
        return False
    return len(column) == 0 or (int(column.min()) >= 1 and int(column.max()) <= size)


def check_entry(fields: list[str], line: str, shape: MatrixShape) -> None:
    """Raise for a Matrix Market entry whose row (field 0) or column (field 1) is not an
    integer inside the declared ``rows x cols`` (1-based)."""
    if not (INTEGER.fullmatch(fields[0]) and INTEGER.fullmatch(fields[1])):
        raise not_ids(line)
    row, col = int(fields[0]), int(fields[1])
    if 1 <= row <= shape.rows and 1 <= col <= shape.cols:
        return
    if min(shape.rows, shape.cols) == 0:
        valid = "which has no entries"
    elif shape.rows == shape.cols:
        valid = f"rows and columns are 1..{shape.rows}"
    else:
        valid = f"rows are 1..{shape.rows}, columns 1..{shape.cols}"
    raise LineError(
        f"entry ({row}, {col}) is outside the declared {shape.rows} x {shape.cols} matrix "
        f"({valid})"
    )


def check_entry_count(name: str, nnz: int, rows: list[int]) -> None:
    """Raise when a Matrix Market file's blocks hold other than its declared nnz entries."""
    if (found := sum(rows)) != nnz:
        raise InputError(f"declares {nnz} entries (nnz) but has {found}", name)
