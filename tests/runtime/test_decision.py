"""A run's decisions, made once before anything starts (:func:`dtri.runtime.session.
decide_run`): pure, from the options, the input and this machine's facts, which a test gives
(no GPU needed); the runtime then carries the record, and its budget is resolved from it."""

from __future__ import annotations

import json

import pytest

from dtri.errors import ConfigurationError
from dtri.options import Backend, Options
from dtri.runtime.resolve import MachineFacts
from dtri.runtime.session import decide_run, open_runtime

GIB = 1 << 30


def _unread() -> int:
    raise AssertionError("a fact the decision does not need was read")


def facts(gpu: bool = False, active: bool = False, address: str | None = None,
          gpus: int = 1, device_memory=lambda: 80 * GIB) -> MachineFacts:
    """A machine of 64 GiB, with or without one usable GPU of 80 GiB."""
    return MachineFacts(gpu_usable=lambda: gpu, device_memory=device_memory,
                        device_name=lambda: "GPU 0 (test)", visible_gpus=lambda: gpus,
                        ucx=lambda: False, memory=64 * GIB, active_client=active,
                        scheduler_address=address)


def test_a_small_input_on_a_cpu_machine_stays_in_this_process():
    decision = decide_run(Options(), False, 1000, 128, facts=facts(device_memory=_unread))
    assert decision.backend is Backend.CPU and decision.backend_reason == "auto: no usable GPU"
    assert decision.scheduler == "synchronous" and "this process" in decision.placement_reason
    assert decision.protocol is None and decision.given is None
    assert decision.caps.given() == [] and decision.staging == "auto"
    run = json.loads(json.dumps(decision.to_dict()))
    assert set(run) == {"backend", "budget", "caps", "staging", "placement", "protocol"}
    assert all(run[choice]["reason"] for choice in run)
    assert run["backend"]["value"] == "cpu" and run["budget"]["value"] is None


def test_a_graph_the_gpu_holds_runs_in_process_beyond_one_task():
    rows = 500_000_000  # 64 GB in flight: beyond a task's 20 GiB, within the GPU's 80 GiB
    decision = decide_run(Options(), False, rows, 128, facts=facts(gpu=True))
    assert decision.backend is Backend.GPU and decision.backend_reason == "auto: a usable GPU"
    assert decision.scheduler == "synchronous"
    assert "this process, on GPU 0 (test)" in decision.placement_reason
    small = decide_run(Options(), False, 100, 128, facts=facts(gpu=True))
    assert small.backend is Backend.CPU  # fewer edges than dtri.gpu-min-edges


def test_workers_start_a_local_cluster_with_its_comms():
    decision = decide_run(Options(backend="cpu", workers=2, memory_budget="1MiB"), False, 10,
                          128, facts=facts())
    assert decision.scheduler is None and decision.workers == 2
    assert decision.protocol is not None and decision.protocol.name == "tcp"
    assert decision.protocol.reason == "auto: CPU workers"
    assert decision.given is not None and decision.given.per_worker == 1 << 20
    assert "--memory-budget 1.00 MiB" in decision.budget_reason
    several = decide_run(Options(backend="gpu", workers=2), True, None, 128,
                         facts=facts(gpu=True, gpus=2))
    assert several.protocol is not None and several.protocol.note  # UCX is not installed


def test_caps_are_completed_once_and_refused_where_dtri_starts_no_cluster():
    pooled = decide_run(Options(backend="gpu", rmm_pool_size="8GiB"), False, 10, 128,
                        facts=facts(gpu=True))
    assert pooled.caps.rmm_pool_size == 8 * GIB
    assert pooled.caps.device_memory_limit == 4 * GIB  # the pool less twice its budget
    assert "--rmm-pool-size" in pooled.caps_reason and pooled.scheduler is None
    with pytest.raises(ConfigurationError, match=r"active distributed\.Client"):
        decide_run(Options(backend="cpu", memory_limit="1GiB"), False, 10, 128,
                   facts=facts(active=True))
    with pytest.raises(ConfigurationError, match="not to the cluster at tcp://a:1"):
        decide_run(Options(backend="cpu", memory_limit="1GiB"), False, 10, 128,
                   facts=facts(address="tcp://a:1"))
    with pytest.raises(ConfigurationError, match="the GPU backend needs"):
        decide_run(Options(backend="gpu"), False, 10, 128, facts=facts())


def test_the_runtime_carries_the_decision_and_resolves_its_budget_from_it():
    decision = decide_run(Options(backend="cpu", scheduler="synchronous",
                                  memory_budget="3MiB"), False, 10, 128, facts=facts())
    # the decision given is the one the runtime opens by: the options are not read again
    with open_runtime(Options(), decision=decision) as runtime:
        assert runtime.decision is decision and runtime.eager
        assert runtime.budget.given and runtime.budget.per_task == 3 << 20
        assert runtime.reason.startswith(decision.placement_reason)
