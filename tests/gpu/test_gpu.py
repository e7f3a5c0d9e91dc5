"""The cuDF/CuPy backend: the same kernels and the same counts as on the CPU (needs a GPU)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import dtri
from dtri.kernels.bins import bin_shift, radix_split
from dtri.kernels.dispatch import array_module, column_to_array, to_host
from dtri.kernels.join import count_closed
from dtri.kernels.wedges import closure_keys, count_wedges
from tests.oracles import (
    check_analytics,
    check_vertex_results,
    edge_copies_in_every_partition,
    messy_graphs,
    networkx_graph,
    networkx_triangles,
)

pytestmark = pytest.mark.gpu


def test_dispatch_finds_cupy_and_cudf():
    import cudf
    import cupy

    series = cudf.Series([3, 1, 2])
    assert array_module(column_to_array(series)) is cupy
    assert to_host(column_to_array(series)).tolist() == [3, 1, 2]


def test_kernels_agree_with_numpy():
    import cupy

    rng = np.random.default_rng(3)
    pairs = np.unique(np.sort(rng.integers(0, 500, (5_000, 2)), axis=1), axis=0)
    pairs = pairs[pairs[:, 0] < pairs[:, 1]]
    src, dst = pairs[:, 0].copy(), pairs[:, 1].copy()
    total = count_wedges(src)
    assert count_wedges(cupy.asarray(src)) == total
    cpu = closure_keys(src, dst, 10, total - 10, 9)
    gpu = closure_keys(cupy.asarray(src), cupy.asarray(dst), 10, total - 10, 9)
    assert (cupy.asnumpy(gpu) == cpu).all()
    shift = bin_shift(9, 8)
    cpu_bins, gpu_bins = radix_split(cpu, shift, 8), radix_split(gpu, shift, 8)
    assert sorted(cpu_bins) == sorted(gpu_bins)
    for k in cpu_bins:
        assert (cupy.asnumpy(gpu_bins[k]) == cpu_bins[k]).all()  # stable on both
    edge_keys = np.sort((src << 9) | dst)
    assert count_closed(gpu, cupy.asarray(edge_keys)) == count_closed(cpu, edge_keys)


def test_the_join_work_on_the_gpu_takes_the_gpus_edge_cost():
    """The fused join's work model adds the GPU's per-edge cost on device arrays."""
    import cupy
    import dask

    from dtri.kernels.orient import intersection_work

    keys = np.array([(0 << 2) | 1, (0 << 2) | 2, (1 << 2) | 2], dtype=np.int64)
    out_degree = np.array([2, 1, 0, 0], dtype=np.int64)
    with dask.config.set({"dtri.kernel-tuning": {"join-edge-cost-gpu": 10.0,
                                                "join-edge-cost-marks": 0.0}}):
        on_gpu = cupy.asnumpy(intersection_work(cupy.asarray(keys), cupy.asarray(out_degree), 4))
        on_cpu = intersection_work(keys, out_degree, 4)
    assert np.allclose(on_gpu - on_cpu, [20.0, 10.0, 0.0, 0.0])  # 10 for each edge of a source


@given(edges=messy_graphs())
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_gpu_counts_equal_networkx(edges):
    result = dtri.count(edges, backend="gpu", scheduler="synchronous", npartitions=3,
                        memory_budget=1_000, bins=4)
    assert result.backend == "gpu"
    assert result.triangles == networkx_triangles(edges)


def test_cupy_and_cudf_inputs_pick_the_gpu_backend():
    import cudf
    import cupy

    edges = np.array([(0, 1), (1, 2), (2, 0), (2, 3), (3, 0)])
    result = dtri.count(cupy.asarray(edges), scheduler="synchronous")
    assert (result.backend, result.triangles) == ("gpu", 2)
    frame = cudf.DataFrame({"a": edges[:, 0], "b": edges[:, 1]})
    assert dtri.count_triangles(frame, columns=("a", "b"), scheduler="synchronous") == 2


def test_parquet_reads_straight_into_cudf(tmp_path):
    import pandas as pd

    rng = np.random.default_rng(5)
    edges = rng.integers(0, 300, (4_000, 2))
    pd.DataFrame({"src": edges[:, 0], "dst": edges[:, 1]}).to_parquet(tmp_path / "g.parquet")
    result = dtri.count(tmp_path / "g.parquet", backend="gpu", scheduler="synchronous")
    assert result.triangles == networkx_triangles(edges)


def test_local_cuda_cluster_counts_exactly():
    rng = np.random.default_rng(11)
    edges = rng.integers(0, 2_000, (40_000, 2))
    result = dtri.count(edges, backend="gpu", workers=1, npartitions=4, memory_budget="1MiB",
                        join="wedges")  # the GPU's auto join is the fused one: no batches
    assert result.workers >= 1 and result.batches > 1 and "local cluster" in result.placement
    assert result.triangles == networkx_triangles(edges)


def skewed_csr(seed: int):
    """A skewed graph as one CSR over every rank: a few hubs with long lists (warp-wide lane
    groups) and many short lists."""
    from dtri.kernels.csr import from_sorted

    rng = np.random.default_rng(seed)
    hubs = rng.integers(0, 20, 30_000)
    edges = np.concatenate([np.stack([hubs, rng.integers(0, 3_000, 30_000)], 1),
                            rng.integers(0, 3_000, (30_000, 2))])
    edges = np.unique(np.sort(edges[edges[:, 0] != edges[:, 1]], axis=1), axis=0)
    return from_sorted(edges[:, 0].copy(), edges[:, 1].copy(), 0, 3_000)


def on_gpu(csr):
    import cupy

    from dtri.kernels.csr import CSR

    return CSR(cupy.asarray(csr.dst), cupy.asarray(csr.offsets), csr.low)


@pytest.mark.parametrize("rows", [None, 5_000])
def test_cuda_kernels_match_the_cpu_kernel_in_every_mode(rows):
    """Count, credits (u-v, u-w, v-w), counts among remaining edges and peeling: the CUDA
    kernels (one per degree class, 1-32 lanes per edge) against numba's, per source range."""
    import cupy

    from dtri.kernels.csr import rows_of
    from dtri.kernels.intersect import intersect

    cpu = skewed_csr(9)
    gpu = on_gpu(cpu)
    state = np.random.default_rng(1).choice(np.array([0, 1, 1, 1, 2], np.uint8), cpu.edges)
    for low, high in [(0, 1_000), (1_000, 3_000), (0, 3_000)]:
        cpu_group, gpu_group = rows_of(cpu, low, high), on_gpu(rows_of(cpu, low, high))
        start = int(cpu.offsets[low])
        group_state = state[start: start + cpu_group.edges]
        for options in ({}, {"credits": True, "group_credits": True},
                        {"part_state": state, "group_state": group_state},
                        {"credits": True, "group_credits": True, "part_state": state,
                         "group_state": group_state},
                        {"group_credits": True, "part_state": state, "group_state": group_state,
                         "peel": True}):
            expected = intersect(cpu, cpu_group, **options)
            moved = {k: cupy.asarray(v) if isinstance(v, np.ndarray) else v
                     for k, v in options.items()}
            found = intersect(gpu, gpu_group, chunk_rows=rows, **moved)
            assert found.triangles == expected.triangles > 0, options
            for name in ("uv", "uw", "vw"):
                mine, reference = getattr(found, name), getattr(expected, name)
                assert (mine is None) == (reference is None), (name, options)
                if mine is not None:
                    assert (cupy.asnumpy(mine) == reference).all(), (name, options)


