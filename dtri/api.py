"""The Python API: a session of runtime options, the prepared graph, and the one-line count.

```python
with dtri.Session(backend="gpu", rmm_pool_size="8GiB") as session:  # options, checked once
    g = dtri.prepare("web.parquet", session=session)               # persisted on the workers
    g.count_triangles(), g.triangles(), g.clustering(), g.k_truss(4)
dtri.count("web.parquet")                                          # prepare, count, release
```

Every layer reads the same :class:`~dtri.options.Options`; this module only opens the
session, shapes the input (:func:`dtri.input.frames.local_input` for an in-process run,
:func:`dtri.input.frames.as_edge_frame` otherwise) and hands over to the preparation
(:func:`dtri.prepared.graph.prepare_graph`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from contextlib import ExitStack, nullcontext
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, overload

from dtri.analytics import edge, graphlets, listing, truss, vertex
from dtri.analytics import profile as profiled
from dtri.analytics.colours import EstimatePlan, estimate_input
from dtri.analytics.count import CountResult, count_triangles_of
from dtri.analytics.count import count as count_graph
from dtri.analytics.estimate import Approx, Estimate, estimate
from dtri.analytics.profile import Profile
from dtri.errors import ConfigurationError, DtriError, InputError
from dtri.input.frames import (
    as_edge_frame,
    input_on_gpu,
    is_path_like,
    known_rows,
    local_input,
    parquet_arrays,
    planned_rows,
    read_plan,
    user_edges,
)
from dtri.input.generate import GeneratedGraph
from dtri.options import GENERATED_FORMATS, LOCAL_SCHEDULERS, RUNTIME_OPTIONS, Backend, Options
from dtri.output import OutputFolder, reserve_output
from dtri.prepared.checkpoint import Checkpoint, input_identity, resumed_line
from dtri.prepared.graph import GraphData, open_saved, prepare_graph, saved_metadata
from dtri.prepared.inputs import BYTES_PER_EDGE_IN_FLIGHT, check_budget
from dtri.prepared.saved import is_saved_graph
from dtri.runtime.driver import start_cuda_driver
from dtri.runtime.link import link_bandwidth
from dtri.runtime.opened import Runtime
from dtri.runtime.resolve import active_client, machine_room, named_placement, options_caps
from dtri.runtime.session import RunDecision, decide_run, open_runtime

if TYPE_CHECKING:
    import dask.dataframe as dd


class PreparedGraph:
    """A graph prepared on the workers, and the analytics of it. Its data
    (:class:`dtri.prepared.graph.GraphData`: ``edges``, ``wedges``, ``vertices``,
    ``partitions``, ``degree``, ``backend``, ``seconds``, ``read``, ``orientation``,
    ``order``, ``choices()``, ``memory()``, ``moves()``, ``save(path)``, ...) reads as its
    attributes. Made by :func:`dtri.prepare` and :func:`dtri.open_prepared`; a ``with`` block
    releases it."""

    def __init__(self, data: GraphData) -> None:
        self.data = data

    def __getattr__(self, name: str) -> Any:
        return getattr(self.data, name)

    def count(self, *, explain: bool = False) -> CountResult:
        """The triangle count with the run's statistics and plan
        (:class:`dtri.analytics.count.CountResult`); ``explain``: the plan only."""
        return count_graph(self.data, explain=explain)

    def count_triangles(self) -> int:
        """The exact number of triangles."""
        return count_triangles_of(self.data)

    def triangles(self) -> dd.Series:
        """Triangles at each vertex (0 for vertices in none), a Dask Series indexed by the
        input's vertex ids, like ``networkx.triangles``."""
        return vertex.triangles(self.data)

    def clustering(self) -> dd.Series:
        """The local clustering coefficient of each vertex (NetworkX's: 0 below degree 2),
        a Dask Series indexed by the input's vertex ids."""
        return vertex.clustering(self.data)

    def average_clustering(self) -> float:
        """The mean local clustering coefficient over all vertices (zeros included), as
        ``networkx.average_clustering``."""
        return vertex.average_clustering(self.data)

    def transitivity(self) -> float:
        """3 × triangles / connected triples, as ``networkx.transitivity``."""
        return vertex.transitivity(self.data)

    def estimate(self, error: float = 0.01, confidence: float = 0.95, *,
                 samples: int | None = None, seconds: float | None = None,
                 seed: int | None = None, average_clustering: bool = True,
                 method: str = "auto", allow_exact: bool = True) -> Estimate:
        """The triangle count and transitivity estimated from a uniform sample of the oriented
        wedges, and the average clustering from one of vertices (``average_clustering=False``:
        not estimated), with intervals at ``confidence``: the wedge sample is sized for a
        relative ``error``, or ``samples`` wedges, or as many as ``seconds`` of the estimate's
        own wall time allow (the result's ``samples`` and ``seed`` repeat it); a graph where
        that sample costs about what counting does is counted exactly, and the result says so
        (:class:`dtri.analytics.estimate.Estimate`). A prepared graph is always wedge-sampled
        (``method`` ``auto`` or ``wedges``): colourful sampling colours the input as it is
        read (``dtri.count(edges, approx=...)``). ``allow_exact=False``: sample even where
        counting would cost no more (the quick forecast of ``dtri count --explain``)."""
        self.data._check()
        approx = Approx(error, confidence, samples=samples, seconds=seconds, seed=seed,
                        average_clustering=average_clustering, method=method)
        if method == "colours":
            raise ConfigurationError("colourful sampling filters the input as it is read, "
                                     "before the preparation: ask dtri.count(edges, approx="
                                     "{'method': 'colours'}), not a prepared graph")
        return estimate(self.data, approx, allow_exact=allow_exact)

    def edge_support(self) -> dd.DataFrame:
        """Each undirected edge once, ``u < v`` by input id, with the triangles on it
        (``support``): a Dask DataFrame."""
        return edge.edge_support(self.data)

    def list_triangles(self, *, limit: int | None = None,
                       vertices: Iterable[int] | None = None) -> dd.DataFrame:
        """Every triangle once, as input ids ``a < b < c``: a lazy Dask DataFrame (int64
        columns ``a``, ``b``, ``c``) of one partition per listing task, computed as it is
        read or written. ``vertices``: only the triangles with at least one of these input
        ids (``networkx.all_triangles(G, nbunch)``); ``limit``: at most that many (any
        ``limit`` of them: which ones depends on how the graph was prepared)."""
        return listing.list_triangles(self.data, limit, vertices)

    def write_triangles(self, output: str | OutputFolder, *, limit: int | None = None,
                        vertices: Iterable[int] | None = None) -> int:
        """Write :meth:`list_triangles` to Parquet at ``output`` (a folder that must not exist
        or be empty), one file per partition, as each is computed, into a folder beside it
        renamed into place when complete (``dtri list -o``). Returns the rows written."""
        with (reserve_output(output) if isinstance(output, str)
              else nullcontext(output)) as folder:
            written = listing.write_listing(self.data, folder.fs, folder.temporary_path,
                                            limit, vertices)
            (rows,) = self.data.timer().compute("list", written)
            folder.commit()
            return int(rows)

    def k_truss(self, k: int) -> PreparedGraph:
        """The k-truss (``networkx.k_truss``): the largest subgraph in which every edge lies on
        at least ``k - 2`` of its triangles, without isolated vertices, as a prepared graph on
        the same workers."""
        return PreparedGraph(truss.k_truss(self.data, k))

    def truss_numbers(self) -> dd.DataFrame:
        """The truss number of each edge (the largest ``k`` whose k-truss holds it): a Dask
        DataFrame of ``u < v`` by input id and ``truss``."""
        return truss.truss_numbers(self.data)

    def graphlets(self, orbits: str = "all", kind: str = "net") -> dd.DataFrame:
        """Graphlet degrees: the orbit frequencies σ0 … σ15 of the Fast Graphlet Transform
        (``orbits="sigma0-4"``: σ0 … σ4) of each vertex, ``net`` (induced subgraphs) or
        ``raw``: a Dask DataFrame indexed by input id, int64 columns ``sigma0`` …"""
        return graphlets.graphlets(self.data, orbits, kind)

    def graphlet_summary(self, orbits: str = "all", kind: str = "net",
                         top: int = 10) -> dict[str, Any]:
        """The graph's copies of each graphlet (``graphlets``: name to copies) and the ``top``
        vertices in most 4-cliques, or in most triangles with ``orbits="sigma0-4"`` (``top``:
        rows of plain values), summed where each partition lives."""
        return graphlets.graphlet_summary(self.data, orbits, kind, top)

    def graphlet_plan(self, orbits: str = "all") -> dict[str, Any]:
        """What :meth:`graphlets` would run (``dtri graphlets --explain``): per stage its
        tasks, batches and the largest task's estimated peak bytes; nothing is counted."""
        return graphlets.graphlet_plan(self.data, orbits)

    def profile(self, graphlets: bool = False) -> Profile:
        """The graph's headline numbers and its distributions binned on the workers
        (:class:`dtri.analytics.profile.Profile`; ``graphlets``: with the graphlet counts);
        :func:`dtri.profile` writes them as a page."""
        return profiled.profile(self.data, graphlets)

    def present_vertices(self) -> int:
        """The vertices of the graph: of a k-truss, those left with an edge (counted on the
        workers), else ``vertices``."""
        return vertex.present_vertices(self.data)

    def link_bandwidth(self) -> float | None:
        """The bandwidth between two of the runtime's workers in bytes per second, probed
        once per cluster (``dtri count --explain``); ``None`` without two workers."""
        return link_bandwidth(self.data.runtime)

    def save(self, path: str) -> str:
        """Write this graph to ``path`` (a folder or fsspec URL, absent or empty), renamed into
        place when complete; :func:`dtri.open_prepared` reads it back. Returns ``path``."""
        return self.data.save(path)

    def release(self) -> None:
        """Let go of the workers' data and close what this graph opened. Idempotent."""
        self.data.release()

    def __enter__(self) -> PreparedGraph:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.data.release()

    def __repr__(self) -> str:
        return repr(self.data).replace("GraphData", "PreparedGraph", 1)


