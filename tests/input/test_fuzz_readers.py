"""Fuzz tests of the readers: messy and truncated edge-list texts either count as NetworkX
counts them or raise InputError, through the text reader (one block, small blocks, NumPy's and
pandas' parsers) and, for what reads, through Parquet (int64 and int32 ids)."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import dask
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dtri
from dtri.errors import InputError
from tests.oracles import networkx_triangles

INT64_MAX = 2**63 - 1
IDS = st.one_of(st.integers(0, 12), st.sampled_from([10**15, 2**62, INT64_MAX]))
BLANKS = st.sampled_from([" ", "\t", "  ", " \t ", "\t\t"])
COMMENTS = st.sampled_from(["# a comment", "% a comment", "  # indented", "#", "%%", "\t% 1 2"])
GARBAGE = st.sampled_from([
    "7",                      # one field
    "x y", "1 y", "1a 2",     # not digits
    "1.5 2", "1e3 2", "0x1 2",
    "-3 4",                   # negative
    "9223372036854775808 1",  # one above 2**63-1
    "99999999999999999999999 2",
    "１ ２", "١ ٢",            # digits that are not ASCII
    "1,2", "\x00\x01 2", "1\x0b2",
])


@st.composite
def edge_lines(draw) -> str:
    """A line holding an edge: its two ids, blanks around and between, and at times a third
    field (ignored) or a comment after it."""
    src, dst = draw(IDS), draw(IDS)
    tail = draw(st.sampled_from(["", " 0.5", "\t7", " x", " # trailing", "  % trailing"]))
    return f"{draw(st.sampled_from(['', ' ', chr(9)]))}{src}{draw(BLANKS)}{dst}{tail}"


@st.composite
def messy_texts(draw) -> str:
    """An edge list with comments (# and %), blank lines, CRLF and LF ends, tabs and runs of
    blanks, duplicates and self-loops (from the few small ids), ids up to 2**63-1, at times
    a bad line, and at times cut short anywhere in its last line."""
    lines = draw(st.lists(st.one_of(edge_lines(), edge_lines(), COMMENTS,
                                    st.sampled_from(["", "   ", "\t"])), max_size=30))
    if draw(st.booleans()) and lines:
        lines += draw(st.lists(st.sampled_from(lines), max_size=5))  # repeated lines
    if draw(st.integers(0, 3)) == 0:
        lines.insert(draw(st.integers(0, len(lines))), draw(GARBAGE))
    ends = draw(st.sampled_from(["\n", "\r\n", "mixed"]))
    text = "".join(line + (ends if ends != "mixed" else draw(st.sampled_from(["\n", "\r\n"])))
                   for line in lines)
    if text and draw(st.booleans()):  # cut short: the last line ends anywhere
        text = text[:draw(st.integers(max(0, len(text) - 30), len(text)))]
    return text


ASCII_ID = re.compile(r"[0-9]+")


def reference_edges(text: str) -> np.ndarray | None:
    """The edges of ``text`` as dtri's documentation defines them, or ``None`` where the
    text is not an edge list: lines split at LF (a CR before it dropped), cut at the first
    '#' or '%', split at blanks; a line with fields needs two ids, ASCII digits up to
    2**63-1; fields after them are ignored."""
    edges = []
    for line in text.split("\n"):
        body = re.split(r"[#%]", line.removesuffix("\r"), maxsplit=1)[0]
        fields = re.split(r"[ \t]+", body.strip(" \t"))
        if fields == [""]:
            continue
        if len(fields) < 2 or not all(ASCII_ID.fullmatch(f) and int(f) <= INT64_MAX
                                      for f in fields[:2]):
            return None
        edges.append((int(fields[0]), int(fields[1])))
    return np.array(edges, dtype=np.int64).reshape(-1, 2)


def counted_or_refused(path: Path, expected: int | None, **options) -> None:
    """``dtri.count`` of ``path``: ``expected`` triangles, or InputError where ``None``."""
    try:
        found = dtri.count_triangles(path, backend="cpu", scheduler="synchronous", **options)
    except InputError:
        assert expected is None, f"refused an edge list of {expected} triangles ({options})"
        return
    assert found == expected, f"{found} triangles, expected {expected} ({options})"


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=messy_texts(), blocksize=st.integers(4, 64))
def test_messy_text_counts_as_networkx_or_is_refused(text, blocksize):
    edges = reference_edges(text)
    expected = None if edges is None else networkx_triangles(edges)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "edges.txt"
        path.write_bytes(text.encode())
        counted_or_refused(path, expected)
        counted_or_refused(path, expected, blocksize=blocksize)  # lines straddle blocks
        with dask.config.set({"dtri.read.numpy-parser-max-bytes": -1}):  # pandas' parser
            counted_or_refused(path, expected, blocksize=blocksize)
            counted_or_refused(path, expected)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=messy_texts())
def test_the_edges_of_a_messy_text_count_the_same_from_parquet(text):
    edges = reference_edges(text)
    if edges is None:
        return
    expected = networkx_triangles(edges)
    types = [pa.int64()] + ([pa.int32()] if edges.size == 0 or edges.max() < 2**31 else [])
    with tempfile.TemporaryDirectory() as folder:
        for kind in types:
            path = Path(folder) / f"edges-{kind}.parquet"
            pq.write_table(pa.table({"src": pa.array(edges[:, 0], kind),
                                     "dst": pa.array(edges[:, 1], kind)}), path)
            counted_or_refused(path, expected)
