"""One person on one GPU: with no cluster named, a GPU run whose input fits one task runs in
this process, with no Dask cluster and no Dask graph, and gives what the cluster gives (needs a
GPU)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

import dtri
from dtri.input.generate import generated
from tests.oracles import (
    BAD_IDS,
    bad_id_folder,
    check_analytics,
    mixed_parquet_folder,
    networkx_graph,
    networkx_triangles,
)

pytestmark = pytest.mark.gpu

KARATE = Path(__file__).resolve().parents[2] / "examples" / "karate.txt"
NOT_NEEDED = ("distributed", "dask_cuda", "cudf", "dask_cudf", "dask.dataframe", "pandas")
"""What a count of a text file on the GPU in this process does not import."""


@pytest.fixture
def no_cluster(monkeypatch):
    """Fail any attempt to start a local cluster."""
    def refuse(*args, **kwargs):
        raise AssertionError("a local cluster was started")

    monkeypatch.setattr("dtri.runtime.session._start_local_cluster", refuse)


def rmat_edges(scale: int, seed: int = 1) -> np.ndarray:
    made = generated(f"rmat:{scale}", seed=seed)
    return np.stack(made.maker().arrays((0, made.edges)), axis=1)


@pytest.mark.parametrize("source", ["host array", "device array", "file", "generated"])
def test_a_gpu_count_with_no_cluster_named_runs_in_this_process(no_cluster, source):
    import cupy

    edges = {"host array": np.loadtxt(KARATE, dtype=np.int64),
             "device array": cupy.asarray(np.loadtxt(KARATE, dtype=np.int64)),
             "file": str(KARATE), "generated": generated("rmat:10", seed=3)}[source]
    with dtri.prepare(edges, backend="gpu") as graph:
        runtime = graph.runtime
        assert runtime.client is None and runtime.eager and runtime.backend == "gpu"
        assert "this process" in runtime.reason
        result = graph.count()
    assert result.backend == "gpu" and "this process" in result.placement
    if source != "generated":
        assert result.triangles == 45
    else:
        expected = dtri.count_triangles(generated("rmat:10", seed=3), backend="cpu")
        assert result.triangles == expected


def test_every_analytic_in_process_on_the_gpu_matches_networkx(no_cluster):
    edges = rmat_edges(9)
    check_analytics(edges, backend="gpu")  # one partition: the one-task preparation
    check_analytics(edges, backend="gpu", npartitions=3)  # the exchanges, run eagerly


def test_a_small_graph_prepared_on_the_host_is_the_one_prepared_on_the_device(no_cluster):
    """Below ``dtri.host-prepare-edges`` a GPU run prepares on the host and moves the prepared
    graph to the device: the same arrays, on the device, and the same analytics."""
    import cupy
    import dask

    edges = rmat_edges(9)
    prepared = []
    for host_edges in (0, 1 << 30):
        with dask.config.set({"dtri.host-prepare-edges": host_edges}):
            check_analytics(edges, backend="gpu")
            with dtri.prepare(edges, backend="gpu") as graph:
                (part,) = graph.parts
                prepared.append((part, graph.ids, graph.degree, graph.orientation))
    (device, host) = prepared
    for on_device, from_host in zip(device[:3], host[:3], strict=True):
        for a, b in zip(on_device if isinstance(on_device, tuple) else (on_device,),
                        from_host if isinstance(from_host, tuple) else (from_host,),
                        strict=True):
            if hasattr(a, "shape"):
                assert isinstance(b, cupy.ndarray) and a.dtype == b.dtype
                assert bool((a == b).all())
            else:
                assert a == b
    assert device[3] == host[3]


def test_an_in_process_gpu_run_allocates_from_cupys_pool_not_through_rmm(no_cluster):
    """cuDF points CuPy at RMM (a cudaMalloc and a cudaFree an array without a pool); an
    in-process run takes its arrays from CuPy's pool instead, and gives its unused blocks
    back when it closes. ``dtri.meter=rmm`` measures the run, so it allocates through RMM."""
    import cudf  # noqa: F401 - what points CuPy at RMM
    import cupy
    import dask

    edges = rmat_edges(10)
    expected = dtri.count_triangles(edges, backend="cpu")
    pool = cupy.get_default_memory_pool()
    before = pool.used_bytes()
    with dtri.Session(backend="gpu") as session, session.prepare(edges) as graph:
        assert graph.runtime.allocator is not None and graph.runtime.meter is None
        assert pool.used_bytes() > before  # the prepared graph lives in the pool
        assert graph.count_triangles() == expected
    assert pool.n_free_blocks() == 0
    with dask.config.set({"dtri.meter": "rmm"}), dtri.Session(backend="gpu") as session, \
            session.prepare(edges) as graph:
        assert graph.runtime.allocator is None and graph.runtime.meter is not None
        assert graph.count_triangles() == expected


def test_cudf_imported_inside_an_in_process_run_sets_cupys_allocator_as_it_would():
    """A GPU count of an array imports no cuDF; the per-vertex result is the first to, inside
    a task, where CuPy would refuse cuDF's import its allocator under the run's pool."""
    code = f"""