@pytest.mark.parametrize("join", ["wedges", "intersect"])
def test_both_joins_on_the_gpu(join):
    rng = np.random.default_rng(13)
    edges = rng.integers(0, 1_500, (20_000, 2))
    result = dtri.count(edges, backend="gpu", scheduler="synchronous", join=join, bins=4,
                        npartitions=3)
    assert result.join == join
    assert result.triangles == networkx_triangles(edges)


def test_parquet_directory_on_a_local_cuda_cluster(tmp_path):
    """Parquet read straight into cuDF on dask-cuda workers (a failure seen only there)."""
    import pandas as pd

    rng = np.random.default_rng(17)
    edges = rng.integers(0, 2_000, (30_000, 2))
    for part, chunk in enumerate(np.array_split(edges, 3)):
        pd.DataFrame({"src": chunk[:, 0], "dst": chunk[:, 1]}).to_parquet(
            tmp_path / f"part-{part}.parquet")
    result = dtri.count(tmp_path, backend="gpu")
    assert result.triangles == networkx_triangles(edges)


# ---------------------------------------------------------------------------------------------
# Several GPUs of one host (skipped with fewer than two)
# ---------------------------------------------------------------------------------------------

def _gpus() -> int:
    import cupy

    return int(cupy.cuda.runtime.getDeviceCount())


