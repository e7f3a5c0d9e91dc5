"""Estimates with error bars (issue 31): the wedge sampler against exact enumeration, seeded
reproducibility, intervals that cover NetworkX's values over fixed seed sets, the exact
fallback, partitions and worker processes, and the command line's errors."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time

import dask
import networkx as nx
import numpy as np
import pytest

import dtri
from dtri.analytics import estimate as estimate_module
from dtri.analytics.estimate import (
    ROUND_GROWTH,
    Approx,
    chunk_wedges,
    clustering_vertices,
    first_round,
    wilson,
)
from dtri.errors import ConfigurationError
from dtri.input.generate import rmat_graph
from dtri.kernels.csr import CSR
from dtri.kernels.sampling import (
    closed_counts,
    contains,
    incident,
    neighbour_pairs,
    pair_of_index,
    sample_vertices,
    sample_wedges,
    stratum_draws,
)
from dtri.options import Backend
from tests.oracles import networkx_graph


def oriented(edges: set[tuple[int, int]], n: int) -> CSR:
    ordered = sorted(edges)
    src = np.array([e[0] for e in ordered], dtype=np.int64)
    dst = np.array([e[1] for e in ordered], dtype=np.int32)
    return CSR(dst, np.searchsorted(src, np.arange(n + 1)).astype(np.int64), 0)


def random_oriented(seed: int, n: int = 80, m: int = 600) -> tuple[set, CSR]:
    rng = np.random.default_rng(seed)
    edges = {(int(min(a, b)), int(max(a, b))) for a, b in rng.integers(0, n, (m, 2)) if a != b}
    return edges, oriented(edges, n)


def test_a_pair_index_gives_every_pair_once():
    q = np.arange(500_000, dtype=np.int64)
    i, j = pair_of_index(np, q)
    assert ((j * (j - 1) // 2 + i) == q).all() and (i >= 0).all() and (i < j).all()
    big = np.array([10**13, 10**13 + 7, 2**50], dtype=np.int64)  # float square roots round
    i, j = pair_of_index(np, big)
    assert ((j * (j - 1) // 2 + i) == big).all() and (i < j).all()


def test_the_binary_search_finds_exactly_the_edges():
    edges, csr = random_oriented(1)
    rng = np.random.default_rng(2)
    v, w = rng.integers(0, 80, 20_000), rng.integers(0, 80, 20_000)
    expected = np.array([(a, b) in edges for a, b in zip(v.tolist(), w.tolist(), strict=True)])
    assert (contains(csr, v, w) == expected).all()


def test_every_wedge_is_drawn_and_the_closed_share_is_triangles_over_wedges():
    edges, csr = random_oriented(3)
    wedges = [(u, a, b) for u in range(80)
              for a, b in itertools.combinations(csr.dst[csr.offsets[u]:csr.offsets[u + 1]], 2)]
    closed = sum((a, b) in edges for _, a, b in wedges)
    pieces = sample_wedges(tuple(csr), (150_000, 50_000), (5, 6), 1, 0, len(wedges), (0, 80))
    sample, v, w = pieces[0]
    assert (np.bincount(sample) == [150_000, 50_000]).all()
    drawn = set(zip(v.tolist(), w.tolist(), strict=True))
    assert drawn == {(int(x), int(y)) for _, x, y in wedges}  # every wedge, no other
    hits = closed_counts(tuple(csr), 2, (sample, v, w))
    for s, draws in enumerate((150_000, 50_000)):  # each sample on its own
        low, high = wilson(hits[s], draws, 3.3)
        assert low <= closed / len(wedges) <= high


def test_a_stratified_sample_draws_one_wedge_in_each_stratum():
    numbers = stratum_draws(np, 100, 3, 0, 1_000, 0, 1_000)
    assert (numbers // 10 == np.arange(100)).all()  # one in each tenth
    other = stratum_draws(np, 100, 3, 1, 1_000, 0, 1_000)
    assert (numbers != other).any()  # another phase, other draws


def test_each_stratum_s_draw_lands_in_exactly_one_range_whatever_the_cuts():
    whole = stratum_draws(np, 777, 5, 2, 10_001, 0, 10_001)
    assert whole.shape[0] == 777
    for cuts in ((0, 10_001), (0, 1, 5_000, 5_001, 10_001), (0, 3_333, 6_667, 10_001)):
        pieces = [stratum_draws(np, 777, 5, 2, 10_001, a, b)
                  for a, b in itertools.pairwise(cuts)]
        assert (np.concatenate(pieces) == whole).all()
    few = stratum_draws(np, 50, 5, 2, 7, 0, 7)  # more draws than wedges: strata within one
    assert few.shape[0] == 50 and set(few.tolist()) == set(range(7))


def test_every_wedge_is_as_likely_as_in_a_uniform_draw():
    """Strata of 7/3 wedges: over many seeds each wedge is drawn 3/7 of the time."""
    hits = np.zeros(7)
    runs = 6_000
    for seed in range(runs):
        hits += np.bincount(stratum_draws(np, 3, seed, 0, 7, 0, 7), minlength=7)
    expected = runs * 3 / 7
    assert (np.abs(hits - expected) < 5 * np.sqrt(expected)).all()


def test_a_sample_split_over_partitions_draws_the_wedges_of_the_whole():
    _, csr = random_oriented(5)
    degree = csr.offsets[1:] - csr.offsets[:-1]
    own = degree * (degree - 1) // 2
    total = int(own.sum())
    whole = sample_wedges(tuple(csr), (3_000, 500), (4, 9), 7, 0, total, (0, 80))[0]
    split = []
    for lo, hi in ((0, 23), (23, 51), (51, 80)):
        part = CSR(csr.dst[csr.offsets[lo]:csr.offsets[hi]],
                   csr.offsets[lo:hi + 1] - csr.offsets[lo], lo)
        split.append(sample_wedges(tuple(part), (3_000, 500), (4, 9), 7, int(own[:lo].sum()),
                                   total, (0, 80))[0])
    as_rows = [sorted(zip(*(column.tolist() for column in pieces), strict=True))
               for pieces in (whole, tuple(np.concatenate(c) for c in zip(*split, strict=True)))]
    assert as_rows[0] == as_rows[1]


def test_wedges_go_to_the_partition_of_their_closing_edge():
    _, csr = random_oriented(4)
    bounds = (0, 17, 50, 80)
    degree = csr.offsets[1:] - csr.offsets[:-1]
    total = int((degree * (degree - 1) // 2).sum())
    pieces = sample_wedges(tuple(csr), (5_000, 0, 7), (1, 2, 3), 0, 0, total, bounds)
    assert sum(len(p[0]) for p in pieces.values()) == 5_007
    for p, (_, v, _) in pieces.items():
        assert ((bounds[p] <= v) & (v < bounds[p + 1])).all()


def test_vertex_pairs_are_uniform_pairs_of_neighbours_whatever_the_partitions():
    edges, csr = random_oriented(6)
    graph = nx.Graph(list(edges))
    degree = np.array([graph.degree(v) if v in graph else 0 for v in range(80)])
    drawn = sample_vertices(degree, None, 60_000, 9)
    eligible, x, i, j = drawn
    assert eligible == int((degree >= 2).sum()) and (i != j).all()
    assert (degree[x] >= 2).all() and (i < degree[x]).all() and (j < degree[x]).all()
    vertices = np.unique(x)
    for bounds in ((0, 80), (0, 23, 51, 80)):
        parts = [CSR(csr.dst[csr.offsets[lo]:csr.offsets[hi]],
                     csr.offsets[lo:hi + 1] - csr.offsets[lo], lo)
                 for lo, hi in itertools.pairwise(bounds)]
        pieces = neighbour_pairs(drawn, 0, bounds, *(incident(tuple(p), vertices)
                                                    for p in parts))
        closed = sum(closed_counts(tuple(parts[q]), 1, pieces[q])[0] for q in pieces)
        for q, (_, lo, hi) in pieces.items():  # each pair an edge of the vertex, ordered
            assert (lo < hi).all() and ((bounds[q] <= lo) & (lo < bounds[q + 1])).all()
        # the closed share per vertex is its clustering: the mean over draws is the average
        expected = np.mean([nx.clustering(graph, v) for v in x.tolist()])
        assert abs(closed / len(x) - expected) < 0.02
    assert sum(len(p[1]) for p in pieces.values()) == len(x)  # a pair per drawn vertex


def rmat_edges(scale: int = 11, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n, m = 1 << scale, 16 << scale
    src, dst = np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64)
    for bit in range(scale):  # Graph500's a, b, c
        r = rng.random(m)
        src |= ((r >= 0.57 + 0.19) << bit).astype(np.int64)
        dst |= (((r >= 0.57) & (r < 0.76)) | (r >= 0.95)).astype(np.int64) << bit
    return np.stack([src, dst], axis=1) % n


@pytest.fixture(scope="module")
def skewed():
    edges = rmat_edges()
    graph = networkx_graph(edges)
    return edges, sum(nx.triangles(graph).values()) // 3, nx.transitivity(graph), \
        nx.average_clustering(graph)


def test_the_same_seed_gives_the_same_estimate_and_another_seed_another(skewed):
    edges, _, _, _ = skewed
    with dtri.prepare(edges, npartitions=3) as graph:
        first = graph.estimate(samples=5_000, seed=11)
        again = graph.estimate(samples=5_000, seed=11)
        other = graph.estimate(samples=5_000, seed=12)
    assert not first.exact and first.method == "wedge sampling"
    assert (first.triangles, first.average_clustering) == (again.triangles,
                                                           again.average_clustering)
    assert first.triangles != other.triangles


def test_intervals_cover_networkx_over_a_fixed_seed_set(skewed):
    """40 fixed seeds: each 95% interval covers the exact value; 35 is far below what a
    correct interval gives (its expected number of misses is 2), so this fails only on a
    wrong interval."""
    edges, triangles, transitivity, clustering = skewed
    covered = {"triangles": 0, "transitivity": 0, "clustering": 0}
    estimates = []
    with dtri.prepare(edges, npartitions=2) as graph:
        for seed in range(40):
            e = graph.estimate(samples=4_000, seed=seed)
            estimates.append(e.triangles)
            covered["triangles"] += e.triangles_interval[0] <= triangles <= e.triangles_interval[1]
            covered["transitivity"] += (e.transitivity_interval[0] <= transitivity
                                        <= e.transitivity_interval[1])
            covered["clustering"] += (e.average_clustering_interval[0] <= clustering
                                      <= e.average_clustering_interval[1])
    assert min(covered.values()) >= 35, covered
    assert abs(np.mean(estimates) / triangles - 1) < 0.02  # unbiased: 40 draws of ~±5%


def test_the_error_asked_for_sizes_the_sample(skewed):
    edges, triangles, _, _ = skewed
    with dtri.prepare(edges) as graph:
        coarse = graph.estimate(error=0.2, seed=1)
        fine = graph.estimate(error=0.01, seed=1)
    assert not coarse.exact and not fine.exact
    assert coarse.samples < fine.samples
    assert coarse.relative_error <= 0.2 and fine.relative_error <= 0.01
    assert fine.triangles_interval[0] <= triangles <= fine.triangles_interval[1]


@pytest.mark.parametrize("orientation", ["id", "adirection"])
def test_estimates_hold_under_every_orientation(skewed, orientation):
    edges, triangles, _, clustering = skewed
    covered = [0, 0]
    with dtri.prepare(edges, orientation=orientation, npartitions=2) as graph:
        for seed in range(10):  # 0.5 misses expected of each; 3 or more: a wrong interval
            e = graph.estimate(samples=60_000, seed=seed)
            covered[0] += e.triangles_interval[0] <= triangles <= e.triangles_interval[1]
            covered[1] += (e.average_clustering_interval[0] <= clustering
                           <= e.average_clustering_interval[1])
    assert min(covered) >= 8, covered


def test_the_count_alone_skips_the_clustering_sample(skewed):
    edges = skewed[0]
    with dtri.prepare(edges) as graph:
        both = graph.estimate(samples=20_000, seed=2)
        alone = graph.estimate(samples=20_000, seed=2, average_clustering=False)
    assert alone.average_clustering is None and alone.average_clustering_interval is None
    assert alone.vertex_samples == 0 < both.vertex_samples
    assert alone.triangles == both.triangles  # the same wedges
    small = dtri.count(np.loadtxt("examples/karate.txt", dtype=np.int64),
                       approx={"average_clustering": False})
    assert small.exact and small.triangles == 45 and small.average_clustering is None


def test_a_graph_too_small_to_sample_is_counted_and_labelled_exact():
    edges = np.loadtxt("examples/karate.txt", dtype=np.int64)
    result = dtri.count(edges, approx=True)
    graph = networkx_graph(edges)
    assert result.exact and result.method == "exact" and "exactly" in result.reason
    assert result.triangles == 45 == result.triangles_interval[0] == result.triangles_interval[1]
    assert result.transitivity == pytest.approx(nx.transitivity(graph))
    assert result.average_clustering == pytest.approx(nx.average_clustering(graph))


def test_a_graph_without_wedges_has_no_triangles():
    result = dtri.count(np.array([[0, 1], [2, 3]]), approx={"seed": 1})
    assert result.exact and result.triangles == 0 and result.transitivity == 0.0


def test_estimates_on_two_worker_processes(skewed):
    edges, triangles, _, _ = skewed
    with dtri.Session(backend="cpu", workers=2) as session, \
            session.prepare(edges, npartitions=4) as graph:
        first = graph.estimate(samples=20_000, seed=3)
        again = graph.estimate(samples=20_000, seed=3)
    assert first.triangles == again.triangles
    assert first.triangles_interval[0] <= triangles <= first.triangles_interval[1]


def test_approx_false_or_none_counts_exactly_and_a_bad_value_is_refused():
    edges = np.loadtxt("examples/karate.txt", dtype=np.int64)
    assert dtri.count(edges, approx=None).triangles == dtri.count(edges, approx=False).triangles
    assert not hasattr(dtri.count(edges, approx=None), "triangles_interval")
    with pytest.raises(ConfigurationError):
        dtri.count(edges, approx="fast")


@pytest.mark.parametrize("asked", [{"error": 0}, {"error": 1.5}, {"confidence": 1},
                                   {"confidence": -0.1}, {"samples": 0}, {"seed": -1},
                                   {"seconds": 0}, {"seconds": -0.5}, {"seconds": True},
                                   {"seconds": "2"}, {"seconds": float("nan")},
                                   {"seconds": float("inf")}, {"seconds": 1, "samples": 1000},
                                   {"seconds": 1, "error": 0.05}])
def test_values_outside_their_range_are_refused(asked):
    with pytest.raises(ConfigurationError) as refused:
        Approx(**asked)
    assert "\n" not in str(refused.value)
    with pytest.raises(ConfigurationError):
        dtri.count(np.array([[0, 1]]), approx=asked)


@pytest.mark.parametrize("args", [["--approx", "--error", "0"], ["--approx", "--confidence", "1"],
                                  ["--error", "0.1"], ["--explain", "--method", "wedges"],
                                  ["--no-clustering"], ["--seconds", "1"],
                                  ["--approx", "--seconds", "0"],
                                  ["--approx", "--seconds", "1", "--samples", "100"],
                                  ["--approx", "--seconds", "1", "--error", "0.05"]])
def test_the_command_line_refuses_in_one_line(args):
    run = subprocess.run([sys.executable, "-m", "dtri", "count", *args, "examples/karate.txt"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("dtri: error:")


def test_the_command_line_estimates_with_intervals(tmp_path):
    path = tmp_path / "g.txt"
    np.savetxt(path, rmat_edges(), fmt="%d")
    run = subprocess.run([sys.executable, "-m", "dtri", "count", "--approx", "--error", "0.1",
                          "--sample-seed", "4", "--json", str(path)], capture_output=True,
                         text=True, timeout=120, check=True)
    result = json.loads(run.stdout)
    assert result["method"] == "wedge sampling" and result["seed"] == 4
    low, high = result["triangles_interval"]
    assert low <= result["triangles"] <= high and result["relative_error"] <= 0.1
    alone = subprocess.run([sys.executable, "-m", "dtri", "count", "--approx", "--error", "0.1",
                            "--no-clustering", str(path)], capture_output=True, text=True,
                           timeout=120, check=True)
    assert "triangles" in alone.stdout and "avg clustering" not in alone.stdout
    explained = subprocess.run([sys.executable, "-m", "dtri", "count", "--explain",
                                str(path)], capture_output=True, text=True, timeout=120,
                               check=True)
    assert "estimate" in explained.stdout and "triangles (95% interval" in explained.stdout


REAL_DRAW = estimate_module.draw


class FakeClock:
    """The estimate module's clock, advanced only by the rounds it draws: a round of ``n``
    wedges costs ``fixed + n * per_wedge`` seconds (the real draw runs, untimed)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, fixed: float, per_wedge: float):
        self.now, self.fixed, self.per_wedge, self.rounds = 0.0, fixed, per_wedge, []

        def draw(graph, counts, *args):
            self.rounds.append(sum(counts))
            self.now += fixed + sum(counts) * per_wedge
            return REAL_DRAW(graph, counts, *args)

        monkeypatch.setattr(estimate_module, "draw", draw)
        monkeypatch.setattr(estimate_module, "time", self)

    def perf_counter(self) -> float:
        return self.now


