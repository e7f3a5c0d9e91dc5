"""The 2D cyclic decomposition with Cannon's rounds against the 1D join and NetworkX: its
blocks and rounds alone, in this process (a 1 x 1 grid), and on 4 and 5 local workers."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dtri
from dtri.analytics.cannon import (
    choose_decomposition,
    grid_side,
    moved_1d,
    moved_2d,
    round_bytes,
)
from dtri.analytics.plan import build_plan
from dtri.errors import ConfigurationError
from dtri.kernels.csr import PartitionSummary, as_csr
from dtri.kernels.cyclic import (
    class_rows,
    cyclic_block,
    cyclic_pieces,
    pulled_blocks,
    round_assignment,
    round_triangles,
    round_vertex_triangles,
    unpacked_block,
)
from dtri.kernels.dispatch import to_host
from dtri.kernels.wire import WIRE_FORMATS
from dtri.options import Backend
from dtri.report import most_to_one_worker
from dtri.runtime.budget import Budget
from tests.oracles import host, messy_graphs, networkx_graph, networkx_triangles


def rounds_by_hand(graph, q: int, fmt: str = "raw") -> tuple[int, np.ndarray]:
    """The count and the triangles at each rank of a prepared graph by the 2D join on a
    ``q x q`` grid, every block and round computed here, each worker's rounds in turn, the
    pieces and blocks packed in the wire format ``fmt``."""
    parts = [as_csr(p) for p in graph.parts]
    pieces = [cyclic_pieces(p, q, fmt) for p in parts]
    blocks = [cyclic_block(fmt, *(piece[g] for piece in pieces)) for g in range(q * q)]
    n = graph.vertices
    found, at_rank = 0, np.zeros(n, dtype=np.int64)  # on the host, whatever the backend
    assignment = round_assignment(q)
    assert sorted(r for rounds in assignment for r in rounds) == sorted(
        itertools.product(range(q), repeat=3))  # every round once, q to a worker
    assert {len(rounds) for rounds in assignment} == {q}
    for rounds in assignment:
        before = None
        for x, y, z in rounds:
            arrived = (blocks[x * q + y], blocks[x * q + z], blocks[y * q + z])
            found += round_triangles(arrived, x, y, z, q, n)
            before = round_vertex_triangles(arrived, x, y, z, q, n, before)
        at_rank += to_host(before)
    return found, at_rank


@given(edges=messy_graphs(), npartitions=st.integers(1, 4), q=st.integers(1, 4),
       fmt=st.sampled_from(WIRE_FORMATS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_rounds_of_every_grid_find_each_triangle_once(edges, npartitions, q, fmt):
    with dtri.prepare(edges, scheduler="synchronous", npartitions=npartitions,
                      backend="cpu") as graph:
        found, at_rank = rounds_by_hand(graph, q, fmt)
        assert found == networkx_triangles(edges)
        ids = np.asarray(host(graph.ids))
        expected = nx.triangles(networkx_graph(edges))
        assert {int(ids[r]): int(c) for r, c in enumerate(at_rank)} == expected


@pytest.mark.parametrize("q", [2, 3, 4])
def test_the_assignment_pulls_fewer_blocks_than_cannons_order(q):
    # Cannon's order: a worker off the diagonal reads rows x and y, 2q - 1 blocks not its own
    busiest = max(len(pulled_blocks(rounds, g, q))
                  for g, rounds in enumerate(round_assignment(q)))
    assert busiest < 2 * q - 1
    assert busiest == {2: 2, 3: 4, 4: 5}[q]


@pytest.mark.parametrize("fmt", WIRE_FORMATS)
def test_blocks_hold_every_edge_once_by_its_classes(fmt):
    edges = np.array([(u, v) for u in range(9) for v in range(u + 1, 9) if (u * v) % 4 != 3])
    with dtri.prepare(edges, scheduler="synchronous", npartitions=3, backend="cpu") as graph:
        parts = [as_csr(p) for p in graph.parts]
        oriented = {(int(s), int(d)) for p in parts
                    for s, d in zip(np.repeat(np.arange(p.low, p.high), np.diff(p.offsets)),
                                    p.dst, strict=True)}
        q = 3
        pieces = [cyclic_pieces(p, q, fmt) for p in parts]
        seen = set()
        for g in range(q * q):
            r, s = divmod(g, q)
            dst, offsets = unpacked_block(cyclic_block(fmt, *(piece[g] for piece in pieces)),
                                          s, q)
            assert offsets.shape[0] == class_rows(0, graph.vertices, r, q)[1] + 1
            for i in range(offsets.shape[0] - 1):
                row = dst[offsets[i]: offsets[i + 1]].tolist()
                assert row == sorted(row) and all(c % q == s for c in row)
                seen.update((r + q * i, c) for c in row)
        assert seen == oriented


@pytest.mark.parametrize("decomposition", ["1d", "2d", "auto"])
def test_in_this_process_the_grid_is_one_by_one_and_exact(decomposition):
    edges = np.random.default_rng(5).integers(0, 200, size=(3000, 2))
    result = dtri.count(edges, backend="cpu", decomposition=decomposition, npartitions=3)
    assert result.triangles == networkx_triangles(edges)
    spread = result.plan["decomposition"]
    assert result.decomposition == ("2d" if decomposition == "2d" else "1d")
    assert spread["side"] == 1 and spread["kind"] == result.decomposition
    if decomposition == "auto":
        assert "too few for a 2 x 2 grid" in spread["reason"]


def test_a_bad_decomposition_is_refused():
    with pytest.raises(ConfigurationError, match="--decomposition must be one of"):
        dtri.count(np.array([[0, 1]]), decomposition="3d")


def test_five_workers_use_the_largest_square_grid():
    edges = np.random.default_rng(7).integers(0, 400, size=(6000, 2))
    result = dtri.count(edges, backend="cpu", workers=5, npartitions=7, decomposition="2d")
    assert result.triangles == networkx_triangles(edges)
    assert result.plan["decomposition"]["side"] == 2
    assert "1 kept out: not a square" in result.plan["decomposition"]["reason"]


def plan_of(summaries: list[PartitionSummary], vertices: int, workers: int):
    """The count's 1D plan of these partitions on ``workers`` GPU workers."""
    return build_plan(summaries, vertices, workers=workers, backend=Backend.GPU,
                      budget=Budget(1 << 40, 1 << 40, True), join="intersect")


