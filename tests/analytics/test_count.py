"""The whole pipeline against NetworkX, over partitions, bins, budgets and orientations."""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dtri
from dtri.errors import ConfigurationError, InputError
from tests.oracles import messy_graphs, networkx_triangles


@given(edges=messy_graphs(), npartitions=st.integers(1, 5),
       bins=st.sampled_from([None, 1, 2, 4, 16]),
       memory_budget=st.sampled_from([None, 1_000, 3_000, 20_000]),
       orientation=st.sampled_from(["degree", "id", "adirection"]),
       join=st.sampled_from(["auto", "wedges", "intersect"]))
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_counts_equal_networkx(edges, npartitions, bins, memory_budget, orientation, join):
    result = dtri.count(edges, scheduler="synchronous", npartitions=npartitions, bins=bins,
                        memory_budget=memory_budget, orientation=orientation, backend="cpu",
                        join=join)
    assert result.triangles == networkx_triangles(edges)
    assert result.vertices == len(np.unique(edges))
    assert result.edges == len({(min(u, v), max(u, v)) for u, v in edges.tolist() if u != v})
    assert result.join in {"wedges", "intersect"} and (join == "auto" or result.join == join)


def test_small_budget_forces_many_batches():
    complete = np.array([(u, v) for u in range(12) for v in range(u + 1, 12)])
    result = dtri.count(complete, scheduler="synchronous", memory_budget=600, npartitions=3,
                        join="wedges")  # the fused join writes no wedge, so has no batches
    assert result.triangles == 220  # C(12, 3)
    assert result.wedges == 220  # in a complete graph every wedge closes
    assert result.batches > 50


def test_threads_scheduler_and_pandas_input_with_named_columns():
    frame = pd.DataFrame({"weight": [1.0, 2.0, 3.0], "a": [1, 2, 3], "b": [2, 3, 1]})
    assert dtri.count_triangles(frame, columns=("a", "b"), scheduler="threads") == 1


def test_dask_dataframe_input_keeps_its_partitions():
    import dask.dataframe as dd

    frame = dd.from_pandas(pd.DataFrame({"src": [0, 1, 2, 2], "dst": [1, 2, 0, 3]}),
                           npartitions=2)
    result = dtri.count(frame, scheduler="synchronous")
    assert (result.triangles, result.vertices, result.edges) == (1, 4, 4)


@pytest.mark.parametrize("edges", [np.empty((0, 2), np.int64), np.array([[3, 3], [5, 5]])])
def test_empty_and_loop_only_graphs_have_no_triangles(edges):
    result = dtri.count(edges, scheduler="synchronous")
    assert (result.triangles, result.edges, result.wedges) == (0, 0, 0)
    assert result.vertices == len(np.unique(edges))


def test_counts_beyond_32_bits_stay_exact():
    assert dtri.count_triangles(np.array([(0, 1), (1, 2), (0, 2)]) + 2**40,
                                scheduler="synchronous") == 1


def test_bad_inputs_and_options_are_refused_clearly():
    with pytest.raises(InputError, match="negative vertex id"):
        dtri.count(np.array([[0, -1]]), scheduler="synchronous")
    with pytest.raises(InputError, match="integers"):
        dtri.count(pd.DataFrame({"src": [0.5], "dst": [1.0]}), scheduler="synchronous")
    with pytest.raises(InputError, match="shape"):  # (m, 3) reads its first two columns
        dtri.count(np.zeros((3, 1), np.int64), scheduler="synchronous")
    with pytest.raises(ValueError, match="power of two"):
        dtri.count(np.array([[0, 1]]), scheduler="synchronous", bins=3)
    with pytest.raises(ValueError, match="orientation"):
        dtri.count(np.array([[0, 1]]), scheduler="synchronous", orientation="random")
    with pytest.raises(ValueError, match="join"):
        dtri.count(np.array([[0, 1], [1, 2]]), scheduler="synchronous", join="hash")
    with pytest.raises(ConfigurationError, match="backend"):
        dtri.count(np.array([[0, 1]]), scheduler="synchronous", backend="tpu")


def test_gpu_backend_without_gpu_says_what_is_missing():
    from dtri.runtime.resolve import gpu_available

    if gpu_available():
        pytest.skip("a GPU is visible here")
    with pytest.raises(ConfigurationError, match="cuDF"):
        dtri.count(np.array([[0, 1]]), backend="gpu", scheduler="synchronous")


def test_distributed_cluster_counts_exactly(dask_client, backend):
    rng = np.random.default_rng(7)
    edges = rng.integers(0, 400, size=(6_000, 2))
    result = dtri.count(edges, backend=backend, npartitions=4, memory_budget="64KiB",
                        join="wedges")
    assert result.triangles == networkx_triangles(edges)
    assert result.workers == len(dask_client.nthreads())
    assert result.batches > 1
    assert set(result.seconds) >= {"read", "canonicalize", "orient", "sort", "plan",
                                   "wedges_join", "total"}


