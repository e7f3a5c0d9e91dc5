"""Start-up that matches the job: a CPU run with no cluster named runs in this process, and
the imports it needs stay small (no pandas, Dask DataFrame, distributed or numba for a small
text graph)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pytest

import dtri
from tests.oracles import mixed_parquet_folder, networkx_graph

KARATE = Path(__file__).resolve().parents[2] / "examples" / "karate.txt"
HEAVY = ("pandas", "dask.dataframe", "distributed", "numba", "pyarrow")


def run_python(code: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=cwd, check=False)


def test_import_dtri_imports_no_dask_numpy_or_pandas():
    loaded = run_python("import sys, dtri; dtri.__version__; "
                        f"print([m for m in ('numpy', 'dask', *{HEAVY!r}) if m in sys.modules])")
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == "[]"


def test_a_small_count_on_the_command_line_runs_in_process_without_heavy_imports():
    code = f"""
import sys
from dtri.cli import main
try:
    main(["count", {str(KARATE)!r}], standalone_mode=False)
finally:
    print("loaded", [m for m in {HEAVY!r} if m in sys.modules])
"""
    done = run_python(code)
    assert done.returncode == 0, done.stderr
    assert "triangles      45" in done.stdout
    assert "(1 workers" in done.stdout  # this process, no worker processes
    assert "loaded []" in done.stdout


def test_a_parquet_count_on_the_cpu_reads_arrays_without_dataframes(tmp_path):
    """Parquet files counted in this process on the CPU are read by pyarrow into arrays, in
    pieces that keep the files' integer types apart, without pandas, Dask DataFrames or
    distributed."""
    folder = mixed_parquet_folder(tmp_path / "karate", np.loadtxt(KARATE, dtype=np.int64))
    code = f"""
import sys
from dtri.cli import main
try:
    main(["count", {str(folder)!r}, "--backend", "cpu"], standalone_mode=False)
finally:
    print("loaded", [m for m in ("pandas", "dask.dataframe", "distributed") if m in sys.modules])
"""
    done = run_python(code)
    assert done.returncode == 0, done.stderr
    assert "triangles      45" in done.stdout and "(1 workers" in done.stdout
    assert "loaded []" in done.stdout


def test_the_unguarded_two_line_script_prints_45(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(f"import dtri\nprint(dtri.count_triangles({str(KARATE)!r}))\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "45\n"


@pytest.mark.parametrize("source", ["array", "file", "generated"])
def test_a_cpu_run_with_no_cluster_named_runs_in_process(source):
    from dtri.input.generate import generated

    edges = {"array": np.loadtxt(KARATE, dtype=np.int64), "file": str(KARATE),
             "generated": generated("rmat:9", seed=1)}[source]
    with dtri.prepare(edges, backend="cpu") as graph:
        assert graph.runtime.client is None and graph.runtime.workers == 1
        count = graph.count_triangles()
    if source != "generated":
        assert count == 45
    else:
        frame = generated("rmat:9", seed=1).frame().compute()
        pairs = np.column_stack([frame["src"], frame["dst"]])
        assert count == sum(nx.triangles(networkx_graph(pairs)).values()) // 3


def test_a_parquet_file_that_fits_one_task_is_counted_in_this_process(tmp_path):
    import pandas as pd

    edges = np.loadtxt(KARATE, dtype=np.int64)
    pd.DataFrame({"src": edges[:, 0], "dst": edges[:, 1]}).to_parquet(tmp_path / "k.parquet")
    with dtri.prepare(tmp_path / "k.parquet", backend="cpu") as graph:
        runtime = graph.runtime
        assert runtime.client is None and runtime.eager
        assert "the input (78 edges or fewer)" in runtime.reason  # from the file's footer
        assert graph.count_triangles() == 45


def test_an_in_process_run_reads_a_frame_once_and_cuts_a_partition_too_big_for_a_task(
        monkeypatch):
    """An eager run computes a Dask frame's partitions (no persist, which would hash them)
    and cuts one bigger than a task's budget into pieces of the values read, exactly."""
    import dask.dataframe as dd
    import pandas as pd

    import dtri.prepared.graph as prepared_graph

    cut = []
    split_rows = prepared_graph.split_rows
    monkeypatch.setattr(prepared_graph, "split_rows",
                        lambda parts, pieces: cut.append(pieces) or split_rows(parts, pieces))
    rng = np.random.default_rng(7)
    pairs = rng.integers(0, 600, size=(30_000, 2), dtype=np.int64)
    frame = dd.from_pandas(pd.DataFrame({"src": pairs[:, 0], "dst": pairs[:, 1]}),
                           npartitions=1)
    with dtri.prepare(frame, backend="cpu", scheduler="synchronous",
                      memory_budget="1MiB") as graph:
        assert graph.runtime.eager
        triangles = graph.triangles().compute()
    assert cut and cut[0] > 1  # 30,000 rows of 128 B each: cut to the budget
    expected = nx.triangles(networkx_graph(pairs))
    assert sum(expected.values()) // 3 == int(triangles.sum()) // 3
    assert {v: int(t) for v, t in triangles.items() if t} == \
        {v: t for v, t in expected.items() if t}


