"""Estimates with error bars: the triangle count, transitivity and average clustering from a
sample of the prepared graph's oriented wedges (Seshadhri, Pinar & Kolda's wedge sampling, on
dtri's oriented wedges). ``docs/guide.md`` ("Estimates with error bars") tells the method at
length, with its measured coverage.

Every triangle is exactly one closed oriented wedge (:mod:`dtri.kernels.sampling`), so for
``k`` wedges drawn from the ``W`` of the oriented graph, of which ``X`` are closed, ``X / k``
estimates ``p = triangles / W`` without bias. The draws are stratified (one in each of ``k``
equal strata of the wedges' numbering), so the variance of ``X`` is at most the binomial
``k p (1 - p)`` that the Wilson intervals assume: they cover at least as often as their
confidence says. Transitivity is ``3 triangles / triples`` (``Σ C(d, 2)``, exact), so its
interval is the count's, scaled; the average clustering, NetworkX's mean over all ``n``
vertices, is ``(n2 / n) q``, ``q`` the closed share of pairs of neighbours drawn at vertices
drawn uniformly among the ``n2`` of degree 2 or more (NetworKit's;
:func:`dtri.kernels.sampling.incident`), a binomial proportion too.

A pilot of :data:`PILOT_SAMPLES` wedges sizes the sample from the asked error (with the
pilot's lower bound of ``p``), and a sample independent of it gives the estimate; where that
would be a large share of the wedges, the exact analytics run instead. A fixed sample and a
time budget draw one sequence of pieces (:func:`sample_pieces`); a time budget
(:func:`first_round`) draws as many whole chunks as the clock predicts, never depending on
what was drawn, so its intervals are those of a fixed sample of that size, and ``samples``
with the same ``seed`` repeats it exactly.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

import numpy as np

from dtri.analytics import vertex
from dtri.analytics.count import count_triangles_of
from dtri.errors import ConfigurationError
from dtri.kernels.dispatch import array_module
from dtri.kernels.sampling import (
    closed_counts,
    incident,
    neighbour_pairs,
    sample_vertices,
    sample_wedges,
    seeds,
)
from dtri.options import Backend

PILOT_SAMPLES = 1 << 16
"""Wedges drawn to size the sample when only an error and a confidence are given."""
SPECULATIVE_CHUNKS = 8
"""Chunks of the sample drawn with the pilot, before it has sized the sample: one round of
tasks instead of two when the pilot asks for no more (a round on a cluster costs tens of
milliseconds whatever it draws)."""


def chunk_wedges(backend: Backend) -> int:
    """Wedges of one chunk of a sized sample: 32,768 on the GPU, where drawing them costs
    little, 8,192 on the CPU."""
    return 1 << 15 if backend.on_gpu else 1 << 13


def clustering_vertices(backend: Backend) -> int:
    """Vertices drawn for the average clustering (``dtri.estimate-clustering-vertices``;
    where it is null, 65,536 on the GPU, 16,384 on the CPU, or the wedges asked for if fewer). Each
    brings its out-list and the edges that end at it, so they cost more than wedges; the
    interval says what precision they give (about ±2% of R-MAT 18's 0.134 at 65,536)."""
    import dask

    configured = dask.config.get("dtri.estimate-clustering-vertices")
    return int(configured) if configured else (1 << 16 if backend.on_gpu else 1 << 14)


def round_wedges() -> int:
    """The most wedges one round of tasks draws (``dtri.estimate-round-wedges``; 16,777,216 by
    default, about 2 GB of transient arrays over the partitions): a long time budget, or a large
    fixed sample, is drawn in several rounds, with the same wedges."""
    import dask

    return int(dask.config.get("dtri.estimate-round-wedges"))


ROUND_GROWTH = 4
"""A time budget's round draws at most this many times the wedges of the round before, whose
cost per wedge predicts its own: larger arrays cost more per wedge (caches), so a prediction
from a much smaller round would pass the deadline."""

if TYPE_CHECKING:
    from dtri.prepared.graph import GraphData

METHODS = ("auto", "wedges", "colours")
"""What :attr:`Approx.method` may ask for: ``auto`` (the planner's choice,
:func:`dtri.analytics.colours.choose_method`), wedge sampling, or colourful sampling
(:mod:`dtri.analytics.colours`)."""

EXACT_SHARE = 0.25
"""A sample of at least this share of the graph's oriented wedges is not worth drawing: the
exact count checks every wedge once, with no repeats, in about the same time."""


@dataclass(frozen=True)
class Approx:
    """What an estimate is asked for: a relative ``error`` (the interval's half-width over
    the estimate) at a ``confidence``, a fixed number of ``samples`` (wedges), or a time
    budget of ``seconds`` (wall time of the estimate, the preparation not counted: as many
    wedges as it allows, at least a first round); ``seed`` makes it reproducible (default: a
    new one, reported in the result, which with the ``samples`` drawn repeats a time budget's);
    ``average_clustering=False`` leaves the average clustering out, and with it the scan of
    every edge that its vertex sample needs. ``method``: ``wedges`` (wedge sampling of the
    prepared graph), ``colours`` (colourful sampling as the input is read, which estimates
    the count only) or ``auto`` (colours for the count alone, without the average clustering,
    of an input of at least ``dtri.estimate-colours-min-edges`` rows; wedges otherwise and
    for ``samples`` or ``seconds``)."""

    error: float = 0.01
    confidence: float = 0.95
    samples: int | None = None
    seed: int | None = None
    average_clustering: bool = True
    seconds: float | None = None
    method: str = "auto"

    def __post_init__(self) -> None:
        for name in ("error", "confidence"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not 0.0 < value < 1.0:
                raise ConfigurationError(f"--{name} must be between 0 and 1 (exclusive), got "
                                         f"{value!r}")
        if self.samples is not None and (isinstance(self.samples, bool) or not isinstance(
                self.samples, int) or self.samples < 1):
            raise ConfigurationError(f"--samples must be a positive integer, got "
                                     f"{self.samples!r}")
        if self.seconds is not None:
            if isinstance(self.seconds, bool) or not isinstance(self.seconds, (int, float)) \
                    or not 0.0 < self.seconds < math.inf:
                raise ConfigurationError(f"--seconds must be a positive number of seconds, got "
                                         f"{self.seconds!r}")
            if self.samples is not None:
                raise ConfigurationError("give --seconds or --samples, not both")
            if self.error != Approx.error:
                raise ConfigurationError("give --seconds or --error, not both (the time budget "
                                         "decides the sample's size)")
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(
                self.seed, int) or self.seed < 0):
            raise ConfigurationError(f"--sample-seed must be a non-negative integer, got "
                                     f"{self.seed!r}")
        if self.method not in METHODS:
            raise ConfigurationError(f"--method must be one of {', '.join(METHODS)}, got "
                                     f"{self.method!r}")
        if self.method == "colours" and self.samples is not None:
            raise ConfigurationError("--samples is a number of wedges: it goes with --method "
                                     "wedges or auto, not colours")
        if self.method == "colours" and self.seconds is not None:
            raise ConfigurationError("--seconds is a time budget of wedge sampling: it goes "
                                     "with --method wedges or auto, not colours")

    @classmethod
    def of(cls, value: Approx | dict | bool) -> Approx:
        """``True`` (the defaults), a dict of fields, or an :class:`Approx`."""
        if isinstance(value, Approx):
            return value
        if value is True:
            return cls()
        if isinstance(value, dict):
            return cls(**value)
        raise ConfigurationError(f"approx must be True, a dict or dtri.Approx, got {value!r}")

    def seed_or_new(self) -> int:
        """The seed asked for, or a new one (reported in the result, to repeat it)."""
        return self.seed if self.seed is not None else int(
            np.random.SeedSequence().generate_state(1)[0])

    @property
    def z(self) -> float:
        """The normal quantile of the two-sided interval."""
        return NormalDist().inv_cdf((1.0 + self.confidence) / 2.0)


@dataclass
class Estimate:
    """An estimate with its intervals (``exact``: counted, the intervals are the values).
    Colourful sampling estimates the count only: what it leaves unknown is ``None``."""

    triangles: float
    """The estimated triangle count (wedges: ``W × closed / samples``; colours:
    ``N² × closed``)."""
    triangles_interval: tuple[float, float]
    """Its interval at :attr:`confidence` (wedges: Wilson's, scaled by the wedges; colours:
    ``± z √V̂``, clipped at 0: :mod:`dtri.analytics.colours`)."""
    transitivity: float | None
    """``3 × triangles / triples`` (``None``: colourful sampling)."""
    transitivity_interval: tuple[float, float] | None
    """The count's interval, scaled the same way."""
    average_clustering: float | None
    """NetworkX's average clustering (zeros included), from the vertex sample (``None``: not
    asked for, or colourful sampling)."""
    average_clustering_interval: tuple[float, float] | None
    """Its interval at :attr:`confidence`."""
    exact: bool
    """Whether the graph was counted instead (the intervals are then the values)."""
    method: str
    """``wedge sampling``, ``colourful sampling`` or ``exact``."""
    reason: str
    """One line on why that method and that many samples (and, for colours, that many
    colours)."""
    samples: int
    """Wedge sampling: the wedges drawn for the estimate (a sized sample's pilot not included;
    0 when exact). Colourful sampling: the edges of the monochromatic graph it counted (those
    of the input's simple graph whose ends have the same of :attr:`colours` colours)."""
    pilot_samples: int
    """Wedge sampling: the wedges of the pilot that sized the sample (0 for a fixed sample or
    a time budget). Colourful sampling: the edges of the pilot's monochromatic graph (the most
    colours; it is the estimate itself when :attr:`colours` is that many)."""
    closed: int
    """Wedge sampling: the closed wedges of the sample. Colourful sampling: the triangles of
    the monochromatic graph."""
    vertex_samples: int
    """Vertices drawn for the average clustering (0 when exact)."""
    confidence: float
    """The intervals' confidence."""
    error: float | None
    """The relative error asked for (``None``: a fixed sample or a time budget)."""
    seconds_budget: float | None
    """The time budget asked for, in seconds of the estimate's own wall time (``None``: none;
    :attr:`samples` and :attr:`seed` repeat the estimate without it)."""
    seed: int
    """The seed that repeats this estimate on the same partitions."""
    wedges: int | None
    """The oriented graph's wedges (what was sampled from; ``None``: colourful sampling,
    which prepares no whole graph)."""
    triples: int | None
    """Connected triples ``Σ C(d, 2)`` (transitivity's denominator; ``None``: colours)."""
    vertices: int | None
    """The graph's vertices (the average's denominator; ``None``: colours)."""
    edges: int | None
    """The graph's edges (``None``: colours)."""
    backend: Backend
    seconds: dict[str, float] = field(default_factory=dict)
    """As a count reports them: the preparation's stages, the ``estimate`` (its wall time)
    and the ``total`` of both (:meth:`GraphData.seconds_with`); for colours, the colour
    filter's read (``estimate-colours``), the preparations of the monochromatic graphs and
    their counting (``estimate``)."""
    colours: int | None = None
    """Colourful sampling: the colours ``N`` of the estimate (``None``: other methods)."""

    @property
    def relative_error(self) -> float:
        """The triangle interval's half-width over the estimate (0 when exact)."""
        low, high = self.triangles_interval
        return (high - low) / 2 / self.triangles if self.triangles else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The fields and :attr:`relative_error`, for JSON."""
        return {**asdict(self), "relative_error": self.relative_error}


def wilson(hits: int, draws: int, z: float) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion."""
    if draws == 0:
        return 0.0, 1.0
    p = hits / draws
    denominator = 1.0 + z * z / draws
    centre = (p + z * z / (2 * draws)) / denominator
    half = z * math.sqrt(p * (1 - p) / draws + z * z / (4 * draws * draws)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def needed_samples(hits: int, draws: int, approx: Approx) -> float:
    """Wedges for the asked relative error of the triangle count (and so of transitivity) at
    the asked confidence, from a pilot of ``draws`` wedges of which ``hits`` were closed,
    with the pilot's lower bound of ``p`` (so rather too many than too few); infinite when
    the pilot saw no triangle. The average clustering has its own sample of vertices
    (:func:`clustering_vertices`); its interval is what that sample gives."""
    z, error = approx.z, approx.error
    low, _ = wilson(hits, draws, z)
    return math.inf if hits == 0 or low == 0.0 else z * z * (1.0 - low) / (low * error * error)


def estimate(graph: GraphData, approx: Approx, allow_exact: bool = True) -> Estimate:
    """The estimate of :class:`Approx` on a prepared graph (see the module docstring);
    ``allow_exact=False``: sample the asked wedges even where counting would cost no more
    (the quick forecast of ``--explain``, which counts nothing)."""
    from dtri.analytics.vertex import present_vertices

    started = time.perf_counter()
    seed = approx.seed_or_new()
    wedges = graph.wedges
    fixed = approx.samples is not None or approx.seconds is not None
    base: dict[str, Any] = {
        "confidence": approx.confidence, "error": None if fixed else approx.error,
        "seconds_budget": approx.seconds, "seed": seed, "wedges": wedges,
        "triples": triples(graph), "vertices": present_vertices(graph), "edges": graph.edges,
        "backend": graph.backend}
    pilot_draws, drawn = 0, None
    if wedges == 0:
        wanted, why = math.inf, "the graph has no wedges, so no triangle"
    elif approx.seconds is not None:
        wanted, why, drawn = timed_sample(graph, approx, seed, started, allow_exact)
    elif approx.samples is not None:
        wanted, why = float(approx.samples), f"{approx.samples} wedges asked for"
    else:
        pilot_draws = min(PILOT_SAMPLES, wedges)
        chunk = chunk_wedges(graph.backend)
        # the pilot, SPECULATIVE_CHUNKS chunks of the count's sample and the clustering's
        # sample in one round of tasks; the chunks the pilot asks for are the count's sample
        # (their number depends on the pilot only, their wedges not at all), and more are
        # drawn when it asks for more
        (closed, *chunks), clustering = draw(
            graph, [pilot_draws] + [chunk] * SPECULATIVE_CHUNKS, seed, 0,
            clustering_vertices(graph.backend) if approx.average_clustering else 0)
        wanted = needed_samples(closed, pilot_draws, approx)
        why = ("the pilot sample saw no triangle" if math.isinf(wanted) else
               f"{math.ceil(wanted)} wedges for ±{approx.error:g} at {approx.confidence:g} "
               f"confidence (sized by a pilot of {pilot_draws})")
    if wedges == 0 or (allow_exact and wanted >= EXACT_SHARE * wedges):
        if wedges:
            why += f": at least {EXACT_SHARE:g} of the graph's {wedges} wedges, so counted exactly"
        return exact_estimate(graph, base, pilot_draws, started, why,
                              approx.average_clustering)
    if drawn is not None:
        samples, closed, clustering = drawn
    elif pilot_draws:
        used = math.ceil(wanted / chunk)
        if used > len(chunks):
            more, _ = draw(graph, [chunk] * (used - len(chunks)), seed, 1 + len(chunks), 0)
            chunks += more
        closed, samples = sum(chunks[:used]), used * chunk
    else:  # a fixed sample
        assert approx.samples is not None
        samples = approx.samples
        closed, clustering = draw_pieces(
            graph, sample_pieces(samples, chunk_wedges(graph.backend)), seed,
            min(samples, clustering_vertices(graph.backend)) if approx.average_clustering else 0)
    z = approx.z
    low, high = wilson(closed, samples, z)
    t = base["triples"]
    eligible, pairs_closed, pairs = clustering
    share = eligible / base["vertices"] if base["vertices"] else 0.0
    pair_low, pair_high = wilson(pairs_closed, pairs, z)
    triangles = closed / samples * wedges
    return Estimate(
        triangles=triangles, triangles_interval=(low * wedges, high * wedges),
        transitivity=3 * triangles / t if t else 0.0,
        transitivity_interval=(3 * low * wedges / t, 3 * high * wedges / t) if t
        else (0.0, 0.0),
        average_clustering=(share * pairs_closed / pairs if pairs else 0.0)
        if approx.average_clustering else None,
        average_clustering_interval=((share * pair_low, share * pair_high) if pairs
                                     else (0.0, 0.0)) if approx.average_clustering else None,
        exact=False, method="wedge sampling", reason=why, samples=samples,
        pilot_samples=pilot_draws, closed=closed, vertex_samples=pairs,
        seconds=graph.seconds_with(
            {"estimate": time.perf_counter() - started}, started), **base)


def sample_pieces(samples: int, chunk: int) -> list[int]:
    """The pieces a fixed sample of ``samples`` wedges is drawn as, piece ``i`` from phase
    ``i``'s streams: :data:`PILOT_SAMPLES`, then chunks of ``chunk``, the last possibly partial
    (a time budget draws the same pieces, whole, so the two agree)."""
    first = min(samples, PILOT_SAMPLES)
    whole, rest = divmod(samples - first, chunk)
    return [first] + [chunk] * whole + ([rest] if rest else [])


def first_round(chunk: int, vertex_count: int) -> int:
    """The wedges of a time budget's first round: the pilot's and :data:`SPECULATIVE_CHUNKS`
    chunks (what the sized path's first round draws), or more chunks to reach the clustering's
    ``vertex_count`` (a fixed sample draws at most as many vertices as wedges)."""
    chunks = max(SPECULATIVE_CHUNKS, math.ceil((vertex_count - PILOT_SAMPLES) / chunk))
    return PILOT_SAMPLES + chunks * chunk


def timed_sample(graph: GraphData, approx: Approx, seed: int, started: float, allow_exact: bool
                 ) -> tuple[float, str, tuple[int, int, tuple[int, int, int]] | None]:
    """The sample of a time budget (see the module docstring): ``(wedges, why, drawn)``,
    ``drawn`` the ``(samples, closed, clustering)`` of :func:`draw`, or ``None`` with the wedges
    the budget would allow when they are at least :data:`EXACT_SHARE` of the graph's (then it
    is counted). The first round is always drawn; each later one is sized to end by the
    deadline at the cost per wedge of the round before, and at most :data:`ROUND_GROWTH`
    times its size, so the budget is passed by about one round's fixed cost at most."""
    assert approx.seconds is not None
    deadline = started + approx.seconds
    chunk = chunk_wedges(graph.backend)
    vertex_count = clustering_vertices(graph.backend) if approx.average_clustering else 0
    samples = first_round(chunk, vertex_count)
    budget = f"a time budget of {approx.seconds:g} s"
    if allow_exact and samples >= EXACT_SHARE * graph.wedges:
        return float(samples), f"{budget} draws at least {samples:,} wedges", None
    pieces = sample_pieces(samples, chunk)
    round_started = time.perf_counter()
    hits, clustering = draw(graph, pieces, seed, 0, vertex_count)
    closed = sum(hits)
    per_wedge = (time.perf_counter() - round_started) / samples
    allowed = samples + max(0.0, deadline - time.perf_counter()) / per_wedge
    if allow_exact and allowed >= EXACT_SHARE * graph.wedges:
        return allowed, f"{budget} would draw about {allowed:,.0f} wedges", None
    # whole chunks below EXACT_SHARE of the wedges (allowed < it: the first round's cost only
    # bounds the first rounds, later ones may be cheaper)
    below_share: float = math.ceil((EXACT_SHARE * graph.wedges - samples) / chunk) - 1 \
        if allow_exact else math.inf
    last = samples
    while True:
        more = int(min(int(max(0.0, deadline - time.perf_counter()) / (per_wedge * chunk)),
                       max(1, min(round_wedges(), ROUND_GROWTH * last) // chunk), below_share))
        if more < 1:
            break
        round_started = time.perf_counter()
        hits, _ = draw(graph, [chunk] * more, seed, len(pieces), 0)
        last = more * chunk
        per_wedge = (time.perf_counter() - round_started) / last
        pieces += [chunk] * more
        closed, samples, below_share = closed + sum(hits), samples + last, below_share - more
    return float(samples), f"{samples:,} wedges drawn in {time.perf_counter() - started:.2f} s "\
        "(a time budget)", (samples, closed, clustering)


def draw_pieces(graph: GraphData, pieces: list[int], seed: int, vertex_count: int
                ) -> tuple[int, tuple[int, int, int]]:
    """The closed wedges of a sample drawn as ``pieces`` (piece ``i`` from phase ``i``), in
    rounds of at most :func:`round_wedges` wedges, and the clustering of ``vertex_count``
    vertices, drawn with the first round (see :func:`draw`)."""
    closed, clustering, start, limit = 0, (0, 0, 0), 0, round_wedges()
    while start < len(pieces):
        stop, size = start + 1, pieces[start]
        while stop < len(pieces) and size + pieces[stop] <= limit:
            size += pieces[stop]
            stop += 1
        hits, drawn = draw(graph, pieces[start:stop], seed, start, 0 if start else vertex_count)
        closed += sum(hits)
        clustering = drawn if start == 0 else clustering
        start = stop
    return closed, clustering


def exact_estimate(graph: GraphData, base: dict[str, Any], pilot_samples: int, started: float,
                   reason: str, with_clustering: bool = True) -> Estimate:
    """The exact values, as an :class:`Estimate` labelled exact."""
    triangles = count_triangles_of(graph)
    transitivity = vertex.transitivity(graph)
    clustering = vertex.average_clustering(graph) if with_clustering else None
    return Estimate(
        triangles=float(triangles), triangles_interval=(float(triangles), float(triangles)),
        transitivity=transitivity, transitivity_interval=(transitivity, transitivity),
        average_clustering=clustering,
        average_clustering_interval=None if clustering is None else (clustering, clustering),
        exact=True, method="exact", reason=reason, samples=0, pilot_samples=pilot_samples,
        closed=triangles, vertex_samples=0,
        seconds=graph.seconds_with(
            {"estimate": time.perf_counter() - started}, started), **base)


def draw(graph: GraphData, counts: list[int], seed: int, first_phase: int,
         vertex_count: int) -> tuple[list[int], tuple[int, int, int]]:
    """One round of tasks: independent samples of ``counts[s]`` wedges each, stratified over
    the graph's wedges (sample ``s`` from the stream of phase ``first_phase + s``:
    :mod:`dtri.kernels.sampling`), and ``vertex_count`` vertices with a pair of neighbours
    each (:func:`dtri.kernels.sampling.sample_vertices`). Returns the closed wedges of each
    sample, and the clustering's ``(vertices of degree 2 or more, closed pairs, pairs)``.
    Each partition draws the wedges of each sample that land among its own (numbered after
    the partitions before it); every closing edge, of a wedge or of a pair, goes to the
    partition of its first end, which checks it."""
    own = [s.wedges for s in graph.summaries]
    offsets = np.concatenate([[0], np.cumsum(own)]).tolist()
    phases = tuple(range(first_phase, first_phase + len(counts)))
    tasks, bounds, parts = graph.tasks, tuple(graph.bounds), graph.parts
    splits = {p: tasks.task("estimate-sample", sample_wedges, parts[p], tuple(counts), phases,
                            seed, offsets[p], offsets[-1], bounds, key=(first_phase, p),
                            at=tasks.owner(p))
              for p in range(len(parts)) if own[p] and sum(counts)}
    drawn = None
    if vertex_count:
        drawn = tasks.task("estimate-vertices", sample_vertices, graph.degree, graph.present,
                           vertex_count, seeds(seed, first_phase, len(parts), 1),
                           key=(first_phase,))
        wanted = tasks.task("estimate-vertices", distinct_vertices, drawn, key=("distinct",))
        lists = [tasks.task("estimate-vertices", incident, parts[p], wanted,
                            key=(first_phase, p), at=tasks.owner(p)) for p in range(len(parts))]
        splits[len(parts)] = tasks.task("estimate-vertices", neighbour_pairs, drawn,
                                        len(counts), bounds, *lists, key=("pairs",))
    picks = tasks.pick_pieces("estimate-sample", splits,
                              {i: range(len(parts)) for i in splits})
    checks = [tasks.task("estimate-check", closed_counts, parts[q], len(counts) + 1,
                         *(picks[i, q] for i in splits), key=(first_phase, q),
                         at=tasks.owner(q)) for q in range(len(parts))]
    if drawn is None:
        (values,), eligible = graph.timer().compute("estimate", checks), 0
    else:
        values, eligible = graph.timer().compute("estimate", checks, tasks.task(
            "estimate-vertices", eligible_of, drawn, key=("eligible",), on_host=True))
    closed = [sum(v[s] for v in values) for s in range(len(counts) + 1)]
    return closed[:-1], (eligible, closed[-1], vertex_count)


def distinct_vertices(drawn: tuple) -> Any:
    """The distinct vertices of a vertex sample, ascending."""
    x = drawn[1]
    return array_module(x).unique(x)


def eligible_of(drawn: tuple) -> int:
    """How many vertices a vertex sample was drawn from."""
    return drawn[0]


def pair_total(degree: Any, present: Any) -> int:
    """``Σ C(d, 2)`` over the vertices that belong to the graph."""
    if present is not None:
        degree = degree[present]
    return int((degree * (degree - 1) // 2).sum())


def triples(graph: GraphData) -> int:
    """The graph's connected triples (transitivity's denominator), exactly."""

    def computed() -> int:
        task = graph.tasks.task("estimate", pair_total, graph.degree, graph.present,
                                key=("triples",))
        (value,) = graph.timer().compute("estimate", task)
        return value

    return graph.cached("triples", computed)