class Session:
    """The options of a run, checked once, and the Dask cluster they name, open for as long as
    the session is (``with``, or :meth:`close`). Without ``scheduler`` it uses the active
    ``distributed.Client``; failing that, it runs in this process, on the CPU or the current
    GPU (no worker processes, no Dask graph; :mod:`dtri.runtime.session`), unless ``workers``
    or memory caps are given or the first input is too big for one task (on the GPU: for
    the current GPU to hold whole), and otherwise
    starts a local cluster (one worker per GPU, or per core) and closes it with the
    session."""

    def __init__(self, options: Options | None = None, /, **changes: Any):
        self.options = Options.of(options, **changes)
        if self.options.asked_backend is not Backend.CPU:  # while the run imports what it needs
            start_cuda_driver(vars(self.options))
        self.runtime: Runtime | None = None
        self._stack = ExitStack()

    def open(self, input_on_gpu: bool = False, input_rows: int | None = 0, *,
             one_input: bool = False) -> Runtime:
        """The session's runtime, opened on first use, for an input of ``input_rows`` edges
        (``None``: not known before it is read): whether the run stays in this process
        (:func:`dtri.runtime.resolve.placement`), and under ``backend="auto"`` whether it
        uses the GPU: an input on the GPU does, and for a session of ``one_input`` (what
        :func:`prepare` opens for itself) one too small to gain from it does not."""
        return self.runtime or self._open_by(decide_run(
            self.options, input_on_gpu, input_rows, BYTES_PER_EDGE_IN_FLIGHT, one_input))

    def _open_by(self, decision: RunDecision) -> Runtime:
        """The session's runtime, opened as the run's ``decision`` says (made once, before:
        :func:`dtri.runtime.session.decide_run`)."""
        self.runtime = self._stack.enter_context(open_runtime(self.options, decision=decision))
        return self.runtime

    @property
    def local(self) -> bool:
        """Whether the session's tasks run (or, not yet open, may run) in this process."""
        if self.runtime is not None:
            return self.runtime.client is None
        named = named_placement(self.options, options_caps(self.options))
        return named is None or named[0] in LOCAL_SCHEDULERS

    def close(self) -> None:
        """Close what the session opened (a local cluster, its client)."""
        self.runtime = None
        self._stack.close()

    def prepare(self, edges: Any, **options: Any) -> PreparedGraph:
        """:func:`prepare` in this session."""
        return prepare(edges, session=self, **options)

    def __enter__(self) -> Session:
        if not self.local:
            self.open()  # a cluster named or active: connect now
        # else the first input decides: in this process if it fits one task, else a cluster
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def prepare(edges: Any, *, session: Session | None = None, **options: Any) -> PreparedGraph:
    """Read, canonicalize, rank, orient and sort a graph once, on the workers, for analytics.

    ``edges``: a path, glob, directory or fsspec URL of edge files (SNAP text, CSV/TSV, Matrix
    Market, Parquet, optionally ``.gz``/``.bz2``), a Dask/pandas/cuDF DataFrame, or an
    ``(m, 2)`` NumPy/CuPy array, read as a simple undirected graph: directions, duplicate
    edges and self-loops do not change it. ``options``: any of :class:`dtri.Options` (in a
    ``session``, those that shape the input and the plan). Without a session the graph opens
    its own, which :meth:`PreparedGraph.release` (or the end of a ``with`` block) closes."""
    edges = user_edges(edges)
    if is_saved_graph(edges, options.get("storage_options")):
        saved = edges[0] if isinstance(edges, list | tuple) else edges  # alone or in a list
        return open_prepared(os.fspath(saved), session=session, **options)

    def prepared(session: Session, chosen: Options, owned: bool) -> GraphData:
        if chosen.checkpoint is not None:
            return prepare_with_checkpoint(edges, session, chosen, owned)
        read = read_source(edges, session, chosen, owned)
        return replace(prepare_graph(read.source, read.runtime, chosen),
                       input_identity=identity_if_known(edges, chosen))

    return graph_in_session(session, options, prepared)


