"""Saved prepared graphs (dtri/prepared/saved.py): a graph saved and opened again is the graph
prepared again (count, triangles per vertex, edge support), on 1 and 2 workers and across
them, on messy inputs and a shared SNAP graph; damaged, missing and unknown saves are refused
in one line naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import dtri
from dtri.prepared.saved import FORMAT_VERSION, METADATA_NAME, SavedGraphError
from tests.oracles import host, manifest_rows, messy_graphs, shared_graph


def results(graph) -> tuple:
    """What a round trip must keep: the count, triangles per vertex, the support of each
    edge, and the degrees behind clustering."""
    triangles = host(graph.triangles().compute()).sort_index()
    support = host(graph.edge_support().compute()).sort_values(["u", "v"])
    clustering = host(graph.clustering().compute()).sort_index()
    return (graph.count_triangles(), triangles.to_dict(),
            list(zip(support.u.tolist(), support.v.tolist(), support.support.tolist(),
                     strict=True)), clustering.round(12).to_dict())


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edges=messy_graphs())
def test_a_saved_messy_graph_opens_as_it_was_prepared(edges, tmp_path_factory):
    folder = tmp_path_factory.mktemp("saved") / "g.dtri"
    with dtri.prepare(edges, scheduler="synchronous", npartitions=3) as graph:
        expected = results(graph)
        graph.save(str(folder))
    with dtri.open_prepared(str(folder), scheduler="synchronous") as opened:
        assert opened.partitions == 3
        assert results(opened) == expected
        assert "open" in opened.seconds and "canonicalize" not in opened.seconds


@pytest.mark.parametrize("order", ["rank", "degree"])
def test_saved_on_one_worker_opens_on_two_and_back(order, dask_client, backend, tmp_path):
    edges = np.random.default_rng(3).integers(0, 400, size=(5000, 2))
    one, two = tmp_path / "one.dtri", tmp_path / "two.dtri"
    with dtri.prepare(edges, scheduler="synchronous", order=order) as graph:
        expected = results(graph)
        graph.save(str(one))
    with dtri.Session(backend=backend) as session:  # the two workers of dask_client
        with dtri.open_prepared(str(one), session=session) as opened:
            assert opened.runtime.workers == 2 and opened.order == order
            assert results(opened) == expected
        with dtri.prepare(edges, session=session, npartitions=4, order=order) as graph:
            graph.save(str(two))
            assert results(graph) == expected
    with dtri.open_prepared(str(two), scheduler="synchronous") as opened:
        assert opened.partitions == 4 and opened.runtime.workers == 1
        assert results(opened) == expected


def test_a_shared_snap_graph_round_trips(shared_data, tmp_path):
    row = next(r for r in manifest_rows() if r["name"] == "ca-GrQc")
    path = str(shared_data / row["file"])
    with dtri.prepare(path, scheduler="synchronous", npartitions=2) as graph:
        expected = results(graph)
        graph.save(str(tmp_path / "grqc"))
    assert expected[0] == int(row["triangles"])
    with dtri.open_prepared(str(tmp_path / "grqc")) as opened:
        assert results(opened) == expected
        assert opened.input_identity["paths"][0]["path"].endswith(row["file"])
    graph = shared_graph(shared_data / row["file"])
    assert len(expected[1]) == graph.number_of_nodes()


def test_a_k_truss_saves_with_its_vertices(tmp_path):
    edges = np.random.default_rng(5).integers(0, 60, size=(600, 2))
    with dtri.prepare(edges, scheduler="synchronous", npartitions=2) as graph:
        truss = graph.k_truss(4)
        expected = results(truss)
        truss.save(str(tmp_path / "t4"))
    with dtri.open_prepared(str(tmp_path / "t4")) as opened:
        assert results(opened) == expected


@pytest.fixture
def saved(tmp_path) -> str:
    folder = tmp_path / "g.dtri"
    with dtri.prepare(np.array([(0, 1), (1, 2), (0, 2), (2, 3), (3, 4), (2, 4)]),
                      npartitions=2, scheduler="synchronous") as graph:
        graph.save(str(folder))
    return str(folder)


@pytest.mark.parametrize("order", ["rank", "degree"])
def test_an_in_process_open_reads_every_partition_in_one_task(order, tmp_path, monkeypatch):
    """In process, one task reads each kind of file at once, with the same graph as a read
    partition by partition; where that fails, the reads partition by partition run."""
    import dtri.prepared.graph as prepared_graph

    edges = np.random.default_rng(5).integers(0, 300, size=(4000, 2))
    with dtri.prepare(edges, scheduler="synchronous", npartitions=4, order=order) as graph:
        expected = results(graph)
        graph.save(str(tmp_path / "g"))
    by_partition = []
    read_partition = prepared_graph.read_partition
    monkeypatch.setattr(prepared_graph, "read_partition",
                        lambda *args: by_partition.append(args[3]) or read_partition(*args))
    with dtri.open_prepared(str(tmp_path / "g"), scheduler="synchronous") as opened:
        assert opened.partitions == 4 and results(opened) == expected
    assert by_partition == []
    monkeypatch.setattr(prepared_graph, "read_whole", lambda *args: None)  # as if damaged
    with dtri.open_prepared(str(tmp_path / "g"), scheduler="synchronous") as opened:
        assert results(opened) == expected
    assert by_partition == [0, 1, 2, 3]


def refusal(path: str) -> str:
    with pytest.raises(SavedGraphError) as error, dtri.open_prepared(path) as graph:
        graph.count_triangles()
    return str(error.value)


def test_an_unknown_format_version_is_refused(saved):
    metadata_file = f"{saved}/{METADATA_NAME}"
    metadata = json.loads(Path(metadata_file).read_text())
    metadata["format_version"] = FORMAT_VERSION + 1
    Path(metadata_file).write_text(json.dumps(metadata))
    message = refusal(saved)
    assert metadata_file in message and f"format version {FORMAT_VERSION + 1}" in message


def test_a_damaged_metadata_file_is_refused(saved):
    metadata_file = f"{saved}/{METADATA_NAME}"
    Path(metadata_file).write_text('{"format": "dtri-prepared-graph", ')
    assert metadata_file in refusal(saved) and "damaged" in refusal(saved)


def test_a_missing_or_damaged_partition_is_refused(saved):
    part = f"{saved}/edges/part-00001.parquet"
    data = Path(part).read_bytes()
    Path(part).write_bytes(data[: len(data) // 2])
    message = refusal(saved)
    assert part in message and "damaged" in message
    Path(part).unlink()
    message = refusal(saved)
    assert part in message and "missing" in message


def test_options_that_would_prepare_again_are_refused(saved):
    with pytest.raises(SavedGraphError, match="orientation"):
        dtri.open_prepared(saved, orientation="id")
    with dtri.open_prepared(saved, orientation="degree", scheduler="synchronous") as graph:
        assert graph.count_triangles() == 2


def test_a_save_that_fails_leaves_nothing_under_its_name(tmp_path, monkeypatch):
    import dtri.prepared.graph as graph_module

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(graph_module, "write_metadata", broken)
    with dtri.prepare(np.array([(0, 1), (1, 2), (0, 2)]), scheduler="synchronous") as graph, \
            pytest.raises(OSError):
        graph.save(str(tmp_path / "g.dtri"))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.gpu
def test_saved_on_the_gpu_opens_on_the_cpu_and_back(tmp_path):
    edges = np.random.default_rng(7).integers(0, 3000, size=(40000, 2))
    with dtri.prepare(edges, backend="gpu", scheduler="synchronous") as graph:
        expected = results(graph)
        graph.save(str(tmp_path / "gpu"))
    with dtri.open_prepared(str(tmp_path / "gpu"), backend="cpu") as opened:
        assert results(opened) == expected
        opened.save(str(tmp_path / "cpu"))
    with dtri.open_prepared(str(tmp_path / "cpu"), backend="gpu") as opened:
        assert opened.backend == "gpu" and results(opened) == expected
    with dtri.open_prepared(str(tmp_path / "cpu"), backend="gpu",
                            rmm_pool_size="1GiB") as opened:  # host staging
        assert results(opened) == expected


@pytest.mark.gpu
@pytest.mark.parametrize("min_rows", [0, 10**9])
def test_an_in_process_gpu_run_decodes_a_saved_graph_on_the_device_from_its_rows(
        tmp_path, monkeypatch, min_rows):
    """An in-process GPU run decodes a saved graph on the device from
    ``dtri.device-parquet-min-rows`` rows, and reads a smaller one on the host and copies
    it; both equal the graph as it was saved."""
    import dask

    import dtri.prepared.saved as saved_module

    edges = np.random.default_rng(11).integers(0, 3000, size=(40000, 2))
    with dtri.prepare(edges, backend="cpu", scheduler="synchronous") as graph:
        expected = results(graph)
        graph.save(str(tmp_path / "g"))

    def refuse(*args, **kwargs):
        raise AssertionError("read the other way")

    monkeypatch.setattr(saved_module, "_read_on_host" if min_rows == 0 else "_read_on_device",
                        refuse)
    with dask.config.set({"dtri.device-parquet-min-rows": min_rows}), \
            dtri.open_prepared(str(tmp_path / "g"), backend="gpu") as opened:
        assert opened.runtime.client is None and opened.backend == "gpu"
        assert results(opened) == expected


@pytest.mark.gpu
def test_a_damaged_partition_is_refused_on_the_gpu(tmp_path):
    edges = np.random.default_rng(3).integers(0, 500, size=(5000, 2))
    with dtri.prepare(edges, backend="gpu", scheduler="synchronous") as graph:
        graph.save(str(tmp_path / "g"))
    part = tmp_path / "g" / "edges" / "part-00000.parquet"
    part.write_bytes(part.read_bytes()[:40])
    with pytest.raises(SavedGraphError) as error, \
            dtri.open_prepared(str(tmp_path / "g"), backend="gpu") as opened:
        opened.count_triangles()
    assert str(part) in str(error.value) and "damaged" in str(error.value)


def test_the_cli_prepares_once_and_every_analytic_reads_the_save(tmp_path):
    from click.testing import CliRunner

    from dtri.cli import main

    runner = CliRunner()
    karate = str(Path(__file__).resolve().parents[2] / "examples" / "karate.txt")
    saved = str(tmp_path / "karate.dtri")
    done = runner.invoke(main, ["prepare", karate, "-o", saved, "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["edges"] == 78
    for command, key in ((["count"], "triangles"), (["triangles"], "vertex_sum"),
                         (["transitivity"], "transitivity"), (["support"], "edges"),
                         (["clustering"], "average_clustering"), (["ktruss", "4"], "edges"),
                         (["truss"], "max_truss"), (["graphlets"], "graphlets")):
        from_raw = json.loads(runner.invoke(main, [*command, karate, "--json"]).output)
        done = runner.invoke(main, [*command, saved, "--json"])
        assert done.exit_code == 0, done.output
        opened = json.loads(done.output)
        assert opened[key] == from_raw[key], command
        assert "open" in opened["seconds"] and "prepare" not in opened["seconds"], command
    metadata_file = Path(saved) / METADATA_NAME
    metadata = json.loads(metadata_file.read_text())
    metadata_file.write_text(json.dumps({**metadata, "format_version": 99}))
    done = runner.invoke(main, ["count", saved])
    assert done.exit_code == 2 and done.output.count("\n") == 1
    assert str(metadata_file) in done.output and "format version 99" in done.output