import sys
import cupy
import numpy as np
import dtri
edges = np.loadtxt({str(KARATE)!r}, dtype=np.int64)
with dtri.Session(backend="gpu") as session:
    assert dtri.count(edges, session=session).triangles == 45
    assert "cudf" not in sys.modules
    with session.prepare(edges) as graph:
        assert int(graph.triangles().compute().sum()) == 3 * 45
    from rmm.allocators.cupy import rmm_cupy_allocator
    assert cupy.cuda.get_allocator() is rmm_cupy_allocator
    with session.prepare(edges) as graph:
        assert len(graph.clustering().compute()) == 34
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_a_session_keeps_one_gpu_runtime_for_every_graph(no_cluster):
    edges = rmat_edges(8)
    expected = dtri.count_triangles(edges, backend="cpu")
    with dtri.Session(backend="gpu") as session:
        for _ in range(3):
            assert dtri.count(edges, session=session).triangles == expected
        runtime = session.runtime
        assert dtri.count(str(KARATE), session=session).triangles == 45
        assert session.runtime is runtime and runtime.client is None


def test_a_dask_cudf_frame_persisted_in_this_process_is_read_as_it_is(no_cluster,
                                                                     monkeypatch):
    """``--workers auto`` kept one GPU for R-MAT 22 and ran it here, on its input persisted
    here: persisted again (a token hashing every partition) its read took 0.187 s, against
    0.014 s on a one-worker cluster. Its partitions now go on as they are."""
    import dask

    from dtri.input.frames import as_edge_frame

    with dtri.Session(backend="gpu") as session:
        runtime = session.open(input_rows=16 << 10)  # in this process, as the benchmark's
        assert runtime.client is None and runtime.eager
        frame = as_edge_frame(generated("rmat:10", seed=2), "gpu", npartitions=3)
        (persisted,) = dask.persist(frame.optimize())
        host = persisted.compute().to_pandas()
        expected = networkx_triangles(host[["src", "dst"]].to_numpy())
        persists: list[tuple] = []
        real = dask.persist
        monkeypatch.setattr(dask, "persist",
                            lambda *args, **kwargs: persists.append(args) or real(*args,
                                                                                  **kwargs))
        result = dtri.count(persisted, session=session)
    assert result.triangles == expected and result.backend == "gpu"
    assert persists == []  # the input as it is: nothing persisted again


def test_an_input_beyond_one_task_runs_here_where_the_gpu_holds_it_else_on_a_cluster(
        monkeypatch):
    import dask

    monkeypatch.setattr("dtri.runtime.resolve.in_process_budget", lambda *_: 1)
    with dtri.prepare(str(KARATE), backend="gpu") as graph:
        assert graph.runtime.client is None and graph.runtime.eager
        assert "fits its memory" in graph.runtime.reason
        assert graph.count_triangles() == 45
    # a graph the GPU cannot hold (here: at a resident size of 1 TB an edge)
    with dask.config.set({"dtri.kernel-tuning.in-process-gpu-bytes-per-row": 1 << 40}), \
            dtri.prepare(str(KARATE), backend="gpu") as graph:
        assert graph.runtime.client is not None
        assert "local cluster" in graph.runtime.reason
        assert graph.count_triangles() == 45


