"""The preparation stages as array pieces: exchanges, work-balanced source ranges, empty
partitions (CPU; the GPU runs the same functions on CuPy in tests/gpu/test_gpu.py)."""

from __future__ import annotations

import itertools

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dtri
from dtri.input.frames import as_edge_frame
from dtri.kernels.bins import split_by_bounds
from dtri.kernels.canonicalize import partition_vertices
from dtri.kernels.counting import add_counts
from dtri.kernels.csr import as_csr, edge_window
from dtri.kernels.orient import (
    intersection_work,
    join_edge_cost,
    rank_and_order,
    source_bounds,
    wedge_work,
)
from dtri.prepared.inputs import (
    BYTES_PER_EDGE_IN_FLIGHT,
    MIN_ROWS_PER_PARTITION,
    fitted_partitions,
    held_partitions,
    input_groups,
    input_placement,
    persisted_partitions,
    read_inputs,
    task_slots,
    vertex_fan_in,
)
from dtri.prepared.local import prepare_partition
from dtri.runtime.opened import Runtime
from tests.oracles import (
    check_vertex_results,
    edge_copies_in_every_partition,
    networkx_graph,
    networkx_triangles,
)


@given(st.lists(st.integers(0, 99), max_size=200), st.integers(1, 6))
def test_split_by_bounds_sends_each_value_to_its_range_once(values, parts):
    values = np.asarray(values, dtype=np.int64)
    bounds = [100 * j // parts for j in range(parts + 1)]  # even ranges of 0..99
    pieces = split_by_bounds(values * 7, values, bounds)
    assert sorted(pieces) == list(range(parts))  # every receiver gets a piece, maybe empty
    for j, piece in pieces.items():
        assert ((piece // 7 >= bounds[j]) & (piece // 7 < bounds[j + 1])).all()
    assert sorted(np.concatenate(list(pieces.values())).tolist()) == sorted((values * 7).tolist())


@given(st.lists(st.integers(0, 300), min_size=1, max_size=300), st.integers(1, 8))
def test_source_bounds_even_out_edges_plus_wedges(out_degree, parts):
    out_degree = np.asarray(out_degree, dtype=np.int64)
    bounds = source_bounds(wedge_work(out_degree), parts)
    assert bounds[0] == 0 and bounds[-1] == len(out_degree) and len(bounds) == parts + 1
    assert all(a <= b for a, b in itertools.pairwise(bounds))
    work = out_degree + out_degree * (out_degree - 1) // 2
    largest = int(work.max())
    for j in range(parts):  # each range within one source's work of the fair share
        assert work[bounds[j]: bounds[j + 1]].sum() <= work.sum() / parts + largest


def test_the_heaviest_sources_are_spread_over_the_ranges():
    """A star-heavy degree list: ranges by work, not by vertex count."""
    out_degree = np.array([1] * 1000 + [200] * 4, dtype=np.int64)
    bounds = source_bounds(wedge_work(out_degree), 4)
    assert bounds[1] >= 1000  # the 1000 light sources share one range with a heavy one


def test_intersection_work_is_an_edge_cost_plus_the_expected_search_steps():
    """Source 0 points at 1, 2, 3 (out-degree 3); 1 -> 2 and 1 -> 3; 2 -> 3."""
    keys = np.array([(0 << 2) | 1, (0 << 2) | 2, (0 << 2) | 3, (1 << 2) | 2, (1 << 2) | 3,
                     (2 << 2) | 3], dtype=np.int64)
    out_degree = np.array([3, 2, 1, 0], dtype=np.int64)

    def expected(cost: float) -> list[float]:
        def edge(later, target):  # shorter × log2(longer + 1), plus the per-edge cost
            return cost + min(later, target) * np.log2(max(later, target) + 1)

        return [edge(1, 2) + edge(1, 1) + edge(1, 0), edge(0.5, 1) + edge(0.5, 0), edge(0, 0), 0]

    assert np.allclose(intersection_work(keys, out_degree, 4),
                       expected(join_edge_cost(False, 4)))
    # 4 vertices: the marks kernel's cost; the hash kernel's where the count takes it
    with dask.config.set({"dtri.kernel-tuning": {"join-edge-cost-marks": 3.5,
                                                 "join-edge-cost-cpu": 2.5,
                                                 "join-edge-cost-gpu": 1.5}}):
        assert np.allclose(intersection_work(keys, out_degree, 4), expected(3.5))
        with dask.config.set({"dtri.cpu-kernel": "hash"}):
            assert np.allclose(intersection_work(keys, out_degree, 4), expected(2.5))


def test_intersection_work_balances_hubs_by_their_short_lists():
    """A hub with many wedges but sink targets costs its edges, not C(d, 2): the cut moves
    past the hub into the light sources that follow it."""
    light = np.arange(1, 1201)
    keys = np.concatenate([(0 << 12) | (3300 + np.arange(400)),  # hub 0 -> 400 sinks
                           (light << 12) | (2000 + light)])  # 1200 sources, one sink each
    out_degree = np.bincount(keys >> 12, minlength=1 << 12)
    by_wedges = source_bounds(wedge_work(out_degree), 2)
    by_intersection = source_bounds(intersection_work(keys, out_degree, 1 << 12), 2)
    assert by_wedges[1] == 1  # C(400, 2) wedges outweigh everything else
    assert by_intersection[1] == 401  # 400 for the hub + 400 light sources = half of 1600


def test_prepare_partition_orients_low_to_high_rank():
    frame = pd.DataFrame({"src": [10, 20, 30, 10, 10**15], "dst": [20, 30, 10, 10, 10]})
    part, vertices, ids, degree, orientation, reason = prepare_partition(frame, "degree")
    assert (orientation, reason) == ("degree", "degree (as given)")
    assert vertices == 4  # 10, 20, 30, 10**15 (the self-loop adds no edge, 10 no vertex)
    src, dst = edge_window(as_csr(part), 0, as_csr(part).edges)
    assert len(src) == 4 and (src < dst).all()
    assert partition_vertices(frame).tolist() == [10, 20, 30, 10**15]
    # by rank (degree, then id): 10**15 (degree 1), 20, 30 (2 each), 10 (3)
    assert ids.tolist() == [10**15, 20, 30, 10] and degree.tolist() == [1, 2, 2, 3]


def test_what_a_graph_caches_is_made_once_and_let_go_with_the_graph():
    made = []

    def make() -> int:
        made.append(len(made))
        return len(made)

    triangle = np.array([[0, 1], [1, 2], [2, 0]])
    with dtri.prepare(triangle, backend="cpu", scheduler="synchronous") as graph:
        assert (graph.cached("probe", make), graph.cached("probe", make)) == (1, 1)
        assert graph.cached("other", make) == 2 and made == [0, 1]
        assert graph.triangles() is graph.triangles()  # the analytics cache through it
        assert graph.triangles().compute().tolist() == [1, 1, 1]
    assert graph.cache == {}


def numpy_prepared(frame, orientation: str, limit: int | None = None) -> tuple:
    """:func:`prepare_partition` by its NumPy path (numba's one-pass kernel left out)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("dtri.prepared.local.prepare_marked_on_cpu", lambda *args: None)
        return prepare_partition(frame, orientation, limit)


def assert_same_preparation(found: tuple, expected: tuple) -> None:
    """The same CSR (arrays, dtypes, range), vertices, ids and degrees by rank, orientation
    and reason."""
    (part, *rest), (their_part, *theirs) = found, expected
    assert len(part) == len(their_part)
    for mine, other in zip([*part, *rest], [*their_part, *theirs], strict=True):
        if isinstance(mine, np.ndarray):
            assert mine.dtype == other.dtype
            np.testing.assert_array_equal(mine, other)
        else:
            assert mine == other


@settings(max_examples=60, deadline=None)
@given(pairs=st.lists(st.tuples(st.integers(0, 300), st.integers(0, 300)), min_size=1,
                      max_size=500),
       orientation=st.sampled_from(["auto", "degree", "id"]),
       limit=st.sampled_from([None, 1, 4]))
def test_the_one_pass_kernel_prepares_as_the_numpy_path_does(pairs, orientation, limit):
    """numba's one-pass preparation (:func:`dtri.kernels.prepare.cpu.prepare_marked`) gives the
    NumPy path's CSR, ranks, ids, degrees and orientation, duplicates, both directions and
    self-loops included; ``auto`` past the list limit takes the peeling by the NumPy path."""
    import dtri.kernels.prepare.cpu  # noqa: F401  (numba's kernels loaded: the kernel's rule)
    from dtri.input.edges import EdgeArrays
    from dtri.prepared.local import prepare_marked_on_cpu

    ids = np.array(pairs, dtype=np.int64)
    frame = EdgeArrays(ids[:, 0].copy(), ids[:, 1].copy())
    fused = prepare_marked_on_cpu(frame, orientation, limit)
    expected = numpy_prepared(frame, orientation, limit)
    assert (fused is None) == (expected[4] == "adirection")
    assert_same_preparation(prepare_partition(frame, orientation, limit), expected)


def test_the_one_pass_kernel_runs_where_it_applies_and_counts_as_networkx(monkeypatch):
    """The kernel prepares marked ids in a process with numba's kernels, and counts cliques,
    a star, a hub and self-loops as NetworkX does; sparse ids (not marked), negative ids,
    the adirection orientation and a process without numba's kernels take the NumPy path."""
    import dtri.kernels.prepare.cpu
    from dtri.input.edges import EdgeArrays
    from dtri.prepared.local import prepare_marked_on_cpu
    from tests.kernels.test_marks_cpu import CASES

    calls = []
    kernel = dtri.kernels.prepare.cpu.prepare_marked
    monkeypatch.setattr(dtri.kernels.prepare.cpu, "prepare_marked",
                        lambda *args: calls.append(args) or kernel(*args))
    for name, edges in {**CASES, "loops": np.array([[0, 0], [1, 2], [2, 1], [2, 2], [3, 1],
                                                    [3, 2]])}.items():
        calls.clear()
        result = dtri.count(edges, backend="cpu")
        assert calls and result.triangles == networkx_triangles(edges), name
    edges = CASES["K12"]
    frame = EdgeArrays(edges[:, 0] * 10**12, edges[:, 1])
    assert prepare_marked_on_cpu(frame, "auto") is None  # ids far beyond 8 bytes an id
    assert prepare_marked_on_cpu(EdgeArrays(edges[:, 0] - 1, edges[:, 1]), "auto") is None
    assert prepare_marked_on_cpu(EdgeArrays(edges[:, 0], edges[:, 1]), "adirection") is None
    monkeypatch.setattr("dtri.prepared.local.compiled_kernels_ready", lambda items=None: False)
    assert prepare_marked_on_cpu(EdgeArrays(edges[:, 0], edges[:, 1]), "auto") is None


def _with_empty_partitions(edges: np.ndarray) -> dd.DataFrame:
    frame = pd.DataFrame({"src": edges[:, 0], "dst": edges[:, 1]})
    empty = frame.iloc[:0]
    pieces = [empty, frame.iloc[: len(frame) // 2], empty, frame.iloc[len(frame) // 2:], empty]
    return dd.from_delayed([dask.delayed(p) for p in pieces], meta=empty)


@pytest.mark.parametrize("join", ["wedges", "intersect"])
def test_empty_input_partitions_count_exactly(join):
    rng = np.random.default_rng(5)
    edges = rng.integers(0, 300, size=(3_000, 2))
    result = dtri.count(_with_empty_partitions(edges), backend="cpu", scheduler="synchronous",
                        npartitions=5, join=join, memory_budget="32KiB")
    assert result.partitions == 5
    assert result.triangles == networkx_triangles(edges)


@settings(max_examples=10, deadline=None)
@given(st.integers(4, 9))
def test_more_partitions_than_edges(partitions):
    """Receivers with nothing to receive: empty pieces, empty sorted partitions, empty bins."""
    rows = [pd.DataFrame({"src": [u], "dst": [v]}) for u, v in ((0, 1), (1, 2), (2, 0))]
    rows += [rows[0].iloc[:0]] * (partitions - 3)
    frame = dd.from_delayed([dask.delayed(r) for r in rows], meta=rows[0].iloc[:0])
    result = dtri.count(frame, backend="cpu", scheduler="synchronous", npartitions=partitions)
    assert result.triangles == 1 and result.partitions == partitions


def test_a_partition_too_big_for_one_task_is_split_before_the_exchange():
    """One input partition of 3000 edges × 128 B in flight against a 32 KiB budget: it is
    cut into budget-sized pieces, and as many sorted partitions come out."""
    rng = np.random.default_rng(7)
    edges = rng.integers(0, 400, size=(3_000, 2))
    frame = pd.DataFrame({"src": edges[:, 0], "dst": edges[:, 1]})
    result = dtri.count(frame, backend="cpu", scheduler="synchronous", memory_budget="32KiB")
    assert result.partitions == -(-3_000 * 128 // (32 << 10))
    assert result.triangles == networkx_triangles(edges)


@pytest.mark.parametrize("inputs, parts", [(7, 2), (2, 5), (6, 1)])
def test_any_number_of_input_partitions_feeds_any_number_of_sorted_ones(inputs, parts):
    rng = np.random.default_rng(inputs * 10 + parts)
    edges = rng.integers(0, 200, size=(2_000, 2))
    frame = dd.from_pandas(pd.DataFrame({"src": edges[:, 0], "dst": edges[:, 1]}),
                           npartitions=inputs)
    result = dtri.count(frame, backend="cpu", scheduler="synchronous", npartitions=parts)
    assert frame.npartitions == inputs and result.partitions == parts
    assert result.triangles == networkx_triangles(edges)


def test_input_groups_keep_each_worker_s_partitions_together_within_the_limit():
    rows = [5, 5, 5, 5, 5, 5, 30]
    holders = ["a", "b", "a", "b", "a", None, "a"]
    groups = input_groups(rows, holders, limit=10)
    assert groups == [[0, 2], [4], [6], [1, 3], [5]]  # by holder, index order, <= 10 rows
    assert sorted(p for group in groups for p in group) == list(range(len(rows)))


def test_input_placement_names_the_worker_of_each_persisted_partition():
    from distributed import Client, LocalCluster, wait

    frame = dd.from_pandas(pd.DataFrame({"src": range(100), "dst": range(1, 101)}),
                           npartitions=6)
    with (LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                       dashboard_address=":0") as cluster, Client(cluster) as client):
        (persisted,) = dask.persist(frame)
        wait(persisted)
        partitions = persisted_partitions(persisted)
        assert [part.result().src.tolist() for part in partitions] == [
            part.src.tolist() for part in dask.compute(*frame.to_delayed())]  # in order
        holders, sizes = input_placement(partitions, Runtime("cpu", client, 2, 1, 1 << 30))
        assert all(size > 0 for size in sizes)  # the scheduler knows each partition's bytes
        held = client.run(lambda dask_worker: list(dask_worker.data))
        assert len(set(holders)) == 2  # both workers hold some
        for part, holder in zip(partitions, holders, strict=True):
            assert part.key in held[holder]  # that worker holds the partition
        assert persisted_partitions(frame) is None  # not persisted: no futures
        # an edge frame as it is stays persisted: its partitions need no alias tasks
        assert persisted_partitions(as_edge_frame(persisted, "cpu")) is not None
        # a frame made from it has its futures but other partitions: read as itself
        assert persisted_partitions(persisted[persisted.src % 3 != 0]) is None
        assert held_partitions(persisted) is None  # futures, not values held in this process


def test_an_input_is_read_in_blocks_one_per_worker_and_stays_persisted():
    """Left to the scheduler, quick reads pile up on the worker that is free first."""
    from distributed import Client, LocalCluster

    from dtri.prepared.inputs import spread_persist
    from dtri.runtime.timer import StageTimer

    frame = dd.from_pandas(pd.DataFrame({"src": range(100), "dst": range(1, 101)}),
                           npartitions=7)
    with (LocalCluster(n_workers=3, threads_per_worker=1, processes=False,
                       dashboard_address=":0") as cluster, Client(cluster) as client):
        workers = tuple(sorted(client.nthreads()))
        spread = spread_persist(frame.optimize(), workers, StageTimer(client))
        partitions = persisted_partitions(spread)
        assert partitions is not None  # a persisted frame, as persist gives
        holders, _ = input_placement(partitions, Runtime("cpu", client, 3, 1, 1 << 30))
        assert holders == [workers[w] for w in (0, 0, 1, 1, 2, 2, 2)]
        assert spread.compute().equals(frame.compute())
        assert dtri.count_triangles(spread) == 0


def test_a_frame_made_from_a_persisted_frame_is_counted_as_itself():
    """Two triangles sharing the edge 0-1; without vertex 3 only one is left."""
    from distributed import Client, LocalCluster

    import dtri

    edges = pd.DataFrame({"src": [0, 1, 2, 0, 1], "dst": [1, 2, 0, 3, 3]})
    with (LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                       dashboard_address=":0") as cluster, Client(cluster) as client):
        persisted = client.persist(dd.from_pandas(edges, npartitions=2))
        assert dtri.count_triangles(persisted) == 2
        assert dtri.count_triangles(persisted[persisted.dst != 3]) == 1
        assert dtri.count_triangles(persisted[["src", "dst"]]) == 2


def persisted_here(edges: np.ndarray, npartitions: int) -> dd.DataFrame:
    """``edges`` as a Dask frame persisted in this process (by the synchronous scheduler):
    its graph holds its partitions' values."""
    frame = dd.from_pandas(pd.DataFrame({"src": edges[:, 0], "dst": edges[:, 1]}),
                           npartitions=npartitions, sort=False)
    (persisted,) = dask.persist(frame.optimize(), scheduler="synchronous")
    return persisted


def spied_dask_runs(monkeypatch) -> list[str]:
    """The names of Dask's ``persist`` and ``compute`` as they are called from now on."""
    calls: list[str] = []
    for name in ("persist", "compute"):
        real = getattr(dask, name)

        def spy(*args, _real=real, _name=name, **kwargs):
            calls.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(dask, name, spy)
    return calls


def test_a_frame_persisted_in_this_process_is_read_in_process_as_it_is(monkeypatch):
    """Persisting it again named the copy by hashing every byte of its partitions (0.29 s of
    R-MAT 21); the read stage now takes the values its graph holds, running no Dask."""
    from dtri.options import Options
    from dtri.runtime.session import open_runtime

    edges = np.random.default_rng(5).integers(0, 60, size=(600, 2))
    persisted = persisted_here(edges, 4)
    layer, keys = persisted.expr.operand("layer"), persisted.expr.operand("keys")
    assert held_partitions(persisted) == [layer[key] for key in keys]
    assert held_partitions(persisted.optimize()) is not None  # lowering keeps it as it is
    assert held_partitions(as_edge_frame(persisted, "cpu")) is not None
    frame = dd.from_pandas(pd.DataFrame({"src": edges[:, 0], "dst": edges[:, 1]}),
                           npartitions=4)
    assert held_partitions(frame) is None  # not persisted
    assert held_partitions(persisted[persisted.src % 3 != 0]) is None  # made from it
    with open_runtime(Options(backend="cpu", scheduler="synchronous")) as runtime:
        calls = spied_dask_runs(monkeypatch)
        timer = runtime.timer()
        inputs = read_inputs(persisted, runtime, runtime.tasks(), timer,
                             runtime.budget.per_task)
        assert calls == []  # no second persist, no task computed
        assert all(part is layer[key]
                   for part, key in zip(inputs.partitions, keys, strict=True))
        assert inputs.rows == [len(layer[key]) for key in keys]
        assert inputs.frame is persisted and "read" in timer.seconds
    with open_runtime(Options(backend="cpu", scheduler="threads")) as runtime:
        calls = spied_dask_runs(monkeypatch)
        inputs = read_inputs(persisted, runtime, runtime.tasks(), runtime.timer(),
                             runtime.budget.per_task)
        assert "persist" not in calls  # the threads scheduler: its partitions, delayed
        assert all(dask.is_dask_collection(part) for part in inputs.partitions)
        assert inputs.rows == [len(layer[key]) for key in keys]


@pytest.mark.parametrize("scheduler", ["synchronous", "threads"])
def test_a_frame_persisted_in_this_process_counts_exactly_in_process(monkeypatch, scheduler):
    edges = np.random.default_rng(11).integers(0, 80, size=(900, 2))
    persisted = persisted_here(edges, 3)
    calls = spied_dask_runs(monkeypatch)
    result = dtri.count(persisted, backend="cpu", scheduler=scheduler)
    assert result.triangles == networkx_triangles(edges)
    assert result.workers == 1 and "read" in result.seconds
    if scheduler == "synchronous":
        assert "persist" not in calls  # the input as it is: nothing persisted again
    kept = persisted[persisted.src % 4 != 1]  # made from it: read through Dask, as before
    filtered = edges[edges[:, 0] % 4 != 1]
    assert dtri.count_triangles(kept, backend="cpu", scheduler=scheduler) == \
        networkx_triangles(filtered)


def test_add_counts_keeps_the_widest_dtype_whichever_partition_comes_first():
    """An empty partition's counts may come back as ints (CuPy's bincount) beside floats."""
    total = add_counts(np.zeros(3, dtype=np.int64), np.array([0.5, 1.0, 2.5]))
    assert total.dtype == np.float64 and total.tolist() == [0.5, 1.0, 2.5]


def test_narrow_counts_sum_in_int32_while_they_fit_and_in_int64_past_it():
    """The vertex-wide trees send int32 counts: a sum that passes 2**31 - 1 comes back int64,
    exact, and a bound past int32 keeps the counts as they are."""
    from dtri.kernels.counting import INT32_MAX, narrow_counts, wide_counts

    small = narrow_counts(np.array([1, 2, 3], dtype=np.int64), 3)
    assert small.dtype == np.int32
    assert add_counts(small, small).dtype == np.int32
    assert add_counts(small, small).tolist() == [2, 4, 6]
    big = narrow_counts(np.array([INT32_MAX, 1, 0], dtype=np.int64), INT32_MAX)
    total = add_counts(big, big, small)
    assert total.dtype == np.int64 and total.tolist() == [2 * INT32_MAX + 1, 4, 3]
    assert narrow_counts(np.zeros(2, dtype=np.int64), INT32_MAX + 1).dtype == np.int64
    assert add_counts(small[:0], small[:0]).dtype == np.int32
    assert wide_counts(small).dtype == np.int64


def test_float32_work_cuts_where_float64_work_does():
    """The fused join's work travels as float32; its prefix sums run in float64, so a long
    array of it cuts the sources where the float64 work does."""
    work = np.random.default_rng(0).pareto(1.5, 1 << 20) * 1024 + 1024
    assert source_bounds(work.astype(np.float32), 8) == source_bounds(work, 8)


def test_wedge_work_of_int32_out_degrees_does_not_overflow():
    out_degree = np.array([100_000, 2], dtype=np.int32)  # C(10**5, 2) > 2**31
    assert wedge_work(out_degree).tolist() == [100_000 + 100_000 * 99_999 // 2, 3]


def test_rank_order_inverts_the_ranks():
    degree = np.array([3, 1, 2], dtype=np.int64)  # dense 1 has the lowest degree: rank 0
    rank, order = rank_and_order(degree, "degree")
    assert rank.tolist() == [2, 0, 1] and order.tolist() == [1, 2, 0]
    assert rank.dtype == order.dtype == np.int32  # half the bytes sent to every sender
    assert rank_and_order(degree, "id") == (None, None)  # id orientation: rank = dense id


@pytest.mark.parametrize("workers", [1, 2, 3, 4])
def test_several_partitions_come_in_a_multiple_of_the_workers(workers):
    """Worker w owns partitions w, w + workers, ...: a count that is not a multiple would
    leave some workers more sorted edges, and more of the count, than others."""
    session = Runtime("gpu", None, workers, 1, 1 << 40)
    budget = 1 << 30
    for rows in [10, MIN_ROWS_PER_PARTITION - 1, MIN_ROWS_PER_PARTITION * 3,
                 budget // BYTES_PER_EDGE_IN_FLIGHT * 5 + 1, 1 << 31]:
        parts = fitted_partitions(rows, session, budget)
        assert parts * budget >= rows * BYTES_PER_EDGE_IN_FLIGHT  # each fits a task
        assert parts == 1 or parts % workers == 0
        assert parts == 1 or parts < -(-rows * BYTES_PER_EDGE_IN_FLIGHT // budget) + workers \
            or parts == workers
    assert fitted_partitions(10, session, budget) == 1  # tiny graphs take the one-task path


@pytest.mark.parametrize(("workers", "threads"), [(1, 4), (2, 2), (3, 8)])
def test_cpu_workers_threads_each_get_a_partition(workers, threads):
    """A CPU task's kernels take one thread, so a large enough graph gets a partition per
    thread of every worker, still in a multiple of the workers; a GPU worker's tasks share
    its one GPU, so its threads do not count."""
    budget = 1 << 36  # the budget holds the graph: only the slots ask for partitions
    rows = MIN_ROWS_PER_PARTITION * workers * threads
    cpu = Runtime("cpu", None, workers, threads, 1 << 40)
    assert task_slots(cpu) == workers * threads
    assert fitted_partitions(rows, cpu, budget) == workers * threads
    assert fitted_partitions(rows // threads, cpu, budget) == workers
    assert fitted_partitions(10, cpu, budget) == 1
    gpu = Runtime("gpu", None, workers, threads, 1 << 40)
    assert task_slots(gpu) == workers
    assert fitted_partitions(rows, gpu, budget) == workers


def test_vertex_trees_merge_fewer_arrays_when_they_approach_the_budget():
    """A tree over vertex-wide arrays (at most two 8-byte entries per edge) holds its inputs
    about three times over: small graphs keep the wide fan-in, large ones merge pairs."""
    from dtri.runtime.tasks import FAN_IN

    assert vertex_fan_in(1000, 1 << 30) == FAN_IN
    assert vertex_fan_in(1 << 24, 1 << 30) == 2  # 256 MiB per array, 3 GiB for a pair
    assert vertex_fan_in(1 << 20, 1 << 30) == 21  # 16 MiB per array, 48 MiB each
    for rows, budget in [(1, 1), (10**9, 1 << 20), (5000, 1 << 25)]:
        fan_in = vertex_fan_in(rows, budget)
        assert 2 <= fan_in <= FAN_IN
        assert fan_in == 2 or fan_in * 3 * 16 * rows <= budget


def test_pieces_are_picked_split_by_split():
    """Each pick carries a priority falling with its split's index, so a worker short of
    memory brings each stored split back once, not once per receiver."""
    from dtri.runtime.staging import Staging
    from dtri.runtime.tasks import Tasks

    tasks = Tasks(Staging())
    splits = {i: tasks.task("t", dict, key=(i,)) for i in (0, 2, 5)}
    picks = tasks.pick_pieces("t", splits, {0: [0, 1], 2: [1], 5: [0, 1, 2]})
    assert sorted(picks) == [(0, 0), (0, 1), (2, 1), (5, 0), (5, 1), (5, 2)]
    priority = {}
    for (i, j), pick in picks.items():
        layer = pick.__dask_graph__().layers[pick.key]
        priority[i, j] = layer.annotations["priority"]
    assert priority[0, 0] == priority[0, 1] > priority[2, 1] > priority[5, 0] == priority[5, 2]


@pytest.mark.parametrize("asked", [{"explain": True}, {"approx": True},
                                   {"approx": True, "explain": True}])
def test_count_triangles_refuses_an_estimate_or_a_plan(asked):
    """count_triangles returns the exact count, never a plan's or an estimate's missing one."""
    from dtri.errors import ConfigurationError

    triangle = np.array([[0, 1], [1, 2], [2, 0]])
    with pytest.raises(ConfigurationError, match=r"exact count only.*dtri\.count"):
        dtri.count_triangles(triangle, scheduler="synchronous", **asked)
    assert dtri.count_triangles(triangle, scheduler="synchronous") == 1



@pytest.mark.parametrize("workers", [2, 4])
def test_an_edge_held_by_several_senders_is_counted_once(workers):
    """Every edge is in every input partition, the partitions on different workers, so each
    is made unique by several senders and its copies meet only in the sort's exchange: the
    count, triangles and degree of every vertex and clustering equal NetworkX's."""
    from distributed import Client, LocalCluster, wait

    frames = edge_copies_in_every_partition()
    graph = networkx_graph(np.concatenate([f.to_numpy() for f in frames]))
    with (LocalCluster(n_workers=workers, threads_per_worker=1, processes=False,
                       dashboard_address=":0") as cluster, Client(cluster) as client):
        addresses = sorted(client.nthreads())
        parts = [client.scatter(frame, workers=[addresses[i % workers]])
                 for i, frame in enumerate(frames)]
        wait(parts)
        frame = dd.from_delayed(parts, meta=frames[0].iloc[:0], verify_meta=False)
        with dtri.prepare(frame, backend="cpu", npartitions=workers) as prepared:
            # the senders shared edges: the exact degrees are counted when first read, and a
            # count reads none, so its seconds have no degree stage
            assert prepared.counted_degree is None
            assert "degree" not in prepared.count().seconds
            assert "degree" not in prepared.moves().stage_bytes
            prepared.degree  # noqa: B018 (counted here)
            assert "degree" in prepared.count().seconds  # reported once, by the next result
            assert "degree" not in prepared.count().seconds
            check_vertex_results(prepared, graph)
            (degree,) = dask.compute(prepared.degree)  # summed in int32, read as int64
            assert degree.dtype == np.int64


READS: dict[int, int] = {}
"""How many times each input partition of :func:`_read_partition` was read (one process:
the workers below are threads)."""


def _read_partition(i: int) -> pd.DataFrame:
    READS[i] = READS.get(i, 0) + 1
    return edge_copies_in_every_partition()[i]


@pytest.mark.parametrize("setting, reads", [("always", 3), ("never", 1)])
def test_an_input_read_again_for_each_pass_is_never_persisted_and_counts_exactly(setting,
                                                                                 reads):
    """``dtri.recompute-input: always``: the rows, the vertex sets and the canonical keys
    each read every input partition (the messy copies of one graph, a sender each on two
    workers), nothing holds it between them, and every vertex's results equal NetworkX's;
    ``never`` reads each partition once and keeps it."""
    from distributed import Client, LocalCluster

    frames = edge_copies_in_every_partition()
    graph = networkx_graph(np.concatenate([f.to_numpy() for f in frames]))
    READS.clear()
    frame = dd.from_map(_read_partition, range(len(frames)), meta=frames[0].iloc[:0],
                        enforce_metadata=False)
    with (dask.config.set({"dtri.recompute-input": setting}),
          LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                       dashboard_address=":0") as cluster, Client(cluster),
          dtri.prepare(frame, backend="cpu", npartitions=2) as prepared):
        assert dict.fromkeys(range(len(frames)), reads) == READS
        check_vertex_results(prepared, graph)


def test_an_input_made_from_data_on_the_workers_is_not_read_again():
    """Partitions scattered to the workers cannot be read again (a copy of their tasks names
    keys no worker holds): under ``always`` such an input is kept, and counts exactly."""
    from distributed import Client, LocalCluster, wait

    frames = edge_copies_in_every_partition()
    edges = np.concatenate([f.to_numpy() for f in frames])
    with (dask.config.set({"dtri.recompute-input": "always"}),
          LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                       dashboard_address=":0") as cluster, Client(cluster) as client):
        parts = [client.scatter(frame) for frame in frames]
        wait(parts)
        frame = dd.from_delayed(parts, meta=frames[0].iloc[:0], verify_meta=False)
        assert dtri.count_triangles(frame[["src", "dst"]], backend="cpu",
                                    npartitions=2) == networkx_triangles(edges)


def test_the_input_is_read_again_on_gpu_workers_under_a_host_limit_only():
    from dtri.errors import ConfigurationError
    from dtri.prepared.inputs import recomputes_input
    from dtri.runtime.caps import MemoryCaps
    from dtri.runtime.host_plan import HostPlan

    client = object()
    caps = MemoryCaps(memory_limit=1 << 30)
    plan = HostPlan(1 << 30, 1 << 28, 1 << 28, 1 << 27, 1 << 27)
    cpu = Runtime("cpu", client, 2, 1, 1 << 30, caps=caps, host_plan=plan)
    gpu = Runtime("gpu", client, 1, 1, 1 << 30, caps=caps, host_plan=plan)
    unlimited = Runtime("gpu", client, 1, 1, 1 << 30, caps=caps)  # dask-cuda's own limit
    in_process = Runtime("gpu", None, 1, 1, 1 << 30, caps=caps, host_plan=plan)
    assert [recomputes_input(r) for r in (cpu, gpu, unlimited, in_process)] == [
        False, True, False, False]
    with dask.config.set({"dtri.recompute-input": "always"}):
        assert recomputes_input(cpu) and not recomputes_input(in_process)
    with dask.config.set({"dtri.recompute-input": "never"}):
        assert not recomputes_input(gpu)
    with dask.config.set({"dtri.recompute-input": "sometimes"}), \
            pytest.raises(ConfigurationError, match=r"dtri\.recompute-input must be one of"):
        recomputes_input(gpu)


def test_the_sort_balances_the_join_s_work_only_where_join_tasks_run_at_once():
    from dtri.prepared.distributed import sort_balance

    assert sort_balance("auto", one_at_a_time=False) == "intersect"
    assert sort_balance("intersect", one_at_a_time=False) == "intersect"
    assert sort_balance("auto", one_at_a_time=True) == "edges"  # no second pass over keys
    assert sort_balance("wedges", one_at_a_time=False) == "wedges"
    assert sort_balance("wedges", one_at_a_time=True) == "wedges"


def spy_on_the_orient_stage(monkeypatch) -> dict[str, list[int]]:
    """The keys each of the orient stage's task functions is handed, by function, as they
    run in this process: the senders' out-degrees and work (every key), and the bounds cut
    from the samples (all of them in one task)."""
    from dtri.prepared import distributed

    seen: dict[str, list[int]] = {"out": [], "work": [], "sampled": []}
    out_degrees, work, bounds = (distributed.sender_out_degrees, distributed.sender_work,
                                 distributed.sampled_bounds)

    def counted_out_degrees(keys, rank, vertices):
        seen["out"].append(int(keys.shape[0]))
        return out_degrees(keys, rank, vertices)

    def counted_work(keys, rank, out_degree, vertices):
        seen["work"].append(int(keys.shape[0]))
        return work(keys, rank, out_degree, vertices)

    def counted_bounds(rank, out_degree, vertices, parts, *samples):
        seen["sampled"].append(sum(int(sample.shape[0]) for sample in samples))
        return bounds(rank, out_degree, vertices, parts, *samples)

    monkeypatch.setattr(distributed, "sender_out_degrees", counted_out_degrees)
    monkeypatch.setattr(distributed, "sender_work", counted_work)
    monkeypatch.setattr(distributed, "sampled_bounds", counted_bounds)
    return seen


def test_ranges_of_one_task_at_a_time_are_cut_from_a_sample_of_the_keys(monkeypatch):
    """Where the input gives each range enough samples, the ranges are cut by the out-degrees
    of every ``dtri.sort-sample-stride``-th key, in one task: no task of the orient stage
    reads every key, the ranges still share the edges within a few percent, and the count
    is NetworkX's. A smaller input, or another work model, takes every key."""
    import dask

    from dtri.prepared.distributed import SAMPLES_PER_PART, sample_stride

    assert sample_stride("edges", 3 * 128 * SAMPLES_PER_PART, 3) == 128
    assert sample_stride("edges", 3 * 128 * SAMPLES_PER_PART - 1, 3) == 0
    assert sample_stride("intersect", 1 << 40, 3) == 128
    assert sample_stride("wedges", 1 << 40, 3) == 0
    with dask.config.set({"dtri.sort-sample-stride": 0}):
        assert sample_stride("edges", 1 << 40, 3) == 0
    seen = spy_on_the_orient_stage(monkeypatch)
    edges = np.random.default_rng(9).integers(0, 3_000, size=(120_000, 2))
    with dask.config.set({"dtri.sort-sample-stride": 8}), \
            dtri.prepare(edges, backend="cpu", scheduler="synchronous", npartitions=3) as graph:
        assert graph.shape.work_model == "edges" and graph.shape.sample_stride == 8
        distinct = sum(summary.edges for summary in graph.summaries)
        assert seen["out"] == seen["work"] == [] and len(seen["sampled"]) == 1
        assert seen["sampled"][0] <= -(-distinct // 8) + 3  # a sample of each sender
        edges_held = [summary.edges for summary in graph.summaries]
        assert max(edges_held) <= 1.1 * distinct / 3
        assert graph.count().triangles == networkx_triangles(edges)


def test_ranges_of_join_tasks_at_once_share_work_summed_over_a_sample_of_the_keys(
        monkeypatch):
    """Where join tasks run at once (the threads scheduler), the out-degrees are counted from
    every key and the work that cuts the ranges is summed over every
    ``dtri.sort-sample-stride``-th key, in one task: the out-degree tasks see every key, no
    task sums the work of every key, the ranges share the join's work summed over every
    edge within a few percent on a skewed graph, and the count is NetworkX's."""
    import dask

    from dtri.input.generate import rmat
    from dtri.kernels.bins import checked_key_bits
    from dtri.kernels.csr import as_csr, keys_of
    from dtri.kernels.orient import intersection_work

    seen = spy_on_the_orient_stage(monkeypatch)
    frame = rmat(12, npartitions=3, seed=4)
    with dask.config.set({"dtri.sort-sample-stride": 4}), \
            dtri.prepare(frame, backend="cpu", scheduler="threads", npartitions=3) as graph:
        assert graph.shape.work_model == "intersect" and graph.shape.sample_stride == 4
        parts = [as_csr(part) for part in dask.compute(*graph.parts)]
        distinct = sum(part.edges for part in parts)
        assert sum(seen["out"]) >= distinct  # every sender's keys, each edge at least once
        assert seen["work"] == [] and len(seen["sampled"]) == 1
        assert seen["sampled"][0] <= sum(seen["out"]) // 4 + len(seen["out"])
        out_degree = np.concatenate([np.diff(part.offsets) for part in parts])
        bits = checked_key_bits(graph.vertices)
        shares = [float(intersection_work(keys_of(part, bits), out_degree,
                                          graph.vertices).sum()) for part in parts]
        assert max(shares) <= 1.05 * sum(shares) / 3
        assert graph.count().triangles == networkx_triangles(
            frame.compute().to_numpy())


def test_workers_cut_the_join_s_ranges_from_their_own_samples(dask_client, backend,
                                                              monkeypatch):
    """On a cluster's workers (two CPU workers, or one per GPU) the samples are taken where
    each sender's keys are, the join's work is summed over them, and the count is
    NetworkX's."""
    import dask

    from dtri.input.generate import rmat
    from dtri.prepared import distributed

    strides = []
    chosen = distributed.sample_stride

    def stride(work_model, rows, parts):
        strides.append(chosen(work_model, rows, parts))
        return strides[-1]

    monkeypatch.setattr(distributed, "sample_stride", stride)
    frame = rmat(12, npartitions=4, seed=5)
    with dask.config.set({"dtri.sort-sample-stride": 2}), \
            dtri.prepare(frame, backend=backend, npartitions=4) as graph:
        if graph.runtime.workers < 2:
            pytest.skip("one worker runs one task at a time: its ranges balance edges")
        assert graph.shape.work_model == "intersect" and strides == [2]
        assert graph.count().triangles == networkx_triangles(frame.compute().to_numpy())


def test_a_run_of_one_task_at_a_time_cuts_ranges_by_their_edges(dask_client, backend):
    """In this process the ranges are cut by the out-degrees alone, each holding about a
    third of the edges; on the two CPU workers by the join's work. Both count as NetworkX
    does."""
    if backend != "cpu":
        pytest.skip("the CPU fixture's cluster has two workers of one thread")
    edges = np.random.default_rng(8).integers(0, 300, size=(4_000, 2))
    expected = networkx_triangles(edges)
    with dtri.prepare(edges, backend=backend, scheduler="synchronous", npartitions=3) as alone:
        assert alone.shape.work_model == "edges"
        edges_held = [summary.edges for summary in alone.summaries]
        assert max(edges_held) <= 1.2 * sum(edges_held) / 3
        assert alone.count().triangles == expected
    with dtri.prepare(edges, backend=backend, npartitions=3) as shared:  # the two workers
        assert shared.runtime.workers == 2 and shared.shape.work_model == "intersect"
        assert shared.count().triangles == expected