def graph_in_session(session: Session | None, options: dict[str, Any],
                     make: Callable[[Session, Options, bool], GraphData]) -> PreparedGraph:
    """``make(session, chosen, owned)``'s graph in ``session`` (:func:`session_of`): a
    session of its own is closed if making fails, and with the graph otherwise."""
    session, chosen, owned = session_of(session, options)
    try:
        graph = make(session, chosen, owned)
    except BaseException:
        if owned:
            session.close()
        raise
    return PreparedGraph(replace(graph, exit_stack=session._stack) if owned else graph)


def identity_if_known(edges: Any, chosen: Options) -> dict[str, Any] | None:
    """What a saved graph records of its input (:func:`dtri.prepared.checkpoint.
    input_identity`, values not hashed), or ``None`` where the files are not seen here."""
    try:
        return input_identity(edges, chosen.storage_options)
    except (DtriError, OSError):
        return None


def prepare_with_checkpoint(edges: Any, session: Session, chosen: Options,
                            owned: bool) -> GraphData:
    """The prepared graph of a run with a checkpoint (``chosen.checkpoint``,
    :mod:`dtri.prepared.checkpoint`): opened from it where a run before saved it there (the
    ``prepare`` stage skipped), else prepared and saved there (the ``checkpoint`` stage).
    The checkpoint is refused before anything is read where it was made of other input, with
    other options or by another dtri."""
    identity = input_identity(edges, chosen.storage_options, hash_values=True)
    assert chosen.checkpoint is not None  # the caller's test
    checkpoint = Checkpoint.open(chosen.checkpoint, identity, chosen)
    try:
        graph = prepared_in_checkpoint(edges, session, chosen, owned, identity, checkpoint)
    except BaseException:
        checkpoint.close()
        raise
    return replace(graph, checkpoint=checkpoint)  # the graph's release lets go of its lock