@pytest.mark.parametrize("source", ["text", "parquet", "parquet decoded on the device"])
def test_the_command_line_counts_on_the_gpu_without_dask_clusters_or_cudf(tmp_path, source):
    """A count of a text file, or of Parquet files (read on the host, or decoded on the
    device by pylibcudf), on the GPU in this process imports no Dask cluster, no DataFrames
    and no pandas."""
    import os

    path = KARATE if source == "text" else \
        mixed_parquet_folder(tmp_path / "karate", np.loadtxt(KARATE, dtype=np.int64))
    env = {**os.environ, "DASK_DTRI__DEVICE_PARQUET_MIN_ROWS": "0" if "device" in source
           else "1000000"}
    code = f"""
import sys
from dtri.cli import main
try:
    main(["count", "--backend", "gpu", "--json", {str(path)!r}], standalone_mode=False)
finally:
    print("loaded", [m for m in {NOT_NEEDED!r} if m in sys.modules])
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=False, env=env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[0])
    assert result["triangles"] == 45 and result["backend"] == "gpu"
    assert "this process" in result["placement"]
    assert done.stdout.splitlines()[-1] == "loaded []"


@pytest.fixture
def parquet_on_the_device():
    """Parquet files of any size decoded on the device in an in-process GPU run."""
    import dask

    with dask.config.set({"dtri.device-parquet-min-rows": 0}):
        yield


def test_parquet_row_groups_are_decoded_on_the_device(tmp_path, monkeypatch, no_cluster,
                                                       parquet_on_the_device):
    """Whole row groups of local Parquet files are read by the device reader, not by pyarrow
    on the host; files of different integer types are read apart and count exactly."""
    import dtri.input.parquet

    def refuse(*args, **kwargs):
        raise AssertionError("read on the host")

    monkeypatch.setattr(dtri.input.parquet, "read_parquet_arrays", refuse)
    edges = rmat_edges(10)
    folder = mixed_parquet_folder(tmp_path / "rmat", edges)
    assert dtri.count_triangles(str(folder), backend="gpu") == networkx_triangles(edges)


@pytest.mark.parametrize("bad", BAD_IDS)
def test_parquet_ids_read_on_the_device_are_checked(tmp_path, monkeypatch, bad, no_cluster,
                                                    parquet_on_the_device):
    """An in-process GPU count checks the ids the device decodes as the host read does: a
    null, a negative id the footer does not record, an unsigned id past int64, each named
    with its file. Only the nulls are read again on the host: the device checks the rest."""
    import dtri.input.parquet
    from dtri.errors import InputError

    def refuse(*args, **kwargs):
        raise AssertionError("read on the host")

    if bad != "null":
        monkeypatch.setattr(dtri.input.parquet, "read_parquet_arrays", refuse)
    path, message = bad_id_folder(tmp_path, bad)
    with pytest.raises(InputError, match=message) as info:
        dtri.count_triangles(str(tmp_path), backend="gpu")
    assert info.value.path == str(path)


def test_explain_says_where_the_run_goes():
    done = subprocess.run([sys.executable, "-m", "dtri", "count", "--backend", "gpu",
                           "--explain", str(KARATE)], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert "runs in        this process, on GPU 0" in done.stdout


def test_a_first_process_reports_compiling_apart_from_its_stages(tmp_path):
    import os

    env = {"CUPY_CACHE_DIR": str(tmp_path / "cupy"), "NUMBA_CACHE_DIR": str(tmp_path / "nb")}
    done = subprocess.run([sys.executable, "-m", "dtri", "count", "--backend", "gpu",
                           "--json", str(KARATE)], capture_output=True, text=True,
                          timeout=300, check=False, env={**os.environ, **env})
    assert done.returncode == 0, done.stderr
    seconds = json.loads(done.stdout)["seconds"]
    assert seconds["compile"] > 0  # an empty kernel cache: dtri's CUDA modules compiled
    assert seconds["total"] >= seconds["compile"]


def test_auto_picks_the_cpu_below_the_measured_size_and_the_gpu_above(no_cluster):
    import dask

    edges = np.loadtxt(KARATE, dtype=np.int64)
    with dask.config.set({"dtri.gpu-min-edges": 1000}):
        with dtri.prepare(edges) as graph:
            assert graph.backend == "cpu" and "CPU measured faster" in graph.runtime.reason
        import cupy

        with dtri.prepare(cupy.asarray(edges)) as graph:  # on the GPU already: stays there
            assert graph.backend == "gpu"
    with dask.config.set({"dtri.gpu-min-edges": 10}), dtri.prepare(edges) as graph:
        assert graph.backend == "gpu" and graph.count_triangles() == 45
    with dask.config.set({"dtri.gpu-min-edges": 1000}), dtri.Session() as session:
        # a session's first graph does not pick its backend by size: later ones may be large
        assert dtri.count(edges, session=session).backend == "gpu"


def test_the_networkx_backend_on_the_gpu_prepares_once_in_this_process(no_cluster):
    if "dtri" not in nx.utils.backends.backends:  # a checkout on PYTHONPATH, not installed
        pytest.skip("dtri's NetworkX backend is not installed: pip install -e . registers "
                    "its entry points")
    graph = networkx_graph(rmat_edges(9))
    nx.config.backends.dtri.backend = "gpu"
    try:
        assert nx.triangles(graph, backend="dtri") == nx.triangles(graph)
        converted = next(iter(graph.__networkx_cache__["backends"]["dtri"].values()))
        prepared = converted.cache["prepared"]
        assert prepared.backend == "gpu" and prepared.runtime.client is None
        clustering = nx.clustering(graph, backend="dtri")
        assert all(abs(clustering[v] - c) <= 1e-12 for v, c in nx.clustering(graph).items())
        truss = nx.k_truss(graph, 4, backend="dtri")
        assert set(truss.edges) == set(nx.k_truss(graph, 4).edges)
        assert converted.cache["prepared"] is prepared  # the same prepared graph throughout
    finally:
        nx.config.backends.dtri.backend = "auto"


def test_cupy_operators_import_what_a_saved_graph_imports_while_it_is_read(tmp_path):
    """CuPy's first operator between an array and a Python number imports
    :data:`~dtri.runtime.local_cluster.OPERATOR_MODULES` (what makes importing them during the read
    worth it); a saved graph decoded on the device in a new process imports them on a thread
    of its own while the device reads it, and counts as the graph prepared again."""
    import os

    premise = subprocess.run(
        [sys.executable, "-c", "import sys, cupy; from dtri.runtime.local_cluster import "
         "OPERATOR_MODULES as m; before = set(m) & set(sys.modules); cupy.arange(4) - 1; "
         "print(sorted(before), set(m) <= set(sys.modules))"],
        capture_output=True, text=True, timeout=300, check=False)
    assert premise.returncode == 0, premise.stderr
    assert premise.stdout.split() == ["[]", "True"]

    saved = tmp_path / "karate.dtri"
    with dtri.prepare(str(KARATE), backend="gpu") as graph:
        graph.save(str(saved))
    code = f"""