def test_an_input_too_big_for_one_task_or_given_workers_starts_a_local_cluster(monkeypatch):
    edges = np.loadtxt(KARATE, dtype=np.int64)
    with dtri.prepare(edges, backend="cpu", workers=2) as graph:
        assert graph.runtime.client is not None and graph.runtime.workers == 2
        assert graph.count_triangles() == 45
    # nothing fits in process
    monkeypatch.setattr("dtri.runtime.resolve.in_process_budget", lambda *_: 1)
    with dtri.prepare(edges, backend="cpu") as graph:
        assert graph.runtime.client is not None
        assert graph.count_triangles() == 45
    # unless --memory-budget says a task may plan for more: then it is one task here
    with dtri.prepare(edges, backend="cpu", memory_budget="1MiB") as graph:
        assert graph.runtime.client is None and "1.00 MiB" in graph.runtime.reason
        assert graph.count_triangles() == 45


def test_a_gpu_graph_beyond_one_task_runs_in_process_where_the_gpu_holds_it(monkeypatch):
    """On the GPU, a graph too big for one task but held whole by the current GPU (75 B an
    input row, IN_PROCESS_GPU_BYTES_PER_ROW) runs here, in tasks of the budget: a
    local cluster's start costs more than its GPUs save. One the GPU cannot hold, or any on
    the CPU beyond one task, starts a cluster."""
    from dtri.options import Backend, Options
    from dtri.runtime import resolve

    facts = resolve.MachineFacts(
        gpu_usable=lambda: True, device_memory=lambda: 80 << 30,
        device_name=lambda: "the test's GPU", visible_gpus=lambda: 1, ucx=lambda: False,
        memory=64 << 30, active_client=False, scheduler_address=None)
    monkeypatch.setattr(resolve, "in_process_budget", lambda *_: 20 << 30)
    options = Options.of(None, backend="gpu")
    caps = resolve.options_caps(options)
    held = (80 << 30) // 75  # the most rows the GPU holds
    where, why = resolve.placement(options, Backend.GPU, caps, None, held, 128, facts)
    assert where == "synchronous"
    assert "fits its memory (80.00 GiB), in tasks of 20.00 GiB" in why
    assert "the test's GPU" in why
    where, why = resolve.placement(options, Backend.GPU, caps, None, held + 1, 128, facts)
    assert where is None and "more than one task's budget" in why
    cpu = Options.of(None, backend="cpu")
    assert resolve.placement(cpu, Backend.CPU, caps, None, held, 128, facts)[0] is None
    # what is named still decides
    two = Options.of(None, backend="gpu", workers=2)
    assert resolve.placement(two, Backend.GPU, caps, None, held, 128, facts)[0] is None


