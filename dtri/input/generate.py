"""Synthetic edge lists, generated partition by partition on the workers.

* :func:`rmat`: a Graph500-style R-MAT graph: ``2**scale`` vertices and
  ``edge_factor * 2**scale`` directed edges (duplicates and self-loops included, as in
  Graph500), with vertex ids scrambled by a seeded bijection of ``[0, 2**scale)``.
* :func:`gnm`: ``m`` uniformly random vertex pairs over ``n`` vertices.
* :func:`from_spec`: either one from a short spec: ``rmat:22``, ``rmat:22:8``, ``gnm:1000:5000``.

Every random number comes from a counter-based hash, splitmix64 of (seed, draw index, global
edge number), computed with ``uint64`` array arithmetic that wraps identically in NumPy and
CuPy. Edge ``e`` therefore depends only on the seed and ``e``: the same seed gives the same
edges, in the same order, for any partition count and on either backend (pandas partitions
built from NumPy arrays, or cuDF partitions built from CuPy arrays). Each partition is a
contiguous range of edge numbers, indexed by those numbers, and is built on the worker that
computes it (``dtri-generate`` tasks), so no process ever holds the whole edge list.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dtri.errors import ConfigurationError
from dtri.kernels.bins import MAX_KEY_BITS
from dtri.kernels.hashing import edge_hash, stream_key
from dtri.options import Backend

if TYPE_CHECKING:
    import dask.dataframe as dd

GENERATOR_BACKENDS = tuple(Backend)
MAX_PARTITION_EDGES = 16 * 2**20
"""The default partition count keeps every partition at or below this many edges."""

CPU_CHUNK = 1 << 16
"""Edges per NumPy pass on the CPU backend (the temporaries stay in cache)."""
GPU_CHUNK = 1 << 22
"""Edges per CuPy pass where a GPU draws by array passes (the wedge colours): a pass holds
about ten 8-byte temporaries per edge; 4 Mi edges keep it near 300 MiB."""
GPU_SOURCE = "generate.cu"
"""The fused GPU generators (one thread per edge, every level in registers), beside this
module."""
GPU_THREADS = 256
MAX_SCALE = MAX_KEY_BITS
"""The largest R-MAT scale: its ids, below ``2**scale``, give at most ``2**31`` vertices, as
many as dtri's packed 64-bit keys hold (a larger scale could not be counted, and its
``16 * 2**32`` edges take a TiB as int64 pairs)."""
MAX_VERTICES = 1 << MAX_KEY_BITS
"""The most vertices a generated graph may have (``gnm:N:M`` has at most ``min(N, 2M)``)."""
MAX_EDGES = 1 << 40
"""The most edges a generated graph may have: 16 TiB as int64 pairs, 65,536 partitions."""
BYTES_PER_GENERATED_EDGE = 16
"""A generated edge as the workers hold it: ``src``, ``dst`` as int64."""

_SCRAMBLE_ROUNDS = 3
# Stream tags, so that the draws of different generators and purposes never share a stream.
_RMAT_STREAM = 0x524D4154  # "RMAT"
_GNM_STREAM = 0x474E4D00  # "GNM"
_SCRAMBLE_STREAM = 0x5343524D  # "SCRM"

_SPEC = re.compile(r"(?P<kind>[a-z0-9]+):(?P<args>.*)", re.IGNORECASE)


# ---------------------------------------------------------------------------- scrambling


def _scramble_constants(scale: int, seed: int) -> list[tuple[int, int]]:
    mask = (1 << scale) - 1
    constants = []
    for r in range(_SCRAMBLE_ROUNDS):
        multiplier = (stream_key(seed, _SCRAMBLE_STREAM, 2 * r) | 1) & mask
        addend = stream_key(seed, _SCRAMBLE_STREAM, 2 * r + 1) & mask
        constants.append((multiplier, addend))
    return constants


def scramble(xp: Any, ids: Any, scale: int, seed: int) -> Any:
    """A seeded bijection of ``[0, 2**scale)``, applied elementwise to a ``uint64`` array.

    Each round multiplies by an odd constant modulo ``2**scale``, adds a constant modulo
    ``2**scale`` and xors in the value shifted right by ``max(1, scale // 2)``; each of those
    steps is invertible on ``scale``-bit words, so the composition is a permutation that needs
    no global table.
    """
    u64 = xp.uint64
    mask = u64((1 << scale) - 1)
    shift = u64(max(1, scale // 2))
    x = ids & mask
    for multiplier, addend in _scramble_constants(scale, seed):
        x = (x * u64(multiplier)) & mask
        x = (x + u64(addend)) & mask
        x = x ^ (x >> shift)
    return x


# ---------------------------------------------------------------------------- the generators


def _thresholds(a: float, b: float, c: float) -> tuple[int, int, int]:
    """The cumulative quadrant probabilities a, a+b, a+b+c as 32-bit thresholds."""
    def threshold(p: float) -> int:
        return min(1 << 32, round(p * (1 << 32)))

    return threshold(a), threshold(a + b), threshold(a + b + c)


def rmat_arrays(xp: Any, start: int, stop: int, scale: int, a: float, b: float, c: float,
                seed: int) -> tuple[Any, Any]:
    """``int64`` (src, dst) of R-MAT edges ``start .. stop - 1``, as ``xp`` arrays.

    Level ``l`` (of ``scale``) picks the quadrant of edge ``e`` with a 32-bit uniform: the
    low or high half of the hash of (seed, ``l // 2``, e). Below ``a`` it is the top-left
    quadrant, below ``a+b`` top-right, below ``a+b+c`` bottom-left, else bottom-right; the
    quadrant gives one bit of src (the row) and of dst (the column), most significant first.
    Only O(stop - start) memory is live at any time.
    """
    u64 = xp.uint64
    edges = xp.arange(start, stop, dtype=xp.uint64)
    t_a, t_ab, t_abc = (u64(t) for t in _thresholds(a, b, c))
    low32, one = u64(0xFFFFFFFF), u64(1)
    src = xp.zeros(stop - start, dtype=xp.uint64)
    dst = xp.zeros(stop - start, dtype=xp.uint64)
    hashed = None
    for level in range(scale):
        if level % 2 == 0:
            hashed = edge_hash(xp, edges, seed, _RMAT_STREAM, level // 2)
            uniform = hashed & low32
        else:
            uniform = hashed >> u64(32)
        row = uniform >= t_ab
        column = (uniform >= t_a) & ~row | (uniform >= t_abc)
        src = (src << one) | row.astype(xp.uint64)
        dst = (dst << one) | column.astype(xp.uint64)
        del uniform, row, column
    del hashed, edges
    src = scramble(xp, src, scale, seed)
    dst = scramble(xp, dst, scale, seed)
    return src.astype(xp.int64), dst.astype(xp.int64)


def gnm_arrays(xp: Any, start: int, stop: int, n: int, seed: int) -> tuple[Any, Any]:
    """``int64`` (src, dst) of G(n, m) pairs ``start .. stop - 1``: each endpoint is a hash
    modulo ``n`` (bias below n / 2**64, i.e. none that matters)."""
    edges = xp.arange(start, stop, dtype=xp.uint64)
    modulus = xp.uint64(n)
    src = edge_hash(xp, edges, seed, _GNM_STREAM, 0) % modulus
    dst = edge_hash(xp, edges, seed, _GNM_STREAM, 1) % modulus
    return src.astype(xp.int64), dst.astype(xp.int64)


@dataclass(frozen=True)
class EdgeRangeMaker:
    """Builds one partition (a contiguous range of edge numbers) of a generated edge list.

    Runs on the worker: NumPy → pandas for ``cpu``, CuPy → cuDF for ``gpu`` (imported here,
    never at module level, so dtri imports without a GPU).
    """

    kind: str  # "rmat" or "gnm"
    params: tuple  # rmat: (scale, a, b, c); gnm: (n,)
    seed: int
    backend: Backend

    def __call__(self, bounds: tuple[int, int]) -> Any:
        start, stop = bounds
        src, dst = self.arrays(bounds)
        if self.backend.on_gpu:
            import cudf

            return cudf.DataFrame({"src": src, "dst": dst},
                                  index=cudf.RangeIndex(start, stop))
        import pandas as pd

        return pd.DataFrame({"src": src, "dst": dst}, index=pd.RangeIndex(start, stop))

    def arrays(self, bounds: tuple[int, int]) -> tuple[Any, Any]:
        """The partition's ``src``, ``dst`` as int64 NumPy (``cpu``) or CuPy arrays."""
        start, stop = bounds
        if self.backend.on_gpu:
            return fused_arrays(self.kind, start, stop, self.params, self.seed)
        make: Callable[..., tuple[Any, Any]] = rmat_arrays if self.kind == "rmat" \
            else gnm_arrays
        # in cache-sized chunks (several times faster than whole-partition passes)
        src = np.empty(stop - start, dtype=np.int64)
        dst = np.empty(stop - start, dtype=np.int64)
        for first in range(start, stop, CPU_CHUNK):
            last = min(stop, first + CPU_CHUNK)
            src[first - start : last - start], dst[first - start : last - start] = make(
                np, first, last, *self.params, self.seed)
        return src, dst


def fused_arrays(kind: str, start: int, stop: int, params: tuple, seed: int
                 ) -> tuple[Any, Any]:
    """``int64`` CuPy (src, dst) of edges ``start .. stop - 1`` by one fused kernel: the
    same edges as :func:`rmat_arrays` and :func:`gnm_arrays` (bit for bit), in one pass
    instead of some 450 array passes per 4 Mi edges."""
    import cupy

    count = stop - start
    src = cupy.empty(count, dtype=cupy.int64)
    dst = cupy.empty(count, dtype=cupy.int64)
    if count == 0:
        return src, dst
    u64 = np.uint64
    grid = (min(-(-count // GPU_THREADS), 65536 * 8),)
    if kind == "rmat":
        scale, a, b, c = params
        keys = cupy.asarray([stream_key(seed, _RMAT_STREAM, d) for d in range((scale + 1) // 2)],
                            dtype=cupy.uint64)
        multipliers, addends = zip(*_scramble_constants(scale, seed), strict=True)
        constants = cupy.asarray([*multipliers, *addends], dtype=cupy.uint64)
        t_a, t_ab, t_abc = (u64(t) for t in _thresholds(a, b, c))
        _fused_kernel("rmat_edges")(grid, (GPU_THREADS,), (
            src, dst, np.int64(count), u64(start), np.int32(scale), keys, t_a, t_ab, t_abc,
            constants))
    else:
        (n,) = params
        _fused_kernel("gnm_edges")(grid, (GPU_THREADS,), (
            src, dst, np.int64(count), u64(start), u64(n),
            u64(stream_key(seed, _GNM_STREAM, 0)), u64(stream_key(seed, _GNM_STREAM, 1))))
    return src, dst


def _fused_kernel(name: str) -> Any:
    """A kernel of :data:`GPU_SOURCE`, compiled once per device (or loaded from CuPy's disk
    cache) by dtri's CUDA loader (:func:`dtri.kernels.cuda_source.cuda_module`)."""
    from dtri.kernels.cuda_source import cuda_module

    return cuda_module("dtri.input", GPU_SOURCE, options=()).get_function(name)


def default_partitions(edges: int) -> int:
    """Enough partitions that none has more than ``MAX_PARTITION_EDGES`` edges (at least 1)."""
    return max(1, -(-edges // MAX_PARTITION_EDGES))


@dataclass(frozen=True)
class GeneratedGraph:
    """A generated edge list before it is built: the generator, its parameters, its number of
    edges and its seed (:func:`generated` from a spec). It is built partition by partition
    where it is read: as a Dask DataFrame (:meth:`frame`) or as array partitions
    (:meth:`maker`)."""

    kind: str  # "rmat" or "gnm"
    params: tuple  # rmat: (scale, a, b, c); gnm: (n,)
    edges: int
    seed: int = 0

    @property
    def stored_bytes(self) -> int:
        """The edges' bytes as int64 pairs, once generated."""
        return self.edges * BYTES_PER_GENERATED_EDGE

    def check_fits(self, room: int, where: str) -> None:
        """Refuse a graph whose edges, as int64 pairs, are more than ``room`` bytes (what
        ``where`` holds: the memory and disk of the machine that would run it), naming the
        largest R-MAT scale, or the most G(n, m) edges, that fit."""
        if self.stored_bytes <= room:
            return
        from dask.utils import format_bytes

        fitting = room // BYTES_PER_GENERATED_EDGE
        if self.kind == "rmat":
            factor = self.edges >> self.params[0]
            largest = (fitting // factor).bit_length() - 1
            most = (f"the largest R-MAT scale that fits is {largest} (rmat:{largest}:{factor})"
                    if largest >= 1 else "no R-MAT scale fits")
        else:
            most = f"the most G(n, m) edges that fit are {fitting:,}"
        raise ConfigurationError(
            f"the generated graph's {self.edges:,} edges take {format_bytes(self.stored_bytes)} "
            f"as int64 pairs, more than {where} hold ({format_bytes(room)}); {most}")

    def ranges(self, npartitions: int | None = None) -> list[tuple[int, int]]:
        """The edge-number range of each partition (at least one; none empty but the only
        one of an empty list)."""
        if npartitions is not None and (not isinstance(npartitions, int) or npartitions < 1):
            raise ConfigurationError(
                f"npartitions must be a positive integer, got {npartitions!r}")
        parts = npartitions or default_partitions(self.edges)
        parts = max(1, min(parts, self.edges))
        return list(itertools.pairwise([self.edges * k // parts for k in range(parts + 1)]))

    def maker(self, backend: Backend | str = Backend.CPU) -> EdgeRangeMaker:
        """What builds one partition from its edge-number range."""
        if backend not in GENERATOR_BACKENDS:
            raise ConfigurationError(f"generator backend must be one of "
                                     f"{', '.join(GENERATOR_BACKENDS)}, got {backend!r}")
        return EdgeRangeMaker(self.kind, self.params, int(self.seed), Backend(backend))

    def frame(self, backend: Backend | str = Backend.CPU,
              npartitions: int | None = None) -> dd.DataFrame:
        """The edge list as a Dask DataFrame (pandas or cuDF partitions, ``dtri-generate``
        tasks), indexed by edge number."""
        import dask
        import dask.dataframe as dd

        maker = self.maker(backend)
        bounds = self.ranges(npartitions)
        divisions = (*(a for a, _ in bounds), self.edges - 1) if self.edges else None
        # Integer columns only: skip the (no-op) string-conversion layer, keep the task names.
        with dask.config.set({"dataframe.convert-string": False}):
            return dd.from_map(maker, bounds, meta=maker((0, 0)), divisions=divisions,
                               label="dtri-generate", enforce_metadata=False)


def _check_int(name: str, value: Any, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ConfigurationError(f"{name} must be an integer, got {value!r}")
    if value < low or (high is not None and value > high):
        bound = f"at least {low}" if high is None else f"between {low} and {high}"
        raise ConfigurationError(f"{name} must be {bound}, got {value}")
    return int(value)


def rmat(scale: int, edge_factor: int = 16, a: float = 0.57, b: float = 0.19, c: float = 0.19,
         *, seed: int = 0, npartitions: int | None = None,
         backend: Backend | str = Backend.CPU) -> dd.DataFrame:
    """A Graph500-style R-MAT edge list as a Dask DataFrame of int64 ``src, dst``.

    ``2**scale`` vertices and ``edge_factor * 2**scale`` generated directed edges. Like
    Graph500's generator, the list holds duplicate edges and self-loops; dtri's pipeline
    merges duplicates and reverse edges and ignores loops, so the counted simple graph has
    fewer edges than were generated. Each edge descends ``scale`` levels of the adjacency
    matrix, taking the top-left, top-right, bottom-left or bottom-right quadrant with
    probabilities ``a``, ``b``, ``c`` and ``1 - a - b - c`` (Graph500: 0.57, 0.19, 0.19,
    0.05), and the vertex ids are then scrambled by a seeded permutation, so that id order
    says nothing about degree.

    The result depends only on the arguments other than ``npartitions`` and ``backend``:
    edge ``e`` (the frame's index) is the same for every partition count and on both
    backends. ``npartitions`` defaults to enough partitions for at most 16Mi edges each;
    ``backend`` ``"cpu"`` builds pandas partitions, ``"gpu"`` cuDF partitions from CuPy.
    """
    return rmat_graph(scale, edge_factor, a, b, c, seed=seed).frame(backend, npartitions)


def rmat_graph(scale: int, edge_factor: int = 16, a: float = 0.57, b: float = 0.19,
               c: float = 0.19, *, seed: int = 0) -> GeneratedGraph:
    """:func:`rmat`'s graph, checked, not built yet."""
    scale = _check_int("scale", scale, -2**63)
    if not 1 <= scale <= MAX_SCALE:
        raise ConfigurationError(
            f"scale must be between 1 and {MAX_SCALE}, got {scale}: R-MAT's 2**scale vertex "
            f"ids may give more than the 2**{MAX_KEY_BITS} vertices dtri's packed keys hold")
    edge_factor = _check_int("edge_factor", edge_factor, 1)
    probabilities = [float(p) for p in (a, b, c)]
    if any(not 0 <= p <= 1 for p in probabilities) or sum(probabilities) > 1 + 1e-12:
        raise ConfigurationError(
            f"R-MAT probabilities a, b, c must be in [0, 1] with a + b + c <= 1, got {a}, {b}, {c}"
        )
    return GeneratedGraph("rmat", (scale, *probabilities), _edges(edge_factor << scale),
                          int(seed))


def _edges(edges: int) -> int:
    """``edges``, refused above :data:`MAX_EDGES`."""
    if edges > MAX_EDGES:
        raise ConfigurationError(f"a generated graph of {edges:,} edges is more than the "
                                 f"{MAX_EDGES:,} (2**40) dtri generates")
    return edges


def gnm(n: int, m: int, *, seed: int = 0, npartitions: int | None = None,
        backend: Backend | str = Backend.CPU) -> dd.DataFrame:
    """``m`` uniformly random vertex pairs over ``[0, n)`` as a Dask DataFrame of ``src, dst``.

    The pairs are drawn independently, so the list may hold duplicate edges, reverse pairs and
    self-loops; dtri's pipeline merges them (a simple undirected graph), so the counted graph
    can have a few fewer than ``m`` edges. Deterministic like :func:`rmat`: the same for every
    partition count and on both backends.
    """
    return gnm_graph(n, m, seed=seed).frame(backend, npartitions)


def gnm_graph(n: int, m: int, *, seed: int = 0) -> GeneratedGraph:
    """:func:`gnm`'s graph, checked, not built yet."""
    n, m = _check_int("n", n, 1, 2**63 - 1), _edges(_check_int("m", m, 0))
    if min(n, 2 * m) > MAX_VERTICES:
        raise ConfigurationError(
            f"gnm:{n}:{m} may have {min(n, 2 * m):,} vertices, more than the 2**31 dtri's "
            "packed keys hold: give N or 2 M of at most 2**31")
    return GeneratedGraph("gnm", (n,), m, int(seed))


def is_spec(text: str) -> bool:
    """True when ``text`` looks like a generator spec (``rmat:...`` or ``gnm:...``)."""
    match = _SPEC.fullmatch(text.strip())
    return match is not None and match["kind"].lower() in ("rmat", "gnm")


def parse_spec(spec: str) -> tuple[str, tuple[int, ...]]:
    """``("rmat", (scale, edge_factor))`` or ``("gnm", (n, m))`` from a spec string."""
    usage = "expected rmat:SCALE, rmat:SCALE:EDGE_FACTOR or gnm:N:M, e.g. rmat:22 or gnm:1000:5000"
    match = _SPEC.fullmatch(spec.strip()) if isinstance(spec, str) else None
    if match is None:
        raise ConfigurationError(f"bad generator spec {spec!r}: {usage}")
    kind, fields = match["kind"].lower(), match["args"].split(":")
    if not all(re.fullmatch(r"[0-9]+", f.strip().replace("_", "")) for f in fields):
        raise ConfigurationError(
            f"bad generator spec {spec!r}: its fields must be non-negative integers; {usage}"
        )
    values = tuple(int(f.strip().replace("_", "")) for f in fields)
    if kind == "rmat" and len(values) in (1, 2):
        return kind, values if len(values) == 2 else (values[0], 16)
    if kind == "gnm" and len(values) == 2:
        return kind, values
    if kind in ("rmat", "gnm"):
        raise ConfigurationError(f"bad generator spec {spec!r}: wrong number of fields; {usage}")
    raise ConfigurationError(f"unknown generator {kind!r} in {spec!r}: {usage}")


def generated(spec: str, *, seed: int = 0) -> GeneratedGraph:
    """The graph a spec names, not built yet: ``rmat:SCALE`` (edge factor 16, Graph500's
    a, b, c), ``rmat:SCALE:EDGE_FACTOR`` or ``gnm:N:M``; see :func:`rmat` and :func:`gnm`.
    :func:`dtri.prepare` and :func:`dtri.count` take it as their input and build it on the
    workers, as ``--generate SPEC --seed N`` does: ``dtri.count(dtri.generated("rmat:18"))``.
    A bad spec raises :class:`~dtri.errors.ConfigurationError` (a ``ValueError``)."""
    kind, values = parse_spec(spec)
    return (rmat_graph if kind == "rmat" else gnm_graph)(*values, seed=seed)


def from_spec(spec: str, *, seed: int = 0, npartitions: int | None = None,
              backend: Backend | str = Backend.CPU) -> dd.DataFrame:
    """The edge list a spec names as a Dask DataFrame (:func:`generated`)."""
    return generated(spec, seed=seed).frame(backend, npartitions)
