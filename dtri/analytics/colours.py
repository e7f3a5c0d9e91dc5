"""Colourful sampling (Pagh & Tsourakakis 2012): the triangle count estimated from the input's
monochromatic edges, filtered as the input is read, so that the whole graph is never prepared;
and the planner's choice between it and wedge sampling (:mod:`dtri.analytics.estimate`).

Each vertex gets one of ``N`` colours from a seeded hash (:mod:`dtri.input.colours`), and the
edges whose two ends share a colour are kept. A triangle is monochromatic with chance
``1/N²``, so with ``T_m`` the triangles of the monochromatic graph ``T̂ = N² T_m`` is unbiased.
Two triangles that share an edge are both monochromatic with chance ``1/N³`` (four vertices
of one colour), two that share a vertex only with chance ``1/N⁴`` (independent), so

    Var T̂ = T (N² − 1) + 2 k (N − 1),   k = Σ_e C(t_e, 2)

(``k``: the pairs of triangles that share an edge, each pair sharing exactly one). One pass over
the monochromatic graph's edge supports ``t_e`` gives ``Σ t_e = 3 T_m`` and ``k_m = Σ C(t_e, 2)``,
with ``E[k_m] = k / N³``, so ``V̂ = T̂ (N² − 1) + 2 (N − 1) N³ k_m`` is unbiased for the
variance, and the interval is ``T̂ ± z √V̂``, clipped at 0.

How ``N`` is chosen is told in ``docs/guide.md`` ("Estimates with error bars"): the rows
monochromatic under the fewest colours are kept as the input is read once (the colourings
nest, so every finer one is a subset of those), and a pilot at the most colours predicts each
``N``'s relative half-width ``z √(T̂ (N² − 1) + 2 k̂ (N − 1)) / T̂``, ``k̂ = N³ k_m``. The
pilot's rows are part of the final sample (the colourings nest), not independent of it.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, replace
from typing import Any, NamedTuple

from dtri.analytics.edge import support_totals
from dtri.analytics.estimate import PILOT_SAMPLES, Approx, Estimate, estimate
from dtri.errors import ConfigurationError
from dtri.input.colours import STAGE, colour_key, coloured
from dtri.kernels.dispatch import array_module
from dtri.options import Options
from dtri.prepared.graph import prepare_graph
from dtri.runtime.opened import Runtime

MIN_EDGES_KEY = "dtri.estimate-colours-min-edges"
"""``dask.config`` key: input rows from which ``auto`` samples colours. Its default (2**25,
``dtri/dtri.yaml``) was measured on the 2-core CPU at ±1% and 95%, one-shot from the
generator: R-MAT 21 (2**25 rows) took 5.9 s by colours against 8.5-12.2 s by wedges, and
R-MAT 20 gained nothing."""


def colour_range() -> tuple[int, int]:
    """The fewest and most colours (``dtri.estimate-colours-min`` and
    ``dtri.estimate-colours-max``): powers of two, at least 2."""
    import dask

    low = int(dask.config.get("dtri.estimate-colours-min"))
    high = int(dask.config.get("dtri.estimate-colours-max"))
    for value in (low, high):
        if value < 2 or value & (value - 1):
            raise ConfigurationError(f"dtri.estimate-colours-min and -max must be powers of two "
                                     f"of at least 2, got {value}")
    if low > high:
        raise ConfigurationError(f"dtri.estimate-colours-min ({low}) is above "
                                 f"dtri.estimate-colours-max ({high})")
    return low, high


def colours_min_edges() -> int:
    """Input rows from which ``auto`` samples colours (``dtri.estimate-colours-min-edges``)."""
    import dask

    return int(dask.config.get(MIN_EDGES_KEY))


class MethodChoice(NamedTuple):
    """The planner's choice of method (``wedges`` or ``colours``), and one line on why."""

    method: str
    reason: str


