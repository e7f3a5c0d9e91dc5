"""The run's memory budget, resolved once (dtri.runtime.budget): the default share of a
worker's memory under each staging, a given budget shared by a worker's threads, and the
runtime that carries the result."""

from __future__ import annotations

import numpy as np
import pytest

import dtri
from dtri.options import Backend, Options
from dtri.runtime.budget import Budget, given_budget, resolve_budget
from dtri.runtime.caps import MemoryCaps, resolve_caps
from dtri.runtime.opened import Runtime
from dtri.runtime.resolve import in_process_budget, machine_facts
from dtri.runtime.staging import Staging

GIB = 1 << 30


def test_the_default_is_a_quarter_and_half_only_under_host_staging_on_the_gpu():
    assert resolve_budget(None, 8 * GIB, 1, Staging("device", "gpu")).per_worker == 2 * GIB
    assert resolve_budget(None, 8 * GIB, 1, Staging("host", "gpu")).per_worker == 4 * GIB
    assert resolve_budget(None, 8 * GIB, 1, Staging("host", "cpu")).per_worker == 2 * GIB
    threaded = resolve_budget(None, 8 * GIB, 3, Staging("device", "cpu"))
    assert (threaded.per_task, threaded.given, threaded.threads) == (2 * GIB // 3, False, 3)


def test_a_given_budget_is_per_worker_and_shared_by_its_threads():
    given = given_budget(Options(memory_budget="1MiB"))
    assert given == Budget(1 << 20, 1 << 20, True)
    assert given_budget(Options()) is None

    def unread() -> int:
        raise AssertionError("a given budget needs no worker memory")

    budget = resolve_budget(given, unread, 4, Staging("host", "gpu"))
    assert (budget.per_worker, budget.per_task, budget.given) == (1 << 20, 1 << 18, True)
    assert budget.per_worker_for(1000) == 4000  # what --memory-budget gives tasks 1000 B
    default = resolve_budget(None, 8 * GIB, 2, Staging("host", "gpu"))
    assert default.memory_for(default.per_task) == 8 * GIB  # the memory that gives it


def test_the_runtime_carries_the_budget_it_was_resolved_with():
    pooled = Runtime("gpu", None, 1, 1, 8 * GIB, caps=MemoryCaps(rmm_pool_size=8 * GIB),
                     staged="host")
    assert pooled.backend is Backend.GPU and pooled.staging == Staging("host", "gpu")
    assert pooled.budget.per_task == 4 * GIB and pooled.staging.backend is Backend.GPU
    with pytest.raises(ValueError):
        Runtime("tpu", None, 1, 1, GIB)


def test_the_device_memory_limit_leaves_room_for_device_stagings_budget():
    """Stored results wait on the device only under device staging: a pool's default limit
    is the same whatever staging the run that starts the workers has."""
    caps = resolve_caps(MemoryCaps(rmm_pool_size=8 * GIB), Backend.GPU, None)
    assert caps.device_memory_limit == 8 * GIB - 2 * (2 * GIB)


def test_a_count_reports_the_resolved_budget():
    edges = np.array([[0, 1], [1, 2], [2, 0], [2, 3]])
    with dtri.prepare(edges, backend="cpu", scheduler="synchronous",
                      memory_budget="64KiB") as graph:
        assert graph.task_budget == graph.runtime.budget.per_task == 64 << 10
        result = graph.count()
    assert result.triangles == 1 and result.memory_budget == 64 << 10
    assert result.plan["task_budget"] == 64 << 10
    facts = machine_facts()
    assert in_process_budget(Backend.CPU, "host", facts) == \
        in_process_budget(Backend.CPU, "device", facts)
    # the runtime's budget is resolved from the budget its decision holds, and only there
    assert graph.runtime.decision.given == graph.runtime.budget == Budget(64 << 10, 64 << 10,
                                                                         True)