def test_a_time_budget_draws_by_the_clock_alone_and_keeps_to_it(monkeypatch):
    """With a simulated clock (5 ms a round, 1 µs a wedge), a 0.5 s budget ends within a round's
    fixed cost of it, having used most of it, in rounds that grow at most ROUND_GROWTH-fold;
    the seed changes what is drawn but not how much."""
    with dtri.prepare(rmat_graph(15), backend="cpu") as graph:
        drawn = {}
        for seed in (1, 2):
            clock = FakeClock(monkeypatch, fixed=0.005, per_wedge=1e-6)
            result = graph.estimate(seconds=0.5, seed=seed)
            drawn[seed] = (result.samples, result.closed, clock.rounds)
            assert 0.45 <= clock.now <= 0.5 + clock.fixed
            assert not result.exact and result.seconds_budget == 0.5
            assert result.error is None and result.pilot_samples == 0
            assert result.reason.endswith("wedges drawn in 0.50 s (a time budget)")
            assert clock.rounds[0] == first_round(chunk_wedges(Backend.CPU),
                                                  clustering_vertices(Backend.CPU))
            assert all(later <= ROUND_GROWTH * earlier
                       for earlier, later in itertools.pairwise(clock.rounds))
            assert result.samples == sum(clock.rounds) > clock.rounds[0]
        assert drawn[1][0] == drawn[2][0] and drawn[1][2] == drawn[2][2]
        assert drawn[1][1] != drawn[2][1]
        clock = FakeClock(monkeypatch, fixed=0.005, per_wedge=1e-9)  # a quarter of the wedges
        fast = graph.estimate(seconds=0.5, seed=1, average_clustering=False)
        assert fast.exact and fast.triangles == graph.count_triangles()
        assert "time budget of 0.5 s would draw about" in fast.reason and len(clock.rounds) == 1


