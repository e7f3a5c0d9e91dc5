"""The preparation stages as array pieces: exchanges, work-balanced source ranges, empty
partitions (CPU; the GPU runs the same functions on CuPy in tests/test_gpu.py)."""

from __future__ import annotations

import itertools

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dtri
from dtri.bins import even_bounds, split_by_bounds
from dtri.canonicalize import partition_vertices
from dtri.orient import source_bounds
from dtri.prepare import prepare_partition
from tests.conftest import networkx_triangles


@given(st.lists(st.integers(0, 99), max_size=200), st.integers(1, 6))
def test_split_by_bounds_sends_each_value_to_its_range_once(values, parts):
    values = np.asarray(values, dtype=np.int64)
    bounds = even_bounds(100, parts)
    pieces = split_by_bounds(values * 7, values, bounds)
    assert sorted(pieces) == list(range(parts))  # every receiver gets a piece, maybe empty
    for j, piece in pieces.items():
        assert ((piece // 7 >= bounds[j]) & (piece // 7 < bounds[j + 1])).all()
    assert sorted(np.concatenate(list(pieces.values())).tolist()) == sorted((values * 7).tolist())


@given(st.lists(st.integers(0, 300), min_size=1, max_size=300), st.integers(1, 8))
def test_source_bounds_even_out_edges_plus_wedges(out_degree, parts):
    out_degree = np.asarray(out_degree, dtype=np.int64)
    bounds = source_bounds(out_degree, parts)
    assert bounds[0] == 0 and bounds[-1] == len(out_degree) and len(bounds) == parts + 1
    assert all(a <= b for a, b in itertools.pairwise(bounds))
    work = out_degree + out_degree * (out_degree - 1) // 2
    largest = int(work.max())
    for j in range(parts):  # each range within one source's work of the fair share
        assert work[bounds[j]: bounds[j + 1]].sum() <= work.sum() / parts + largest


def test_the_heaviest_sources_are_spread_over_the_ranges():
    """A star-heavy degree list: ranges by work, not by vertex count."""
    out_degree = np.array([1] * 1000 + [200] * 4, dtype=np.int64)
    bounds = source_bounds(out_degree, 4)
    assert bounds[1] >= 1000  # the 1000 light sources share one range with a heavy one


def test_prepare_partition_orients_low_to_high_rank():
    frame = pd.DataFrame({"src": [10, 20, 30, 10, 10**15], "dst": [20, 30, 10, 10, 10]})
    oriented, vertices = prepare_partition(frame, "degree")
    assert vertices == 4  # 10, 20, 30, 10**15 (the self-loop adds no edge, 10 no vertex)
    assert len(oriented) == 4
    assert (oriented["src"] < oriented["dst"]).all()
    assert partition_vertices(frame).tolist() == [10, 20, 30, 10**15]


def _with_empty_partitions(edges: np.ndarray) -> dd.DataFrame:
    frame = pd.DataFrame({"src": edges[:, 0], "dst": edges[:, 1]})
    empty = frame.iloc[:0]
    pieces = [empty, frame.iloc[: len(frame) // 2], empty, frame.iloc[len(frame) // 2:], empty]
    return dd.from_delayed([dask.delayed(p) for p in pieces], meta=empty)


@pytest.mark.parametrize("join", ["wedges", "intersect"])
def test_empty_input_partitions_count_exactly(join):
    rng = np.random.default_rng(5)
    edges = rng.integers(0, 300, size=(3_000, 2))
    result = dtri.count(_with_empty_partitions(edges), backend="cpu", scheduler="synchronous",
                        npartitions=5, join=join, memory_budget="32KiB")
    assert result.partitions == 5
    assert result.triangles == networkx_triangles(edges)


@settings(max_examples=10, deadline=None)
@given(st.integers(4, 9))
def test_more_partitions_than_edges(partitions):
    """Receivers with nothing to receive: empty pieces, empty sorted partitions, empty bins."""
    rows = [pd.DataFrame({"src": [u], "dst": [v]}) for u, v in ((0, 1), (1, 2), (2, 0))]
    rows += [rows[0].iloc[:0]] * (partitions - 3)
    frame = dd.from_delayed([dask.delayed(r) for r in rows], meta=rows[0].iloc[:0])
    result = dtri.count(frame, backend="cpu", scheduler="synchronous", npartitions=partitions)
    assert result.triangles == 1 and result.partitions == partitions
