"""``dtri bench``: time dtri against other triangle counters on the same graphs.

For each graph (a generator spec such as ``rmat:16`` or a path) one record, a JSON-ready
dict, holds:

* the graph's size (``n`` vertices and ``m`` simple undirected edges, as dtri counts them),
  its oriented ``wedges`` and ``triangles``, the ``device`` and ``backend``;
* ``dtri.end_to_end_seconds``: :func:`dtri.count` from the source (reading the files, or
  generating the edges on the workers) to the count, with ``dtri.stage_seconds`` of that run;
* ``dtri.in_memory_seconds``: :func:`dtri.count` of the edge list already materialized on the
  workers (a persisted Dask DataFrame: cuDF partitions in GPU memory, or pandas partitions),
  with its ``in_memory_stage_seconds`` and ``edges_per_second`` (``m`` over that time);
* ``dtri.join_bytes_read``, ``join_seconds``, ``join_bandwidth``, ``join_bandwidth_fraction``:
  the in-memory run's fused join (its ``wedges_join`` stage): the bytes it read from device
  memory by the model of :mod:`dtri.kernels.traffic`, its seconds, their quotient (bytes per
  second) and that as a fraction of the peak DRAM bandwidth of the run's GPUs (``None`` on
  the CPU, or where the join is not modelled);
* ``peers``: for each other tool, ``seconds``, ``triangles``, ``agrees`` and what was timed,
  or ``{"skipped": reason}`` when it is not installed or does not apply.

dtri's times and the peers' are each the best of ``repeat`` runs. The peers all get the same
simple undirected edge list: the canonical edges (dense ids, ``u < v``, no duplicates or
loops), computed once from the materialized edges and not timed; each peer's own graph
construction from that list is timed along with its count. One session (cluster) serves the
whole benchmark, so no time goes to starting workers.
"""

from __future__ import annotations

import importlib
import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import dask
import numpy as np

from dtri import DtriError, Options
from dtri import generated as generated_graph
from dtri.input.generate import is_spec
from dtri.options import Backend
from dtri.runtime.bandwidth import peak_bandwidth
from dtri.runtime.memory import measured_memory

NETWORKX_MAX_EDGES = 2_000_000
"""Larger graphs skip NetworkX, which would take minutes and gigabytes of Python objects."""

AUTO_PEERS = {Backend.GPU: ("pylibcugraph",),
              Backend.CPU: ("networkit", "graphblas", "igraph", "networkx")}


class BenchDisagreement(DtriError):
    """A peer's count differs from dtri's: the benchmark's numbers cannot be trusted."""


class PeerSkipped(Exception):
    """A peer that cannot run here; its message is the reason reported."""


@dataclass
class CanonicalEdges:
    """A simple undirected graph: ``src < dst`` dense ids in ``[0, vertices)``, no duplicates.

    The arrays are NumPy or CuPy (``int64``), where the materialized edge list was.
    """

    src: Any
    dst: Any
    vertices: int

    @property
    def edges(self) -> int:
        return len(self.src)

    def host(self) -> tuple[np.ndarray, np.ndarray]:
        src, dst = (a if isinstance(a, np.ndarray) else a.get() for a in (self.src, self.dst))
        return src, dst


def canonical_edges(src: Any, dst: Any) -> CanonicalEdges:
    """Dense-id, deduplicated, loop-free ``u < v`` edges of any NumPy/CuPy edge list."""
    xp = np if isinstance(src, np.ndarray) else importlib.import_module("cupy")
    ids = xp.unique(xp.concatenate([src, dst]))
    if len(ids) >= 2**31:
        raise DtriError(f"{len(ids)} vertices: peers are only run below 2**31 vertices")
    u = xp.searchsorted(ids, src).astype(xp.int64)
    v = xp.searchsorted(ids, dst).astype(xp.int64)
    low, high = xp.minimum(u, v), xp.maximum(u, v)
    del u, v
    keep = low != high
    keys = xp.unique((low[keep] << 32) | high[keep])
    return CanonicalEdges(keys >> 32, keys & 0xFFFFFFFF, len(ids))