def prepared_in_checkpoint(edges: Any, session: Session, chosen: Options, owned: bool,
                           identity: dict[str, Any] | None,
                           checkpoint: Checkpoint) -> GraphData:
    """The prepared graph of ``checkpoint``, opened, or prepared and saved there."""
    if checkpoint.has_prepared():
        metadata = saved_metadata(checkpoint.prepared_url, chosen)
        runtime = session.open(input_on_gpu(edges), metadata["edges"], one_input=owned)
        graph = open_saved(checkpoint.prepared_url, runtime, chosen, metadata)
        saved = float(metadata["seconds"].get("prepare_total", 0.0))
        graph.resumed["prepare"] = {"seconds": saved}
        resumed_line("prepare", saved, chosen.progress)
    else:
        read = read_source(edges, session, chosen, owned)
        graph = replace(prepare_graph(read.source, read.runtime, chosen),
                        input_identity=identity)
        timer = graph.timer()
        with timer.timed("checkpoint"):
            graph.save(checkpoint.prepared_url)
        graph.seconds["checkpoint"] = timer.seconds["checkpoint"]
    return graph


def open_prepared(path: str, *, session: Session | None = None,
                  **options: Any) -> PreparedGraph:
    """A graph saved by :meth:`PreparedGraph.save` (or ``dtri prepare INPUT -o PATH``), read
    onto the workers without preparing it again: each partition by a task on the worker that
    keeps it, on either backend and any number of workers. ``options`` as for
    :func:`prepare`; those that would shape the graph otherwise than it was saved (another
    ``orientation`` or ``order``, a way of reading edges) are refused, as are a missing or
    damaged file and an unknown format version (:mod:`dtri.prepared.saved`)."""
    def opened(session: Session, chosen: Options, owned: bool) -> GraphData:
        metadata = saved_metadata(path, chosen)
        checkpoint = None if chosen.checkpoint is None else Checkpoint.open(
            chosen.checkpoint, input_identity(path, chosen.storage_options, hash_values=True),
            chosen)  # for the analytics' stages: the graph is prepared
        try:
            runtime = session.open(False, metadata["edges"], one_input=owned)
            graph = open_saved(path, runtime, chosen, metadata)
        except BaseException:
            if checkpoint is not None:
                checkpoint.close()
            raise
        return replace(graph, checkpoint=checkpoint)

    return graph_in_session(session, options, opened)


