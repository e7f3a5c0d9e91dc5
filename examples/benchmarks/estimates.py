"""Estimates with error bars (issue 31): how often the intervals cover the exact values, and
what an estimate costs against the exact count in the same run.

    python examples/benchmarks/estimates.py coverage --out F.jsonl --seeds 100 \
        --samples 20000 ../shared/data/*.txt.gz rmat:18
    python examples/benchmarks/estimates.py speed --out F.jsonl --repeat 5 rmat:18

* ``coverage``: each graph prepared once; for seeds ``0 .. --seeds - 1``,
  ``PreparedGraph.estimate`` at 95%: with ``--error`` (default 0.01; pilot and sample, the
  user's path) on generated graphs, and with ``--samples`` fixed wedges (at most an eighth
  of the graph's) on the files (the shared graphs are small enough that 1% would be counted
  exactly, which covers trivially).
  ``seconds`` is the median estimate; ``triangles`` the exact count (NetworkX's published
  values are checked by the shared-data tests); ``detail`` gives how many of the intervals
  covered the exact triangles, transitivity and average clustering, and the estimates'
  spread.
* ``speed``: on one prepared graph, ``count_triangles`` (its cache cleared each time) and
  ``estimate(error=0.01)`` alternated ``--repeat`` times; then the one-shot
  ``dtri.count(edges)`` against ``dtri.count(edges, approx=...)`` with each method forced
  (wedge sampling prepares the whole graph, colourful sampling only its sample), a line
  each, ``detail.auto_picks`` the planner's choice. ``seconds`` is the estimate's median,
  ``peers["exact"]`` the count's.
  ``--memory-budget`` raises the task budget, so that a graph beyond a quarter of the GPU
  runs in this process, not on a one-GPU cluster (``detail.placement`` says which);
  ``--no-clustering`` estimates the count and transitivity only.

Every line has the one schema of ``schema.py``: ``benchmark``, ``graph``, ``device``,
``backend``, ``commit``, ``command``, ``seconds``, ``stage_seconds``, ``triangles``,
``peers``, ``detail``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

from schema import emit, record


def graph_input(spec: str) -> tuple[str, Any]:
    """A name and the edges of ``rmat:SCALE`` (generated) or a file."""
    if spec.startswith(("rmat:", "gnm:")):
        from dtri.input.generate import generated

        return spec, generated(spec, seed=0)
    return Path(spec).name.split(".")[0], spec


def coverage(specs: list[str], seeds: int, first_seed: int, samples: int, error: float,
             backend: str, out: str | None) -> None:
    import dtri

    for spec in specs:
        name, edges = graph_input(spec)
        fixed = not spec.startswith(("rmat:", "gnm:"))
        with dtri.prepare(edges, backend=backend) as graph:
            triangles = graph.count_triangles()
            transitivity, clustering = graph.transitivity(), graph.average_clustering()
            covered = {"triangles": 0, "transitivity": 0, "average_clustering": 0}
            values, times, drawn, exact = [], [], [], 0
            draws = min(samples, graph.wedges // 8)  # below the exact fallback's share
            asked = f"samples={draws}" if fixed else f"error={error:g}"
            for seed in range(first_seed, first_seed + seeds):
                started = time.perf_counter()
                e = (graph.estimate(samples=draws, seed=seed) if fixed
                     else graph.estimate(error=error, seed=seed))
                times.append(time.perf_counter() - started)
                exact += e.exact
                values.append(e.triangles)
                drawn.append(e.samples)
                for what, truth in (("triangles", triangles), ("transitivity", transitivity),
                                    ("average_clustering", clustering)):
                    low, high = getattr(e, f"{what}_interval")
                    covered[what] += low <= truth <= high
            emit(record(
                benchmark="estimate-coverage", graph=name, backend=graph.backend,
                command=(f"PreparedGraph.estimate({asked}, seed=s) for s in "
                         f"range({first_seed}, {first_seed + seeds}), confidence 0.95"),
                seconds=round(statistics.median(times), 6), triangles=triangles,
                detail={"seeds": seeds, "covered": covered, "exact_runs": exact,
                        "samples_median": statistics.median(drawn),
                        "relative_bias": statistics.fmean(values) / triangles - 1
                        if triangles else None,
                        "relative_spread": statistics.pstdev(values) / triangles
                        if triangles else None,
                        "transitivity": transitivity, "average_clustering": clustering,
                        "wedges": graph.wedges, "edges": graph.edges}), out)


def speed(specs: list[str], repeat: int, error: float, backend: str, budget: str | None,
          clustering: bool, out: str | None) -> None:
    import dtri

    options = {"backend": backend, **({"memory_budget": budget} if budget else {})}
    for spec in specs:
        name, edges = graph_input(spec)
        with dtri.prepare(edges, **options) as graph:
            graph.count_triangles()  # load what the first call loads, in both
            graph.estimate(error=error, seed=0, average_clustering=clustering)
            exact_times, estimate_times, last = [], [], None
            for seed in range(repeat):
                graph.cache.pop("count", None)
                started = time.perf_counter()
                triangles = graph.count_triangles()
                exact_times.append(time.perf_counter() - started)
                started = time.perf_counter()
                last = graph.estimate(error=error, seed=seed + 1,
                                      average_clustering=clustering)
                estimate_times.append(time.perf_counter() - started)
            exact_s, estimate_s = statistics.median(exact_times), statistics.median(estimate_times)
            emit(record(
                benchmark="estimate-speed", graph=name, backend=graph.backend,
                command=f"PreparedGraph.estimate(error={error:g}"
                        f"{'' if clustering else ', average_clustering=False'}) against "
                        "count_triangles() on one prepared graph, alternated",
                seconds=round(estimate_s, 6), stage_seconds=last.seconds, triangles=triangles,
                peers={"exact": {"seconds": round(exact_s, 6), "triangles": triangles,
                                 "times": [round(t, 6) for t in exact_times]}},
                detail={"ratio": round(estimate_s / exact_s, 4), "repeat": repeat,
                        "times": [round(t, 6) for t in estimate_times],
                        "estimate": last.triangles, "interval": last.triangles_interval,
                        "relative_error": last.relative_error, "samples": last.samples,
                        "exact": last.exact, "wedges": graph.wedges,
                        "placement": graph.runtime.reason, "memory_budget": budget,
                        "average_clustering": clustering,
                        "prepare_seconds": graph.seconds}), out)
        asked = {"error": error, "seed": 1, "average_clustering": clustering}
        times = []
        for _ in range(max(1, repeat // 2)):
            started = time.perf_counter()
            exact_result = dtri.count(edges, **options)
            times.append(time.perf_counter() - started)
        exact_s = statistics.median(times)
        auto = dtri.count(edges, approx={**asked, "method": "auto"}, explain=True, **options)
        for method in ("wedges", "colours"):  # the planner's choice forced, each in turn
            approx = {**asked, "method": method}
            times = []
            for _ in range(max(1, repeat // 2)):
                started = time.perf_counter()
                result = dtri.count(edges, approx=approx, **options)
                times.append(time.perf_counter() - started)
            approx_s = statistics.median(times)
            emit(record(
                benchmark="estimate-speed-one-shot", graph=name, backend=exact_result.backend,
                command=f"dtri.count(edges, approx={approx}) against dtri.count(edges), each "
                        "from the input",
                seconds=round(approx_s, 6), stage_seconds=result.seconds,
                triangles=exact_result.triangles,
                peers={"exact": {"seconds": round(exact_s, 6),
                                 "triangles": exact_result.triangles,
                                 "stage_seconds": exact_result.seconds}},
                detail={"ratio": round(approx_s / exact_s, 4), "method": result.method,
                        "reason": result.reason, "colours": result.colours,
                        "estimate": result.triangles, "interval": result.triangles_interval,
                        "covers": result.triangles_interval[0] <= exact_result.triangles
                        <= result.triangles_interval[1],
                        "relative_error": result.relative_error, "samples": result.samples,
                        "exact": result.exact, "times": [round(t, 6) for t in times],
                        "auto_picks": auto.method}), out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    for name in ("coverage", "speed"):
        p = sub.add_parser(name)
        p.add_argument("graphs", nargs="+", help="files, or rmat:SCALE")
        p.add_argument("--out")
        p.add_argument("--backend", default="cpu", choices=("cpu", "gpu"))
        p.add_argument("--error", type=float, default=0.01)
        if name == "coverage":
            p.add_argument("--seeds", type=int, default=100)
            p.add_argument("--first-seed", type=int, default=0)
            p.add_argument("--samples", type=int, default=20_000)
        else:
            p.add_argument("--repeat", type=int, default=5)
            p.add_argument("--memory-budget", help="e.g. 40GiB: a graph within it runs in "
                           "this process (a quarter of the device by default)")
            p.add_argument("--no-clustering", dest="clustering", action="store_false",
                           help="estimate the count and transitivity only")
    args = parser.parse_args()
    if args.what == "coverage":
        coverage(args.graphs, args.seeds, args.first_seed, args.samples, args.error,
                 args.backend, args.out)
    else:
        speed(args.graphs, args.repeat, args.error, args.backend, args.memory_budget,
              args.clustering, args.out)


if __name__ == "__main__":
    main()
