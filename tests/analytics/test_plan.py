"""The planner (dtri.analytics.plan): batches, bins, estimates, and ``dtri count --explain``."""

from __future__ import annotations

import itertools
import json
import tracemalloc

import dask
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import dtri
from dtri.analytics.count import batch_rows, wedge_bins
from dtri.analytics.plan import (
    BYTES_PER_EDGE,
    BYTES_PER_KEY,
    BYTES_PER_WEDGE,
    INTERSECT_MIN_WEDGES,
    STAGES,
    build_plan,
    list_bytes,
)
from dtri.cli import main
from dtri.errors import ConfigurationError
from dtri.input.generate import rmat
from dtri.kernels.csr import (
    PROFILE_POINTS,
    PartitionSummary,
    as_csr,
    edge_window,
    from_sorted,
    rows_of,
    stored,
)
from dtri.kernels.csr import summary as csr_summary
from dtri.kernels.wedges import BYTES_PER_ROW, closure_keys
from dtri.options import Backend
from dtri.prepared.local import prepare_partition
from dtri.runtime.budget import Budget
from tests.oracles import networkx_triangles


def complete_graph(n: int) -> np.ndarray:
    return np.array(list(itertools.combinations(range(n), 2)), dtype=np.int64)


def rmat_edges(scale: int) -> np.ndarray:
    return rmat(scale, seed=0).compute()[["src", "dst"]].to_numpy()


def wheel(spokes: int) -> np.ndarray:
    """Hub 0 joined to a cycle of ``spokes`` vertices: ``spokes`` triangles (``spokes > 3``);
    with the ``id`` orientation the hub keeps every spoke in its out-list."""
    rim = np.arange(1, spokes + 1)
    return np.concatenate([np.stack([np.zeros_like(rim), rim], axis=1),
                           np.stack([rim, np.roll(rim, -1)], axis=1)])


def disjoint_triangles(count: int) -> np.ndarray:
    """``count`` vertex-disjoint triangles: many short adjacency lists, one wedge each."""
    a = 3 * np.arange(count)
    return np.concatenate([np.stack([a, a + 1], 1), np.stack([a, a + 2], 1),
                           np.stack([a + 1, a + 2], 1)])


GRAPHS = {"K12": complete_graph(12), "rmat10": rmat_edges(10)}


