"""Start-up that matches the job: a CPU run with no cluster named runs in this process, and
the imports it needs stay small (no pandas, Dask DataFrame, distributed or numba for a small
text graph)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

import dtri
from tests.oracles import networkx_graph

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


def test_an_input_too_big_for_one_task_or_given_workers_starts_a_local_cluster(monkeypatch):
    edges = np.loadtxt(KARATE, dtype=np.int64)
    with dtri.prepare(edges, backend="cpu", workers=2) as graph:
        assert graph.runtime.client is not None and graph.runtime.workers == 2
        assert graph.count_triangles() == 45
    # nothing fits in process
    monkeypatch.setattr("dtri.runtime.session.in_process_budget", lambda *_: 1)
    with dtri.prepare(edges, backend="cpu") as graph:
        assert graph.runtime.client is not None
        assert graph.count_triangles() == 45
    # unless --memory-budget says a task may plan for more: then it is one task here
    with dtri.prepare(edges, backend="cpu", memory_budget="1MiB") as graph:
        assert graph.runtime.client is None and "1.00 MiB" in graph.runtime.reason
        assert graph.count_triangles() == 45


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
