"""Colourful sampling (issue 31): the read stage's colour filter, the monochromatic graph's
triangles and variance against NetworkX, the variance formula against every colouring of small
graphs, intervals that cover the exact count over fixed seed sets, the planner's choice of
method, the in-process and the cluster path, and the command line."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys

import dask
import networkx as nx
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dtri
from dtri.analytics.colours import ColourSample, colour_variance, predicted_error
from dtri.analytics.estimate import Approx
from dtri.errors import ConfigurationError
from dtri.input.colours import colour_hashes, colour_key, coloured, monochromatic
from dtri.input.edges import EdgeArrays
from dtri.input.generate import generated
from dtri.kernels.hashing import splitmix64_int
from tests.oracles import manifest_rows, messy_graphs, shared_graph

MASK64 = (1 << 64) - 1


def colour_of(vertex: int, key: int, colours: int) -> int:
    """The colour of one id, from splitmix64 on Python ints (the filter's oracle)."""
    return splitmix64_int((vertex & MASK64) ^ key) % colours


def simple_edges(edges: np.ndarray) -> set[tuple[int, int]]:
    """The simple undirected graph's edges of an edge list."""
    return {(min(u, v), max(u, v)) for u, v in edges.tolist() if u != v}


def filtered(edges: np.ndarray, seed: int, colours: int) -> np.ndarray:
    part = monochromatic(EdgeArrays(edges[:, 0], edges[:, 1]), colour_key(seed), colours)
    return np.stack([part.src, part.dst], axis=1)


@given(edges=messy_graphs(), seed=st.integers(0, 2**32 - 1),
       colours=st.sampled_from([2, 4, 8]))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_filter_keeps_exactly_the_monochromatic_rows_and_commutes_with_the_preparation(
        edges, seed, colours):
    key = colour_key(seed)
    kept = filtered(edges, seed, colours)
    expected = [[u, v] for u, v in edges.tolist()
                if colour_of(u, key, colours) == colour_of(v, key, colours)]
    assert kept.tolist() == expected  # the rows, in order, duplicates and loops included
    # filtering the raw rows, then reading them as a simple graph, is the simple graph's
    # monochromatic subgraph: directions, repeats and self-loops do not matter
    assert simple_edges(kept) == {(u, v) for u, v in simple_edges(edges)
                                  if colour_of(u, key, colours) == colour_of(v, key, colours)}


def test_colourings_nest_and_frames_filter_as_arrays_do():
    rng = np.random.default_rng(5)
    edges = rng.integers(-(2**40), 2**40, (20_000, 2))
    kept = {n: filtered(edges, 7, n) for n in (2, 4, 8, 16)}
    for coarse, fine in itertools.pairwise((2, 4, 8, 16)):
        assert set(map(tuple, kept[fine].tolist())) <= set(map(tuple, kept[coarse].tolist()))
        assert (filtered(kept[coarse], 7, fine) == kept[fine]).all()  # finer of the coarser
    for n, rows in kept.items():  # about 1/n of the rows each
        assert abs(len(rows) / len(edges) - 1 / n) < 0.02
    ids = np.arange(1 << 16)
    shares = np.bincount((colour_hashes(ids, colour_key(3)) % 8).astype(np.int64)) / len(ids)
    assert np.abs(shares - 1 / 8).max() < 0.01  # the colours are uniform
    frame = pd.DataFrame({"src": edges[:, 0], "dst": edges[:, 1]})
    assert (monochromatic(frame, colour_key(7), 4).to_numpy() == kept[4]).all()
    import dask.dataframe as dd

    lazy = coloured(dd.from_pandas(frame, npartitions=3), colour_key(7), 4)
    assert lazy._name.startswith("dtri-estimate-colours-")
    assert (lazy.compute().to_numpy() == kept[4]).all()
    delayed = coloured([dask.delayed(EdgeArrays)(edges[:, 0], edges[:, 1])], colour_key(7), 4)
    (part,) = dask.compute(*delayed)
    assert delayed[0].key[0].startswith("dtri-estimate-colours-")
    assert (np.stack([part.src, part.dst], axis=1) == kept[4]).all()


@pytest.mark.parametrize("graph", [nx.complete_graph(6), nx.petersen_graph(),
                                   nx.wheel_graph(7), nx.barbell_graph(4, 1)],
                         ids=["K6", "petersen", "wheel", "barbell"])
@pytest.mark.parametrize("colours", [2, 3, 4])
def test_the_variance_is_the_exact_variance_over_every_colouring(graph, colours):
    """Var(N² T_m) over all N^n equally likely colourings against T (N² − 1) + 2 k (N − 1)."""
    triangles = sum(nx.triangles(graph).values()) // 3
    pairs = sum(math.comb(len(set(graph[u]) & set(graph[v])), 2) for u, v in graph.edges)
    nodes = list(graph)
    found = []
    for colouring in itertools.product(range(colours), repeat=len(nodes)):
        colour = dict(zip(nodes, colouring, strict=True))
        mono = graph.edge_subgraph([(u, v) for u, v in graph.edges if colour[u] == colour[v]])
        found.append(colours ** 2 * sum(nx.triangles(mono).values()) // 3)
    assert np.mean(found) == pytest.approx(triangles)  # unbiased
    assert np.var(found) == pytest.approx(colour_variance(triangles, pairs, colours))


def networkx_sample(edges: np.ndarray, seed: int, colours: int) -> tuple[int, int, int]:
    """The monochromatic graph's triangles, pairs of triangles sharing an edge and edges,
    filtered by the Python-int oracle and counted by NetworkX."""
    key = colour_key(seed)
    graph = nx.Graph([(u, v) for u, v in simple_edges(edges)
                      if colour_of(u, key, colours) == colour_of(v, key, colours)])
    triangles = sum(nx.triangles(graph).values()) // 3
    pairs = sum(math.comb(len(set(graph[u]) & set(graph[v])), 2) for u, v in graph.edges)
    return triangles, pairs, graph.number_of_edges()


def colours_only(low: int, high: int) -> dask.config.set:
    return dask.config.set({"dtri.estimate-colours-min": low, "dtri.estimate-colours-max": high})


@pytest.fixture(scope="module")
def rmat_edges() -> np.ndarray:
    src, dst = generated("rmat:12", seed=3).maker("cpu").arrays((0, 16 << 12))
    return np.stack([src, dst], axis=1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_sample_is_the_monochromatic_graph_counted_exactly(rmat_edges, seed):
    """Triangles, edges and the interval's variance of the monochromatic graph equal
    NetworkX's on the same filtered graph: no approximation but the sampling itself."""
    with colours_only(4, 4):
        result = dtri.count(rmat_edges, approx={"method": "colours", "error": 0.5, "seed": seed})
    triangles, pairs, edges = networkx_sample(rmat_edges, seed, 4)
    assert result.method == "colourful sampling" and result.colours == 4 and not result.exact
    assert (result.closed, result.samples, result.pilot_samples) == (triangles, edges, edges)
    assert result.triangles == 16 * triangles
    variance = 16 * triangles * 15 + 2 * 3 * 64 * pairs
    assert ColourSample(4, triangles, pairs, edges).variance == variance
    low, high = result.triangles_interval
    z = Approx(confidence=result.confidence).z
    assert high - result.triangles == pytest.approx(z * math.sqrt(variance))
    assert low == max(0.0, result.triangles - z * math.sqrt(variance))
    assert result.transitivity is None and result.average_clustering is None
    assert result.wedges is None and result.triples is None and "not estimated" in result.reason


def test_the_planner_takes_the_most_colours_within_the_error(rmat_edges):
    with colours_only(2, 16):
        result = dtri.count(rmat_edges, approx={"method": "colours", "error": 0.2, "seed": 4})
    # the pilot (16 colours) predicted the chosen colours within 0.2, and twice as many not
    triangles, pairs, edges = networkx_sample(rmat_edges, 4, 16)
    pilot = ColourSample(16, triangles, pairs, edges)
    n = result.colours
    assert result.pilot_samples == edges and 2 <= n <= 16
    assert predicted_error(pilot, n, Approx().z) <= 0.2
    assert n == 16 or predicted_error(pilot, 2 * n, Approx().z) > 0.2
    assert result.closed == networkx_sample(rmat_edges, 4, n)[0]
    assert "predicts" in result.reason or "within" in result.reason


def test_the_same_seed_gives_the_same_estimate_on_any_partitions(rmat_edges):
    asked = {"method": "colours", "error": 0.3, "seed": 9}
    with colours_only(4, 8):
        first = dtri.count(rmat_edges, approx=asked)
        again = dtri.count(rmat_edges, approx=asked, npartitions=3)
        frame = dtri.count(pd.DataFrame(rmat_edges, columns=["src", "dst"]), approx=asked)
        other = dtri.count(rmat_edges, approx={**asked, "seed": 10})
    assert first.triangles == again.triangles == frame.triangles
    assert first.triangles_interval == again.triangles_interval == frame.triangles_interval
    assert first.seed == 9 and first.triangles != other.triangles


def test_a_cluster_of_two_workers_samples_the_same_colours(rmat_edges, tmp_path):
    path = tmp_path / "g.txt"
    np.savetxt(path, rmat_edges, fmt="%d")
    asked = {"method": "colours", "error": 0.3, "seed": 5}
    with colours_only(4, 8):
        here = dtri.count(str(path), approx=asked)
        there = dtri.count(str(path), approx=asked, backend="cpu", workers=2, npartitions=2)
    assert here.method == there.method == "colourful sampling"
    assert (here.triangles, here.colours, here.samples) == (there.triangles, there.colours,
                                                            there.samples)
    assert there.seconds["estimate-colours"] > 0 and there.seconds["total"] > 0


def test_auto_samples_colours_from_the_threshold_and_wedges_below(rmat_edges):
    rows = len(rmat_edges)
    with colours_only(2, 8):
        with dask.config.set({"dtri.estimate-colours-min-edges": rows}):
            count_only = {"error": 0.3, "seed": 1, "average_clustering": False}
            above = dtri.count(rmat_edges, approx=count_only)
            clustered = dtri.count(rmat_edges, approx={"error": 0.3, "seed": 1})
            fixed = dtri.count(rmat_edges, approx={"samples": 5_000, "seed": 1})
            timed = dtri.count(rmat_edges, approx={"seconds": 0.05, "seed": 1})
            plan = dtri.count(rmat_edges, approx={"average_clustering": False}, explain=True)
        with dask.config.set({"dtri.estimate-colours-min-edges": rows + 1}):
            below = dtri.count(rmat_edges, approx=count_only)
            forced = dtri.count(rmat_edges, approx={"error": 0.3, "seed": 1,
                                                    "method": "colours"})
    assert above.method == "colourful sampling" and above.reason.startswith(f"auto: {rows:,}")
    assert below.method == "wedge sampling" and "below" in below.reason
    assert clustered.method == "wedge sampling" and "average clustering" in clustered.reason
    assert clustered.average_clustering is not None and clustered.transitivity is not None
    assert fixed.method == "wedge sampling" and "--samples" in fixed.reason
    assert timed.method in ("wedge sampling", "exact") and timed.colours is None
    assert forced.method == "colourful sampling" and "asked for" in forced.reason
    assert plan.method == "colourful sampling" and plan.colours == (2, 8)
    assert plan.input_rows == rows and plan.kept_rows == rows // 2
    with pytest.raises(ConfigurationError, match="prepared graph"), \
            dtri.prepare(rmat_edges) as graph:
        graph.estimate(method="colours")


def test_colours_fall_back_to_wedges_on_the_whole_input_and_say_why(rmat_edges):
    with colours_only(4, 16):
        tight = dtri.count(rmat_edges, approx={"method": "colours", "error": 0.001, "seed": 2})
    assert tight.method in ("wedge sampling", "exact") and tight.colours is None
    assert "even at 4 colours" in tight.reason and "whole input" in tight.reason
    assert tight.wedges and tight.transitivity is not None
    assert tight.seconds["estimate-colours"] > 0  # the read that sampled is counted too
    karate = np.loadtxt("examples/karate.txt", dtype=np.int64)
    with colours_only(64, 64):
        small = dtri.count(karate, approx={"method": "colours", "seed": 0})
    assert small.exact and small.triangles == 45  # wedges counted it
    assert "saw no triangle" in small.reason and "whole input" in small.reason


@pytest.mark.parametrize("asked", [{"method": "colors"}, {"method": "colours", "samples": 10},
                                   {"method": "colours", "seconds": 1.0}, {"method": None}])
def test_bad_methods_are_refused(asked):
    with pytest.raises(ConfigurationError):
        Approx(**asked)


@pytest.mark.parametrize("config", [{"dtri.estimate-colours-min": 3},
                                    {"dtri.estimate-colours-max": 1},
                                    {"dtri.estimate-colours-min": 32,
                                     "dtri.estimate-colours-max": 16}])
def test_bad_colour_ranges_are_refused(config, rmat_edges):
    with dask.config.set(config), pytest.raises(ConfigurationError, match="colours"):
        dtri.count(rmat_edges, approx={"method": "colours"})


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dtri", "count", *args], capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("args", [["--approx", "--method", "colors"],
                                  ["--method", "colours"],
                                  ["--approx", "--method", "colours", "--samples", "10"],
                                  ["--approx", "--method", "colours", "--seconds", "1"]])
def test_the_command_line_refuses_bad_methods_in_one_line(args):
    run = run_cli(*args, "examples/karate.txt")
    assert run.returncode == 2, run.stderr
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("dtri: error:")


def test_the_command_line_explains_and_estimates_by_colours(tmp_path, rmat_edges):
    path = tmp_path / "g.txt"
    np.savetxt(path, rmat_edges, fmt="%d")
    plan = run_cli("--approx", "--explain", "--method", "colours", str(path))
    assert plan.returncode == 0, plan.stderr
    assert "colourful sampling (--method colours asked for)" in plan.stdout
    assert "4 - 64" in plan.stdout and "pilot          64 colours" in plan.stdout
    wedges = run_cli("--approx", "--explain", "--json", str(path))
    explained = json.loads(wedges.stdout)["estimate_plan"]
    assert explained["method"] == "wedge sampling" and "below" in explained["reason"]
    assert explained["wedges"] > 0 and explained["pilot_samples"] == min(65536,
                                                                         explained["wedges"])
    assert explained["input_rows"] >= len(rmat_edges) and explained["rows_estimated"]
    estimate = run_cli("--approx", "--method", "colours", "--error", "0.5", "--sample-seed",
                       "3", str(path))
    assert estimate.returncode == 0, estimate.stderr
    assert "colourful sampling" in estimate.stdout and "transitivity" not in \
        estimate.stdout.split("method")[0]
    done = json.loads(run_cli("--approx", "--method", "colours", "--error", "0.5",
                              "--sample-seed", "3", "--json", str(path)).stdout)
    assert done["method"] == "colourful sampling" and done["colours"] in (4, 8, 16, 32, 64)
    assert done["transitivity"] is None and done["seed"] == 3
    assert f"{done['triangles']:.0f}" in estimate.stdout


# ------------------------------------------------------------------------------ coverage

def coverage(edges: np.ndarray, truth: int, colours: int, seeds: range) -> int:
    """How many of the seeds' 95% intervals at ``colours`` colours cover ``truth``."""
    covered = 0
    with colours_only(colours, colours):
        for seed in seeds:
            result = dtri.count(edges, approx={"method": "colours", "error": 0.99,
                                               "seed": seed})
            assert result.method == "colourful sampling" and result.colours == colours
            low, high = result.triangles_interval
            covered += low <= truth <= high
    return covered


SNAP = {row["name"]: row for row in manifest_rows()}


@pytest.mark.slow
@pytest.mark.parametrize("name,colours", [("facebook_combined", 8), ("ca-HepTh", 4)])
def test_intervals_cover_the_published_count_over_100_seeds(shared_data, name, colours):
    """Seeds 0-99: a 95% interval misses about 5 times; 93 covered is the issue's bar."""
    row = SNAP[name]
    graph = shared_graph(shared_data / row["file"])
    edges = np.array(list(graph.edges), dtype=np.int64)
    assert coverage(edges, int(row["triangles"]), colours, range(100)) >= 93


@pytest.mark.slow
def test_intervals_cover_an_rmat_count_over_100_seeds():
    src, dst = generated("rmat:14", seed=1).maker("cpu").arrays((0, 16 << 14))
    edges = np.stack([src, dst], axis=1)
    truth = dtri.count_triangles(edges)
    assert coverage(edges, truth, 4, range(100)) >= 93