def test_three_workers_are_too_few_for_a_grid():
    summaries = [PartitionSummary(1000, 5000, 100 * p, 100 * p + 99, 599) for p in range(6)]
    bounds = [100 * p for p in range(7)]
    chosen = choose_decomposition("auto", plan_of(summaries, 600, 3), bounds)
    assert (chosen.kind, chosen.side) == ("1d", 1)
    assert chosen.moved_2d == {} and chosen.moved_1d["edge-bins"] > 0
    assert grid_side(3) == 1 and grid_side(4) == 2 and grid_side(15) == 3


def test_the_bytes_model_prefers_2d_where_every_worker_would_pull_most_of_the_graph():
    # 16 workers, each partition's lists reach every later partition (the hubs rank last)
    parts, per = 32, 1_000_000
    summaries = [PartitionSummary(per, 10 * per, 1000 * p, 1000 * p + 999, 32_000 - 1)
                 for p in range(parts)]
    bounds = [1000 * p for p in range(parts + 1)]
    plan = plan_of(summaries, 32_000, 16)
    one = moved_1d(plan)
    two = moved_2d(summaries, bounds, 16, 4)
    assert sum(two.values()) < 0.6 * sum(one.values())
    chosen = choose_decomposition("auto", plan, bounds)
    assert (chosen.kind, chosen.side) == ("2d", 4)
    assert "predicted to pull" in chosen.reason
    forced = choose_decomposition("1d", plan, bounds)
    assert (forced.kind, forced.side) == ("1d", 1)


