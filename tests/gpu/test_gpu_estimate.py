"""Estimates on the GPU (issue 31): the wedge sampler and the closing-edge search on CuPy
arrays, in this process and on a GPU cluster, against the exact count (needs a GPU)."""

from __future__ import annotations

import pytest

import dtri
from tests.gpu.test_gpu_in_process import rmat_edges

pytestmark = pytest.mark.gpu


def test_gpu_estimates_cover_the_exact_count_and_repeat_by_seed():
    import cupy

    edges = cupy.asarray(rmat_edges(14))
    with dtri.prepare(edges, backend="gpu") as graph:
        assert graph.runtime.client is None  # in this process
        exact = graph.count_triangles()
        transitivity = graph.transitivity()
        covered = 0
        for seed in range(20):
            e = graph.estimate(samples=20_000, seed=seed)
            assert not e.exact and e.backend == "gpu"
            covered += e.triangles_interval[0] <= exact <= e.triangles_interval[1]
        assert covered >= 16  # 1 miss expected; 4 or more misses: a wrong interval
        again = graph.estimate(samples=20_000, seed=19)
        assert (again.triangles, again.average_clustering) == (e.triangles,
                                                               e.average_clustering)
        sized = graph.estimate(error=0.05, seed=1)
        assert not sized.exact and sized.relative_error <= 0.05
        low, high = sized.transitivity_interval  # the count's interval, scaled
        assert (low <= transitivity <= high) == (
            sized.triangles_interval[0] <= exact <= sized.triangles_interval[1])


@pytest.mark.parametrize("staging", ["device", "host"])
def test_gpu_estimates_on_a_local_cuda_cluster_of_several_partitions(staging):
    edges = rmat_edges(13)
    options = {"rmm_pool_size": "512MiB"} if staging == "host" else {}
    with dtri.prepare(edges, backend="gpu", workers=1, npartitions=3, **options) as graph:
        exact = graph.count_triangles()
        first = graph.estimate(samples=50_000, seed=2)
        again = graph.estimate(samples=50_000, seed=2)
    assert first.triangles == again.triangles
    assert first.triangles_interval[0] <= exact <= first.triangles_interval[1]


@pytest.mark.parametrize("source", ["host array", "device array", "generated"])
def test_colourful_sampling_on_the_gpu_is_the_cpu_s_for_the_same_seed(source):
    """The colour hash gives CuPy the bits it gives NumPy: the same monochromatic graph, so
    the same estimate, exactly, and its interval covers the exact count here."""
    import cupy
    import dask

    from dtri.input.generate import generated

    edges = rmat_edges(15)
    inputs = {"host array": edges, "device array": cupy.asarray(edges),
              "generated": generated("rmat:15", seed=1)}
    asked = {"method": "colours", "error": 0.05, "seed": 4}
    with dask.config.set({"dtri.estimate-colours-min": 2, "dtri.estimate-colours-max": 16}):
        gpu = dtri.count(inputs[source], backend="gpu", approx=asked)
        cpu = dtri.count(edges, backend="cpu", approx=asked)
    assert gpu.method == cpu.method == "colourful sampling" and gpu.backend == "gpu"
    assert (gpu.triangles, gpu.triangles_interval, gpu.colours, gpu.samples) == (
        cpu.triangles, cpu.triangles_interval, cpu.colours, cpu.samples)
    exact = dtri.count_triangles(edges, backend="cpu")
    assert gpu.triangles_interval[0] <= exact <= gpu.triangles_interval[1]