def _enough_gpus() -> bool:
    try:
        return _gpus() >= 2
    except Exception:  # no CuPy, no driver
        return False


needs_two_gpus = pytest.mark.skipif(not _enough_gpus(), reason="needs two or more GPUs")


def _protocols() -> list[str]:
    from dtri.runtime.resolve import ucx_available

    return ["tcp", "ucx"] if ucx_available() else ["tcp"]


@pytest.fixture(scope="module")
def rmat13_gpu_oracle():
    from dtri.input.generate import rmat

    edges = rmat(13, seed=1, npartitions=1).compute(scheduler="sync")
    return edges, networkx_triangles(edges.to_numpy())


@needs_two_gpus
@pytest.mark.parametrize("protocol", _protocols())
def test_every_visible_gpu_gets_a_worker_and_the_count_is_exact(protocol, rmat13_gpu_oracle):
    """One dask-cuda worker per GPU, one partition each (the exchange path), over TCP and
    over UCX: the NetworkX count, and every worker ran counting tasks."""
    from dtri.input.generate import rmat

    _, expected = rmat13_gpu_oracle
    gpus = _gpus()
    result = dtri.count(rmat(13, seed=1, npartitions=gpus, backend="gpu"), backend="gpu",
                        protocol=protocol, npartitions=gpus, memory_budget="8MiB")
    assert result.workers == gpus and result.partitions == gpus
    assert "canonicalize" in result.seconds and "prepare" not in result.seconds
    assert result.triangles == expected


@needs_two_gpus
def test_workers_option_limits_the_gpus_used(rmat13_gpu_oracle):
    edges, expected = rmat13_gpu_oracle
    result = dtri.count(edges, backend="gpu", workers=2, npartitions=3)
    assert result.workers == 2 and result.triangles == expected


@needs_two_gpus
def test_tiny_graph_on_every_gpu_leaves_empty_partitions_and_bins():
    result = dtri.count(np.array([[0, 1], [1, 2], [2, 0]]), backend="gpu",
                        npartitions=2 * _gpus(), bins=16)
    assert result.triangles == 1


@needs_two_gpus
@pytest.mark.slow
def test_gpu_worker_killed_mid_count_is_recomputed_exactly(rmat13_gpu_oracle):
    """The worker-loss test of tests/test_cluster.py on dask-cuda workers: SIGKILL the GPU
    worker that runs a preparation task; the count finishes and is exact."""
    from dask_cuda import LocalCUDACluster
    from distributed import Client

    from tests.runtime.test_cluster import PHASES, count_while_killing_a_worker

    edges, expected = rmat13_gpu_oracle
    with LocalCUDACluster(n_workers=2, silence_logs=logging.CRITICAL) as cluster, \
            Client(cluster) as client:
        result, address, key = count_while_killing_a_worker(
            client, PHASES["prepare"],
            lambda: dtri.count(edges, backend="gpu", npartitions=6, memory_budget="256KiB",
                               join="wedges"))
        assert result.triangles == expected, f"worker {address} killed while running {key}"