def test_auto_keeps_1d_where_a_round_would_not_fit_a_task():
    # R-MAT 28 on four H100s: auto took 2d by its bytes, and a round asked for 8 GiB more
    # than the pool had; a round holds whole blocks, so it must fit one task's budget
    parts, per = 32, 1_000_000
    summaries = [PartitionSummary(per, 10 * per, 1000 * p, 1000 * p + 999, 32_000 - 1)
                 for p in range(parts)]
    bounds = [1000 * p for p in range(parts + 1)]
    plan = build_plan(summaries, 32_000, workers=16, backend=Backend.GPU,
                      budget=Budget(100 << 20, 100 << 20, True), join="intersect")
    held = round_bytes(parts * per, 32_000, 4)
    assert held > plan.task_budget
    chosen = choose_decomposition("auto", plan, bounds)
    assert (chosen.kind, chosen.side) == ("1d", 1)
    assert "more than a task's" in chosen.reason and chosen.moved_2d  # both predicted
    assert choose_decomposition("2d", plan, bounds).kind == "2d"  # as asked


@given(edges=messy_graphs(), npartitions=st.integers(1, 6))
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])
def test_on_four_workers_2d_equals_1d_exactly(four_workers, edges, npartitions):
    with dtri.Session(backend="cpu") as session:
        one = dtri.prepare(edges, session=session, npartitions=npartitions,
                           decomposition="1d")
        two = dtri.prepare(edges, session=session, npartitions=npartitions,
                           decomposition="2d")
        counted = two.count()
        assert counted.decomposition == "2d" and counted.plan["decomposition"]["side"] == 2
        assert counted.triangles == one.count().triangles == networkx_triangles(edges)
        assert (host(two.triangles().compute()).sort_index()
                .equals(host(one.triangles().compute()).sort_index()))
        one.release()
        two.release()


def test_on_four_workers_every_analytic_of_the_2d_graph_equals_networkx(four_workers):
    from tests.oracles import check_analytics

    edges = np.random.default_rng(11).integers(0, 60, size=(500, 2))
    check_analytics(edges, ks=(3, 4, 5), backend="cpu", npartitions=5, decomposition="2d")


def busiest(moved: dict[str, dict[str, int]], stages: tuple[str, ...]) -> int:
    """The most bytes one worker pulled in ``stages``."""
    return most_to_one_worker({stage: moved[stage] for stage in stages if stage in moved})


def test_on_four_workers_the_bytes_model_is_within_a_quarter_of_the_measure(four_workers):
    from dtri.input.generate import rmat

    edges = rmat(13, seed=1, npartitions=8).persist()
    moved = {}
    # 1D by the wedges join, whose closure keys travel: the fused join's 1D (the CPU's
    # default once numba's kernels are loaded) pulls 461 kB at most to one worker here, a
    # little less than 2D's 474 kB
    with dtri.Session(backend="cpu") as session:
        for decomposition in ("1d", "2d"):
            with dtri.prepare(edges, session=session, npartitions=8, join="wedges",
                              decomposition=decomposition) as graph:
                result = graph.count()
                moved[decomposition] = result.moved_bytes
                spread = result.plan["decomposition"]
    count_1d = ("edge-bins", "join", "intersect")
    count_2d = ("cyclic-blocks", "cannon-shift")
    measured_1d, measured_2d = busiest(moved["1d"], count_1d), busiest(moved["2d"], count_2d)
    predicted_1d, predicted_2d = sum(spread["moved_1d"].values()), sum(spread["moved_2d"].values())
    assert abs(predicted_2d - measured_2d) <= 0.25 * measured_2d, (predicted_2d, moved["2d"])
    assert abs(predicted_1d - measured_1d) <= 0.25 * measured_1d, (predicted_1d, moved["1d"])
    assert set(moved["2d"]).isdisjoint(count_1d) and set(moved["1d"]).isdisjoint(count_2d)