def session_of(session: Session | None, options: dict[str, Any]
               ) -> tuple[Session, Options, bool]:
    """The session a call runs in (``session``, or its own, opened from ``options``), the
    options of the call (in a given session, its options with ``options`` of the input and
    the plan; those of the session itself are refused) and whether the session is the
    call's own, to close when it is done."""
    owned = session is None
    if not owned and (runtime_options := sorted(set(options) & RUNTIME_OPTIONS)):
        raise ConfigurationError(f"{runtime_options[0]} is an option of the session: give it "
                                 "to dtri.Session(...)")
    session = session or Session(**options)
    return session, Options.of(session.options, **(options if not owned else {})), owned


class ReadSource(NamedTuple):
    """An input as the read stage will produce it, not read yet."""

    source: Any
    """An in-process run's list of (delayed) :class:`~dtri.input.edges.EdgeArrays`, or a Dask
    DataFrame of ``src``, ``dst``."""
    runtime: Runtime
    rows: int | None
    """The input's rows from the read plan (``None``: unknown before it is read)."""
    estimated: bool
    """Whether :attr:`rows` is a high estimate (text files, from their sizes)."""


def read_source(edges: Any, session: Session, chosen: Options, owned: bool) -> ReadSource:
    """Open the session's runtime for ``edges`` and plan their read: what the preparation (or
    an estimate that samples as it reads) takes as its input."""
    on_gpu = input_on_gpu(edges)
    opening = session.runtime is None
    local = local_input(edges, chosen) if session.local else None  # a generated graph's: lazy
    decision = decide_run(session.options, on_gpu, local.rows if local is not None else
                          known_rows(edges), BYTES_PER_EDGE_IN_FLIGHT, owned) if opening else None
    if isinstance(edges, GeneratedGraph) and (decision.on_this_machine if decision is not None
                                              else session.local):
        edges.check_fits(*machine_room(chosen))
    given = decision.given if decision is not None else None
    early_plan, early_rows = None, _task_rows(given.per_task if given else None)
    if given is not None:  # the budget checked before a cluster
        if local is None:
            early_plan = read_plan(edges, chosen, early_rows)
        # text files' rows are estimated from their sizes; Parquet's (no parts) are known
        rows, estimated = (local.rows, is_path_like(edges) and bool(local.parts)) \
            if local is not None else planned_rows(edges, early_plan)
        check_budget(rows, estimated, given)
    runtime = session._open_by(decision) if decision is not None else session.open()
    if local is not None and local.parts and runtime.client is None:
        return ReadSource(local.on(runtime.backend), runtime, local.rows, is_path_like(edges))
    max_rows = _task_rows(runtime.budget.per_task)
    plan = early_plan if early_plan is not None and max_rows == early_rows \
        else read_plan(edges, chosen, max_rows)
    rows, estimated = planned_rows(edges, plan)
    check_budget(rows, estimated, runtime.budget, runtime)
    if runtime.client is None \
            and (parts := parquet_arrays(plan, chosen.storage_options, runtime.backend)):
        return ReadSource(parts, runtime, rows, estimated)
    source = as_edge_frame(edges, runtime.backend, columns=chosen.columns,
                           npartitions=chosen.npartitions, max_rows=max_rows,
                           files_on_host=runtime.staging.on_host, plan=plan,
                           **(chosen.read_options() if is_path_like(edges) else {}))
    return ReadSource(source, runtime, rows, estimated)


