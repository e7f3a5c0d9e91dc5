"""numba's compiled CPU kernels in a user's own process (issue 71): a fresh process's first
small count takes NumPy's join and starts loading them on a thread
(:class:`dtri.kernels.compiled.KernelLoader`); its later counts take the kernel the plan
prefers, whatever else the process imported. ``dtri count`` (one count) loads none."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import dask
import numpy as np
import pytest

from dtri.kernels.compiled import KERNEL_COMPILE_WAIT, KERNEL_LOAD_WAIT, KernelLoader
from tests.oracles import REPO_ROOT, networkx_triangles

FRESH_COUNTS = """
import json, sys
import dask
import numpy as np
import dtri

# waited for, a first compile too (numba's cache is cold in a new checkout)
dask.config.set({"dtri.kernel-load-wait": 600, "dtri.kernel-compile-wait": 600})
rng = np.random.default_rng(5)
edges = rng.integers(0, 400, (6000, 2))
runs = []
for _ in range(3):
    result = dtri.count(edges, backend="cpu")
    runs.append({"triangles": result.triangles, "join": result.join,
                 "kernel": result.plan.get("kernel"), "numba": "numba" in sys.modules})
print(json.dumps(runs))
"""


def test_a_fresh_process_counts_with_numbas_kernels_from_its_second_count():
    done = subprocess.run([sys.executable, "-c", FRESH_COUNTS], capture_output=True, text=True,
                          timeout=600, cwd=REPO_ROOT, check=False)
    assert done.returncode == 0, done.stderr
    first, *later = json.loads(done.stdout.strip().splitlines()[-1])
    expected = networkx_triangles(np.random.default_rng(5).integers(0, 400, (6000, 2)))
    # the first count: exact, by NumPy's join, before numba is imported
    assert first["triangles"] == expected and first["join"] == "wedges"
    # the later ones: the fused join's marks kernel, the one the plan prefers
    for run in later:
        assert run["triangles"] == expected
        assert (run["join"], run["kernel"], run["numba"]) == ("intersect", "marks", True)


TOY_COUNTS = """
import json, threading, time
import dask
import numpy as np
import dtri
from dtri.kernels import compiled

# a load that would hold every count that waits for it for a minute
release = threading.Event()


def held_load():
    release.wait(60)


compiled.WARM_UP = ("__main__", "held_load")  # what the process's loader runs
dask.config.set({"dtri.kernel-load-wait": 600})
edges = np.array([[0, 1], [1, 2], [0, 2], [2, 3]])
runs = []
for _ in range(3):
    started = time.perf_counter()
    result = dtri.count(edges, backend="cpu")
    runs.append([result.triangles, result.join, time.perf_counter() - started])
print(json.dumps([runs, compiled.LOADER.started, compiled.LOADER.ready(wait=False)]))
release.set()
"""


def test_a_toy_graphs_later_counts_do_not_wait_for_the_load():
    """A graph below ``dtri.kernel-load-wait-min-items`` takes NumPy's join while numba's
    kernels load: its second count does not wait half a second for kernels it can do
    without (here a load held for a minute)."""
    done = subprocess.run([sys.executable, "-c", TOY_COUNTS], capture_output=True, text=True,
                          timeout=600, cwd=REPO_ROOT, check=False)
    assert done.returncode == 0, done.stderr
    runs, started, ready = json.loads(done.stdout.strip().splitlines()[-1])
    assert started and not ready  # the load began after the first count, and is held
    assert [run[:2] for run in runs] == [[1, "wedges"]] * 3
    assert max(run[2] for run in runs[1:]) < 30  # none waited for the held load


def test_compiled_kernels_ready_waits_for_large_inputs_alone(monkeypatch):
    from dtri.kernels import compiled, dispatch

    release = threading.Event()
    loader = KernelLoader(lambda: release.wait(60) and None)
    monkeypatch.setattr(compiled, "LOADER", loader)
    loader.start()
    with dask.config.set({KERNEL_LOAD_WAIT: 600, KERNEL_COMPILE_WAIT: 600,
                          "dtri.kernel-load-wait-min-items": 100}):
        assert not dispatch.compiled_kernels_ready(99)  # not waited for
        threading.Timer(0.2, release.set).start()
        assert dispatch.compiled_kernels_ready(100)  # waited for, until loaded


def test_the_loader_counts_its_kernels_ready_once_loaded_and_waits_for_them():
    release = threading.Event()
    loader = KernelLoader(lambda: release.wait(60) and None)
    assert not loader.started and not loader.ready()  # not started: no wait either
    loader.start()
    loader.start()  # once
    with dask.config.set({KERNEL_LOAD_WAIT: 0}):
        assert loader.started and not loader.ready()  # loading: not waited for
    release.set()
    with dask.config.set({KERNEL_LOAD_WAIT: 600}):
        assert loader.ready()  # waited for
    assert loader.seconds is not None


def test_a_load_that_compiles_is_waited_for_only_as_long_as_a_compile_may_be():
    release = threading.Event()

    def compiles() -> None:
        loader.compile_started()  # numba's ``numba:compile`` event, on the loader's thread
        release.wait(60)

    loader = KernelLoader(compiles)
    loader.compile_started()  # not the loader's thread: no compile of its
    assert not loader.compiling
    with dask.config.set({KERNEL_LOAD_WAIT: 600, KERNEL_COMPILE_WAIT: 0}):
        loader.start()
        assert not loader.ready()  # returns once the load compiles, not 600 s later
        assert loader.compiling
    release.set()
    with dask.config.set({KERNEL_COMPILE_WAIT: 600}):
        assert loader.ready()


COLD_CACHE_COUNTS = """
import json, sys
import dask
import numpy as np
import dtri
from dtri.kernels.compiled import KERNEL_COMPILE_WAIT, LOADER