def sorted_parts(edges: np.ndarray, partitions: int,
                 orientation: str = "degree") -> tuple[list[tuple], int]:
    """The oriented, sorted edges cut at source boundaries into ``partitions`` (stored
    CSRs)."""
    whole, vertices, *_ = prepare_partition(
        pd.DataFrame({"src": edges[:, 0], "dst": edges[:, 1]}), orientation)
    csr = as_csr(whole)
    src = edge_window(csr, 0, csr.edges)[0]
    cuts = [0, *sorted({int(src[len(src) * i // partitions])
                        for i in range(1, partitions if len(src) else 1)}), vertices]
    return [stored(rows_of(csr, a, b)) for a, b in itertools.pairwise(cuts)], vertices


def columns(part: tuple) -> tuple[np.ndarray, np.ndarray]:
    """A stored partition's ``src`` and ``dst`` (int64)."""
    csr = as_csr(part)
    return edge_window(csr, 0, csr.edges)


def partition_summary(frame: pd.DataFrame) -> PartitionSummary:
    """The summary of sorted edges given as a frame."""
    src, dst = frame["src"].to_numpy(), frame["dst"].to_numpy()
    return csr_summary(from_sorted(src, dst, int(src[0]), int(src[-1]) + 1))


def sorted_summaries(edges: np.ndarray, partitions: int,
                     orientation: str = "degree") -> tuple[list, int]:
    """Summaries of :func:`sorted_parts`."""
    parts, vertices = sorted_parts(edges, partitions, orientation)
    return [csr_summary(as_csr(part)) for part in parts], vertices


def plan_of(edges: np.ndarray, partitions: int = 3, task_budget: int = 1 << 30,
            workers: int = 1, orientation: str = "degree", backend: str = "cpu", **options):
    summaries, vertices = sorted_summaries(edges, partitions, orientation)
    if backend == "cpu":  # the wedge batches (auto's choice follows numba's loading)
        options.setdefault("join", "wedges")
    return build_plan(summaries, vertices, workers=workers, backend=Backend(backend),
                      budget=Budget(task_budget, task_budget, True), **options)


def longest_list_bytes(edges: np.ndarray, partitions: int = 3,
                       orientation: str = "degree") -> int:
    """The least per-task budget whose wedge batches can hold the longest adjacency list."""
    summaries, _ = sorted_summaries(edges, partitions, orientation)
    return max(list_bytes(s.max_out_degree) for s in summaries)


@pytest.mark.parametrize("name", GRAPHS)
@pytest.mark.parametrize("task_budget", [4 << 10, 64 << 10, 1 << 30])
def test_batches_cover_each_partition_exactly(name, task_budget):
    plan = plan_of(GRAPHS[name], task_budget=task_budget)
    assert plan.wedges == sum(s.wedges for s in plan.summaries) > 0
    for p, summary in enumerate(plan.summaries):
        batches = [b for b in plan.batches if b.partition == p]
        assert [b.batch for b in batches] == list(range(len(batches)))
        bounds = [b.first for b in batches] + [summary.wedges]
        assert bounds[0] == 0
        assert [b.last for b in batches] == bounds[1:]  # contiguous, no gap, no overlap
        assert all(0 < b.last - b.first <= plan.batch_size for b in batches)
        assert all(0 <= b.row_start < b.row_stop <= summary.edges for b in batches)


def test_summaries_measure_lists_and_profile():
    summary = partition_summary(pd.DataFrame({"src": [3, 3, 3, 4, 6, 6],
                                              "dst": [4, 5, 6, 5, 7, 8]}))
    assert summary[:5] == (6, 4, 3, 6, 8)  # C(3, 2) + C(1, 2) + C(2, 2) wedges
    assert (summary.max_out_degree, summary.max_out_source) == (3, 3)
    assert summary.checkpoint_rows == (0, 3, 4, 6)  # every list start, then the end
    assert summary.checkpoint_wedges == (0, 3, 3, 4)


def test_the_profile_cuts_at_list_starts_into_single_lists_or_short_intervals():
    part = sorted_parts(rmat_edges(12), 1)[0][0]
    summary = csr_summary(as_csr(part))
    src = columns(part)[0]
    bounds = np.append(np.flatnonzero(np.diff(src, prepend=-1)), len(src))  # starts, end
    degree = np.diff(bounds)
    wedges_before = np.concatenate([[0], np.cumsum(degree * (degree - 1) // 2)])
    rows = np.array(summary.checkpoint_rows)
    at = np.searchsorted(bounds, rows)
    assert rows[0] == 0 and rows[-1] == summary.edges and (bounds[at] == rows).all()
    assert (wedges_before[at] == summary.checkpoint_wedges).all()
    gap = -(-summary.edges // PROFILE_POINTS)
    assert gap > 1 and len(rows) <= 2 * PROFILE_POINTS + 4
    assert ((np.diff(at) == 1) | (np.diff(rows) <= gap)).all()  # one list, or short
    longest = int(np.argmax(degree))
    assert summary.max_out_degree == degree[longest] > gap
    assert summary.max_out_source == src[bounds[longest]]
    assert longest in at and longest + 1 in at  # the longest list is an interval of its own


@pytest.mark.parametrize(("edges", "orientation", "partitions", "budget", "fits"), [
    (GRAPHS["rmat10"], "degree", 3, 4 << 10, True),
    (GRAPHS["K12"], "degree", 2, 600, True),
    (wheel(200), "id", 2, 8 << 10, True),
    # 60000 rows of 2-edge lists: intervals of 59 rows, more than 1 KiB: flagged, still exact
    (disjoint_triangles(20_000), "id", 1, 1 << 10, False),
], ids=["rmat10", "K12", "wheel", "coarse"])
def test_each_batch_reads_only_its_rows_and_makes_the_partitions_keys(edges, orientation,
                                                                       partitions, budget,
                                                                       fits):
    parts, _ = sorted_parts(edges, partitions, orientation)
    plan = plan_of(edges, partitions, budget, orientation=orientation)
    for p, part in enumerate(parts):
        src, dst = columns(part)
        keys = [closure_keys(*batch_rows(part, b.row_start, b.row_stop), b.first - b.wedge_base,
                             b.last - b.wedge_base, plan.bits)
                for b in plan.batches if b.partition == p]
        expected = closure_keys(src, dst, 0, plan.summaries[p].wedges, plan.bits)
        assert np.array_equal(np.concatenate(keys), expected)
    assert fits == all(b.peak_bytes <= budget for b in plan.batches)
    assert fits == ("wedges" not in plan.over_budget())  # the estimates say when it does not


@given(pairs=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), min_size=1,
                      max_size=300),
       partitions=st.integers(1, 4), orientation=st.sampled_from(["degree", "id", "adirection"]),
       spare=st.integers(0, 3000), workers=st.integers(1, 3))
@settings(max_examples=60, deadline=None)
def test_any_budget_that_holds_the_longest_list_gives_exact_batches_within_it(
        pairs, partitions, orientation, spare, workers):
    edges = np.array(pairs, dtype=np.int64)
    parts, vertices = sorted_parts(edges, partitions, orientation)
    summaries = [csr_summary(as_csr(part)) for part in parts]
    budget = max(list_bytes(s.max_out_degree) for s in summaries) + spare
    plan = build_plan(summaries, vertices, workers=workers, backend=Backend.CPU,
                      budget=Budget(budget, budget, True), join="wedges")
    assert all(b.peak_bytes <= budget for b in plan.batches)
    for p, part in enumerate(parts):
        keys = [closure_keys(*batch_rows(part, b.row_start, b.row_stop), b.first - b.wedge_base,
                             b.last - b.wedge_base, plan.bits)
                for b in plan.batches if b.partition == p]
        whole = closure_keys(*columns(part), 0, summaries[p].wedges, plan.bits)
        assert np.array_equal(np.concatenate([whole[:0], *keys]), whole)


@pytest.mark.parametrize("name", GRAPHS)
def test_estimated_batch_memory_bounds_the_measured_memory(name):
    (part, *_), _ = sorted_parts(GRAPHS[name], 1)
    plan = plan_of(GRAPHS[name], 1, task_budget=16 << 10)
    batches = plan.batches[:: max(1, len(plan.batches) // 20)]
    assert len(batches) > 1
    for b in batches:
        rows = batch_rows(part, b.row_start, b.row_stop)
        rows = tuple(column.copy() for column in rows)  # as a task pulled from elsewhere
        tracemalloc.start()  # where an earlier test's meter left it tracing, from now on
        tracemalloc.reset_peak()
        try:
            before = tracemalloc.get_traced_memory()[0]
            split = wedge_bins(rows, b.first - b.wedge_base, b.last - b.wedge_base, plan.bits,
                               plan.shift, plan.nbins)
            peak = tracemalloc.get_traced_memory()[1] - before
        finally:
            tracemalloc.stop()
        assert sum(len(keys) for keys in split.values()) == b.last - b.first
        assert 16 * len(rows[0]) + peak <= b.peak_bytes, (b, peak)


@pytest.mark.parametrize(("edges", "orientation"), [
    (GRAPHS["rmat10"], "degree"), (GRAPHS["K12"], "degree"), (wheel(200), "id"),
    (wheel(60), "degree"),
], ids=["rmat10", "K12", "wheel-id", "wheel-degree"])
@pytest.mark.parametrize("workers", [1, 4])
def test_every_batch_fits_any_budget_that_holds_the_longest_list(edges, orientation, workers):
    least = longest_list_bytes(edges, 3, orientation)
    for budget in (least, least + 1, least + 500, 2 * least, 16 << 10, 1 << 20):
        plan = plan_of(edges, 3, budget, workers=workers, orientation=orientation)
        assert plan.batches and plan.estimates["wedges"].tasks == len(plan.batches)
        assert max(b.peak_bytes for b in plan.batches) == plan.estimates["wedges"].peak_bytes
        assert plan.estimates["wedges"].peak_bytes <= budget, (budget, plan.estimates)
        assert "wedges" not in plan.over_budget()
    with pytest.raises(ConfigurationError, match=f"--memory-budget {least} "):
        plan_of(edges, 3, least - 1, workers=workers, orientation=orientation, join="wedges")
    # below it, auto takes the fused join where its tasks fit, and refuses where they do not
    try:
        plan = plan_of(edges, 3, least - 1, workers=workers, orientation=orientation)
    except ConfigurationError as error:
        assert f"--memory-budget {least} " in str(error)
    else:
        assert "intersect" in plan.strategy and "intersect" not in plan.over_budget()


def test_a_hub_over_the_budget_is_split_over_batches_of_its_list_only():
    spokes = 200
    plan = plan_of(wheel(spokes), 2, 8 << 10, orientation="id")
    hub = [b for b in plan.batches if b.wedge_base == 0 and b.row_start == 0
           and b.row_stop == spokes]
    hub_wedges = spokes * (spokes - 1) // 2
    assert sum(b.last - b.first for b in hub) == hub_wedges  # the hub's wedges, list only
    assert len(hub) >= -(-hub_wedges * BYTES_PER_WEDGE // (8 << 10)) > 10
    assert all(b.peak_bytes <= 8 << 10 for b in hub)
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
    # a batch is charged its rows, never more than its partition's
    assert all(b.row_stop - b.row_start <= small.summaries[b.partition].edges
               for b in small.batches)
    assert all(b.peak_bytes == BYTES_PER_ROW * (b.row_stop - b.row_start)
               + BYTES_PER_WEDGE * (b.last - b.first) for b in small.batches)


def test_auto_join_falls_back_to_wedges_when_intersect_tasks_exceed_the_budget():
    edges = wheel(1500)  # the hub's C(1500, 2) wedges make the GPU pick the fused join
    summaries, _ = sorted_summaries(edges, 1, "id")
    assert summaries[0].wedges > INTERSECT_MIN_WEDGES
    roomy = plan_of(edges, 1, 1 << 30, orientation="id", backend="gpu")
    assert roomy.strategy == ("intersect",) and roomy.fallback == () and not roomy.batches
    budget = list_bytes(summaries[0].max_out_degree) + (4 << 10)
    fused = plan_of(edges, 1, budget, orientation="id", backend="gpu", join="intersect")
    assert fused.estimates["intersect"].peak_bytes > budget  # asked for: kept, flagged
    assert fused.strategy == ("intersect",) and "intersect" in fused.over_budget()
    auto = plan_of(edges, 1, budget, orientation="id", backend="gpu")
    assert auto.strategy == ("wedges",) and auto.fallback == (0,)
    assert auto.to_dict()["fallback"] == [0] and auto.join == "wedges"
    assert auto.estimates["intersect"].tasks == 0 and auto.over_budget() == []
    assert sum(b.last - b.first for b in auto.batches) == summaries[0].wedges
    with pytest.raises(ConfigurationError, match="vertex rank 0 has out-degree 1500"):
        plan_of(edges, 1, budget - (5 << 10), orientation="id", backend="gpu")  # neither fits


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


def test_the_join_choice(monkeypatch):
    from dtri.analytics.plan import (
        CPU_INTERSECT_MIN_WEDGES,
        INTERSECT_MIN_WEDGES,
        JOINS,
        choose_join,
    )
    from dtri.kernels.compiled import WedgeTally

    assert JOINS == ("auto", "wedges", "intersect") and INTERSECT_MIN_WEDGES == 0
    summary = partition_summary(pd.DataFrame({"src": [0, 0, 0], "dst": [1, 2, 3]}))
    monkeypatch.setattr("dtri.analytics.plan.compiled_kernels_ready", lambda items=None: True)
    # once numba's kernels are loaded, the fused join is quicker at every size on both
    for backend in Backend:
        assert choose_join("auto", backend, summary) == "intersect"
        assert choose_join("wedges", backend, summary) == "wedges"
    # until they are, the CPU keeps the NumPy join for a small graph's first count
    tally = WedgeTally()
    monkeypatch.setattr("dtri.analytics.plan.NUMPY_JOIN", tally)
    monkeypatch.setattr("dtri.analytics.plan.compiled_kernels_ready", lambda items=None: False)
    many = summary._replace(wedges=CPU_INTERSECT_MIN_WEDGES // 2)
    assert choose_join("auto", Backend.CPU, many) == "wedges"
    assert choose_join("auto", Backend.GPU, many) == "intersect"
    more = summary._replace(wedges=CPU_INTERSECT_MIN_WEDGES + 1)
    assert choose_join("auto", Backend.CPU, more) == "intersect"
    # a process that has joined as many wedges by NumPy as loading the kernels costs loads them
    tally.add(CPU_INTERSECT_MIN_WEDGES // 2)
    assert choose_join("auto", Backend.CPU, many) == "wedges"
    tally.add(1)
    assert choose_join("auto", Backend.CPU, many) == "intersect"
    with pytest.raises(ValueError, match="join"):
        plan_of(GRAPHS["K12"], join="hash")


@pytest.mark.parametrize("name", GRAPHS)
def test_the_plan_of_a_run_is_the_one_it_ran(name):
    edges = GRAPHS[name]
    options = {"scheduler": "synchronous", "npartitions": 3, "memory_budget": "32KiB",
               "join": "wedges"}  # batches to compare (auto follows numba's loading)
    counted = dtri.count(edges, **options)
    explained = dtri.count(edges, explain=True, **options)
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
    result = CliRunner().invoke(main, ["count", str(path), "--explain", "--json", "--join",
                                       "wedges", "--scheduler", "synchronous", "--backend",
                                       "cpu"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert "triangles" not in report
    plan = report["plan"]
    assert (plan["vertices"], plan["edges"], plan["wedges"]) == (12, 66, 220)
    assert plan["stages"]["wedges"]["tasks"] == plan["batches"] >= 1
    assert set(plan["stages"]) == set(STAGES)


def test_many_bins_and_batches_under_a_small_budget_count_exactly():
    edges = GRAPHS["rmat10"]
    result = dtri.count(edges, scheduler="synchronous", npartitions=3, memory_budget="64KiB",
                        bins=16, join="wedges")
    assert result.triangles == networkx_triangles(edges)
    assert result.bins == 16 and result.plan["bins_with_edges"] > 8 and result.batches > 50
    assert result.plan["stages"]["wedges"]["peak_bytes"] <= 64 << 10
    assert "wedges" not in result.plan["over_budget"]


def test_a_hub_whose_wedges_exceed_the_budget_counts_exactly_over_many_batches():
    spokes, budget = 300, 16 << 10
    edges = wheel(spokes)
    assert list_bytes(spokes) <= budget < spokes * (spokes - 1) // 2 * BYTES_PER_WEDGE
    result = dtri.count(edges, scheduler="synchronous", orientation="id", memory_budget=budget,
                        join="wedges")
    assert result.triangles == spokes == networkx_triangles(edges)  # a wheel's triangles
    hub = max(result.plan["partitions"], key=lambda p: p["max_out_degree"])
    assert (hub["max_out_degree"], hub["max_out_source"]) == (spokes, 0)
    assert hub["batches"] >= spokes * (spokes - 1) // 2 * BYTES_PER_WEDGE // budget
    assert result.plan["stages"]["wedges"]["peak_bytes"] <= budget
    assert "wedges" not in result.plan["over_budget"]


def test_the_fused_join_counts_a_list_too_long_for_a_wedge_batch():
    """The wedges join needs a whole list in one batch; the fused join (auto's choice for a
    hub of 2000 wedge-rich spokes) does not."""
    result = dtri.count(wheel(2000), scheduler="synchronous", orientation="id",
                        memory_budget="32KiB")
    assert result.triangles == 2000 and "intersect" in result.join


def test_an_impossible_budget_names_the_vertex_before_any_wedge(monkeypatch):
    spokes = 2000
    need = list_bytes(spokes)

    def no_wedge(*args):
        raise AssertionError("a wedge batch ran")

    monkeypatch.setattr("dtri.analytics.count.wedge_bins", no_wedge)
    with pytest.raises(ConfigurationError) as raised:
        dtri.count(wheel(spokes), scheduler="synchronous", orientation="id",
                   memory_budget="32KiB", join="wedges")
    message = str(raised.value)
    assert "vertex rank 0 has out-degree 2000" in message
    assert f"--memory-budget {need} " in message and "32.00 kiB a task may use" in message
    assert "\n" not in message
    with pytest.raises(ConfigurationError, match="out-degree 2000"):  # --explain too
        dtri.count(wheel(spokes), scheduler="synchronous", orientation="id",
                   memory_budget="32KiB", explain=True, join="wedges")


@pytest.mark.parametrize("npartitions", [1, 3])
def test_an_impossible_budget_names_the_vertex_by_its_input_id(npartitions):
    """The hub of a wheel relabelled to sparse ids: rank 0 in dtri's order, 5 in the input
    (the rim is at 10**12 + 3 v), found through the one-task path and the exchanges alike."""
    edges = wheel(2000)
    relabel = np.where(edges == 0, 5, 10**12 + 3 * edges)  # order kept: the hub stays first
    with pytest.raises(ConfigurationError) as raised:
        dtri.count(relabel, scheduler="synchronous", orientation="id", memory_budget="32KiB",
                   npartitions=npartitions, join="wedges")
    assert "vertex rank 0 has out-degree 2000" in str(raised.value)
    assert str(raised.value).endswith("(vertex 5 of the input)")


def test_an_impossible_budget_is_one_cli_line_without_traceback(tmp_path):
    path = tmp_path / "wheel.txt"
    path.write_text("".join(f"{u} {v}\n" for u, v in wheel(2000)))
    result = CliRunner().invoke(main, ["count", str(path), "--memory-budget", "32KiB",
                                       "--orientation", "id", "--scheduler", "synchronous",
                                       "--backend", "cpu", "--join", "wedges"])
    assert result.exit_code == 2
    assert result.stdout == "" and "Traceback" not in result.output
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]  # one line
    assert result.stderr.startswith("dtri: error: memory budget too small: vertex rank 0 has "
                                    "out-degree 2000")
    assert f"--memory-budget {list_bytes(2000)} " in result.stderr


def test_explain_prints_a_table(tmp_path):
    import dtri.kernels.intersect.cpu  # noqa: F401  (numba's kernels loaded: auto takes the fused join)

    path = tmp_path / "k12.txt"
    path.write_text("".join(f"{u} {v}\n" for u, v in GRAPHS["K12"]))
    result = CliRunner().invoke(main, ["count", str(path), "--explain",
                                       "--scheduler", "synchronous", "--backend", "cpu"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert not any(line.startswith("triangles") for line in lines)  # nothing was counted
    assert any(line.startswith("estimate") for line in lines)  # a quick sample's forecast
    assert "dtri-intersect" in result.output and "peak/task" in result.output
    assert "join intersect (marks kernel: 12 vertices" in result.output
    with dask.config.set({"dtri.cpu-kernel": "search"}):
        forced = CliRunner().invoke(main, ["count", str(path), "--explain",
                                           "--scheduler", "synchronous", "--backend", "cpu"])
    assert "join intersect (search kernel: dtri.cpu-kernel = search)" in forced.output
    wedges = CliRunner().invoke(main, ["count", str(path), "--explain", "--join", "wedges",
                                       "--scheduler", "synchronous", "--backend", "cpu"])
    assert "dtri-wedges" in wedges.output and "kernel" not in wedges.output
    assert "--explain" in CliRunner().invoke(main, ["count", "--help"]).output


def test_bins_double_until_the_fullest_estimated_bin_fits():
    """Bins split the source ranks evenly; when the edges crowd into a few ranks (the higher
    degrees, under the degree order) the fullest bin must still fit a task. On RMAT 26 under
    an 8 GiB pool the total alone gave 16 bins, and one bin of 4.4 GiB ran the pool out."""
    vertices, edges = 1 << 20, 1_000_000
    top = 1 << 14  # the last partition: 90 % of the edges in the top 2**14 ranks
    ranges = [(i * ((vertices - top) // 7), (i + 1) * ((vertices - top) // 7) - 1)
              for i in range(7)] + [(vertices - top, vertices - 1)]
    summaries = [PartitionSummary(edges // 70 if i < 7 else edges * 9 // 10, 0, low, high,
                                  vertices - 1) for i, (low, high) in enumerate(ranges)]
    budget = BYTES_PER_KEY * 4 * edges // 2  # the total alone asks for 2 bins
    plan = build_plan(summaries, vertices, workers=1, backend=Backend.CPU,
                      budget=Budget(budget, budget, True))
    assert plan.nbins == 128  # the top partition's range cut in two bins of 450 k edges
    assert max(plan.bin_edges.values()) * BYTES_PER_KEY * 4 <= budget
    assert sum(plan.bin_edges.values()) >= sum(s.edges for s in summaries)
    assert "edge-bins" not in plan.over_budget()