def test_a_count_on_workers_reports_the_bytes_each_stage_moved(dask_client, backend):
    """Per stage (a ``dtri-<stage>`` task prefix of the run, or ``read``) the bytes each worker
    received; the count's own add to its preparation's; nothing moves in this process."""
    edges = np.random.default_rng(11).integers(0, 400, size=(6_000, 2))
    options = {"backend": backend, "npartitions": 4, "memory_budget": "64KiB"}
    with dtri.prepare(edges, **options) as graph:
        prepared = graph.moves().moved_bytes()
        result = graph.count()
    assert result.triangles == networkx_triangles(edges)
    moved = result.moved_bytes
    addresses = set(dask_client.nthreads())
    prefixes = set(dask_client.run_on_scheduler(
        lambda dask_scheduler: list(dask_scheduler.task_prefixes)))
    assert sum(moved["canonicalize"].values()) > 0  # the vertex set, to the other's senders
    for stage, received in moved.items():
        assert stage == "read" or f"dtri-{stage}" in prefixes, stage
        assert set(received) <= addresses and all(value > 0 for value in received.values())
    for stage, received in prepared.items():
        assert all(moved[stage][address] >= value for address, value in received.items())
    assert moved != prepared  # the count moved its own bins
    assert result.link_bandwidth > 0
    assert result.protocol == "tcp" and result.protocol_note is None
    alone = dtri.count(edges, scheduler="synchronous", backend="cpu")
    assert alone.moved_bytes is None and alone.link_bandwidth is None


def test_the_canonicalize_stage_moves_vertex_sets_not_edges(dask_client, backend):
    """Each sender makes its edges unique where it read them: the canonicalize stage moves
    only the vertex set between the workers, and the edges cross once, in the sort."""
    rows = 200_000
    edges = np.random.default_rng(13).integers(0, 20_000, size=(rows, 2))
    frame = dask_client.persist(dd.from_pandas(
        pd.DataFrame({"src": edges[:, 0], "dst": edges[:, 1]}), npartitions=8))
    result = dtri.count(frame, backend=backend, npartitions=4)
    assert result.triangles == networkx_triangles(edges)
    assert "degree" not in result.seconds  # a count reads no degree
    moved = {stage: sum(received.values()) for stage, received in result.moved_bytes.items()}
    edge_bytes = 16 * rows
    assert 0 < moved["canonicalize"] < edge_bytes // 50, moved  # senders on both workers
    # a fourth of the keys at least, packed by the wire format: a byte or more each
    assert moved["sort"] > rows // 4, moved


def test_task_names_show_the_stages(dask_client, backend):
    dtri.count(np.array([(0, 1), (1, 2), (0, 2), (2, 3)]), backend=backend, npartitions=2,
               join="wedges")
    prefixes = dask_client.run_on_scheduler(
        lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
    for stage in ("dtri-vertices", "dtri-canonicalize", "dtri-rank", "dtri-orient", "dtri-sort",
                  "dtri-plan",
                  "dtri-edge-bins", "dtri-wedges", "dtri-bins", "dtri-join", "dtri-reduce"):
        assert stage in prefixes, prefixes


def test_files_only_the_workers_see_are_planned_and_read_on_the_workers(dask_client, backend):
    """An fsspec memory:// file lives in one process: written on every worker, absent here."""
    def write_graph() -> None:
        import fsspec

        with fsspec.open("memory://dtri-workers-only/graph.txt", "w") as handle:
            handle.write("# a triangle with a tail\n1 2\n2 3\n3 1\n3 4\n")

    dask_client.run(write_graph)
    import fsspec

    assert not fsspec.filesystem("memory").exists("/dtri-workers-only/graph.txt")
    result = dtri.count("memory://dtri-workers-only/graph.txt", backend=backend)
    assert (result.triangles, result.edges) == (1, 4)
    with pytest.raises(InputError, match="no such file"):
        dtri.count("memory://dtri-workers-only/absent.txt", backend=backend)


def test_parquet_only_the_workers_see_is_read_file_by_file(dask_client, backend):
    def write_parquet() -> None:
        frame = pd.DataFrame({"a": [1, 2, 3, 3], "b": [2, 3, 1, 4]})
        frame.to_parquet("memory://dtri-workers-only/pq/part-0.parquet")
        frame.assign(a=frame.a + 10, b=frame.b + 10).to_parquet(
            "memory://dtri-workers-only/pq/part-1.parquet")

    dask_client.run(write_parquet)
    result = dtri.count("memory://dtri-workers-only/pq", columns=("a", "b"), backend=backend)
    assert (result.triangles, result.edges, result.partitions) == (2, 8, 1)


def test_npartitions_applies_to_path_inputs_too(tmp_path):
    rng = np.random.default_rng(23)
    edges = rng.integers(0, 300, (3_000, 2))
    path = tmp_path / "g.txt"
    path.write_text("".join(f"{u} {v}\n" for u, v in edges))
    result = dtri.count(path, npartitions=3, scheduler="synchronous", backend="cpu")
    assert result.partitions == 3 and result.triangles == networkx_triangles(edges)