def test_an_unguarded_script_that_needs_a_cluster_stops_before_starting_one(tmp_path):
    script = tmp_path / "big.py"
    script.write_text(f"import dtri\nprint(dtri.count_triangles({str(KARATE)!r}, workers=2))\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path, check=False)
    assert done.returncode != 0
    assert "big.py:2 starts a local Dask cluster" in done.stderr
    assert 'if __name__ == "__main__":' in done.stderr
    guarded = tmp_path / "guarded.py"
    guarded.write_text("import dtri\n\nif __name__ == '__main__':\n"
                       f"    print(dtri.count_triangles({str(KARATE)!r}, workers=2))\n")
    done = subprocess.run([sys.executable, str(guarded)], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "45\n"


class FakeDriver:
    """A CUDA driver library that records its ``cuInit`` calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def library(self, name: str) -> FakeDriver:
        self.calls.append(("load", name))
        return self

    def cuInit(self, flags: int) -> int:
        self.calls.append(("cuInit", flags))
        return 0

    def cuDeviceGet(self, device: Any, ordinal: int) -> int:
        self.calls.append(("cuDeviceGet", ordinal))
        return 0

    def cuDevicePrimaryCtxRetain(self, context: Any, device: Any) -> int:
        self.calls.append(("cuDevicePrimaryCtxRetain", device.value))
        return 0


@pytest.fixture
def driver(monkeypatch):
    """A fake driver, and the GPU backend's modules found, for :func:`start_cuda_driver`."""
    import importlib.util

    from dtri.runtime import driver

    fake = FakeDriver()
    found = importlib.util.find_spec
    monkeypatch.setattr(driver.importlib.util, "find_spec",
                        lambda name, *a: object() if name in driver.GPU_MODULES
                        else found(name, *a))
    monkeypatch.setattr(driver.ctypes, "CDLL", fake.library)
    driver.driver_thread.cache_clear()
    yield fake
    driver.driver_thread.cache_clear()


def test_a_gpu_session_starts_the_cuda_driver_once_on_a_thread_of_its_own(driver):
    """A session that may run in this process starts the driver and makes the first GPU's
    context on a thread of its own, once a process."""
    from dtri.runtime.driver import CUDA_DRIVER_LIBRARY, start_cuda_driver

    session = dtri.Session(backend="gpu")
    thread = start_cuda_driver(vars(session.options))  # the same thread: once a process
    assert thread is not None and not thread.daemon and thread.name == "dtri-cuda-driver"
    thread.join(timeout=10)
    dtri.Session(backend="auto")
    assert driver.calls == [("load", CUDA_DRIVER_LIBRARY), ("cuInit", 0), ("cuDeviceGet", 0),
                            ("cuDevicePrimaryCtxRetain", 0)]


def test_a_session_bound_for_a_cluster_starts_the_driver_without_a_context(driver):
    """A session whose options send it to a cluster makes no context in this process: the
    workers make theirs."""
    from dtri.runtime.driver import CUDA_DRIVER_LIBRARY, start_cuda_driver

    session = dtri.Session(backend="gpu", workers=2)
    thread = start_cuda_driver(vars(session.options))
    assert thread is not None
    thread.join(timeout=10)
    assert driver.calls == [("load", CUDA_DRIVER_LIBRARY), ("cuInit", 0)]


@pytest.mark.parametrize(("given", "here"), [
    ({}, True), ({"scheduler": "synchronous"}, True), ({"workers": "auto"}, True),
    ({"scheduler": "tcp://10.0.0.1:8786"}, False), ({"scheduler_file": "s.json"}, False),
    ({"workers": 2}, False), ({"memory_limit": 4 << 30}, False),
    ({"rmm_pool_size": "16GiB"}, False)])
def test_what_a_run_names_says_whether_it_may_run_in_this_process(monkeypatch, given, here):
    from dtri.runtime.driver import may_run_here

    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    assert may_run_here({"scheduler": None, "workers": "auto", **given}) is here


def test_the_driver_knows_every_scheduler_that_runs_in_this_process():
    """:mod:`dtri.runtime.driver` keeps its own copy of the local schedulers' names (it
    imports nothing of dtri's): the same as the options'."""
    from dtri.options import LOCAL_SCHEDULERS
    from dtri.runtime.driver import LOCAL_SCHEDULERS as DRIVER_LOCAL_SCHEDULERS
    from dtri.runtime.driver import may_run_here

    assert DRIVER_LOCAL_SCHEDULERS == LOCAL_SCHEDULERS
    assert all(may_run_here({"scheduler": name}) for name in LOCAL_SCHEDULERS)


def test_a_scheduler_in_the_environment_or_an_active_client_keeps_the_run_away(monkeypatch):
    import distributed

    from dtri.runtime.driver import may_run_here

    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "tcp://10.0.0.1:8786")
    assert not may_run_here({})
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS")
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=1,
                            dashboard_address=":0"):
        assert not may_run_here({})
    assert may_run_here({})


def test_a_cpu_session_does_not_start_the_cuda_driver(driver):
    dtri.Session(backend="cpu")
    assert driver.calls == []


@pytest.mark.parametrize("backend", ["auto", "gpu"])
def test_the_command_starts_the_cuda_driver_before_it_reads_the_graph(driver, monkeypatch,
                                                                       backend):
    from click.testing import CliRunner

    from dtri import cli

    steps = []
    monkeypatch.setattr(dtri, "start_cuda_driver", lambda options: steps.append("driver"))

    def prepared(*args, **kwargs):
        steps.append("prepared")
        raise dtri.ConfigurationError("stopped here")

    monkeypatch.setattr(dtri, "prepare", prepared)
    result = CliRunner().invoke(cli.main, ["count", "--generate", "rmat:4", "--backend",
                                           backend])
    assert result.exit_code == 2 and "stopped here" in result.output
    assert steps == ["driver", "prepared"]


def test_a_cpu_command_does_not_start_the_cuda_driver(driver):
    from click.testing import CliRunner

    from dtri import cli

    result = CliRunner().invoke(cli.main, ["count", "--generate", "rmat:4", "--backend", "cpu",
                                           "--json"])
    assert result.exit_code == 0, result.output
    assert driver.calls == []


def test_without_the_gpu_backend_installed_no_driver_is_started(monkeypatch):
    from dtri.runtime import driver

    monkeypatch.setattr(driver.importlib.util, "find_spec", lambda name, *a: None)
    driver.driver_thread.cache_clear()
    try:
        assert driver.start_cuda_driver() is None
    finally:
        driver.driver_thread.cache_clear()


def test_a_missing_driver_is_left_for_cupy_to_report(driver, monkeypatch):
    from dtri.runtime import driver as module

    def missing(name: str) -> None:
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(module.ctypes, "CDLL", missing)
    thread = module.start_cuda_driver()
    assert thread is not None
    thread.join(timeout=10)
    assert not thread.is_alive()
