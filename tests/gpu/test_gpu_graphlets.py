"""Graphlet degrees on the GPU: the CUDA kernels (triangle listing, 4-cliques, 4-cycle wedges
and their sorted reduction) against enumeration and against the CPU (needs a GPU)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import dtri
from tests.oracles import check_graphlets, host, messy_graphs

pytestmark = pytest.mark.gpu


@given(edges=messy_graphs())
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_gpu_graphlets_equal_enumeration(edges):
    check_graphlets(edges, backend="gpu", scheduler="synchronous", npartitions=3)


@pytest.mark.parametrize("memory_budget", [None, 600])
def test_gpu_graphlets_in_groups_batches_and_anchor_ranges(memory_budget):
    for seed in range(3):
        edges = np.random.default_rng(seed).integers(0, 14, (60, 2))
        check_graphlets(edges, backend="gpu", scheduler="synchronous", npartitions=3,
                        memory_budget=memory_budget)


def test_gpu_wide_wedge_keys(monkeypatch):
    from dtri.kernels import graphlets

    monkeypatch.setattr(graphlets, "PACKED_ID_BITS", 0)
    check_graphlets(np.random.default_rng(7).integers(0, 14, (60, 2)), backend="gpu",
                    scheduler="synchronous", npartitions=2, memory_budget=1_000)


@pytest.mark.parametrize("staging", ["device", "host"])
def test_gpu_graphlets_on_a_local_cuda_cluster(staging):
    edges = np.random.default_rng(11).integers(0, 16, (80, 2))
    check_graphlets(edges, backend="gpu", workers=1, npartitions=2, memory_budget="4KiB",
                    staging=staging)


def test_gpu_graphlets_equal_the_cpu_on_rmat():
    from dtri.input.generate import generated

    frames = []
    for backend in ("cpu", "gpu"):
        with dtri.prepare(generated("rmat:11"), backend=backend, scheduler="synchronous",
                          npartitions=2) as graph:
            frames.append(host(graph.graphlets().compute()).sort_index())
    assert frames[0].equals(frames[1])
    assert int(frames[0].sigma15.sum()) > 0 and int(frames[0].sigma12.sum()) > 0