def test_a_time_budget_is_kept_and_its_samples_and_seed_repeat_it():
    """A real 0.5 s budget on the CPU: well under 3 s, more than the first round, and a fixed
    sample of the wedges it drew, with its seed, gives the identical estimate."""
    with dtri.prepare(rmat_graph(15), backend="cpu") as graph:
        started = time.perf_counter()
        timed = graph.estimate(seconds=0.5)
        wall = time.perf_counter() - started
        repeated = graph.estimate(samples=timed.samples, seed=timed.seed)
    assert wall < 3.0 and timed.seconds["estimate"] < 3.0
    assert not timed.exact and timed.samples > first_round(chunk_wedges(Backend.CPU),
                                                           clustering_vertices(Backend.CPU))
    for name in ("triangles", "triangles_interval", "transitivity", "closed",
                 "average_clustering", "average_clustering_interval", "vertex_samples"):
        assert getattr(repeated, name) == getattr(timed, name), name
    assert repeated.seconds_budget is None and timed.to_dict()["seconds_budget"] == 0.5


def test_a_fixed_sample_is_the_same_whatever_the_rounds_it_is_drawn_in(skewed):
    edges = skewed[0]
    with dtri.prepare(edges, npartitions=3) as graph:
        whole = graph.estimate(samples=70_000, seed=5)
        with dask.config.set({"dtri.estimate-round-wedges": 1_000}):
            rounds = graph.estimate(samples=70_000, seed=5)
    assert (whole.closed, whole.average_clustering) == (rounds.closed, rounds.average_clustering)