# ---------------------------------------------------------------------------- peers


@dataclass(frozen=True)
class Peer:
    """Another triangle counter: ``prepare`` (untimed) shapes its input, ``run`` (timed)
    builds its graph and returns the triangle count."""

    name: str
    method: str
    prepare: Callable[[CanonicalEdges], Any]
    run: Callable[[Any], int]


def _installed(name: str) -> Any:
    """A peer's library, imported; :class:`PeerSkipped` where it is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError:
        raise PeerSkipped("not installed") from None


def _networkx_prepare(edges: CanonicalEdges) -> Any:
    if edges.edges > NETWORKX_MAX_EDGES:
        raise PeerSkipped("too large for networkx")
    networkx = _installed("networkx")
    src, dst = edges.host()
    return networkx, edges.vertices, src.tolist(), dst.tolist()


def _networkx_run(payload: Any) -> int:
    networkx, vertices, src, dst = payload
    graph = networkx.Graph()
    graph.add_nodes_from(range(vertices))
    graph.add_edges_from(zip(src, dst, strict=True))
    return sum(networkx.triangles(graph).values()) // 3


def _networkit_prepare(edges: CanonicalEdges) -> Any:
    networkit = _installed("networkit")
    src, dst = edges.host()
    # networkit's node ids are uint64 (other integer types are not accepted by addEdges)
    return networkit, edges.vertices, src.astype(np.uint64), dst.astype(np.uint64)


def _networkit_run(payload: Any) -> int:
    networkit, vertices, src, dst = payload
    graph = networkit.graph.Graph(vertices)  # undirected, unweighted
    graph.addEdges((src, dst))
    graph.indexEdges()
    score = networkit.sparsification.TriangleEdgeScore(graph)
    score.run()
    return int(sum(score.scores())) // 3  # every triangle is on three edges


IGRAPH_MAX_EDGES = 2_000_000
"""Larger graphs skip igraph, whose ``list_triangles`` makes a Python tuple per triangle
(about 3 GB for the 15.6 million triangles of rmat:16)."""


def _igraph_prepare(edges: CanonicalEdges) -> Any:
    if edges.edges > IGRAPH_MAX_EDGES:
        raise PeerSkipped("too large for igraph")
    igraph = _installed("igraph")
    src, dst = edges.host()
    # an (m, 2) int64 array: igraph's Graph takes it as a buffer, with no Python object per edge
    return igraph, edges.vertices, np.column_stack((src, dst))


def _igraph_run(payload: Any) -> int:
    igraph, vertices, pairs = payload
    graph = igraph.Graph(n=vertices, edges=pairs)  # undirected
    # igraph's one exact count of all triangles: its listing (per-vertex counts are floats)
    return len(graph.list_triangles())


def _graphblas_prepare(edges: CanonicalEdges) -> Any:
    graphblas = _installed("graphblas")
    src, dst = edges.host()
    # the symmetric adjacency matrix lists each undirected edge in both directions
    return graphblas, edges.vertices, np.concatenate([src, dst]), np.concatenate([dst, src])


def _graphblas_run(payload: Any) -> int:
    graphblas, vertices, rows, columns = payload
    adjacency = graphblas.Matrix.from_coo(rows, columns, True, dtype=bool, nrows=vertices,
                                          ncols=vertices)
    lower = graphblas.select.tril(adjacency, -1).new()
    # C<L> = L plus.pair L: C[i, j] = common neighbours k < j of each edge i > j, in int64
    plus_pair = graphblas.semiring.plus_pair[graphblas.dtypes.INT64]
    common = plus_pair(lower @ lower).new(mask=lower.S)
    return common.reduce_scalar(allow_empty=False).new().value  # 0 (not None) if none


def _pylibcugraph_prepare(edges: CanonicalEdges) -> Any:
    _installed("cudf")  # cuDF first: it loads the CUDA libraries pylibcugraph expects
    cupy, pylibcugraph = _installed("cupy"), _installed("pylibcugraph")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise PeerSkipped("no GPU")
    except cupy.cuda.runtime.CUDARuntimeError:
        raise PeerSkipped("no GPU") from None
    index = cupy.int32 if edges.vertices < 2**31 else cupy.int64
    src = cupy.asarray(edges.src).astype(index)
    dst = cupy.asarray(edges.dst).astype(index)
    # a symmetric graph lists each undirected edge in both directions
    sym_src, sym_dst = cupy.concatenate([src, dst]), cupy.concatenate([dst, src])
    del src, dst
    cupy.cuda.runtime.deviceSynchronize()
    return pylibcugraph, cupy, sym_src, sym_dst


def _pylibcugraph_run(payload: Any) -> int:
    plc, _cupy, src, dst = payload
    handle = plc.ResourceHandle()
    properties = plc.GraphProperties(is_symmetric=True, is_multigraph=False)
    graph = plc.SGGraph(handle, properties, src, dst, weight_array=None,
                        store_transposed=False, renumber=True, do_expensive_check=False)
    _vertices, counts = plc.triangle_count(handle, graph, None, False)
    total = int(counts.sum())  # copies the sum to the host, so the GPU work is done
    del graph, counts
    return total // 3  # every triangle is counted at each of its three vertices


PEERS: dict[str, Peer] = {
    "pylibcugraph": Peer("pylibcugraph", "pylibcugraph build + triangle_count",
                         _pylibcugraph_prepare, _pylibcugraph_run),
    "networkit": Peer("networkit", "networkit Graph.addEdges + TriangleEdgeScore",
                      _networkit_prepare, _networkit_run),
    "graphblas": Peer("graphblas", "python-graphblas Matrix.from_coo + tril, "
                      "C<L> = L plus.pair L, reduce_scalar", _graphblas_prepare, _graphblas_run),
    "igraph": Peer("igraph", "igraph Graph(edges=array) + len(list_triangles())",
                   _igraph_prepare, _igraph_run),
    "networkx": Peer("networkx", "networkx Graph.add_edges_from + triangles",
                     _networkx_prepare, _networkx_run),
}


def parse_peers(value: str, backend: str) -> list[str]:
    """``auto`` (by backend), ``none``, or a comma-separated list of :data:`PEERS` names."""
    value = value.strip().lower()
    if value == "auto":
        return list(AUTO_PEERS[Backend(backend)])
    if value in ("none", ""):
        return []
    names = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in PEERS]
    if unknown:
        raise ValueError(f"unknown peer {unknown[0]!r}; choose from auto, none, "
                         f"{', '.join(PEERS)}")
    return list(dict.fromkeys(names))


def run_peer(name: str, edges: CanonicalEdges, repeat: int) -> dict[str, Any]:
    """A peer's best time of ``repeat`` runs and its count, or ``{"skipped": reason}``."""
    peer = PEERS[name]
    try:
        payload = peer.prepare(edges)
    except PeerSkipped as reason:
        return {"skipped": str(reason)}
    best, triangles = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        triangles = int(peer.run(payload))
        best = min(best, time.perf_counter() - started)
    del payload
    return {"seconds": round(best, 6), "triangles": triangles, "method": peer.method}


