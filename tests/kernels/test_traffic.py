"""The join's bytes read (:mod:`dtri.kernels.traffic`): the model on a graph counted by hand,
the sums carried from the join's tasks to the count's result and to ``dtri bench``, and on
the GPU the kernels' own sums against the model and the device's peak bandwidth."""

from __future__ import annotations

import pickle

import dask
import numpy as np
import pytest

import dtri
from dtri import Options
from dtri.analytics import count as count_module
from dtri.bench import bandwidth_figures, run_bench
from dtri.kernels.csr import CSR, from_sorted, rows_of
from dtri.kernels.intersect import intersect, work_counters
from dtri.kernels.strategy import hash_max_members
from dtri.kernels.traffic import JoinCount, counted_bytes, summed
from dtri.runtime.bandwidth import peak_bandwidth
from tests.kernels.test_hash_cpu import skewed_edges

K4_AND_A_TAIL = np.array([[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3], [3, 4]])
"""Oriented by id: N+(0) = 1 2 3, N+(1) = 2 3, N+(2) = 3, N+(3) = 4."""


def k4_and_a_tail() -> CSR:
    return from_sorted(K4_AND_A_TAIL[:, 0].copy(), K4_AND_A_TAIL[:, 1].copy(), 0, 5)


def test_the_bytes_of_a_small_graph_counted_by_hand():
    """Live edges (a later member of u, a non-empty N+(v)): (0, 1) with a = 2, b = 2; (0, 2)
    and (1, 2) with a = 1, b = 1; 28 bytes of index each. Searched: shorter lists 2 + 1 + 1
    members, steps 2 × bit-length 2 + 1 + 1 = 6. Hashed (tables from one member, a probe as
    costly as a step): probes 2 + 1 + 1, tables N+(1) and N+(2), 2 + 1 members."""
    csr = k4_and_a_tail()
    searched = work_counters(csr, csr)
    assert (searched["edges"], searched["hashed_edges"], searched["searched_members"],
            searched["search_steps"]) == (3, 0, 4, 6)
    assert counted_bytes(searched) == 3 * 28 + 4 * (4 + 6) == 124
    with dask.config.set({"dtri.kernel-tuning.hash-min-members": 1}):
        hashed = work_counters(csr, csr)
    assert (hashed["hashed_edges"], hashed["probes"], hashed["table_members"]) == (3, 4, 3)
    assert counted_bytes(hashed) == 3 * 28 + 4 * (4 + 3) == 112
    # the group of ranks 2.. only: (0, 2) and (1, 2) reach it, one member and one step each
    assert counted_bytes(work_counters(csr, rows_of(csr, 2, 5))) == 2 * 28 + 4 * (2 + 2)


def test_join_counts_sum_their_bytes_only_where_every_one_has_them():
    both = summed([JoinCount(5, 100), JoinCount(2, 3)])
    assert (both, both.bytes_read) == (7, 103)
    assert summed([JoinCount(5, 100), 4]) == 9 and not hasattr(summed([JoinCount(5, 1), 4]),
                                                                  "bytes_read")
    assert summed([JoinCount(1, None), JoinCount(1, 2)]).__class__ is int
    assert summed([]) == 0
    copied = pickle.loads(pickle.dumps(JoinCount(7, 103)))
    assert (copied, copied.bytes_read, type(copied)) == (7, 103, JoinCount)


def test_bandwidth_figures():
    assert bandwidth_figures(1_000, 0.5, 4_000.0) == {
        "join_bytes_read": 1_000, "join_seconds": 0.5, "join_bandwidth": 2_000.0,
        "join_bandwidth_fraction": 0.5}
    assert bandwidth_figures(1_000, 0.5, None)["join_bandwidth_fraction"] is None
    unknown = bandwidth_figures(None, 0.5, 4_000.0)
    assert unknown["join_bandwidth"] is None and unknown["join_bandwidth_fraction"] is None


def test_no_peak_bandwidth_on_the_cpu():
    assert peak_bandwidth(np) is None


def modelled_on_the_cpu(monkeypatch) -> list[int]:
    """The CPU's join made to carry the model's bytes, as the GPU's does; the bytes of each
    call are recorded."""
    calls: list[int] = []
    real = count_module.intersect

    def with_bytes(part, group, **options):
        found = real(part, group, **options)
        calls.append(counted_bytes(work_counters(part, group)))
        return found._replace(bytes_read=calls[-1])

    monkeypatch.setattr(count_module, "intersect", with_bytes)
    return calls