def _task_rows(task_budget: int | None) -> int | None:
    """The input rows one task of ``task_budget`` bytes may read (``None``: no budget)."""
    return None if task_budget is None else max(1, task_budget // BYTES_PER_EDGE_IN_FLIGHT)


@overload
def count(edges: Any, *, explain: Literal[False] = False, approx: Literal[False] = False,
          **options: Any) -> CountResult: ...
@overload
def count(edges: Any, *, explain: bool = False, approx: Approx | dict | bool = False,
          **options: Any) -> CountResult | Estimate | EstimatePlan: ...


def count(edges: Any, *, explain: bool = False, approx: Approx | dict | bool = False,
          **options: Any) -> CountResult | Estimate | EstimatePlan:
    """Count the triangles of an undirected graph exactly, with the run's statistics.

    ``edges`` and ``options`` as for :func:`prepare` (:class:`dtri.Options`: ``backend``,
    ``scheduler``, ``memory_budget``, ``rmm_pool_size``, ``staging``, ``orientation``,
    ``join``, ``bins``, ...). The result's ``plan`` holds the counting phase's plan with
    estimates of each task kind's peak memory and of the bytes moved between workers;
    ``explain=True`` stops after planning (the input is read, oriented and sorted, no wedge is
    written) and ``triangles`` is ``None``.

    ``approx``: estimate instead of counting: ``True``, or a :class:`dtri.Approx` / dict of
    its ``error``, ``confidence``, ``samples``, ``seconds`` (a time budget), ``seed``,
    ``average_clustering``, ``method``;
    the result is then an :class:`~dtri.analytics.estimate.Estimate` with intervals. The
    method is chosen here, from the input's rows in the read plan
    (:func:`dtri.analytics.colours.choose_method`): colourful sampling filters the input as
    it is read and prepares only the sample; wedge sampling prepares the graph
    (:meth:`PreparedGraph.estimate`). With ``explain=True`` the result is the
    :class:`~dtri.analytics.colours.EstimatePlan` instead: the method, why, and what it would
    sample, with nothing sampled or counted."""
    wanted = None if approx is False or approx is None else Approx.of(approx)  # checked now
    edges = user_edges(edges)
    if wanted is None:
        with prepare(edges, **options) as graph:
            return graph.count(explain=explain)
    if is_saved_graph(edges, options.get("storage_options")):  # prepared: wedges sampled
        if explain:
            raise ConfigurationError("an estimate's plan is made from the input as it is "
                                     "read; a saved graph is estimated directly (leave out "
                                     "--explain)")
        with prepare(edges, **options) as graph:
            return graph.estimate(**asdict(wanted))
    session, chosen, owned = session_of(options.pop("session", None), options)
    try:
        read = read_source(edges, session, chosen, owned)
        return estimate_input(read.source, read.runtime, chosen, wanted, read.rows,
                              read.estimated, explain=explain)
    finally:
        if owned:
            session.close()


def count_triangles(edges: Any, **options: Any) -> int:
    """Exact number of triangles of the undirected graph ``edges`` (see :func:`count`). An
    estimate or a plan is :func:`count`'s (``approx``, ``explain``): asked for here, it is
    refused."""
    asked = [name for name in ("approx", "explain") if options.get(name)]
    if asked:
        raise ConfigurationError(f"count_triangles gives the exact count only; for "
                                 f"{' and '.join(asked)} call dtri.count")
    return count(edges, **options).triangles


CLUSTERING_PARTITION_ROWS = 1 << 22
"""Rows per partition of an in-memory edge table given to :func:`clustering`."""


def clustering(edges: Any, *, weight: str | None = None, directed: bool = False,
               **options: Any) -> dd.DataFrame:
    """Local clustering of an edge table, weighted and directed as NetworkX defines them.

    ``edges`` is a Dask, pandas or cuDF DataFrame with ``src`` and ``dst`` columns (and the
    ``weight`` column). ``weight``: the geometric mean of each triangle's weights, normalised
    by the largest weight. ``directed``: Fagiolo's directed clustering. A later row of the same
    edge (the same pair undirected, the same arc directed) replaces an earlier one, as in a
    ``networkx.Graph``; self-loops count only for the largest weight. Unweighted undirected
    clustering is :meth:`PreparedGraph.clustering`'s, which is quicker.

    The triangles are those of :meth:`PreparedGraph.list_triangles`: the simple undirected
    graph of the rows is prepared (``options`` as for :func:`prepare`, ``session`` too; a Dask
    DataFrame without them runs where Dask would compute it: on the active
    ``distributed.Client``, else on Dask's threads in this process), its triangles listed,
    and the values of each triangle's pairs attached by Dask merges
    (:mod:`dtri.analytics.weighted`).

    Returns a Dask DataFrame indexed by vertex (every vertex of the rows): ``t`` (NetworkX's:
    twice its triangles' weights), ``degree`` (directed: in plus out), ``reciprocal``
    (directed only: neighbours both ways) and ``clustering``. It is computed before the
    prepared graph is released: into this process, or, in a ``session`` on a cluster,
    persisted on its workers."""
    import dask.dataframe as dd

    from dtri.analytics.weighted import clustering_frame

    needed = {"src", "dst"} | ({weight} if weight is not None else set())
    if not hasattr(edges, "columns") or not needed <= set(edges.columns):
        raise InputError(f"clustering takes a DataFrame with columns {sorted(needed)}")
    session = options.pop("session", None)
    source = edges[["src", "dst"]]
    if isinstance(edges, dd.DataFrame):
        if session is None and not set(options) & RUNTIME_OPTIONS and active_client() is None:
            options["scheduler"] = "threads"  # where Dask computes a frame: no cluster started
    else:
        edges = dd.from_pandas(edges, sort=False,
                               npartitions=max(1, -(-len(edges) // CLUSTERING_PARTITION_ROWS)))
    with prepare(source, session=session, **options) as graph:
        frame = clustering_frame(graph.data, edges, weight, directed)
        if session is not None and graph.runtime.client is not None:
            from distributed import wait

            # on the session's workers, which outlive the graph; unfused: Dask's blockwise
            # fusion re-tokenizes the shared subexpressions (the pairs feed every merge) and
            # took 2-15 s of a small graph's 3-16 s on a cluster
            persisted = frame.persist(fuse=False)
            wait(persisted)
            return persisted
        return dd.from_pandas(frame.compute(), npartitions=frame.npartitions, sort=False)


def write_triangles(edges: Any, output: str, *, limit: int | None = None,
                    vertices: Iterable[int] | None = None, **options: Any) -> int:
    """Write every triangle of the undirected graph ``edges`` (see :func:`count`) once, as
    input ids ``a < b < c``, to Parquet at ``output`` (``dtri list -o``;
    :meth:`PreparedGraph.write_triangles`: ``limit``, ``vertices``). ``output`` is checked
    before the input is read. Returns the rows written."""
    with reserve_output(output) as folder, prepare(edges, **options) as graph:
        return graph.write_triangles(folder, limit=limit, vertices=vertices)


def profile(edges: Any, *, output: str | None = None, graphlets: bool = False,
            title: str | None = None, **options: Any) -> Profile:
    """The profile of a graph (:meth:`PreparedGraph.profile`): ``edges`` and ``options`` as
    for :func:`prepare` (a :class:`PreparedGraph` is profiled as it is, and kept). With
    ``output`` (a folder, absent or empty) it also writes one HTML page of the numbers and
    figures (SVG inside it, no JavaScript) and ``profile.json`` beside it, renamed into place
    when complete; that needs matplotlib (``pip install "dtri[report]"``), checked before the
    input is read. ``title``: the page's (default: the input)."""
    from dtri.output import reserved_output
    from dtri.profile_page import require_matplotlib, write_page

    if isinstance(edges, PreparedGraph) and options:
        raise ConfigurationError(f"{sorted(options)[0]} shapes a graph as it is prepared: give "
                                 "it to dtri.prepare, not with a prepared graph")
    if output is not None:
        require_matplotlib()
    with reserved_output(output) as folder:
        if isinstance(edges, PreparedGraph):
            result = edges.profile(graphlets)
        else:
            with prepare(edges, **options) as graph:
                result = graph.profile(graphlets)
        if folder is not None:
            result.output = write_page(result, folder, title or page_title(edges))
    return result


def page_title(edges: Any) -> str:
    """A profile page's default title: the input as given."""
    if isinstance(edges, GeneratedGraph):
        return (f"dtri profile: {edges.kind}:{edges.params[0]} ({edges.edges:,} edges, seed "
                f"{edges.seed})")
    if is_path_like(edges) or isinstance(edges, list | tuple):
        names = [os.fspath(e) for e in (edges if isinstance(edges, list | tuple) else [edges])]
        return "dtri profile: " + " ".join(names)
    return "dtri profile"


def write_generated(spec: str, output: str, *, seed: int = 0, partitions: int | None = None,
                    format: str = "parquet", backend: str = "cpu", scheduler: str = "threads",
                    scheduler_file: str | None = None) -> int:
    """Write the edge list of the generated graph ``spec`` (``rmat:SCALE[:EDGE_FACTOR]`` or
    ``gnm:N:M``, :func:`dtri.generated`) to the folder ``output``, one file per partition
    (``partitions``; default: at most 16 Mi edges each), as ``format``: ``parquet``
    (``src, dst`` int64 columns), ``snap`` (``src dst`` lines) or ``csv`` (with a header).
    The edges are the same for a ``spec`` and ``seed`` whatever the partitions and the
    ``backend`` (``cpu``, ``gpu`` or ``auto``). ``output`` must not exist or be empty; it is
    written beside its name and renamed into place when complete (``dtri generate``). Returns
    the number of files written."""
    from dtri.input.generate import from_spec
    from dtri.runtime.resolve import choose_backend

    if format not in GENERATED_FORMATS:
        raise ConfigurationError(f"format must be one of {', '.join(GENERATED_FORMATS)}, got "
                                 f"{format!r}")
    with reserve_output(output) as folder:
        chosen = choose_backend(backend, False)[0]
        frame = from_spec(spec, seed=seed, npartitions=partitions, backend=chosen)
        options = Options(backend=chosen, scheduler=None if scheduler_file else scheduler,
                          scheduler_file=scheduler_file)
        with open_runtime(options):
            if format == "parquet":
                folder.write_parquet(frame)
            else:
                # Text is written from pandas: cuDF partitions are copied to the host first.
                text = frame.to_backend("pandas") if chosen.on_gpu else frame
                suffix = "txt" if format == "snap" else "csv"
                text.to_csv(f"{folder.temporary}/part-*.{suffix}",
                            name_function=lambda i: f"{i:05d}", index=False,
                            sep=" " if format == "snap" else ",", header=format == "csv")
                folder.commit()
    return frame.npartitions