# ---------------------------------------------------------------------------- the machine


def cpu_name() -> str:
    """The CPU model from /proc/cpuinfo, else what :mod:`platform` knows."""
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def gpu_name() -> str:
    """Name of GPU 0 (where the benchmark's process sees it)."""
    import cupy

    name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def device_name(backend: str) -> str:
    return gpu_name() if Backend(backend).on_gpu else f"{cpu_name()} ({os.cpu_count()} CPUs)"


def bandwidth_figures(join_bytes_read: int | None, join_seconds: float | None,
                      peak: float | None) -> dict[str, Any]:
    """A benchmark line's join figures: ``join_bytes_read``, ``join_seconds``,
    ``join_bandwidth`` (bytes per second) and ``join_bandwidth_fraction`` (of ``peak``);
    ``None`` where a figure is unknown."""
    bandwidth = join_bytes_read / join_seconds \
        if join_bytes_read is not None and join_seconds else None
    return {"join_bytes_read": join_bytes_read, "join_seconds": join_seconds,
            "join_bandwidth": None if bandwidth is None else round(bandwidth, 1),
            "join_bandwidth_fraction": round(bandwidth / peak, 6)
            if bandwidth is not None and peak else None}


def join_figures(join_bytes_read: int | None, stage_seconds: dict[str, float], workers: int,
                 backend: str) -> dict[str, Any]:
    """A count's join figures (:func:`bandwidth_figures`): the bytes its ``wedges_join``
    stage read (:mod:`dtri.kernels.traffic`) over its seconds, and their fraction of the peak
    bandwidth of this process's GPU times ``workers`` (one GPU a worker; ``None`` on the
    CPU)."""
    xp = importlib.import_module("cupy") if Backend(backend).on_gpu else np
    peak = peak_bandwidth(xp)
    return bandwidth_figures(join_bytes_read, stage_seconds.get("wedges_join"),
                             None if peak is None else peak * max(workers, 1))