def test_a_graph_too_small_for_a_time_budget_is_counted_exactly():
    result = dtri.count(np.loadtxt("examples/karate.txt", dtype=np.int64),
                        approx={"seconds": 2})
    assert result.exact and result.triangles == 45 and result.seconds_budget == 2
    assert "time budget of 2 s" in result.reason and "exactly" in result.reason


@pytest.mark.slow
def test_a_time_budget_on_two_worker_processes():
    with dtri.Session(backend="cpu", workers=2) as session, \
            session.prepare(rmat_graph(15), npartitions=4) as graph:
        timed = graph.estimate(seconds=0.5, seed=9)
        repeated = graph.estimate(samples=timed.samples, seed=9)
    assert not timed.exact and timed.seconds["estimate"] < 5.0
    assert (repeated.closed, repeated.average_clustering) == (timed.closed,
                                                              timed.average_clustering)


@pytest.mark.slow
def test_the_command_line_keeps_a_time_budget_and_repeats_it():
    command = [sys.executable, "-m", "dtri", "count", "--approx", "--generate", "rmat:15",
               "--backend", "cpu", "--json"]
    timed = json.loads(subprocess.run([*command, "--seconds", "0.3"], capture_output=True,
                                      text=True, timeout=120, check=True).stdout)
    assert timed["seconds_budget"] == 0.3 and not timed["exact"]
    repeated = json.loads(subprocess.run(
        [*command, "--samples", str(timed["samples"]), "--sample-seed", str(timed["seed"])],
        capture_output=True, text=True, timeout=120, check=True).stdout)
    assert (repeated["triangles"], repeated["closed"]) == (timed["triangles"], timed["closed"])
    text = subprocess.run([*command[:-1], "--seconds", "0.3", "--no-clustering"],
                          capture_output=True, text=True, timeout=120, check=True).stdout
    assert "(a time budget); time budget 0.3 s; seed" in text


def test_estimates_run_in_an_open_session_and_leave_it_open():
    """``dtri.count(..., session=s, approx=...)`` estimates in ``s`` (both methods), as a count
    does, and refuses the session's own options as ``prepare`` does."""
    from dtri.input.generate import generated

    edges = generated("rmat:10", seed=1)
    with dtri.Session(backend="cpu") as session:
        exact = dtri.count(edges, session=session).triangles
        runtime = session.runtime
        wedges = dtri.count(edges, session=session, approx={"seed": 1, "error": 0.2})
        with dask.config.set({"dtri.estimate-colours-min": 2, "dtri.estimate-colours-max": 4}):
            colours = dtri.count(edges, session=session,
                                 approx={"seed": 1, "error": 0.9, "method": "colours"})
        assert session.runtime is runtime  # the same session, still open
        assert wedges.method == "wedge sampling" and colours.method == "colourful sampling"
        for result in (wedges, colours):
            assert result.triangles_interval[0] <= exact <= result.triangles_interval[1]
        with pytest.raises(ConfigurationError, match="option of the session"):
            dtri.count(edges, session=session, approx=True, workers=2)