def choose_method(approx: Approx, rows: int | None, estimated: bool) -> MethodChoice:
    """The method of an estimate of an input of ``rows`` rows (``None``: unknown before it is
    read; ``estimated``: a high estimate from text files' sizes), from the read plan: a
    method asked for; wedges for a fixed sample of wedges, a time budget or the average
    clustering, which colours do not estimate; else colours from :func:`colours_min_edges`
    rows."""
    if approx.method != "auto":
        return MethodChoice(approx.method, f"--method {approx.method} asked for")
    if approx.samples is not None:
        return MethodChoice("wedges", "auto: a fixed number of wedges asked for (--samples)")
    if approx.seconds is not None:
        return MethodChoice("wedges", "auto: a time budget of wedge sampling asked for "
                                      "(--seconds)")
    if rows is None:
        return MethodChoice("wedges", "auto: the input's rows are unknown before it is read "
                                      "(a Dask collection, or files only the workers see), so "
                                      "wedges")
    threshold = colours_min_edges()
    about = "about " if estimated else ""
    if rows < threshold:
        return MethodChoice("wedges", f"auto: {about}{rows:,} input rows, below the "
                                      f"{threshold:,} of {MIN_EDGES_KEY}, so wedges")
    if approx.average_clustering:
        return MethodChoice("wedges", f"auto: {about}{rows:,} input rows, but the average "
                                      "clustering asked for, which colours do not estimate "
                                      "(--no-clustering: the count alone), so wedges")
    return MethodChoice("colours", f"auto: {about}{rows:,} input rows, at least the "
                                   f"{threshold:,} of {MIN_EDGES_KEY}, and the count alone "
                                   "asked for, so colours")


# ------------------------------------------------------------------------------ the estimator