import sys, threading
import dtri
started = []
original = threading.Thread.start
def start(self):
    started.append(self.name)
    original(self)
threading.Thread.start = start
print(dtri.count_triangles({str(saved)!r}, backend="gpu"), "dtri-import-operators" in started)
"""
    on_device = {**os.environ, "DASK_DTRI__DEVICE_PARQUET_MIN_ROWS": "0"}  # karate is small
    opened = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300, check=False, cwd=Path(__file__).resolve().parents[2],
                            env=on_device)
    assert opened.returncode == 0, opened.stderr
    assert opened.stdout.split() == ["45", "True"]


CONTEXT_PROBE = """
import ctypes
import dtri
thread = dtri.start_cuda_driver({"workers": "auto"})
thread.join()
driver = ctypes.CDLL("libcuda.so.1")
device, flags, active = ctypes.c_int(), ctypes.c_uint(), ctypes.c_int()
assert driver.cuDeviceGet(ctypes.byref(device), 0) == 0
assert driver.cuDevicePrimaryCtxGetState(device, ctypes.byref(flags), ctypes.byref(active)) == 0
print(active.value)
import cupy
print(int(cupy.arange(10).sum()))
print(dtri.count_triangles("{karate}", backend="gpu"))
"""


def test_the_driver_thread_makes_the_context_that_the_run_then_uses():
    """Where a run may stay in this process, the driver's thread makes the first GPU's
    primary context before CuPy's first call, and CuPy and the count use it."""
    code = CONTEXT_PROBE.replace("{karate}", str(KARATE))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "45", "45"]
