"""Vertex orders: schedules are permutations in the promised order, the ``order`` stage is
timed on its own, ``auto`` resolves, and every analytic is the same under every order, in
this process and on two worker processes (CPU; the same array code makes the GPU's
schedules, whose kernel runs them in tests/gpu)."""

from __future__ import annotations

import dask
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dtri
from dtri.kernels.csr import degrees
from dtri.kernels.order import in_work, schedule
from dtri.prepared.local import prepare_partition
from tests.oracles import check_analytics, messy_graphs, networkx_triangles

ORDERS = ["rank", "degree", "aorder", "auto"]


def prepared_csr(edges: np.ndarray):
    import pandas as pd

    from dtri.kernels.csr import CSR

    frame = pd.DataFrame({"src": edges[:, 0], "dst": edges[:, 1]})
    part, n, _, degree, _, _ = prepare_partition(frame, "degree", None, None)
    return CSR(*part), n, degree


def test_in_work_is_the_later_members_of_each_targets_in_neighbours():
    csr, n, _ = prepared_csr(np.array([[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]]))
    work = in_work(csr, n)
    expected = np.zeros(n, dtype=np.int64)
    for row in range(n):
        start, stop = csr.offsets[row], csr.offsets[row + 1]
        for e in range(start, stop):
            expected[csr.dst[e]] += stop - e - 1
    assert work.tolist() == expected.tolist()


@given(edges=messy_graphs(), wave=st.integers(1, 8))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_schedules_are_permutations_in_their_order(edges, wave):
    csr, n, degree = prepared_csr(edges)
    rows = int(csr.offsets.shape[0]) - 1
    work = in_work(csr, n)
    assert schedule(csr, "rank", work, degree) is None
    by_degree = schedule(csr, "degree", work, degree)
    assert sorted(by_degree.tolist()) == list(range(rows))
    assert all(np.diff(degree[by_degree]) <= 0)
    with dask.config.set({"dtri.kernel-tuning.aorder-wave": wave}):
        aorder = schedule(csr, "aorder", work, degree)
    assert sorted(aorder.tolist()) == list(range(rows))
    load = work + 2 * degrees(csr)
    heaviest = sorted(range(rows), key=lambda r: (-load[r], r))
    buckets = [[] for _ in range(wave)]  # serpentine dealing, bucket after bucket
    for i, row in enumerate(heaviest):
        deal, slot = divmod(i, wave)
        buckets[slot if deal % 2 == 0 else wave - 1 - slot].append(row)
    assert aorder.tolist() == [row for bucket in buckets for row in bucket]


def test_an_unknown_order_is_refused():
    with pytest.raises(dtri.DtriError):
        dtri.count(np.array([[0, 1]]), order="fastest")


@pytest.mark.parametrize("order", ORDERS)
def test_the_order_stage_is_timed_and_reported(order):
    edges = np.random.default_rng(3).integers(0, 60, (600, 2))
    with dtri.prepare(edges, backend="cpu", scheduler="synchronous", npartitions=3,
                      order=order) as graph:
        resolved = "rank" if order == "auto" else order
        assert graph.order == resolved
        assert graph.order_reason.startswith("auto: rank" if order == "auto" else order)
        assert ("order" in graph.seconds) == (resolved != "rank")
        assert all((as_schedule(p) is None) == (resolved == "rank") for p in graph.parts)
        result = graph.count()
        assert result.order == resolved and result.plan["choices"]["order"] == resolved
        assert result.triangles == networkx_triangles(edges)


def as_schedule(part):
    (stored,) = dask.compute(part)
    return stored[3] if len(stored) > 3 else None


@given(edges=messy_graphs(), npartitions=st.integers(1, 3),
       order=st.sampled_from(ORDERS), orientation=st.sampled_from(["degree", "adirection"]))
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_every_analytic_is_the_same_under_every_order(edges, npartitions, order, orientation):
    check_analytics(edges, ks=(3, 4), backend="cpu", scheduler="synchronous",
                    npartitions=npartitions, order=order, orientation=orientation)


def test_orders_on_two_worker_processes(dask_client, backend):
    if backend != "cpu":
        pytest.skip("the GPU runs the orders in tests/gpu")
    edges = np.random.default_rng(5).integers(0, 300, (4_000, 2))
    for order in ("degree", "aorder"):
        for npartitions in (1, 4):
            with dtri.prepare(edges, backend="cpu", npartitions=npartitions,
                              order=order) as graph:
                assert graph.count_triangles() == networkx_triangles(edges)
                assert "order" in graph.seconds
