"""The profile of a graph (``dtri profile``): its headline numbers and its distributions,
binned on the workers.

Every distribution is reduced where its partition lives, into logarithmic bins of counts and
sums, and the bins of all partitions are added up by a tree (:meth:`dtri.runtime.tasks.Tasks.
tree`); only the bins reach the client, never a per-vertex or per-edge column. The bins are
the same for every graph: bin ``b`` holds the values in ``[BIN_EDGES[b], BIN_EDGES[b + 1])``,
:data:`BINS_PER_OCTAVE` to a doubling, so each small value has a bin of its own (0 to 6) and
the bins of two runs, or two graphs, line up.

* per degree bin: the vertices, and the sums of their degrees, triangles and local
  clustering, so the mean triangles and the clustering spectrum C(k) are the sums over the
  vertices;
* per triangle-count bin: the vertices;
* per truss number (small integers, one bin each): the edges, and the edges each k-truss
  keeps (those of truss number at least ``k``).

Every quantity is a function of one prepared graph: the per-vertex triangles and the truss
numbers are those :mod:`dtri.analytics.vertex` and :mod:`dtri.analytics.truss` cache on it.
"""

from __future__ import annotations

import resource
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from dtri.analytics import graphlets as graphlet_analytics
from dtri.analytics import truss, vertex
from dtri.kernels.dispatch import array_module, to_host

if TYPE_CHECKING:
    import pandas as pd

    from dtri.prepared.graph import GraphData

BINS_PER_OCTAVE = 4
"""Logarithmic bins to a doubling of the value."""
BIN_EDGES = np.concatenate([[0], np.unique(np.floor(
    2.0 ** (np.arange(0, 62 * BINS_PER_OCTAVE) / BINS_PER_OCTAVE)).astype(np.int64))])
"""The lower edge of each bin: 0, then ``⌊2^(i / BINS_PER_OCTAVE)⌋`` without repeats."""
BINS = len(BIN_EDGES)
VERTEX_COLUMNS = ("vertices", "degree_sum", "triangles_sum", "clustering_sum")
"""What a degree bin holds."""


def bin_of(values: Any) -> Any:
    """The bin (an index into :data:`BIN_EDGES`) of each of ``values`` (integers ≥ 0)."""
    xp = array_module(values)
    return xp.searchsorted(xp.asarray(BIN_EDGES), values, side="right") - 1


def vertex_bins(block: tuple, counts: Any) -> tuple[np.ndarray, ...]:
    """One partition's bins: by degree, its vertices and their sums of degree, triangles and
    clustering (:data:`VERTEX_COLUMNS`), then by triangle count, its vertices; host arrays of
    :data:`BINS` each."""
    _, degree, present = block
    values = vertex.clustering_values(block, counts)
    if present is not None:
        degree, counts, values = degree[present], counts[present], values[present]
    xp = array_module(degree)
    by_degree = bin_of(degree)

    def binned(weights: Any, at: Any = by_degree) -> Any:
        if not at.shape[0]:  # CuPy's bincount takes the maximum of its input: none here
            return xp.zeros(BINS, dtype=xp.int64 if weights is None else xp.float64)
        return xp.bincount(at, weights=weights, minlength=BINS)

    return (to_host(binned(None)).astype(np.int64),
            np.rint(to_host(binned(degree.astype(xp.float64)))).astype(np.int64),
            np.rint(to_host(binned(counts.astype(xp.float64)))).astype(np.int64),
            to_host(binned(values)),
            to_host(binned(None, bin_of(counts))).astype(np.int64))


def truss_bins(pieces: tuple) -> np.ndarray:
    """One partition's edges per truss number (index ``k``), a host array."""
    found = [to_host(p[2]) for p in pieces if p is not None]
    numbers = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
    return np.bincount(numbers.astype(np.int64), minlength=3)


def added(*binned: Any) -> Any:
    """The sum of bins (arrays, or tuples of arrays, padded to the longest)."""
    if isinstance(binned[0], tuple):
        return tuple(added(*column) for column in zip(*binned, strict=True))
    total = np.zeros(max(b.shape[0] for b in binned), dtype=binned[0].dtype)
    for b in binned:
        total[: b.shape[0]] += b
    return total


def reduced(graph: GraphData, stage: str, func: Any, per_partition: list[tuple]) -> Any:
    """``func(*per_partition[p])`` on each partition's owner, added up by a tree placed where
    its inputs are, and brought to the client."""
    tasks = graph.tasks
    leaves = [tasks.task(stage, func, *args, key=("bins", p), on_host=True, at=tasks.owner(p))
              for p, args in enumerate(per_partition)]
    root = tasks.tree(stage, added, leaves, graph.fan_in, on_host=True,
                      places=[tasks.owner(p) for p in range(len(leaves))])
    (value,) = graph.timer().compute(stage, root)
    return value


def degree_table(binned: tuple) -> pd.DataFrame:
    """The degree bins that hold a vertex: ``low``, ``high`` (exclusive), the sums, and the
    means ``triangles_mean`` and ``clustering_mean`` (C(k))."""
    import pandas as pd

    kept = np.flatnonzero(binned[0])
    frame = pd.DataFrame({"low": BIN_EDGES[kept], "high": upper_edges(kept),
                          **{name: column[kept] for name, column in
                             zip(VERTEX_COLUMNS, binned, strict=False)}})
    frame["triangles_mean"] = frame["triangles_sum"] / frame["vertices"]
    frame["clustering_mean"] = frame["clustering_sum"] / frame["vertices"]
    return frame


def upper_edges(bins: np.ndarray) -> np.ndarray:
    """The exclusive upper edge of each of ``bins``."""
    return np.append(BIN_EDGES[1:], np.iinfo(np.int64).max)[bins]