@pytest.mark.parametrize("source", ["pandas", "generated on the GPU"])
def test_host_staging_under_a_capped_pool_counts_exactly(rmat13_gpu_oracle, source):
    """--rmm-pool-size turns host staging on (auto): stage results wait in host memory, each
    task runs on the device; the count equals the in-memory one. The budget splits the input
    partitions, and the generated ones have divisions that their host copies' index does not
    keep (that lost every partition but the first once)."""
    from dtri.input.generate import rmat

    edges, expected = rmat13_gpu_oracle
    if source != "pandas":
        edges = rmat(13, seed=1, npartitions=4, backend="gpu")
    result = dtri.count(edges, backend="gpu", workers=1, rmm_pool_size="256MiB",
                        memory_budget="512KiB")
    assert result.plan["staging"] == "host" and result.partitions > 1 and result.bins > 1
    assert result.triangles == expected


def test_device_cache_keeps_repeated_arrays_and_drops_released_ones():
    import cupy

    from dtri.runtime.staging import CACHED_MIN_BYTES, DeviceCache

    cache = DeviceCache(4 * CACHED_MIN_BYTES)
    ids = np.arange(CACHED_MIN_BYTES // 8, dtype=np.int64)
    first, second, third = cache.get(ids), cache.get(ids), cache.get(ids)
    assert isinstance(first, cupy.ndarray) and first is not second and second is third
    assert cache.nbytes == ids.nbytes and (cupy.asnumpy(third) == ids).all()
    del ids, first, second, third
    assert cache.nbytes == 0  # the weak reference dropped the copy with the host array


def test_staged_results_land_in_page_locked_memory_that_is_reused():
    import gc

    import cupy

    from dtri.runtime.gpu import PinnedPool, device_array, host_array
    from dtri.runtime.staging import ARENA_MIN_BYTES, HostArena

    pool = PinnedPool(8 * ARENA_MIN_BYTES)
    arena = HostArena(pool)
    values = cupy.arange(ARENA_MIN_BYTES // 4, dtype=cupy.int32)
    host = arena.empty(values.shape, values.dtype)
    values.get(out=host)
    attributes = cupy.cuda.runtime.pointerGetAttributes(host.ctypes.data)
    assert attributes.type == cupy.cuda.runtime.memoryTypeHost  # page-locked, not pageable
    assert (device_array(host) == values).all() and (host == cupy.asnumpy(values)).all()
    address = host.ctypes.data
    del host
    gc.collect()
    again = arena.empty(values.shape, values.dtype)
    assert again.ctypes.data == address  # the pool took it back and lends it again
    too_big = arena.empty(16 * ARENA_MIN_BYTES, np.uint8)  # beyond the limit: pageable
    assert too_big.flags.owndata
    assert pool.host_memory.nbytes <= 8 * ARENA_MIN_BYTES
    assert (host_array(values) == cupy.asnumpy(values)).all()  # no arena set up: NumPy


def test_a_full_page_locked_pool_refuses_without_logging(capfd):
    """A request beyond what the pool's limit leaves is refused with ``MemoryError`` by RMM's
    limiting adaptor before RMM's pool tries to grow (which logs each refusal of its upstream
    on stderr); memory given back is lent again."""
    from dtri.runtime.gpu import PinnedPool
    from dtri.runtime.staging import ARENA_MIN_BYTES

    pool = PinnedPool(4 * ARENA_MIN_BYTES)
    addresses = [pool.allocate(ARENA_MIN_BYTES) for _ in range(4)]
    for _ in range(3):
        with pytest.raises(MemoryError):
            pool.allocate(ARENA_MIN_BYTES)
    pool.deallocate(addresses.pop(), ARENA_MIN_BYTES)
    addresses.append(pool.allocate(ARENA_MIN_BYTES))
    for address in addresses:
        pool.deallocate(address, ARENA_MIN_BYTES)
    assert "FAILURE" not in capfd.readouterr().err


def test_host_memory_that_cannot_be_page_locked_leaves_results_pageable(monkeypatch):
    """Where CUDA refuses to page-lock (a container's limit), the first refusal ends the
    tries and staged results are plain NumPy arrays: slower copies, the same count."""
    import cupy

    from dtri.runtime.gpu import RegisteredHostMemory
    from dtri.runtime.staging import ARENA_MIN_BYTES, StagingState, pinned_arena

    def refuse(address, nbytes, flags):
        raise cupy.cuda.runtime.CUDARuntimeError(2)  # cudaErrorMemoryAllocation

    monkeypatch.setattr(cupy.cuda.runtime, "hostRegister", refuse)
    memory = RegisteredHostMemory(64 * ARENA_MIN_BYTES)
    with pytest.raises(MemoryError, match="cannot page-lock"):
        memory.allocate(ARENA_MIN_BYTES)
    assert memory.nbytes == 0 and memory.limit == 0
    with pytest.raises(MemoryError, match="at its limit"):  # no second try
        memory.allocate(256)
    state = StagingState(1 << 20, pinned_arena(0.4))
    try:
        assert state.host_empty(ARENA_MIN_BYTES, np.uint8).flags.owndata
    finally:
        state.close()


# ---------------------------------------------------------------------------------------------
# The analytics on the GPU
# ---------------------------------------------------------------------------------------------

@given(edges=messy_graphs())
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_gpu_analytics_equal_networkx(edges):
    check_analytics(edges, backend="gpu", scheduler="synchronous", npartitions=3,
                    memory_budget=2_000, bins=4)


@pytest.mark.parametrize("staging", ["device", "host"])
def test_gpu_analytics_on_a_local_cuda_cluster(staging):
    rng = np.random.default_rng(21)
    edges = rng.integers(0, 600, (8_000, 2))
    options = {"rmm_pool_size": "512MiB"} if staging == "host" else {}
    check_analytics(edges, backend="gpu", workers=1, npartitions=2, memory_budget="256KiB",
                    **options)


@pytest.mark.parametrize("staging", ["device", "host"])
def test_gpu_edges_held_by_several_senders_meet_once_in_the_sort(staging):
    """Every edge in every input partition, several senders each making its copy unique on
    the GPU (the fused keys where they apply): the sort keeps each edge once, and the degree
    counted again from the sorted partitions is exact."""
    import dask.dataframe as dd
    import pandas as pd

    frames = edge_copies_in_every_partition()
    graph = networkx_graph(np.concatenate([f.to_numpy() for f in frames]))
    frame = dd.from_pandas(pd.concat(frames, ignore_index=True), npartitions=4, sort=False)
    with dtri.prepare(frame, backend="gpu", scheduler="synchronous", npartitions=2,
                      memory_budget="64KiB", staging=staging) as prepared:
        assert prepared.counted_degree is None  # several senders: counted when read
        check_vertex_results(prepared, graph)


def test_gpu_per_vertex_results_are_cudf_on_the_device_and_pandas_under_host_staging():
    import cudf

    edges = np.array([(0, 1), (1, 2), (0, 2), (2, 3)])
    with dtri.prepare(edges, backend="gpu", scheduler="synchronous") as graph:
        assert isinstance(graph.triangles().compute(), cudf.Series)
        assert isinstance(graph.edge_support().compute(), cudf.DataFrame)
    with dtri.prepare(edges, backend="gpu", scheduler="synchronous", staging="host") as graph:
        assert graph.triangles().compute().to_dict() == {0: 1, 1: 1, 2: 1, 3: 0}


# ------------------------------------------------------- hash probes, orientations, orders

HASH_TUNINGS = [  # overrides of dtri.kernel-tuning
    {"hash-probes": False},
    {},
    {"hash-min-members": 1, "hash-probe-cost": 8.0, "hash-warp-table-bits": 0},
    {"hash-min-members": 1, "hash-probe-cost": 8.0, "hash-warp-table-bits": 15,
     "hash-piece-probes": 64},
    {"hash-min-members": 2, "hash-probe-cost": 0.25, "hash-piece-probes": 1},
    {"hash-slots-per-member": 2},
    {"hash-min-members": 1, "hash-probe-cost": 8.0, "hash-slots-per-member": 8,
     "hash-spread-max-bytes": "1MiB", "hash-warp-table-bits": 10},
    {"hash-min-members": 1, "hash-spread-max-bytes": 1},
]


@pytest.mark.parametrize("tuning", HASH_TUNINGS)
@pytest.mark.parametrize("order", ["rank", "aorder"])
def test_hash_probes_match_the_cpu_search_in_every_mode(tuning, order):
    """The hybrid CUDA kernel (search classes, hash tables per block and per warp, pieces of
    any size, any vertex order) against numba's search-only kernel: totals and credits."""
    import cupy
    import dask

    from dtri.kernels.csr import rows_of
    from dtri.kernels.intersect import intersect
    from dtri.kernels.order import in_work, schedule

    cpu = skewed_csr(4)
    state = np.random.default_rng(2).choice(np.array([0, 1, 1, 1, 2], np.uint8), cpu.edges)
    for low, high in [(0, 1_000), (1_000, 3_000), (0, 3_000)]:
        cpu_group = rows_of(cpu, low, high)
        gpu_group = on_gpu(cpu_group)
        if order != "rank":
            work = in_work(cpu, 3_000)[low:high]
            degree = np.diff(cpu.offsets)[low:high]
            gpu_group = gpu_group._replace(schedule=cupy.asarray(
                schedule(cpu_group, order, work, degree)))
        start = int(cpu.offsets[low])
        group_state = state[start: start + cpu_group.edges]
        for options in ({}, {"credits": True, "group_credits": True},
                        {"credits": True, "group_credits": True, "part_state": state,
                         "group_state": group_state},
                        {"group_credits": True, "part_state": state, "group_state": group_state,
                         "peel": True}):
            with dask.config.set({"dtri.kernel-tuning.hash-probes": False}):
                expected = intersect(cpu, cpu_group, **options)
            moved = {k: cupy.asarray(v) if isinstance(v, np.ndarray) else v
                     for k, v in options.items()}
            with dask.config.set({"dtri.kernel-tuning": tuning}):
                found = intersect(on_gpu(cpu), gpu_group, **moved)
            assert found.triangles == expected.triangles > 0, options
            for name in ("uv", "uw", "vw"):
                mine, reference = getattr(found, name), getattr(expected, name)
                if mine is not None:
                    assert (cupy.asnumpy(mine) == reference).all(), (name, options)


@given(edges=messy_graphs())
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@pytest.mark.parametrize("orientation", ["degree", "id", "adirection", "auto"])
@pytest.mark.parametrize("order", ["rank", "degree", "aorder"])
def test_gpu_orientations_and_orders_equal_networkx(edges, orientation, order):
    import dask

    with dask.config.set({"dtri.kernel-tuning.hash-min-members": 1}):
        check_analytics(edges, ks=(3, 4), backend="gpu", scheduler="synchronous",
                        npartitions=2, orientation=orientation, order=order)


def test_rmat_counts_are_identical_across_orientations_and_orders(rmat13_gpu_oracle):
    edges, expected = rmat13_gpu_oracle
    counts = {dtri.count(edges.to_numpy(), backend="gpu", scheduler="synchronous",
                         orientation=orientation, order=order).triangles
              for orientation in ("degree", "id", "adirection")
              for order in ("rank", "degree", "aorder")}
    assert counts == {expected}


def test_gpu_workers_fork_from_a_server_that_made_no_cuda_context():
    """A local GPU cluster's workers are forked from dtri's server (the GPU's default), which
    imported cuDF without making a CUDA context: each worker counts on its own GPU."""
    import multiprocessing.forkserver
    import os

    from dtri.options import Options
    from dtri.runtime.session import open_runtime
    from dtri.runtime.worker_start import stop_worker_server

    stop_worker_server()  # a server of this test's own, with its default environment
    edges = np.random.default_rng(21).integers(0, 500, size=(6000, 2))
    with open_runtime(Options(backend="gpu", workers=1)) as runtime:
        parents = set(runtime.client.run(os.getppid).values())
        visible = set(runtime.client.run(lambda: os.environ.get("RAPIDS_NO_INITIALIZE")).values())
    assert parents == {multiprocessing.forkserver._forkserver._forkserver_pid}
    assert visible == {"1"}
    result = dtri.count(edges, backend="gpu", workers=1, npartitions=2, memory_budget="1MiB")
    assert result.triangles == networkx_triangles(edges) and result.backend == "gpu"
