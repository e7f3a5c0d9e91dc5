"""The planner (dtri.plan): batches, bins, estimates, and ``dtri count --explain``."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import dtri
from dtri.cli import main
from dtri.generate import rmat
from dtri.plan import BYTES_PER_EDGE, BYTES_PER_WEDGE, STAGES, build_plan
from dtri.prepare import prepare_partition
from dtri.sort import partition_summary
from tests.conftest import networkx_triangles


def complete_graph(n: int) -> np.ndarray:
    return np.array(list(itertools.combinations(range(n), 2)), dtype=np.int64)


def rmat_edges(scale: int) -> np.ndarray:
    return rmat(scale, seed=0).compute()[["src", "dst"]].to_numpy()


GRAPHS = {"K12": complete_graph(12), "rmat10": rmat_edges(10)}


def sorted_summaries(edges: np.ndarray, partitions: int) -> tuple[list, int]:
    """Summaries of the oriented, sorted edges cut at source boundaries into ``partitions``."""
    frame, vertices = prepare_partition(pd.DataFrame({"src": edges[:, 0], "dst": edges[:, 1]}),
                                        "degree")
    src = frame["src"].to_numpy()
    cuts = [0, *sorted({int(np.searchsorted(src, src[len(src) * i // partitions]))
                        for i in range(1, partitions)}), len(src)]
    parts = [frame.iloc[a:b] for a, b in itertools.pairwise(cuts)]
    return [partition_summary(part) for part in parts], vertices


def plan_of(edges: np.ndarray, partitions: int = 3, task_budget: int = 1 << 30,
            workers: int = 1, **options):
    summaries, vertices = sorted_summaries(edges, partitions)
    return build_plan(summaries, vertices, workers=workers, threads_per_worker=1,
                      backend="cpu", task_budget=task_budget, **options)


@pytest.mark.parametrize("name", GRAPHS)
@pytest.mark.parametrize("task_budget", [4 << 10, 64 << 10, 1 << 30])
def test_batches_cover_each_partition_exactly(name, task_budget):
    plan = plan_of(GRAPHS[name], task_budget=task_budget)
    assert plan.wedges == sum(s.wedges for s in plan.summaries) > 0
    for p, summary in enumerate(plan.summaries):
        ranges = [(j, first, last) for q, j, first, last in plan.batches if q == p]
        assert [j for j, _, _ in ranges] == list(range(len(ranges)))
        bounds = [first for _, first, _ in ranges] + [summary.wedges]
        assert bounds[0] == 0
        assert [last for _, _, last in ranges] == bounds[1:]  # contiguous, no gap, no overlap
        assert all(0 < last - first <= plan.batch_size for _, first, last in ranges)


@pytest.mark.parametrize("name", GRAPHS)
def test_every_estimated_peak_fits_a_budget_that_holds_one_partition(name):
    summaries, _ = sorted_summaries(GRAPHS[name], 3)
    budget = max(s.wedges * BYTES_PER_WEDGE + s.edges * BYTES_PER_EDGE for s in summaries)
    budget += sum(s.edges for s in summaries) * BYTES_PER_EDGE  # any bin, any CSR
    for join in ("wedges", "intersect"):
        plan = plan_of(GRAPHS[name], task_budget=budget, join=join)
        assert set(plan.estimates) == set(STAGES)
        assert all(e.peak_bytes <= budget for e in plan.estimates.values()), plan.estimates
        assert plan.over_budget() == []
        assert plan.estimates["wedges" if join == "wedges" else "intersect"].tasks > 0


@pytest.mark.parametrize("name", GRAPHS)
def test_a_smaller_budget_means_more_and_smaller_batches(name):
    large = plan_of(GRAPHS[name], task_budget=1 << 30)
    small = plan_of(GRAPHS[name], task_budget=8 << 10)
    assert len(small.batches) > len(large.batches)
    assert small.batch_size <= (8 << 10) // BYTES_PER_WEDGE
    assert small.estimates["wedges"].peak_bytes < large.estimates["wedges"].peak_bytes
    assert small.estimates["wedges"].tasks == len(small.batches)


def test_estimated_bins_hold_every_edge_once():
    plan = plan_of(GRAPHS["rmat10"], bins=16)
    assert plan.nbins == 16
    assert set(plan.bin_edges) == set(plan.bin_sources)
    total = sum(plan.bin_edges.values())
    assert plan.edges <= total <= plan.edges + len(plan.bin_edges)  # rounded up per bin
    for p, reached in enumerate(plan.reach):
        for k in reached:
            assert plan.bin_sources[k][1] > plan.summaries[p].first_src


def test_one_worker_moves_nothing_and_more_workers_move_bytes():
    alone = plan_of(GRAPHS["rmat10"], workers=1)
    spread = plan_of(GRAPHS["rmat10"], workers=4)
    assert alone.moved_bytes == 0
    assert spread.moved_bytes > 0
    # every batch's closure keys travel to their joins at most once
    assert spread.estimates["join"].moved_bytes >= 8 * spread.wedges


def test_the_join_is_still_importable_from_the_pipeline():
    from dtri.pipeline import INTERSECT_MIN_WEDGES, JOINS, choose_join

    assert JOINS == ("auto", "wedges", "intersect") and INTERSECT_MIN_WEDGES == 1 << 20
    summary = partition_summary(pd.DataFrame({"src": [0, 0, 0], "dst": [1, 2, 3]}))
    assert choose_join("auto", "cpu", summary) == "wedges"
    with pytest.raises(ValueError, match="join"):
        plan_of(GRAPHS["K12"], join="hash")


@pytest.mark.parametrize("name", GRAPHS)
def test_the_plan_of_a_run_is_the_one_it_ran(name):
    edges = GRAPHS[name]
    counted = dtri.count(edges, scheduler="synchronous", npartitions=3, memory_budget="32KiB")
    explained = dtri.count(edges, scheduler="synchronous", npartitions=3, memory_budget="32KiB",
                           explain=True)
    assert counted.triangles == networkx_triangles(edges)
    assert explained.triangles is None
    assert explained.plan["wedges"] == counted.wedges == counted.plan["wedges"]
    assert explained.plan["batches"] == counted.batches > 1
    assert explained.plan["bins"] == counted.bins
    assert sum(p["wedges"] for p in explained.plan["partitions"]) == counted.wedges
    assert "wedges_join" not in explained.seconds and "edge_bins" not in explained.seconds


def test_explain_json_prints_the_plan_and_no_count(tmp_path):
    path = tmp_path / "k12.txt"
    path.write_text("".join(f"{u} {v}\n" for u, v in GRAPHS["K12"]))
    result = CliRunner().invoke(main, ["count", str(path), "--explain", "--json",
                                       "--scheduler", "synchronous", "--backend", "cpu"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert "triangles" not in report
    plan = report["plan"]
    assert (plan["vertices"], plan["edges"], plan["wedges"]) == (12, 66, 220)
    assert plan["stages"]["wedges"]["tasks"] == plan["batches"] >= 1
    assert set(plan["stages"]) == set(STAGES)


def test_explain_prints_a_table(tmp_path):
    path = tmp_path / "k12.txt"
    path.write_text("".join(f"{u} {v}\n" for u, v in GRAPHS["K12"]))
    result = CliRunner().invoke(main, ["count", str(path), "--explain",
                                       "--scheduler", "synchronous", "--backend", "cpu"])
    assert result.exit_code == 0, result.output
    assert "triangles" not in result.output
    assert "dtri-wedges" in result.output and "peak/task" in result.output
    assert "--explain" in CliRunner().invoke(main, ["count", "--help"]).output
