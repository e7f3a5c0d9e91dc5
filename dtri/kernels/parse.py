"""numba's parser of whitespace-separated edge lists (:func:`parse_id_pairs`), for the CPU
reader (:mod:`dtri.input.read`; the GPU reads with cuDF). Imported only where it runs; compiled
on first use and cached on disk by numba."""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from dtri.kernels.compiled import watch_numba

watch_numba()  # its compiles and cache loads are reported apart from the stages


ID_DIGITS = 18
"""The most digits :func:`parse_id_pairs` reads in a field: any such number fits int64."""


@numba.njit(nogil=True, cache=True)
def parse_id_pairs(data: Any, first: int, second: int, comment: int, other_comment: int,
                   ) -> tuple[Any, Any, bool]:
    """Fields ``first`` and ``second`` of each line of whitespace-separated text (``data``:
    its bytes as uint8), one pass: a line is fields of digits apart by spaces and tabs, then
    a comment from ``comment`` or ``other_comment`` to the line's end (blank and comment
    lines hold no edge); a CR only before a LF or at the end. Returns ``(src, dst, True)``,
    or ``False`` (and empty arrays) at the first byte or line outside that: a sign, any
    other character, a field of more than :data:`ID_DIGITS` digits, a line of too few
    fields; the exact parser then reads the block and says what is wrong with it."""
    n = data.shape[0]
    rows = n // 4 + 1  # the shortest line that holds an edge: "1 2\n"
    src = np.empty(rows, dtype=np.int64)
    dst = np.empty(rows, dtype=np.int64)
    none = np.empty(0, dtype=np.int64)
    wanted = max(first, second)
    rows = 0
    i = 0
    while i < n:
        field = digits = value = 0
        a = b = -1
        while i < n:
            c = data[i]
            if 48 <= c <= 57:
                digits += 1
                if digits > ID_DIGITS:
                    return none, none, False
                value = value * 10 + (c - 48)
                i += 1
                continue
            if c != 32 and c != 9 and c != 10 and c != 13 and c != comment \
                    and c != other_comment:
                return none, none, False
            if digits:
                if field == first:
                    a = value
                if field == second:
                    b = value
                field += 1
                digits = value = 0
            i += 1
            if c == 10:
                break
            if c == 13 and i < n and data[i] != 10:
                return none, none, False
            if c in (comment, other_comment):
                while i < n and data[i] != 10:
                    i += 1
        if digits:  # the last line, without its LF
            if field == first:
                a = value
            if field == second:
                b = value
            field += 1
        if field == 0:
            continue
        if field <= wanted:
            return none, none, False
        src[rows] = a
        dst[rows] = b
        rows += 1
    return src[:rows].copy(), dst[:rows].copy(), True
