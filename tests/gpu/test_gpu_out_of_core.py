"""Out of core on one GPU: the read cuts a file into pieces of the budget's rows whatever its
layout, the stage meter measures each stage on the device, and work whose vertex-wide arrays
outgrow a small RMM pool goes on on the host (needs a GPU)."""

from __future__ import annotations

import numpy as np
import pytest

import dtri

pytestmark = pytest.mark.gpu


def _cpu_count(edges: np.ndarray) -> int:
    return dtri.count(edges, backend="cpu", scheduler="synchronous").triangles


def test_one_row_group_under_a_small_pool_is_read_in_budget_pieces(tmp_path):
    """R-MAT 15 as one Parquet row group of 524 k rows under a 32 MiB pool (a 16 MiB budget:
    131 k rows a task): sliced into pieces of at most that many rows, counted exactly, and
    RMM saw at most the pool in every stage."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dtri.input.generate import rmat

    edges = rmat(15, seed=5, npartitions=1).compute(scheduler="sync").to_numpy()
    pq.write_table(pa.table({"src": edges[:, 0], "dst": edges[:, 1]}),
                   tmp_path / "one.parquet", row_group_size=len(edges))
    pool = 32 << 20
    result = dtri.count(tmp_path / "one.parquet", backend="gpu", workers=1,
                        rmm_pool_size=pool)
    assert result.triangles == _cpu_count(edges)
    assert result.plan["staging"] == "host"
    assert result.read["rows"] == len(edges)
    assert result.read["largest_rows"] <= result.memory_budget // 128 < len(edges)
    assert result.peak_device_source == "rmm"
    peaks = result.peak_device_bytes
    assert {"read", "canonicalize", "sort", "count", "overall"} <= set(peaks)
    assert 0 < peaks["overall"] <= pool and all(v <= pool for v in peaks.values())


def test_vertex_wide_work_too_large_for_the_pool_goes_on_on_the_host():
    """7 M vertices and 4 M edges under a 48 MiB pool: a vertex-wide array (56 MB as int64)
    does not fit the pool beside another, so the vertex-wide sums run out of device memory
    and go on on the host; the count is exact all the same."""
    from dtri.input.generate import gnm

    edges = gnm(1 << 23, 1 << 22, seed=2, npartitions=1).compute(scheduler="sync").to_numpy()
    result = dtri.count(edges, backend="gpu", workers=1, rmm_pool_size="48MiB")
    assert result.triangles == _cpu_count(edges)
    assert result.host_tasks, result.host_tasks
    assert result.peak_device_bytes["overall"] <= 48 << 20
