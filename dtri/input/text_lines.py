"""One line of a text edge list (SNAP, CSV/TSV, Matrix Market): its comment cut off, its
fields split, its vertex ids checked, and the line as an error shows it."""

from __future__ import annotations

import csv
import re
from typing import IO

from dtri.input.sources import INT64_MAX

WHITESPACE = "whitespace"
INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)
_BLANKS = re.compile(rb"[ \t]+")
PERCENT_TO_HASH = bytes.maketrans(b"%", b"#")
BOM = b"\xef\xbb\xbf"  # a UTF-8 byte order mark, which pandas also skips


class LineError(Exception):
    """A bad data line; the caller adds the path and line number."""


def strip_comment(line: bytes, comments: bytes) -> bytes:
    """The line up to its first comment character (b"#", or b"#%" where '%' also comments)."""
    marked = line.translate(PERCENT_TO_HASH) if b"%" in comments else line
    cut = marked.find(b"#")
    return line if cut < 0 else line[:cut]


def decode_line(line: bytes) -> str:
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


def excerpt(text: bytes | str, quote: str = "'") -> str:
    """A line or field as an error shows it: at most :data:`EXCERPT_CHARS` characters, what is
    not printable text escaped, quoted, and ``...`` after a longer one."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "surrogateescape")
    text = text.strip(" \t\r\n")
    shown = "".join(map(_shown_char, text[:EXCERPT_CHARS]))
    return f"{quote}{shown}{quote}{'...' if len(text) > EXCERPT_CHARS else ''}"


def binary_hint(line: bytes, first: bool) -> str | None:
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


def first_data_line(
    f: IO[bytes], sep: str, comments: bytes, lineno: int = 0, pos: int = 0
) -> tuple[bytes | None, int, int]:
    """Read on to the first line that is neither blank nor a comment.

    Returns (that line or None at EOF, its 1-based number, the offset just after it).
    """
    for line in iter(f.readline, b""):
        lineno, pos = lineno + 1, pos + len(line)
        line = line.removeprefix(BOM) if lineno == 1 else line
        if split_fields(strip_comment(line, comments), sep):
            return line, lineno, pos
    return None, lineno, pos


def split_fields(body: bytes, sep: str) -> list[str]:
    """Fields of a line whose comment is already cut off; [] for a blank line."""
    body = body.removesuffix(b"\n").removesuffix(b"\r")
    if not body.strip(b" \t"):
        return []
    if sep == WHITESPACE:
        return [decode_line(t) for t in _BLANKS.split(body.strip(b" \t"))]
    row = next(csv.reader([body.decode("utf-8", "surrogateescape")], delimiter=sep))
    return [field.strip(" \t") for field in row]


def looks_like_header(fields: list[str]) -> bool:
    """True when every field is a non-empty name that does not parse as a number."""

    def numeric(field: str) -> bool:
        try:
            float(field)
        except ValueError:
            return False
        return True

    return bool(fields) and all(field and not numeric(field) for field in fields)


def not_ids(line: str) -> LineError:
    return LineError(f"expected two non-negative integer vertex ids, got {line}")


def vertex_id(token: str, line: str) -> int:
    if not INTEGER.fullmatch(token):
        raise not_ids(line)
    value = int(token)
    if value < 0:
        raise LineError(f"negative vertex id {excerpt(token, '')} (vertex ids must be >= 0), "
                         f"in {line}")
    if value > INT64_MAX:
        raise LineError(f"vertex id {excerpt(token, '')} is larger than 2**63-1, in {line}")
    return value
