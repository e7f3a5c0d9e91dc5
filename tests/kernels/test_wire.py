"""The wire format (:mod:`dtri.kernels.wire`): every packed value unpacks to exactly what was
packed, in its own dtype, in every format; and the compact formats are compact."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dtri.kernels.wire import (
    WIRE_FORMATS,
    is_packed,
    pack_ascending,
    pack_counts,
    pack_rows,
    pack_sorted_keys,
    pack_vertex_set,
    packed_bytes,
    packed_rows,
    unpack,
    unpack_rows,
    unpack_sorted_keys,
)


@st.composite
def rows(draw):
    """Rows of ascending targets: a degree per row, the targets of each row in order."""
    span = draw(st.sampled_from([3, 300, 70_000, 2**40]))
    lists = draw(st.lists(st.lists(st.integers(0, span), max_size=12, unique=True).map(sorted),
                          max_size=30))
    degree = np.array([len(r) for r in lists], dtype=np.int32)
    targets = np.array([t for r in lists for t in r], dtype=np.int64 if span > 2**31
                       else np.int32)
    return degree, targets


@given(rows(), st.sampled_from(WIRE_FORMATS))
@settings(max_examples=200, deadline=None)
def test_rows_unpack_to_what_was_packed(packed_rows_in, fmt):
    degree, targets = packed_rows_in
    back_degree, back_targets = unpack_rows(pack_rows(degree, targets, fmt))
    assert back_degree.dtype == degree.dtype and back_targets.dtype == targets.dtype
    assert np.array_equal(back_degree, degree) and np.array_equal(back_targets, targets)
    assert packed_rows(pack_rows(degree, targets, fmt)) == targets.shape[0]


@given(st.lists(st.integers(0, 2**40), max_size=200), st.sampled_from(WIRE_FORMATS),
       st.sampled_from([np.int32, np.int64, np.uint8]))
@settings(max_examples=200, deadline=None)
def test_counts_and_ascending_ids_unpack_to_what_was_packed(values, fmt, dtype):
    counts = np.array([v % np.iinfo(dtype).max for v in values], dtype=dtype)
    back = unpack(pack_counts(counts, fmt))
    assert back.dtype == counts.dtype and np.array_equal(back, counts)
    ids = np.unique(np.array(values, dtype=np.int64))
    back = unpack(pack_ascending(ids, fmt))
    assert back.dtype == ids.dtype and np.array_equal(back, ids)
    assert np.array_equal(unpack(pack_vertex_set(ids, fmt)), ids)


@given(st.lists(st.booleans(), max_size=300), st.sampled_from(WIRE_FORMATS))
@settings(max_examples=100, deadline=None)
def test_marks_unpack_to_what_was_packed(marks, fmt):
    marks = np.array(marks, dtype=bool)
    back = unpack(pack_vertex_set(marks, fmt))
    assert back.dtype == marks.dtype and np.array_equal(back, marks)


@given(st.lists(st.tuples(st.integers(10, 40), st.integers(0, 1000)), max_size=300),
       st.sampled_from(WIRE_FORMATS))
@settings(max_examples=100, deadline=None)
def test_sorted_keys_unpack_to_what_was_packed(edges, fmt):
    bits = 11
    keys = np.unique(np.array([(s << bits) | d for s, d in edges], dtype=np.int64))
    back = unpack_sorted_keys(pack_sorted_keys(keys, bits, 10, 41, fmt), bits, 10)
    assert back.dtype == keys.dtype and np.array_equal(back, keys)


def test_other_values_pass_through_unpack():
    frame_like = (np.arange(3), np.arange(3), np.arange(3))  # a tuple whose first is an array
    assert unpack(frame_like) is frame_like and not is_packed(frame_like)
    floats = np.linspace(0, 1, 5)
    assert np.array_equal(unpack(pack_counts(floats, "zstd")), floats)
    two_rows = np.ones((2, 4), dtype=np.int64)  # vertex-wide counts of several rows travel raw
    assert pack_counts(two_rows, "zstd") is two_rows


def test_a_bad_format_is_refused():
    with pytest.raises(ValueError, match="wire format must be one of"):
        pack_counts(np.arange(3), "gzip")


def test_compressed_rows_of_a_skewed_graph_take_far_fewer_bytes_than_int32():
    """Rows as the 2D blocks hold them: targets concentrated on few hubs, as a degree order
    makes them; narrowed to 16 bits, then delta coded and compressed."""
    rng = np.random.default_rng(0)
    degree = rng.zipf(1.8, 20_000).clip(0, 300).astype(np.int32)
    targets = np.concatenate([np.sort(rng.choice(60_000, size=d, replace=False,
                                                 p=None)) for d in degree]).astype(np.int32)
    raw = 4 * targets.shape[0] + 4 * degree.shape[0]
    narrow = packed_bytes(pack_rows(degree, targets, "narrow"))
    zstd = packed_bytes(pack_rows(degree, targets, "zstd"))
    lz4 = packed_bytes(pack_rows(degree, targets, "lz4"))
    assert narrow <= 0.55 * raw
    assert zstd < lz4 < narrow
