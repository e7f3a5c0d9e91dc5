"""Host staging (dtri.runtime.staging): stage results in host memory, tasks on the device one at
a time, the join per group of partitions. On the CPU the moves are identities, so the same task
graph runs here and is checked against NetworkX; tests/gpu/test_gpu.py runs it on a GPU."""

from __future__ import annotations

import gc
import pickle
from itertools import pairwise
from operator import getitem

import numpy as np
import pytest
from click.testing import CliRunner
from dask.base import tokenize
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dtri
from dtri.analytics.count import count_group, load_group, member_starts
from dtri.analytics.staged_plan import csr_groups, partition_csr_bytes, staged_plan
from dtri.cli import main
from dtri.kernels.csr import PartitionSummary, from_sorted, stored, summary
from dtri.kernels.intersect import intersect
from dtri.options import Backend
from dtri.runtime.budget import Budget
from dtri.runtime.caps import MemoryCaps
from dtri.runtime.opened import Runtime
from dtri.runtime.staging import (
    ARENA_MIN_BYTES,
    HostArena,
    OnDevice,
    Staging,
    resolve_staging,
    to_host,
)
from tests.oracles import messy_graphs, networkx_triangles


def oriented(seed: int, n: int = 300, m: int = 3000) -> tuple[np.ndarray, np.ndarray]:
    """A random simple graph, oriented from lower to higher id, sorted by (src, dst)."""
    rng = np.random.default_rng(seed)
    pairs = np.sort(rng.integers(0, n, (m, 2)), axis=1)
    pairs = np.unique(pairs[pairs[:, 0] < pairs[:, 1]], axis=0)
    return pairs[:, 0].copy(), pairs[:, 1].copy()


@given(edges=messy_graphs(), npartitions=st.integers(1, 5),
       memory_budget=st.sampled_from([None, 2_000, 20_000]))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_host_staging_counts_equal_networkx(edges, npartitions, memory_budget):
    result = dtri.count(edges, backend="cpu", scheduler="synchronous", staging="host",
                        npartitions=npartitions, memory_budget=memory_budget)
    assert result.plan["staging"] == "host" and result.join == "intersect"
    assert result.triangles == networkx_triangles(edges)


@pytest.mark.slow
def test_host_staging_on_two_workers_with_many_groups_is_exact():
    """Two worker processes, a budget that makes many partitions and several groups: the
    owner folds, the per-(group, worker) count tasks and their placement."""
    from dtri.input.generate import rmat

    edges = rmat(12, seed=3, npartitions=4).compute(scheduler="sync")
    expected = networkx_triangles(edges.to_numpy())
    result = dtri.count(rmat(12, seed=3, npartitions=4), backend="cpu", workers=2,
                        staging="host", memory_budget="256KiB")
    assert result.workers == 2 and result.partitions > 4 and result.bins > 1
    assert result.plan["stages"]["count"]["tasks"] > result.bins
    assert result.triangles == expected


def csr_of(src: np.ndarray, dst: np.ndarray):
    """The CSR of sorted edges over the range of their sources."""
    return from_sorted(src, dst, int(src[0]), int(src[-1]) + 1)