def triangle_table(counts: np.ndarray) -> pd.DataFrame:
    """The triangle-count bins that hold a vertex: ``low``, ``high``, ``vertices``."""
    import pandas as pd

    kept = np.flatnonzero(counts)
    return pd.DataFrame({"low": BIN_EDGES[kept], "high": upper_edges(kept),
                         "vertices": counts[kept]})


def truss_table(per_number: np.ndarray) -> pd.DataFrame:
    """Per ``k`` from 2 to the largest truss number: the ``edges`` of truss number ``k`` and
    the edges the k-truss keeps (``kept``: truss number at least ``k``)."""
    import pandas as pd

    largest = int(np.flatnonzero(per_number).max()) if per_number.any() else 1
    k = np.arange(2, largest + 1)
    edges = per_number[2: largest + 1] if largest >= 2 else np.zeros(0, dtype=np.int64)
    kept = np.cumsum(edges[::-1])[::-1]
    return pd.DataFrame({"k": k, "edges": edges.astype(np.int64),
                         "kept": kept.astype(np.int64)})


@dataclass
class Profile:
    """A graph's profile (:func:`profile`): its headline ``numbers`` (plain values) and its
    binned distributions as pandas frames, for a notebook to plot its own way."""

    numbers: dict[str, Any]
    """``vertices``, ``edges``, ``triangles``, ``transitivity``, ``average_clustering``,
    ``max_truss`` (the largest k with a non-empty k-truss), ``seconds`` per stage,
    ``peak_device_bytes`` (per stage, where measured), the workers' host figures and
    ``client_peak_bytes`` (this process's peak resident memory)."""
    degree: pd.DataFrame
    """Per degree bin: ``low``, ``high`` (exclusive), ``vertices``, ``degree_sum``,
    ``triangles_sum``, ``clustering_sum``, ``triangles_mean``, ``clustering_mean``."""
    triangles: pd.DataFrame
    """Per triangle-count bin: ``low``, ``high``, ``vertices``."""
    truss: pd.DataFrame
    """Per ``k``: ``edges`` of truss number ``k``, and ``kept`` by the k-truss."""
    graphlets: pd.DataFrame | None = None
    """Per graphlet (``graphlet``): the graph's ``copies``; ``None`` unless asked for."""
    orbits: pd.DataFrame | None = None
    """Per orbit (``orbit``: ``sigma0`` ... ``sigma15``): its ``total`` over the vertices;
    ``None`` unless asked for."""
    output: str | None = field(default=None)
    """Where the page was written, if it was."""

    def tables(self) -> dict[str, pd.DataFrame]:
        """The binned tables by name (graphlets and orbits where counted)."""
        tables = {"degree": self.degree, "triangles": self.triangles, "truss": self.truss}
        if self.graphlets is not None and self.orbits is not None:
            tables.update(graphlets=self.graphlets, orbits=self.orbits)
        return tables

    def to_dict(self) -> dict[str, Any]:
        """The numbers and every table as lists of rows, plain values only (JSON)."""
        return {"numbers": self.numbers,
                "tables": {name: [{k: v.item() if hasattr(v, "item") else v
                                   for k, v in row.items()}
                                  for row in table.to_dict("records")]
                           for name, table in self.tables().items()}}


def profile(graph: GraphData, graphlets: bool = False) -> Profile:
    """The profile of a prepared graph: every quantity computed on it, binned on the
    workers."""
    import pandas as pd

    started = time.perf_counter()
    seconds: dict[str, float] = {}

    def timed(name: str, begun: float) -> None:
        seconds[name] = round(time.perf_counter() - begun, 6)

    begun = time.perf_counter()
    counts, blocks = vertex.triangle_counts(graph), vertex.vertex_blocks(graph)
    binned = reduced(graph, "profile-vertices", vertex_bins,
                     [(blocks[p], counts[p]) for p in range(graph.partitions)])
    numbers: dict[str, Any] = {
        "vertices": int(binned[0].sum()), "edges": graph.edges,
        "triangles": int(binned[2].sum()) // 3,
        "transitivity": vertex.transitivity(graph),
        "average_clustering": vertex.average_clustering(graph)}
    timed("triangles", begun)
    begun = time.perf_counter()
    per_number = reduced(graph, "profile-truss", truss_bins,
                         [(pieces,) for pieces in truss.truss_pieces(graph)])
    truss_frame = truss_table(per_number)
    numbers["max_truss"] = int(truss_frame["k"].max()) if len(truss_frame) else 0
    timed("truss", begun)
    counted = orbits = None
    if graphlets:
        begun = time.perf_counter()
        summary = graphlet_analytics.graphlet_summary(graph, top=0)
        copies, totals = summary["graphlets"], summary["orbit_totals"]
        counted = pd.DataFrame({"graphlet": list(copies), "copies": list(copies.values())})
        orbits = pd.DataFrame({"orbit": list(totals), "total": list(totals.values())})
        timed("graphlets", begun)
    numbers["seconds"] = graph.seconds_with(seconds, started)
    memory = graph.memory()
    numbers["peak_device_bytes"] = memory.peak_device_bytes()
    numbers.update(memory.host.fields())
    numbers["client_peak_bytes"] = client_peak_bytes()
    numbers.update(backend=graph.backend.value, partitions=graph.partitions,
                   workers=len(graph.tasks.workers) or 1)
    return Profile(numbers, degree_table(binned), triangle_table(binned[4]), truss_frame,
                   counted, orbits)


def client_peak_bytes() -> int:
    """This process's peak resident memory so far, in bytes (Linux reports KiB)."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