# ---------------------------------------------------------------------------- the benchmark


def _materialize(frame: Any, runtime: Any) -> Any:
    """Persist ``frame`` on the workers (or in this process) and wait until it is there: on
    several workers in blocks, one a worker, as a run reads its input
    (:func:`dtri.prepared.inputs.spread_persist`)."""
    # lowered first: dask-cuDF's Parquet reader merges files when lowered (dtri.prepared.inputs)
    workers = runtime.addresses
    if runtime.client is not None and len(workers) > 1:
        from dtri.prepared.inputs import spread_persist

        return spread_persist(frame.optimize(), workers, runtime.timer())
    (persisted,) = dask.persist(frame.optimize())
    if runtime.client is not None:
        from distributed import wait

        wait(persisted)
    return persisted


def edge_frame(edges: Any, backend: Backend) -> Any:
    """The edges of a path (:func:`dtri.read_edges`) or a generated graph
    (:func:`dtri.generated`) as a Dask DataFrame of ``backend``'s partitions."""
    from dtri import read_edges

    frame = read_edges(edges, dataframe_backend=backend.frames) if isinstance(edges, str) \
        else edges.frame(backend)
    return frame.to_backend(backend.frames)


def input_array(edges: Any) -> np.ndarray:
    """The edges of a path or generated graph as an ``(m, 2)`` int64 NumPy array, read or
    made by this process's threads."""
    frame = edge_frame(edges, Backend.CPU).compute(scheduler="threads")
    return np.column_stack([frame["src"].to_numpy(np.int64), frame["dst"].to_numpy(np.int64)])