edges = np.random.default_rng(5).integers(0, 400, (6000, 2))
runs = []
for _ in range(2):
    result = dtri.count(edges, backend="cpu")
    runs.append([result.triangles, result.join, LOADER.compiling])
with dask.config.set({KERNEL_COMPILE_WAIT: 600}):
    assert LOADER.ready()  # the compile, done; numba has cached the kernels
result = dtri.count(edges, backend="cpu")
runs.append([result.triangles, result.join, LOADER.compiling])
print(json.dumps(runs))
"""


@pytest.mark.slow
def test_a_cold_cache_is_compiled_in_the_background_and_read_by_the_next_process(tmp_path):
    import os

    expected = networkx_triangles(np.random.default_rng(5).integers(0, 400, (6000, 2)))
    environ = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", COLD_CACHE_COUNTS], capture_output=True,
                              text=True, timeout=600, cwd=REPO_ROOT, env=environ, check=False)
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    cold, warm = runs
    # numba's cache empty: the second count does not wait for the compile, NumPy's join
    assert cold == [[expected, "wedges", False], [expected, "wedges", True],
                    [expected, "intersect", True]]
    # the next process reads the kernels that the first cached, and counts with them
    assert warm == [[expected, "wedges", False], [expected, "intersect", False],
                    [expected, "intersect", False]]


def test_a_load_that_fails_leaves_the_numpy_join():
    def broken() -> None:
        raise RuntimeError("no kernels")

    loader = KernelLoader(broken)
    loader.start()
    with dask.config.set({KERNEL_LOAD_WAIT: 600}):
        assert not loader.ready()


def test_the_warm_up_loads_the_kernels_a_count_runs():
    from dtri.kernels.warm import warm_count_kernels

    warm_count_kernels()  # raises where a kernel misses the triangle


def test_the_join_follows_the_kernels_where_the_join_runs():
    from dtri.analytics.plan import CPU_INTERSECT_MIN_WEDGES, choose_join
    from dtri.kernels.csr import PartitionSummary
    from dtri.options import Backend

    summary = PartitionSummary(10, CPU_INTERSECT_MIN_WEDGES // 2, 0, 4, 5)
    assert choose_join("auto", Backend.CPU, summary, compiled=True) == "intersect"
    assert choose_join("auto", Backend.CPU, summary, compiled=False) == "wedges"


def test_only_cpu_workers_load_the_kernels_as_they_start():
    from dtri.options import Backend
    from dtri.runtime.cpu_worker import PRELOAD as KERNELS
    from dtri.runtime.local_cluster import worker_preloads
    from dtri.runtime.local_worker import PRELOAD

    for backend in Backend:
        preloads = worker_preloads(backend)
        assert PRELOAD in preloads and (KERNELS in preloads) == (not backend.on_gpu)