def test_every_worker_builds_its_own_copy_of_a_bin_from_the_others_slices():
    # one bin on two workers (R-MAT 26's case on two H100): each worker pulls the slices the
    # other owns, not a copy the other built with its own slices in it
    summaries = [PartitionSummary(1000, 5000, 100 * p, 100 * p + 99, 799) for p in range(8)]
    plan = plan_of(summaries, 800, 2)
    assert plan.nbins == 1 and plan.alone == {} and plan.builders == {0: (0, 1)}
    assert plan.estimates["edge-bins"].tasks == 2
    one = moved_1d(plan)
    # four of the eight partitions' slices to each worker: 1000 int32 targets and an int64
    # offset for each of its 100 sources and one more
    assert one == {"edge-bins": 4 * (4 * 1000 + 8 * 101), "join": 0, "intersect": 0}


def test_a_copy_of_a_bin_leaves_out_the_slices_its_edges_cannot_reach():
    """One partition a worker, ranges ascending: a target lies above its partition's first
    source, so worker 3's copy needs only its own slice, worker 2's its own and 3's, and so
    on; worker 0 pulls the three others, where before every worker pulled three."""
    summaries = [PartitionSummary(1000, 5000, 100 * p, 100 * p + 99, 399) for p in range(4)]
    plan = plan_of(summaries, 400, 4)
    assert plan.nbins == 1 and plan.builders == {0: (0, 1, 2, 3)}
    assert plan.copy_parts == {(0, 0): (0, 1, 2, 3), (0, 1): (1, 2, 3), (0, 2): (2, 3),
                               (0, 3): (3,)}
    assert moved_1d(plan)["edge-bins"] == 3 * (4 * 1000 + 8 * 101)
    assert plan.estimates["edge-bins"].moved_bytes == (4 + 3 + 2 + 1) * 4 * 1000 + 4 * 8 * 401
    # the largest target bounds a copy too: partition 0's edges reach ranks up to 150 only
    low = [PartitionSummary(1000, 5000, 0, 99, 150), *summaries[1:]]
    assert plan_of(low, 400, 4).copy_parts[0, 0] == (0, 1)


def test_one_copy_read_by_every_partition_leaves_out_what_none_of_them_reaches():
    """Fewer partitions than workers: one copy of the bin, where its first partition lives,
    read by every partition with wedges. Partition 0 has edges but no wedges (it reads no
    bin), so the copy starts above partition 1's first source and leaves partition 0 out."""
    summaries = [PartitionSummary(1000, 0, 0, 99, 299), PartitionSummary(1000, 5000, 100, 199, 299),
                 PartitionSummary(1000, 5000, 200, 299, 299)]
    plan = build_plan(summaries, 300, workers=4, backend=Backend.GPU,
                      budget=Budget(1 << 40, 1 << 40, True), join="intersect", bins=1)
    assert not plan.owned and plan.builders == {0: (0,)}
    assert plan.copy_parts == {(0, 0): (1, 2)}


def test_a_bin_that_is_a_partition_is_not_built_and_travels_whole():
    summaries = [PartitionSummary(1000, 5000, 128 * p, 128 * p + 127, 511) for p in range(4)]
    plan = build_plan(summaries, 512, workers=2, backend=Backend.GPU,
                      budget=Budget(1 << 40, 1 << 40, True), join="intersect", bins=4)
    assert plan.alone == {0: 0, 1: 1, 2: 2, 3: 3} and plan.builders == {}
    assert plan.estimates["edge-bins"].tasks == 0
    # worker 0 owns partitions 0 and 3, whose lists reach every bin: it pulls bins 1 and 2,
    # partitions of worker 1 (whose partitions 1 and 2 pull bin 3 only)
    assert moved_1d(plan)["intersect"] == 2 * (4 * 1000 + 8 * 129)