def support_moments(support: Any) -> tuple[int, int]:
    """``Σ t_e`` and ``Σ C(t_e, 2)`` of a partition's edge supports."""
    xp = array_module(support)
    t = support.astype(xp.int64)
    return int(t.sum()), int((t * (t - 1) // 2).sum())


class ColourSample(NamedTuple):
    """What a monochromatic graph of ``colours`` colours gave: its ``triangles`` (``T_m``),
    its ``pairs`` of triangles sharing an edge (``k_m``) and its ``edges``."""

    colours: int
    triangles: int
    pairs: int
    edges: int

    @property
    def estimate(self) -> float:
        """``T̂ = N² T_m``."""
        return float(self.colours ** 2 * self.triangles)

    @property
    def pairs_estimate(self) -> float:
        """``k̂ = N³ k_m``, unbiased for the pairs of triangles sharing an edge."""
        return float(self.colours ** 3 * self.pairs)

    @property
    def variance(self) -> float:
        """``V̂ = T̂ (N² − 1) + 2 (N − 1) N³ k_m``, unbiased for ``Var T̂``."""
        return colour_variance(self.estimate, self.pairs_estimate, self.colours)

    def interval(self, z: float) -> tuple[float, float]:
        """``T̂ ± z √V̂``, clipped at 0."""
        half = z * math.sqrt(self.variance)
        return max(0.0, self.estimate - half), self.estimate + half


def colour_variance(triangles: float, pairs: float, colours: int) -> float:
    """``Var T̂`` at ``colours`` colours of a graph of ``triangles`` triangles and ``pairs``
    pairs of triangles sharing an edge: ``T (N² − 1) + 2 k (N − 1)``."""
    return triangles * (colours ** 2 - 1) + 2.0 * pairs * (colours - 1)


def predicted_error(pilot: ColourSample, colours: int, z: float) -> float:
    """The relative half-width at ``colours`` colours that the pilot's ``T̂`` and ``k̂``
    predict (infinite when the pilot saw no triangle)."""
    if not pilot.triangles:
        return math.inf
    triangles = pilot.estimate
    return z * math.sqrt(colour_variance(triangles, pilot.pairs_estimate, colours)) / triangles


def chosen_colours(pilot: ColourSample, approx: Approx, low: int) -> int | None:
    """The most colours, a power of two from the pilot's down to ``low``, predicted within the
    asked error; ``None`` if none is."""
    colours = pilot.colours
    while colours >= low:
        if predicted_error(pilot, colours, approx.z) <= approx.error:
            return colours
        colours //= 2
    return None


def sampled(kept: Any, key: int, colours: int, runtime: Runtime, options: Options,
            seconds: dict[str, float]) -> ColourSample:
    """The monochromatic graph of ``colours`` colours of the kept rows, prepared and counted
    with its edge supports (the graph released after), its stages' seconds added to
    ``seconds``."""
    subset = keep(kept, key, colours, runtime, options, seconds)
    with prepare_graph(subset, runtime, options) as graph:
        started = time.perf_counter()
        tasks = graph.tasks
        moments = [tasks.task("estimate", support_moments, support,
                              key=("moments", colours, p), on_host=True, at=tasks.owner(p))
                   for p, support in enumerate(support_totals(graph))]
        (values,) = graph.timer().compute("estimate", moments)
        graph_seconds = {**{stage: value for stage, value in graph.seconds.items()
                            if stage != "prepare_total"},
                         "estimate": time.perf_counter() - started}
        edges = graph.edges
    add_seconds(seconds, graph_seconds)
    incident = sum(v[0] for v in values)
    if incident % 3:
        raise RuntimeError(f"internal error: the edge supports sum to {incident}, not a "
                           "multiple of 3; please report this with the input")
    return ColourSample(colours, incident // 3, sum(v[1] for v in values), edges)


def add_seconds(seconds: dict[str, float], more: dict[str, float]) -> None:
    """Add ``more``'s stages to ``seconds`` (a stage run twice counts both)."""
    for stage, value in more.items():
        seconds[stage] = round(seconds.get(stage, 0.0) + value, 6)


def keep(source: Any, key: int, colours: int, runtime: Runtime, options: Options,
         seconds: dict[str, float]) -> Any:
    """``source`` filtered to its rows monochromatic under ``colours``, kept: persisted on the
    workers (a frame), or computed in this process (a list), so that the rows kept under the
    fewest colours are read once for the pilot and the estimate, and the filter's time is
    the ``estimate-colours`` stage's."""
    timer = runtime.timer(options.progress)
    if isinstance(source, list):
        kept: Any = list(timer.compute(STAGE, *coloured(source, key, colours)))
    else:
        (kept,) = timer.submit(STAGE, coloured(source, key, colours))
        timer.settle()
    add_seconds(seconds, timer.seconds)
    return kept


def colour_estimate(source: Any, runtime: Runtime, options: Options, approx: Approx,
                    why: str) -> Estimate:
    """The colourful-sampling estimate of the input the read stage gives as ``source`` (see the
    module docstring), or, where colours would not reach the asked error, the wedge
    sampling of the whole input prepared; ``why``: the method's choice."""
    started = time.perf_counter()
    seed = approx.seed_or_new()
    low, high = colour_range()
    key = colour_key(seed)
    seconds: dict[str, float] = {}
    kept = keep(source, key, low, runtime, options, seconds)
    pilot = sampled(kept, key, high, runtime, options, seconds)
    colours = chosen_colours(pilot, approx, low)
    seen = f"a pilot at {high} colours ({pilot.triangles} triangles on {pilot.edges} edges)"
    if colours is None:
        del kept
        wanted = f"±{approx.error:g}"
        short = (f"{seen} saw no triangle" if not pilot.triangles else
                 f"{seen} predicts ±{predicted_error(pilot, low, approx.z):.3g} even at {low} "
                 f"colours, above {wanted}")
        with prepare_graph(source, runtime, options) as graph:
            result = estimate(graph, replace(approx, seed=seed))
        add_seconds(seconds, {k: v for k, v in result.seconds.items() if k != "total"})
        seconds["total"] = round(time.perf_counter() - started, 6)
        return replace(result, seconds=seconds, reason=f"{why}; {short}: the whole input "
                                                       f"prepared instead; {result.reason}")
    final = pilot if colours == high else sampled(kept, key, colours, runtime, options,
                                                   seconds)
    del kept
    seconds["total"] = round(time.perf_counter() - started, 6)
    chosen = (f"{seen} is within ±{approx.error:g}: its estimate" if colours == high else
              f"{seen} predicts ±{predicted_error(pilot, colours, approx.z):.3g} at {colours} "
              f"colours, the most within ±{approx.error:g}")
    return Estimate(
        triangles=final.estimate, triangles_interval=final.interval(approx.z),
        transitivity=None, transitivity_interval=None, average_clustering=None,
        average_clustering_interval=None, exact=False, method="colourful sampling",
        reason=f"{why}; {chosen}; transitivity and average clustering are not estimated by "
               "colours (--method wedges estimates them)",
        samples=final.edges, pilot_samples=pilot.edges, closed=final.triangles,
        vertex_samples=0, confidence=approx.confidence, error=approx.error,
        seconds_budget=None, seed=seed, wedges=None, triples=None, vertices=None,
        edges=None, backend=runtime.backend,
        seconds=seconds, colours=colours)


# ------------------------------------------------------------------------------ the entry point

@dataclass
class EstimatePlan:
    """What ``dtri count --approx --explain`` shows: the method the planner chose and why,
    and what it would sample, before anything is sampled or counted."""

    method: str
    """``colourful sampling`` or ``wedge sampling``."""
    reason: str
    """Why that method (the input's rows against ``dtri.estimate-colours-min-edges``)."""
    input_rows: int | None
    """The input's rows from the read plan (``None``: unknown before it is read)."""
    rows_estimated: bool
    """Whether :attr:`input_rows` is a high estimate (text files, from their sizes)."""
    colours_min_edges: int
    """The rows from which ``auto`` samples colours."""
    error: float
    confidence: float
    colours: tuple[int, int] | None = None
    """Colours: the fewest and most colours tried (powers of two between)."""
    kept_rows: int | None = None
    """Colours: about the input rows kept on the workers (monochromatic under the fewest)."""
    pilot_rows: int | None = None
    """Colours: about the input rows of the pilot (monochromatic under the most colours)."""
    wedges: int | None = None
    """Wedges: the prepared graph's oriented wedges."""
    pilot_samples: int | None = None
    """Wedges: the pilot's wedges that size the sample (0: a fixed sample)."""
    samples: int | None = None
    """Wedges: the fixed sample asked for (``None``: sized by the pilot)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def estimate_input(source: Any, runtime: Runtime, options: Options, approx: Approx,
                   rows: int | None, estimated: bool, explain: bool = False,
                   ) -> Estimate | EstimatePlan:
    """The estimate of an input not yet prepared (``source``: what the read stage gives,
    ``rows``: its rows from the read plan): by the method :func:`choose_method` picks;
    ``explain``: the plan only (for wedges the graph is prepared, to give its wedges)."""
    choice = choose_method(approx, rows, estimated)
    if explain:
        plan = EstimatePlan(
            method="colourful sampling" if choice.method == "colours" else "wedge sampling",
            reason=choice.reason, input_rows=rows, rows_estimated=estimated,
            colours_min_edges=colours_min_edges(), error=approx.error,
            confidence=approx.confidence)
        if choice.method == "colours":
            low, high = colour_range()
            return replace(plan, colours=(low, high),
                           kept_rows=None if rows is None else rows // low,
                           pilot_rows=None if rows is None else rows // high)
        with prepare_graph(source, runtime, options) as graph:
            wedges = graph.wedges
        return replace(plan, wedges=wedges, samples=approx.samples,
                       pilot_samples=0 if approx.samples else min(PILOT_SAMPLES, wedges))
    if choice.method == "colours":
        return colour_estimate(source, runtime, options, approx, choice.reason)
    with prepare_graph(source, runtime, options) as graph:
        result = estimate(graph, approx)
    return replace(result, reason=f"{choice.reason}; {result.reason}")
