"""Out of core on the CPU backend: the read stage cuts its partitions from the memory budget,
never from the files' layout, and the count stays exact under a budget far below the graph."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

import dtri
from dtri.cli import main
from dtri.prepared.inputs import least_task_budget
from tests.oracles import networkx_triangles

BUDGET = 1 << 20
"""1 MiB a task: 8,192 input rows at 128 bytes each in flight."""
ROWS_PER_TASK = BUDGET // 128


@pytest.fixture(scope="module")
def graph200k():
    """About 200 k raw edges (R-MAT 14, edge factor 12) and their NetworkX count."""
    from dtri.input.generate import rmat

    edges = rmat(14, edge_factor=12, seed=3, npartitions=1).compute(scheduler="sync")
    array = edges.to_numpy()
    return array, networkx_triangles(array)


def _write(layout: str, edges: np.ndarray, directory) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"src": edges[:, 0], "dst": edges[:, 1]})
    if layout == "one row group":
        path = directory / "one.parquet"
        pq.write_table(table, path, row_group_size=len(edges))
    elif layout == "many row groups":
        path = directory / "many.parquet"
        pq.write_table(table, path, row_group_size=3000)
    elif layout == "gzip text":
        path = directory / "edges.txt.gz"
        np.savetxt(path, edges, fmt="%d")  # numpy compresses a .gz name
    else:
        path = directory / "edges.txt"
        np.savetxt(path, edges, fmt="%d")
    return str(path)


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["one row group", "many row groups", "text", "gzip text"])
def test_one_file_of_any_layout_counts_exactly_under_a_1_mib_budget(graph200k, tmp_path,
                                                                    layout):
    edges, expected = graph200k
    path = _write(layout, edges, tmp_path)
    result = dtri.count(path, backend="cpu", workers=2, memory_budget=BUDGET)
    assert result.triangles == expected
    assert result.read["rows"] == len(edges)
    assert result.read["largest_rows"] <= ROWS_PER_TASK  # cut by the budget, not the file
    assert result.read["partitions"] >= len(edges) // ROWS_PER_TASK


def test_a_row_group_too_large_for_the_budget_is_one_line_naming_it(graph200k, tmp_path):
    """One 196 k-row group against a 64 KiB budget (512 rows a task) would take 384 slices:
    the command says which group of which file, and how to rewrite it."""
    edges, _ = graph200k
    path = _write("one row group", edges, tmp_path)
    result = CliRunner().invoke(main, ["count", path, "--backend", "cpu", "--scheduler",
                                       "synchronous", "--memory-budget", "64KiB"])
    assert result.exit_code == 2
    line = result.output.strip()
    assert "\n" not in line and line.startswith(f"dtri: error: {path}: row group 0 holds ")
    assert "rewrite the file with smaller row groups" in line


def test_a_budget_below_the_minimum_for_the_input_stops_before_reading(graph200k, tmp_path,
                                                                       monkeypatch):
    """196 k edges need at least 24 KiB a task (128 B an edge over 1024 partitions): a 1 KiB
    budget stops up front, in one line naming the least budget, and no piece is read."""
    from dtri.input import parquet

    edges, _ = graph200k
    path = _write("many row groups", edges, tmp_path)

    def never(*args, **kwargs):
        raise AssertionError("a piece was read")

    monkeypatch.setattr(parquet, "read_parquet_piece", never)
    result = CliRunner().invoke(main, ["count", path, "--backend", "cpu", "--scheduler",
                                       "synchronous", "--memory-budget", "1KiB"])
    assert result.exit_code == 2
    assert result.output.strip() == (
        "dtri: error: --memory-budget 1.00 kiB is below the minimum for this input: "
        f"{len(edges):,} input edges at 128 B each in flight need a task budget of at least "
        f"24.00 kiB, to fit in 1024 partitions; give --memory-budget "
        f"{least_task_budget(len(edges))} or more")
    # the least budget that the exchanges' check takes too: 1024 partitions were too many
    assert least_task_budget(len(edges)) == -(-len(edges) * 128 // 316)


def test_an_rmm_pool_below_the_minimum_is_named_with_the_least_pool():
    """Under a pool the budget follows it (half, under host staging): the least pool is what
    makes the budget the minimum."""
    from dtri.errors import ConfigurationError
    from dtri.prepared.inputs import check_budget, minimum_budget
    from dtri.runtime.caps import MemoryCaps
    from dtri.runtime.opened import Runtime

    pool = 1 << 30
    runtime = Runtime("gpu", None, 1, 1, pool, caps=MemoryCaps(rmm_pool_size=pool),
                      staged="host")
    rows = 16 << 30  # 16 Gi edges: 2 GiB a task at least
    assert minimum_budget(rows) == 2 << 30
    with pytest.raises(ConfigurationError) as error:
        check_budget(rows, False, runtime.budget, runtime)
    assert str(error.value).startswith("--rmm-pool-size 1.00 GiB is below the minimum for "
                                       "this input: 17,179,869,184 input edges")
    assert str(error.value).endswith("give --rmm-pool-size 4.00 GiB or more")
    check_budget(1 << 30, False, runtime.budget, runtime)  # a Gi edges fit a 1 GiB pool
