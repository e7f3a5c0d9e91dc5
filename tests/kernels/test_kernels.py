"""The array kernels of the wedge, bin and join stages against brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dtri.input.edges import EdgeArrays
from dtri.kernels.bins import (
    bin_shift,
    choose_bin_count,
    key_bits,
    pack_edges,
    radix_split,
    split_by_bounds,
    unpack_keys,
)
from dtri.kernels.canonicalize import (
    dense_ids,
    ids_by_rank,
    is_marks,
    merge_vertices,
    partition_vertices,
    vertex_count,
    vertex_ids,
)
from dtri.kernels.join import count_closed
from dtri.kernels.wedges import closure_keys, count_wedges, wedges_per_edge


def sorted_oriented(pairs: set[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
    ordered = sorted(pairs)
    src = np.array([p[0] for p in ordered], dtype=np.int64)
    dst = np.array([p[1] for p in ordered], dtype=np.int64)
    return src, dst


oriented_graphs = st.sets(
    st.tuples(st.integers(0, 30), st.integers(0, 30)).filter(lambda p: p[0] < p[1]), max_size=120
)


@given(oriented_graphs, st.integers(1, 50))
@settings(max_examples=150, deadline=None)
def test_closure_keys_are_all_wedges_in_any_batching(pairs, batch):
    src, dst = sorted_oriented(pairs)
    bits = key_bits(31)
    expected = sorted(
        (v << bits) | w
        for u in set(src.tolist())
        for v, w in itertools.combinations(sorted(dst[src == u].tolist()), 2)
    )
    total = count_wedges(src)
    assert total == len(expected)
    produced = [closure_keys(src, dst, first, min(first + batch, total), bits)
                for first in range(0, total, batch)]  # any contiguous wedge ranges
    keys = np.concatenate(produced) if produced else np.empty(0, np.int64)
    assert sorted(keys.tolist()) == expected


def test_wedges_per_edge_splits_c_d_2_by_position():
    src = np.array([0, 0, 0, 0, 3, 3, 7])
    assert wedges_per_edge(src).tolist() == [3, 2, 1, 0, 1, 0, 0]
    assert count_wedges(src) == 6 + 1


@given(st.lists(st.integers(0, (1 << 20) - 1), max_size=200), st.sampled_from([1, 2, 4, 16]))
@settings(max_examples=100, deadline=None)
def test_radix_split_is_a_stable_partition_by_top_bits(values, nbins):
    keys = np.array(values, dtype=np.int64)
    shift = bin_shift(10, nbins)
    split = radix_split(keys, shift, nbins)
    for k, part in split.items():
        assert (part >> shift == k).all()
        assert part.tolist() == [v for v in values if v >> shift == k]  # stable: input order
    assert sum(len(p) for p in split.values()) == len(values)


def test_split_pieces_own_their_memory():
    """A piece that is a view would keep its whole batch alive after being spilled, while
    Dask counts only the piece (the capped GPU run ran its pool out that way)."""
    keys = np.arange(1000, dtype=np.int64) * 7919 % 1024
    for pieces in (split_by_bounds(keys, keys, [0, 256, 512, 768, 1024]),
                   radix_split(keys, bin_shift(5, 8), 8)):
        assert len(pieces) > 1
        for piece in pieces.values():
            assert piece.base is None and piece.flags.owndata


def test_pack_edges_and_unpack_keys():
    src = np.array([0, 0, 1, 2, 3])
    dst = np.array([1, 3, 2, 3, 3])
    keys = pack_edges(src, dst, 2)
    assert keys.tolist() == [1, 3, 6, 11, 15]
    unpacked = unpack_keys(keys, 2)
    assert unpacked[0].tolist() == src.tolist() and unpacked[1].tolist() == dst.tolist()


def test_count_closed_counts_members():
    edges = np.array([2, 5, 9, 12])
    assert count_closed(np.array([5, 9, 9, 1, 13, 12]), edges) == 4
    assert count_closed(np.empty(0, np.int64), edges) == 0
    assert count_closed(np.array([1]), np.empty(0, np.int64)) == 0


def test_bin_count_choice():
    share = 4  # a bin's edge keys use at most a quarter of a task's budget
    assert choose_bin_count(1000, 4, 10**9, None, 20, share) == 16  # four bins per worker
    assert choose_bin_count(1000, 1, 10**9, None, 20, share) == 1
    assert choose_bin_count(1000, 1, 8 * 1000, None, 20, share) == 4  # edges use <= 1/4
    assert choose_bin_count(1000, 1, 8 * 1000, None, 20, 2) == 2  # a half: half the bins
    assert choose_bin_count(10, 1, 10**9, 8, 20, share) == 8
    assert choose_bin_count(10, 1, 10**9, 1 << 20, 3, share) == 8  # never more than id space
    with pytest.raises(ValueError, match="power of two"):
        choose_bin_count(10, 1, 10**9, 3, 20, share)


@given(oriented_graphs, st.integers(1, 4))
@settings(max_examples=150, deadline=None)
def test_fused_intersection_counts_triangles_bin_by_bin(pairs, nbins):
    import networkx as nx

    from dtri.kernels.csr import from_sorted, rows_of
    from dtri.kernels.intersect import intersect

    src, dst = sorted_oriented(pairs)
    whole = from_sorted(src, dst, 0, 31)
    width = -(-31 // nbins)
    found = 0
    for low in range(0, 31, width):
        found += intersect(whole, rows_of(whole, low, min(low + width, 31))).triangles
    graph = nx.Graph(list(pairs))
    assert found == sum(nx.triangles(graph).values()) // 3


@given(st.lists(st.integers(-(2**62), 2**62), max_size=300), st.booleans())
@settings(max_examples=150, deadline=None)
def test_radix_sort_orders_like_numpy(values, non_negative):
    from dtri.kernels.sort.cpu import radix_sort

    keys = np.array([abs(v) if non_negative else v for v in values], dtype=np.int64)
    assert radix_sort(keys).tolist() == sorted(keys.tolist())


def test_sort_keys_of_long_arrays_use_the_radix_sort_and_match_numpy():
    import dtri.kernels.sort.cpu  # noqa: F401  (loaded: arrays from RADIX_SORT_MIN take the radix sort)
    from dtri.kernels.dispatch import RADIX_SORT_MIN, compiled_kernels_ready, sort_keys

    assert compiled_kernels_ready()
    rng = np.random.default_rng(3)
    for top in (7, 2**20, 2**40, 2**62):
        keys = rng.integers(0, top, RADIX_SORT_MIN * 3, dtype=np.int64)
        ordered = sort_keys(keys)
        assert np.array_equal(ordered, np.sort(keys)) and not np.shares_memory(ordered, keys)


@given(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 60)), min_size=1, max_size=80),
       st.sampled_from([0, 10**6, 10**15]))
@settings(max_examples=100, deadline=None)
def test_vertex_ids_by_table_or_by_search_are_the_same(pairs, offset):
    # ids close together go through a table indexed by id, ids far apart through a sort
    # and binary search: either way the ascending distinct ids and their positions
    src = np.array([u * (offset or 1) + u for u, _ in pairs], dtype=np.int64)
    dst = np.array([v * (offset or 1) + v for _, v in pairs], dtype=np.int64)
    vertices = partition_vertices(EdgeArrays(src, dst))
    ascending = sorted(set(src.tolist()) | set(dst.tolist()))
    assert vertex_ids(vertices).tolist() == ascending
    assert vertex_count(vertices) == len(ascending)
    a, b = dense_ids(vertices, src, dst)
    assert a.tolist() == np.searchsorted(ascending, src).tolist()
    assert b.tolist() == np.searchsorted(ascending, dst).tolist()


@given(st.lists(st.lists(st.integers(0, 3000), max_size=40), min_size=1, max_size=6),
       st.integers(0, 10**12))
@settings(max_examples=100, deadline=None)
def test_merged_vertex_sets_are_the_union_as_marks_or_as_ids(parts, far):
    # partitions' sets held as marks (ids close together) or as ids (one far id), merged in
    # any mix: the union, ascending, and the dense ids by table or by search agree
    frames = []
    for i, ids in enumerate(parts):
        ids = ids + ([far] if i == 0 and far > 10**6 else [])
        ends = np.array(ids or [], dtype=np.int64)
        frames.append(EdgeArrays(ends, ends[::-1].copy()))
    sets = [partition_vertices(f) for f in frames]
    merged = merge_vertices(*sets)
    union = sorted({int(v) for ids in parts for v in ids}
                   | ({far} if far > 10**6 and parts else set()))
    assert vertex_ids(merged).tolist() == union and vertex_count(merged) == len(union)
    # marks unless one id lies so far that marks up to it would outweigh the ids
    assert is_marks(merged) == (far <= 10**6 and any(parts))
    probe = np.array(union, dtype=np.int64)
    (positions,) = dense_ids(merged, probe)
    assert positions.tolist() == list(range(len(union)))
    order = np.arange(len(union))[::-1].copy()
    assert ids_by_rank(merged, order).tolist() == union[::-1]