def test_partition_csr_round_trips_the_sorted_edges_and_their_summary():
    src, dst = oriented(1)
    csr = csr_of(src, dst)
    assert csr.low == src[0] and csr.high == src[-1] + 1 and csr.edges == src.shape[0]
    assert csr.dst.dtype == np.int32 and csr.offsets[0] == 0 and csr.offsets[-1] == csr.edges
    degree = np.bincount(src)
    found = summary(csr)
    assert found[:5] == (len(src), int((degree * (degree - 1) // 2).sum()), src[0], src[-1],
                         dst.max())
    assert found.max_out_degree == degree.max()
    empty = from_sorted(src[:0], dst[:0], 0, 0)
    assert empty.edges == 0 and summary(empty).edges == 0


def test_counting_against_groups_matches_the_fused_join():
    """Every split of a graph's partitions into groups counts what the fused join counts."""
    src, dst = oriented(2)
    whole = from_sorted(src, dst, 0, 300)
    expected = intersect(whole, whole).triangles
    assert expected == networkx_triangles(np.stack([src, dst], axis=1))
    cuts = [0, 700, 1500, 1501, 2400, src.shape[0]]
    cuts = [int(np.searchsorted(src, src[c])) if c < src.shape[0] else c for c in cuts]
    sources = [0, *(int(src[c]) for c in cuts[1:-1]), 300]
    parts = [stored(from_sorted(src[a:b], dst[a:b], sources[i], sources[i + 1]))
             for i, (a, b) in enumerate(pairwise(cuts))]
    for kernel in ("marks", "hash"):
        for groups in ([(0, len(parts) - 1)], [(0, 1), (2, len(parts) - 1)],
                       [(p, p) for p in range(len(parts))]):
            found = 0
            for first, last in groups:
                members = list(range(first, last + 1))
                outside = [p for p in range(len(parts)) if p not in members]
                inputs = members + outside
                found += count_group(Staging("host", "cpu"), 97, kernel,
                                     (sources[first], sources[last + 1]), len(members),
                                     tuple(range(len(inputs))), *(parts[p] for p in inputs))
            assert found == expected, (kernel, groups)


def test_a_group_merges_its_partitions_into_one_csr_across_gaps():
    src, dst = oriented(4)
    kept = (src < 150) | (src >= 170)  # ranks 150..169 in neither partition: a gap
    src, dst = src[kept], dst[kept]
    cut = int(np.searchsorted(src, 150))
    left = stored(from_sorted(src[:cut], dst[:cut], 0, 150))
    right = stored(from_sorted(src[cut:], dst[cut:], 170, 300))
    group = load_group(Staging("host", "cpu"), (0, 300), [left, right])
    assert member_starts([left, right]) == [0, cut]
    full = from_sorted(src, dst, 0, 300)
    assert group.low == full.low and (group.offsets == full.offsets).all()
    assert (group.dst == full.dst).all()


def test_groups_fill_up_to_the_limit_and_a_big_partition_stands_alone():
    def summary(edges: int, first: int, last: int) -> PartitionSummary:
        return PartitionSummary(edges, edges, first, last, last + 5)

    summaries = [summary(100, 0, 9), summary(100, 10, 19), summary(1000, 20, 29),
                 summary(100, 30, 39), PartitionSummary(0, 0, -1, -1, -1)]
    sizes = [partition_csr_bytes(s) for s in summaries]
    groups = csr_groups(summaries, sizes[0] + sizes[1])
    assert groups == [(0, 1), (2, 2), (3, 4)]
    plan = staged_plan(summaries, 50, workers=2, backend=Backend.CPU,
                       budget=Budget(*[2 * (sizes[0] + sizes[1])] * 2, True))
    assert plan.staging == "host" and plan.nbins == 3 and not plan.batches
    assert plan.bin_sources == {0: (0, 20), 1: (20, 30), 2: (30, 40)}
    assert plan.reach[0] == (0,) and plan.reach[1] == (0, 1) and plan.reach[4] == ()
    assert set(plan.estimates) == {"count", "reduce"}


def test_only_host_staging_wraps_tasks_and_pickers_never():
    def double(x):
        return 2 * x

    assert Staging("device", "gpu").wrap(double) is double
    wrapped = Staging("host", "gpu").wrap(double)
    assert isinstance(wrapped, OnDevice) and wrapped.__name__ == "double"
    assert Staging("host", "gpu").wrap(getitem, on_host=True) is getitem
    assert Staging("host", "cpu").wrap(double)(4) == 8  # no device: the moves are identities
    assert tokenize(OnDevice(getitem, "gpu")) == tokenize(OnDevice(getitem, "gpu"))
    assert tokenize(OnDevice(getitem, "gpu")) != tokenize(OnDevice(getitem, "cpu"))
    assert pickle.loads(pickle.dumps(OnDevice(getitem, "gpu"))).func is getitem
    assert not Staging("host", "cpu").moves and Staging("host", "gpu").moves


def test_vertex_wide_sums_fold_per_worker_where_a_worker_runs_one_task_on_the_gpu():
    from dtri.kernels.counting import add_counts
    from dtri.runtime.tasks import Tasks

    assert Staging("host", "gpu").folds_per_worker and Staging("host", "cpu").folds_per_worker
    assert Staging("device", "gpu").folds_per_worker  # GPU workers in GPU memory
    assert not Staging("device", "cpu").folds_per_worker  # CPU workers' threads share leaves
    workers = ("tcp://a:1", "tcp://b:2")
    items = [np.full(4, i) for i in range(6)]
    holders = [workers[i % 2] for i in range(6)]
    for staging, leaves in ((Staging("device", "gpu"), 2), (Staging("device", "cpu"), 6)):
        tasks = Tasks(staging, workers)
        total = tasks.reduce_over("rank", np.negative, add_counts, items, (), holders, "degree")
        graph = dict(total.__dask_graph__())
        assert sum("-degree-" in name for name in graph) == leaves
        assert np.array_equal(total.compute(scheduler="sync"), np.full(4, -15))


def test_fold_groups_cut_a_workers_items_in_order_to_a_tasks_budget():
    from dtri.runtime.tasks import fold_groups

    sizes = [4, 4, 4, 9, 1, 1, 3]
    assert fold_groups([0, 1, 2, 3, 4, 5, 6], sizes, 8) == [[0, 1], [2], [3], [4, 5, 6]]
    assert fold_groups([1, 3, 5], sizes, 100) == [[1, 3, 5]]
    assert fold_groups([2, 4], sizes, 0) == [[2], [4]]  # at least one item each
    assert fold_groups([0, 1], None, 8) == [[0, 1]]  # sizes or budget not known: one fold
    assert fold_groups([0, 1], sizes, None) == [[0, 1]]


def test_a_fold_whose_items_pass_the_task_budget_is_cut_and_summed_on_its_worker():
    """A task's inputs come to its worker together (from disk past a host limit) and stay
    until it ends, so no fold takes more bytes than one task's budget. Each worker's cut
    folds are summed there first: one partial per worker crosses, as with one fold."""
    from dtri.kernels.counting import add_counts
    from dtri.runtime.tasks import Tasks

    workers = ("tcp://a:1", "tcp://b:2")
    items = [np.full(4, i) for i in range(10)]
    holders = [workers[0]] * 7 + [workers[1]] * 3
    for budget, folds in ((None, 2), (1000, 2), (300, 4), (250, 6), (50, 10)):
        tasks = Tasks(Staging("host", "cpu"), workers, fold_budget=budget)
        total = tasks.reduce_over("rank", np.negative, add_counts, items, (), holders,
                                  "degree", sizes=[100] * 10)
        graph = dict(total.__dask_graph__())
        leaves = {name: task for name, task in graph.items() if "-degree-owner-" in name}
        assert len(leaves) == folds
        # folded(staging, combine, func, args, *items): each fold's items within the budget
        taken = sorted(len(task.args) - 4 for task in leaves.values())
        assert sum(taken) == 10 and all(n * 100 <= max(budget or 1000, 100) for n in taken)
        (root,) = [name for name in graph if name == total.key]
        assert len(graph[root].dependencies) == 2  # one partial from each worker
        assert np.array_equal(total.compute(scheduler="sync"), np.full(4, -45))


def test_folds_are_cut_only_where_the_workers_spill_past_a_host_limit():
    from dtri.runtime.host_plan import HostPlan

    caps = MemoryCaps(rmm_pool_size=8 << 30)
    unlimited = Runtime("gpu", None, 1, 1, 8 << 30, caps=caps, staged="host")
    assert unlimited.tasks().fold_budget is None  # its items stay in memory anyway
    plan = HostPlan(32 << 30, 3 << 30, 12 << 30, 4 << 30, 4 << 30)
    limited = Runtime("gpu", None, 1, 1, 8 << 30, caps=caps, staged="host", host_plan=plan)
    assert limited.tasks().fold_budget == limited.budget.per_task == 4 << 30


def test_moving_back_keeps_tuples_named_tuples_lists_and_dicts():
    csr = csr_of(*oriented(5))
    value = {"a": [csr, (1, None)], "b": "text"}
    assert pickle.dumps(to_host(value)) == pickle.dumps(value)
    assert type(to_host(value)["a"][0]) is type(csr)


def test_auto_staging_is_host_only_for_a_capped_gpu():
    assert resolve_staging("auto", "gpu", capped=True) == Staging("host", "gpu")
    assert resolve_staging("auto", "gpu", capped=False).where == "device"
    assert resolve_staging("auto", "cpu", capped=False).where == "device"
    assert resolve_staging("host", "cpu", capped=False).where == "host"
    with pytest.raises(ValueError):
        resolve_staging("disk", "cpu", capped=False)
    capped = Runtime("gpu", None, 1, 1, 8 << 30, caps=MemoryCaps(rmm_pool_size=8 << 30),
                     staged="host")
    assert capped.capped
    assert capped.budget.per_task == 4 << 30  # half the pool: nothing else is stored there
    assert Runtime("gpu", None, 1, 1, 8 << 30).budget.per_task == 2 << 30


def test_cli_staging_option_and_the_wedges_join_refusal():
    runner = CliRunner()
    ok = runner.invoke(main, ["count", "--backend", "cpu", "--scheduler", "synchronous",
                              "--staging", "host", "--json", "examples/karate.txt"])
    assert ok.exit_code == 0 and '"triangles": 45' in ok.output
    refused = runner.invoke(main, ["count", "--backend", "cpu", "--scheduler", "synchronous",
                                   "--staging", "host", "--join", "wedges",
                                   "examples/karate.txt"])
    assert refused.exit_code == 2 and "fused join" in refused.output
    assert len(refused.output.strip().splitlines()) == 1
    explained = runner.invoke(main, ["count", "--backend", "cpu", "--scheduler", "synchronous",
                                     "--staging", "host", "--explain", "examples/karate.txt"])
    assert explained.exit_code == 0 and "dtri-count" in explained.output


class LendingResource:
    """A stand-in for the page-locked pool: hands out NumPy memory, records what comes back,
    and refuses beyond ``limit`` bytes as RMM's pool does (``MemoryError``)."""

    def __init__(self, limit: int):
        self.limit, self.lent, self.returned = limit, {}, []

    def allocate(self, nbytes: int) -> int:
        if sum(len(owner) for owner in self.lent.values()) + nbytes > self.limit:
            raise MemoryError("at the limit")
        owner = np.empty(nbytes, np.uint8)
        self.lent[owner.ctypes.data] = owner
        return owner.ctypes.data

    def deallocate(self, address: int, nbytes: int) -> None:
        assert len(self.lent.pop(address)) == nbytes
        self.returned.append(address)


def test_the_arena_lends_memory_until_the_last_view_is_gone():
    resource = LendingResource(4 * ARENA_MIN_BYTES)
    arena = HostArena(resource)
    array = arena.empty((ARENA_MIN_BYTES // 8,), np.int64)
    (address,) = resource.lent
    assert array.ctypes.data == address and array.flags.writeable and array.flags.c_contiguous
    array[:] = np.arange(array.shape[0])
    view = array[10:20]
    picked = pickle.loads(pickle.dumps(array[5:8]))  # what Dask does to spill or send one
    del array
    gc.collect()
    assert resource.returned == []  # a view still reads the memory
    assert view.tolist() == list(range(10, 20)) and picked.tolist() == [5, 6, 7]
    del view
    gc.collect()
    assert resource.returned == [address]


def test_the_arena_falls_back_to_numpy_when_small_or_at_its_limit():
    resource = LendingResource(3 * ARENA_MIN_BYTES // 2)
    arena = HostArena(resource)
    small = arena.empty(16, np.int32)
    kept = arena.empty((2, ARENA_MIN_BYTES // 16), np.int64)
    beyond = arena.empty(ARENA_MIN_BYTES, np.uint8)  # the resource refuses: plain NumPy
    assert len(resource.lent) == 1 and small.shape == (16,)
    assert kept.shape == (2, ARENA_MIN_BYTES // 16)
    assert beyond.flags.owndata and small.flags.owndata and not kept.flags.owndata
    assert kept.dtype == np.int64 and beyond.nbytes == ARENA_MIN_BYTES


def test_the_staging_plugin_gives_each_worker_its_state_until_unregistered():
    """Host staging's per-worker state (device cache, arena) lives in a WorkerPlugin: tasks
    find it through worker_state(), and unregistering frees it."""
    from distributed import Client, LocalCluster

    from dtri.runtime.plugin import StagingPlugin
    from dtri.runtime.session import _has_worker_plugin
    from dtri.runtime.staging import PLUGIN_NAME, worker_state

    def cache_limit() -> int:
        return worker_state().cache.limit

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        assert not client.run_on_scheduler(_has_worker_plugin, PLUGIN_NAME)
        client.register_plugin(StagingPlugin(12345, pinned_share=0.0), name=PLUGIN_NAME)
        assert client.run_on_scheduler(_has_worker_plugin, PLUGIN_NAME)
        limits = [client.submit(cache_limit, pure=False, workers=[w]).result()
                  for w in client.nthreads()]
        assert limits == [12345, 12345]
        client.unregister_worker_plugin(PLUGIN_NAME)
        assert client.submit(cache_limit, pure=False).result() != 12345  # the local default


class ShortDevice:
    """A stand-in for a GPU whose memory holds arrays of at most ``limit`` elements: moves are
    copies, and a move of a larger array raises MemoryError as an RMM pool does."""

    def __init__(self, limit: int):
        self.limit = limit
        self.moved = 0

    def to_device(self, value):
        if isinstance(value, np.ndarray):
            if value.size > self.limit:
                raise MemoryError("out_of_memory: RMM failure (stand-in)")
            self.moved += 1
            return value.copy()
        return value


@pytest.fixture
def short_device(monkeypatch):
    from dtri.runtime import staging

    device = ShortDevice(limit=100)
    noted = []
    monkeypatch.setattr(staging, "to_device", device.to_device)
    monkeypatch.setattr(staging, "to_host", lambda value: value)
    monkeypatch.setattr(staging, "note_host_fallback", lambda: noted.append(1))
    return device, noted


def test_a_task_short_of_device_memory_runs_on_the_host(short_device):
    _device, noted = short_device
    task = OnDevice(lambda a, b: a + b, "gpu")
    np.testing.assert_array_equal(task(np.ones(10), np.ones(10)), np.full(10, 2.0))
    assert noted == []
    np.testing.assert_array_equal(task(np.ones(1000), np.ones(1000)), np.full(1000, 2.0))
    assert noted == [1]


def test_a_fold_short_of_device_memory_sums_the_rest_on_the_host(short_device):
    """Items small enough go through the device; from the first that is not, the sum so far
    and every item left are summed on the host: the same total."""
    from dtri.runtime.staging import folded

    device, noted = short_device
    items = [np.arange(5), np.arange(5) * 2, np.arange(500) + 10**6, np.arange(5) + 7]
    staged = Staging("host", "gpu")
    small = folded(staged, np.add, lambda item, scale: item[:5] * scale, (3,), *items)
    expected = sum(item[:5] * 3 for item in items)
    np.testing.assert_array_equal(small, expected)
    assert noted == [1] and device.moved == 2


SEEN_BACKENDS: list[str] = []


def moves_its_own(staging, values):
    """A task that moves its own data and finds the device too small."""
    SEEN_BACKENDS.append(staging.backend)
    if staging.backend == "gpu":
        raise MemoryError("out_of_memory (stand-in)")
    return staging.to_device(values).sum()


def test_a_task_moving_its_own_data_goes_on_on_the_host_when_the_device_is_short():
    """A task that takes the staging and runs out of device memory runs again with the
    staging's host twin, whose moves are identities."""
    from dtri.runtime.staging import HostFallback

    SEEN_BACKENDS.clear()
    staged = Staging("host", "gpu")
    task = staged.wrap(moves_its_own, on_host=True, moves_own_data=True)
    assert isinstance(task, HostFallback) and task.__name__ == "moves_its_own"
    assert task(staged, np.arange(4)) == 6
    assert SEEN_BACKENDS == ["gpu", "cpu"]
    assert pickle.loads(pickle.dumps(task))(Staging("host", "cpu"), np.arange(3)) == 3
    assert staged.wrap(getitem, on_host=True) is getitem  # pickers stay as they are
    assert Staging("host", "cpu").wrap(moves_its_own, True, True) is moves_its_own



def test_a_cpu_plan_says_no_device():
    """On the CPU backend the default plan reports no staging (it had said ``device``); host
    staging is named as asked."""
    edges = np.array([(0, 1), (1, 2), (0, 2), (2, 3)])
    assert dtri.count(edges, backend="cpu").plan["staging"] == "none"
    assert dtri.count(edges, backend="cpu", scheduler="synchronous",
                      staging="host").plan["staging"] == "host"