def test_the_count_carries_its_join_tasks_bytes(monkeypatch):
    pairs = skewed_edges(3, 800, 6, 6_000)
    plain = dtri.count(pairs, backend="cpu", join="intersect")
    assert plain.join_bytes_read is None  # the CPU's kernels keep no such sums
    calls = modelled_on_the_cpu(monkeypatch)
    result = dtri.count(pairs, backend="cpu", join="intersect", scheduler="synchronous",
                        bins=4, memory_budget="64KiB")
    assert result.triangles == plain.triangles and len(calls) > 1
    assert result.join_bytes_read == sum(calls) > 0
    calls.clear()
    wedges = dtri.count(pairs, backend="cpu", join="wedges", scheduler="synchronous")
    assert wedges.join_bytes_read is None and not calls  # that join is not modelled


def test_dtri_bench_reports_the_joins_bandwidth_without_a_peak_on_the_cpu(monkeypatch):
    keys = ("join_bytes_read", "join_seconds", "join_bandwidth", "join_bandwidth_fraction")
    options = Options(backend="cpu", scheduler="synchronous", join="intersect")
    (record,) = run_bench(["rmat:8"], options, lambda record: None, repeat=1, peers="none")
    assert all(record["dtri"][key] is None for key in keys[:1] + keys[2:])
    assert record["dtri"]["join_seconds"] == record["dtri"]["in_memory_stage_seconds"][
        "wedges_join"]
    calls = modelled_on_the_cpu(monkeypatch)
    (record,) = run_bench(["rmat:8"], options, lambda record: None, repeat=1, peers="none")
    timing = record["dtri"]
    assert timing["join_bytes_read"] == calls[-1] > 0  # the in-memory run's, one task
    assert timing["join_bandwidth"] == pytest.approx(
        timing["join_bytes_read"] / timing["join_seconds"], rel=1e-6)
    assert timing["join_bandwidth_fraction"] is None


# ---------------------------------------------------------------------------------- the GPU

@pytest.mark.gpu
@pytest.mark.parametrize("tuning", [{}, {"hash-min-members": 1},
                                    {"hash-min-members": 1, "hash-probe-cost": 8.0},
                                    {"hash-probes": False}])
def test_the_gpu_join_reads_the_modelled_bytes(tuning):
    """The kernels' sums (classes, the pieces' prefix sum, the searched edges' block sums)
    give the model's bytes exactly, with the GPU's own table limit."""
    import cupy

    from dtri.kernels.intersect.cuda import COUNT, max_table_bits

    pairs = skewed_edges(7, 3_000, 20, 30_000)
    whole = from_sorted(pairs[:, 0].copy(), pairs[:, 1].copy(), 0, 3_000)

    def on_gpu(csr: CSR) -> CSR:
        return CSR(cupy.asarray(csr.dst), cupy.asarray(csr.offsets), csr.low)

    limit = min(hash_max_members(False), 1 << (max_table_bits(COUNT) - 1))
    for low, high in [(0, 3_000), (0, 1_000), (1_000, 3_000)]:
        group = rows_of(whole, low, high)
        with dask.config.set({"dtri.kernel-tuning": tuning}):
            counters = work_counters(whole, group, hash_max=limit)
            found = intersect(on_gpu(whole), on_gpu(group))
        assert found.triangles == intersect(whole, group).triangles
        assert found.bytes_read == counted_bytes(counters) > 0, (low, high)


@pytest.mark.gpu
def test_a_gpu_count_and_bench_report_the_joins_share_of_the_peak_bandwidth():
    import cupy

    peak = peak_bandwidth(cupy)
    assert peak is not None and 1e11 < peak < 1e14  # 3.35 TB/s on an H100 SXM
    pairs = cupy.asarray(skewed_edges(5, 3_000, 20, 30_000))
    result = dtri.count(pairs, join="intersect")
    assert result.backend == "gpu" and result.join_bytes_read > 0
    options = Options(backend="gpu", scheduler="synchronous", join="intersect")
    (record,) = run_bench(["rmat:12"], options, lambda record: None, repeat=1, peers="none")
    timing = record["dtri"]
    assert timing["join_bytes_read"] > 0 and timing["join_bandwidth"] > 0
    assert timing["join_bandwidth_fraction"] == pytest.approx(
        timing["join_bandwidth"] / peak, abs=1e-6)
