"""In-process runs build no Dask graph: their tasks run as they are built, the stage timer
times the stages between them, and compiling is reported apart from the stages."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

import dtri
from dtri.errors import OutOfMemoryError
from dtri.kernels.compiled import compile_seconds, compiling
from dtri.runtime.staging import Staging
from dtri.runtime.tasks import Tasks
from dtri.runtime.timer import StageTimer

KARATE = Path(__file__).resolve().parents[2] / "examples" / "karate.txt"


def test_eager_tasks_run_when_built_and_name_their_stage_in_errors():
    tasks = Tasks(Staging(), eager=True)
    assert tasks.task("plan", sum, [1, 2, 3], key=(0,)) == 6

    def short_of_memory() -> None:
        raise MemoryError("out of device memory")

    with pytest.raises(OutOfMemoryError, match="a task of the sort stage ran out of memory") \
            as error:
        tasks.task("sort", short_of_memory, key=(0,))
    # in this process every stage's results stay in memory: a local cluster moves them out
    assert "in this process" in str(error.value) and "--workers 1" in str(error.value)


def test_an_eager_timer_times_each_stage_from_the_end_of_the_one_before():
    timer = StageTimer(None, eager=True)
    time.sleep(0.05)
    assert timer.compute("read", 7) == (7,)
    time.sleep(0.02)
    timer.settle()  # nothing pending: the next stage still starts where read ended
    assert timer.submit("prepare", 8) == (8,)
    assert timer.seconds["read"] >= 0.05 and 0.02 <= timer.seconds["prepare"] < 0.05


def test_compiling_is_counted_apart_from_the_stage_it_happens_in():
    before = compile_seconds()
    timer = StageTimer(None, eager=True)
    with compiling():
        time.sleep(0.05)
    timer.compute("wedges_join")
    assert compile_seconds() - before >= 0.05
    assert timer.seconds["compile"] >= 0.05 and timer.seconds["wedges_join"] < 0.05


def test_the_numba_kernels_compile_time_is_counted():
    import numba

    before = compile_seconds()

    @numba.njit
    def add(a: int, b: int) -> int:
        return a + b

    from dtri.kernels.intersect import cpu  # noqa: F401  (watches numba from here on)

    assert add(1, 2) == 3
    assert compile_seconds() > before


def test_a_session_opens_where_its_first_input_says():
    with dtri.Session(backend="cpu") as session:
        assert session.runtime is None  # nothing named: the first input decides
        assert dtri.count(str(KARATE), session=session).triangles == 45
        assert session.runtime.client is None and session.runtime.eager


def test_auto_runs_small_inputs_on_the_cpu_where_a_gpu_is_usable(monkeypatch):
    import dask

    from dtri.runtime.resolve import choose_backend

    monkeypatch.setattr("dtri.runtime.resolve.gpu_available", lambda: True)
    with dask.config.set({"dtri.gpu-min-edges": 1000}):
        backend, reason = choose_backend("auto", False, 78)
        assert backend == "cpu" and "78 edges, fewer than dtri.gpu-min-edges = 1000" in reason
        assert choose_backend("auto", False, 5000)[0] == "gpu"
        assert choose_backend("auto", False, None)[0] == "gpu"  # size unknown
        assert choose_backend("auto", True, 78)[0] == "gpu"  # the input is on the GPU
        assert choose_backend("cpu", False, 10**9) == ("cpu", "--backend cpu")


def test_explain_says_the_run_stays_in_this_process_and_why():
    from click.testing import CliRunner

    from dtri.cli import main

    result = CliRunner().invoke(main, ["count", "--explain", str(KARATE)])
    assert result.exit_code == 0, result.output
    assert "runs in        this process, no cluster" in result.output
    result = CliRunner().invoke(main, ["count", "--json", "--backend", "cpu", str(KARATE)])
    assert '"placement": "this process, no cluster' in result.output


def test_an_eager_run_gives_the_same_results_across_partitions():
    edges = np.loadtxt(KARATE, dtype=np.int64)
    with dtri.prepare(edges, backend="cpu", npartitions=3) as graph:
        assert graph.runtime.eager and graph.partitions == 3
        assert graph.count_triangles() == 45
        assert int(graph.triangles().compute().sum()) == 3 * 45