def bench_graph(graph: str, session: Any, repeat: int, seed: int,
                peers: list[str]) -> dict[str, Any]:
    """One benchmark record (see the module docstring); runs in an open session."""
    from dtri import prepare

    runtime = session.runtime
    backend = runtime.backend
    generated = is_spec(graph)

    def source() -> Any:
        return generated_graph(graph, seed=seed) if generated else graph

    def counted(edges: Any) -> Any:
        with prepare(edges, session=session) as prepared:
            return prepared.count()

    def best_count(make_input: Callable[[], Any]) -> tuple[Any, float, dict[str, Any]]:
        """The fastest of ``repeat`` counts: its result, seconds and workers' memory."""
        best, best_result, best_memory = float("inf"), None, {}
        for _ in range(repeat):
            edges = make_input()
            with measured_memory(runtime) as memory:
                started = time.perf_counter()
                result = counted(edges)
                seconds = time.perf_counter() - started
            if best_result is not None and result.triangles != best_result.triangles:
                raise BenchDisagreement(f"{graph}: dtri counted {best_result.triangles} and "
                                        f"then {result.triangles} triangles")
            if seconds < best:
                best, best_result, best_memory = seconds, result, memory
        return best_result, best, best_memory

    result, end_to_end, memory = best_count(source)
    if runtime.client is None and not backend.on_gpu:  # in process: an (m, 2) NumPy array
        persisted: Any = input_array(source())
    else:
        persisted = _materialize(edge_frame(source(), backend), runtime)
    in_memory_result, in_memory, in_memory_memory = best_count(lambda: persisted)
    utilisation = worker_utilisation(runtime, lambda: counted(persisted))
    if not peers:
        columns = None
    elif isinstance(persisted, np.ndarray):
        columns = persisted[:, 0], persisted[:, 1]
    else:  # pandas or cuDF: NumPy or CuPy arrays
        table = persisted.compute()
        columns = table["src"].values, table["dst"].values
        del table
    persisted = None  # release the workers' copy before the peers run
    if in_memory_result.triangles != result.triangles:
        raise BenchDisagreement(f"{graph}: dtri counted {result.triangles} triangles from the "
                                f"source but {in_memory_result.triangles} in memory")

    record: dict[str, Any] = {
        "graph": graph,
        **({"seed": seed} if generated else {}),
        "n": result.vertices,
        "m": result.edges,
        "wedges": result.wedges,
        "triangles": result.triangles,
        "device": device_name(backend),
        "backend": backend,
        "workers": result.workers,
        "protocol": result.protocol,
        "repeat": repeat,
        "memory_budget": result.memory_budget,
        "caps": result.caps,
        "dtri": {
            "end_to_end_seconds": round(end_to_end, 6),
            "stage_seconds": result.seconds,
            "in_memory_seconds": round(in_memory, 6),
            "in_memory_stage_seconds": in_memory_result.seconds,
            "edges_per_second": round(result.edges / in_memory, 1) if in_memory else None,
            "worker_utilisation": utilisation,
            "worker_memory": memory,
            "in_memory_worker_memory": in_memory_memory,
            **join_figures(in_memory_result.join_bytes_read, in_memory_result.seconds,
                           in_memory_result.workers, backend),
        },
        "peers": {},
    }
    if columns is not None:  # peers to run
        edges = canonical_edges(*columns)
        del columns
        for name in peers:
            report = run_peer(name, edges, repeat)
            if "triangles" in report:
                report["agrees"] = report["triangles"] == result.triangles
            record["peers"][name] = report
        del edges
    return record


def worker_utilisation(runtime: Any, run: Callable[[], Any]) -> dict[str, float] | None:
    """Share of one more in-memory run's wall time each worker spent computing tasks, from
    Dask's task stream (``None`` without a distributed client)."""
    if runtime.client is None:
        return None
    from distributed import get_task_stream

    started = time.perf_counter()
    with get_task_stream(runtime.client) as stream:
        run()
    wall = time.perf_counter() - started
    busy: dict[str, float] = {}
    for task in stream.data:
        for span in task.get("startstops", ()):
            if span.get("action") == "compute":
                busy[task["worker"]] = busy.get(task["worker"], 0.0) + span["stop"] - span["start"]
    return {worker: round(seconds / wall, 3) for worker, seconds in sorted(busy.items())}


def disagreement(record: dict[str, Any]) -> str | None:
    """The one-line complaint about the first peer that disagrees with dtri, if any."""
    for name, report in record["peers"].items():
        if report.get("agrees") is False:
            return (f"{record['graph']}: {name} counts {report['triangles']} triangles, "
                    f"dtri counts {record['triangles']}")
    return None


def run_bench(graphs: list[str], options: Options, emit: Callable[[dict[str, Any]], None], *,
              repeat: int = 3, peers: str = "auto", seed: int = 0) -> list[dict[str, Any]]:
    """Benchmark every graph in one session (``options``: where it runs and its memory),
    handing each record to ``emit`` as it is made.

    Raises :class:`BenchDisagreement` (after emitting the record) when a peer's count
    differs from dtri's.
    """
    from dtri import Session

    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    for graph in graphs:
        if is_spec(graph):
            generated_graph(graph)  # a bad spec fails before any work
    records = []
    with Session(options) as session:
        # nothing named: in this process (the graphs are prepared one at a time, on one GPU)
        chosen = parse_peers(peers, session.open().backend)
        for graph in graphs:
            record = bench_graph(graph, session, repeat, seed, chosen)
            records.append(record)
            emit(record)
            if (problem := disagreement(record)) is not None:
                raise BenchDisagreement(problem)
    return records
