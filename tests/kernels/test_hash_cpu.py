"""The CPU kernel's hash probes (numba: the same edge classes, per-target tables and credits
as the CUDA kernel) against its search-only kernel, in every mode, on one and two threads."""

from __future__ import annotations

import dask
import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dtri.kernels.csr import from_sorted, rows_of
from dtri.kernels.intersect import intersect, work_counters

TUNINGS = [
    {"dtri.kernel-tuning.hash-min-members": 1, "dtri.kernel-tuning.hash-probe-cost": 0.25},
    {"dtri.kernel-tuning.hash-min-members": 1, "dtri.kernel-tuning.hash-probe-cost": 1.0},
    {"dtri.kernel-tuning.hash-min-members": 3, "dtri.kernel-tuning.hash-probe-cost": 8.0},
]
THREADS = [{}, {"dtri.kernel-threads": 2, "dtri.kernel-parallel-min-edges": 1}]


def skewed_edges(seed: int, vertices: int, hubs: int, edges: int) -> np.ndarray:
    """Distinct edges (low, high) with a few hubs on many of them, sorted."""
    rng = np.random.default_rng(seed)
    pairs = np.concatenate([
        np.stack([rng.integers(0, hubs, edges), rng.integers(0, vertices, edges)], 1),
        rng.integers(0, vertices, (edges, 2))])
    pairs = np.sort(pairs[pairs[:, 0] != pairs[:, 1]], axis=1)
    return np.unique(pairs, axis=0)


def modes(state: np.ndarray, group_state: np.ndarray) -> list[dict]:
    return [{}, {"credits": True}, {"credits": True, "group_credits": True},
            {"credits": True, "group_credits": True, "part_state": state,
             "group_state": group_state},
            {"group_credits": True, "part_state": state, "group_state": group_state,
             "peel": True},
            {"part_state": state, "group_state": group_state, "peel": True}]


@given(seed=st.integers(0, 2**16), vertices=st.integers(8, 120), hubs=st.integers(1, 6),
       edges=st.integers(10, 600), cut=st.floats(0.1, 0.9))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@pytest.mark.parametrize("tuning", TUNINGS)
@pytest.mark.parametrize("threads", THREADS)
def test_hash_probes_give_the_search_kernels_results(tuning, threads, seed, vertices, hubs,
                                                     edges, cut):
    pairs = skewed_edges(seed, vertices, hubs, edges)
    whole = from_sorted(pairs[:, 0].copy(), pairs[:, 1].copy(), 0, vertices)
    state = np.random.default_rng(seed).choice(np.array([0, 1, 1, 2], np.uint8), whole.edges)
    middle = int(vertices * cut)
    for low, high in [(0, vertices), (0, middle), (middle, vertices)]:
        group = rows_of(whole, low, high)
        start = int(whole.offsets[low])
        group_state = state[start: start + group.edges]
        for options in modes(state, group_state):
            with dask.config.set({"dtri.kernel-tuning.hash-probes": False}):
                expected = intersect(whole, group, **options)
            with dask.config.set({**tuning, **threads}):
                found = intersect(whole, group, **options)
            assert found.triangles == expected.triangles, options
            for name in ("uv", "uw", "vw"):
                mine, reference = getattr(found, name), getattr(expected, name)
                assert (mine is None) == (reference is None)
                if mine is not None:
                    assert (mine == reference).all(), (name, options)


def test_hash_probes_count_as_networkx_and_hash_most_edges_of_a_skewed_graph():
    pairs = skewed_edges(7, 3_000, 20, 30_000)
    whole = from_sorted(pairs[:, 0].copy(), pairs[:, 1].copy(), 0, 3_000)
    graph = nx.Graph(pairs.tolist())
    assert intersect(whole, whole).triangles == sum(nx.triangles(graph).values()) // 3
    with dask.config.set({"dtri.kernel-tuning.hash-min-members": 1}):
        counters = work_counters(whole, whole)
        assert intersect(whole, whole).triangles == sum(nx.triangles(graph).values()) // 3
    assert counters["hashed_edges"] > counters["searched_edges"] > 0
    assert counters["probes"] < counters["search_steps_if_all_searched"]
    with dask.config.set({"dtri.kernel-tuning.hash-probes": False}):
        assert work_counters(whole, whole)["hashed_edges"] == 0


def test_the_gpu_tables_slots_per_member_are_checked():
    """``hash-slots-per-member`` is 2, 4 or 8 (a power of two: a table's size is one), read
    as the shift of a list's length; another value is refused by name."""
    from dtri.kernels.strategy import hash_tuning

    slots = "dtri.kernel-tuning.hash-slots-per-member"

    assert hash_tuning().spread == 2  # the default: 4 slots a member
    assert hash_tuning().spread_bytes == 64 * 1024
    with dask.config.set({slots: 8}):
        assert hash_tuning().spread == 3
    with dask.config.set({slots: 3}), pytest.raises(ValueError, match="hash-slots-per-member"):
        hash_tuning()


def test_a_kernel_constant_is_overridden_by_name_and_an_unknown_name_is_refused():
    """``dtri.kernel-tuning`` overrides the fitted constants of dtri/kernels/tuning.py by name,
    a size as bytes or a string, a switch as a bool or a word; a misspelt name is refused."""
    from dtri.errors import ConfigurationError
    from dtri.kernels.strategy import HASH_TUNING, hash_tuning

    assert hash_tuning() == HASH_TUNING
    with dask.config.set({"dtri.kernel-tuning.hash-spread-max-bytes": "1MiB",
                          "dtri.kernel-tuning.hash-probes": "false",
                          "dtri.kernel-tuning.hash-probe-cost": 8}):
        tuning = hash_tuning()
    assert (tuning.spread_bytes, tuning.enabled, tuning.probe_cost) == (1 << 20, False, 8.0)
    with dask.config.set({"dtri.kernel-tuning.hash-min-member": 1}), \
            pytest.raises(ConfigurationError, match="no constant hash-min-member;"):
        hash_tuning()
