"""Colourful sampling (issue 31): the read stage's colour filter, the monochromatic graph's
triangles and variance against NetworkX, the variance formula against every colouring of small
graphs, intervals that cover the exact count over fixed seed sets, the planner's choice of
method, the in-process and the cluster path, and the command line."""

from __future__ import annotations

import itertools

import dask
import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dtri.input.colours import colour_hashes, colour_key, coloured, monochromatic
from dtri.input.edges import EdgeArrays
from dtri.input.generate import splitmix64_int
from tests.oracles import messy_graphs

MASK64 = (1 << 64) - 1


def colour_of(vertex: int, key: int, colours: int) -> int:
    """The colour of one id, from splitmix64 on Python ints (the filter's oracle)."""
    return splitmix64_int((vertex & MASK64) ^ key) % colours


def simple_edges(edges: np.ndarray) -> set[tuple[int, int]]:
    """The simple undirected graph's edges of an edge list."""
    return {(min(u, v), max(u, v)) for u, v in edges.tolist() if u != v}


def filtered(edges: np.ndarray, seed: int, colours: int) -> np.ndarray:
    part = monochromatic(EdgeArrays(edges[:, 0], edges[:, 1]), colour_key(seed), colours)
    return np.stack([part.src, part.dst], axis=1)


@given(edges=messy_graphs(), seed=st.integers(0, 2**32 - 1),
       colours=st.sampled_from([2, 4, 8]))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_filter_keeps_exactly_the_monochromatic_rows_and_commutes_with_the_preparation(
        edges, seed, colours):
    key = colour_key(seed)
    kept = filtered(edges, seed, colours)
    expected = [[u, v] for u, v in edges.tolist()
                if colour_of(u, key, colours) == colour_of(v, key, colours)]
    assert kept.tolist() == expected  # the rows, in order, duplicates and loops included
    # filtering the raw rows, then reading them as a simple graph, is the simple graph's
    # monochromatic subgraph: directions, repeats and self-loops do not matter
    assert simple_edges(kept) == {(u, v) for u, v in simple_edges(edges)
                                  if colour_of(u, key, colours) == colour_of(v, key, colours)}


def test_colourings_nest_and_frames_filter_as_arrays_do():
    rng = np.random.default_rng(5)
    edges = rng.integers(-(2**40), 2**40, (20_000, 2))
    kept = {n: filtered(edges, 7, n) for n in (2, 4, 8, 16)}
    for coarse, fine in itertools.pairwise((2, 4, 8, 16)):
        assert set(map(tuple, kept[fine].tolist())) <= set(map(tuple, kept[coarse].tolist()))
        assert (filtered(kept[coarse], 7, fine) == kept[fine]).all()  # finer of the coarser
    for n, rows in kept.items():  # about 1/n of the rows each
        assert abs(len(rows) / len(edges) - 1 / n) < 0.02
    ids = np.arange(1 << 16)
    shares = np.bincount((colour_hashes(ids, colour_key(3)) % 8).astype(np.int64)) / len(ids)
    assert np.abs(shares - 1 / 8).max() < 0.01  # the colours are uniform
    frame = pd.DataFrame({"src": edges[:, 0], "dst": edges[:, 1]})
    assert (monochromatic(frame, colour_key(7), 4).to_numpy() == kept[4]).all()
    import dask.dataframe as dd

    lazy = coloured(dd.from_pandas(frame, npartitions=3), colour_key(7), 4)
    assert lazy._name.startswith("dtri-estimate-colours-")
    assert (lazy.compute().to_numpy() == kept[4]).all()
    delayed = coloured([dask.delayed(EdgeArrays)(edges[:, 0], edges[:, 1])], colour_key(7), 4)
    (part,) = dask.compute(*delayed)
    assert delayed[0].key[0].startswith("dtri-estimate-colours-")
    assert (np.stack([part.src, part.dst], axis=1) == kept[4]).all()

