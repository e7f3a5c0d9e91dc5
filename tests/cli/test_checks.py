"""Issue 40: every option checked before the work; each mistake one line, quickly.

From the command line: one ``dtri: error:`` line, no traceback, exit status 2, within 5 s
(no cluster involved). From Python: the same text as a :class:`ConfigurationError` or
:class:`InputError`.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import subprocess
import sys
import time

import dask
import pytest

import dtri
from dtri.errors import ConfigurationError, InputError
from dtri.input.generate import generated
from dtri.options import Options
from dtri.runtime.resolve import usable_cores

KARATE = "examples/karate.txt"
QUICK_SECONDS = 5


def refused(*args: str, seconds: float = QUICK_SECONDS) -> str:
    """The one error line of ``dtri ARGS``, checked to come alone, fast, with status 2."""
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "dtri", *args], capture_output=True,
                            text=True, timeout=120, check=False)
    elapsed = time.monotonic() - started
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and lines[0].startswith("dtri: error: "), result.stderr
    assert elapsed < seconds, f"{elapsed:.1f} s: {lines[0]}"
    return lines[0]


def test_a_missing_scheduler_file_is_one_line_not_a_wait(tmp_path):
    line = refused("count", KARATE, "--scheduler-file", str(tmp_path / "none" / "s.json"))
    assert "s.json does not exist" in line


@pytest.mark.parametrize("text", ["not json{", json.dumps({"workers": {}}), "[1, 2]"])
def test_a_garbled_scheduler_file_is_one_line(tmp_path, text):
    path = tmp_path / "scheduler.json"
    path.write_text(text)
    assert "is not a scheduler file" in refused("count", KARATE, "--scheduler-file", str(path))


@pytest.mark.parametrize("spec", ["rmat:60", "rmat:40", "rmat:32"])
def test_rmat_scales_beyond_the_packed_keys_are_refused_at_once(spec):
    line = refused("count", "--generate", spec, "--explain")
    assert "scale must be between 1 and 31" in line and "2**31 vertices" in line


def test_a_generated_graph_beyond_the_machine_names_the_largest_scale(monkeypatch):
    from dtri import api

    monkeypatch.setattr(api, "machine_room", lambda options: (100 << 20, "a small machine"))
    with pytest.raises(ConfigurationError) as error:
        dtri.count(generated("rmat:20"), explain=True)
    assert "more than a small machine hold (100.00 MiB)" in str(error.value)
    assert str(error.value).endswith("the largest R-MAT scale that fits is 18 (rmat:18:16)")
    with pytest.raises(ConfigurationError, match="the most G\\(n, m\\) edges that fit are "
                                                 "6,553,600"):
        dtri.count(generated("gnm:1000:10000000"))


def test_more_local_workers_than_the_cores_run_is_one_line():
    cores = usable_cores()
    line = refused("count", KARATE, "--workers", str(4 * cores + 1), "--backend", "cpu")
    assert line.endswith(f"more than this machine's {cores} cores run (4 single-threaded "
                         "workers a core, dtri.local-workers-per-core): give --workers "
                         f"{4 * cores} or fewer, or --scheduler for a running cluster")
    with dask.config.set({"dtri.local-workers-per-core": 1}), \
            pytest.raises(ConfigurationError, match=f"give --workers {cores} or fewer"):
        dtri.count(KARATE, workers=cores + 1, backend="cpu")


def test_a_plan_of_too_many_tasks_names_a_budget_that_works():
    """Refused before the exchanges (their pieces) or once sorted (the count's plan), each
    time naming a budget; following them ends in a count within the ceiling."""
    budget, refusals = "64KiB", []
    with dask.config.set({"dtri.max-plan-tasks": 200}):
        for _ in range(3):
            try:
                result = dtri.count(generated("rmat:10"), memory_budget=budget, backend="cpu")
                break
            except ConfigurationError as error:
                message = str(error)
                assert "more than dtri.max-plan-tasks = 200" in message
                refusals.append(message)
                budget = message.split("give --memory-budget ")[1].split(" or more")[0]
        assert refusals and "exchange of the preparation" in refusals[0]
        assert sum(stage["tasks"] for stage in result.plan["stages"].values()) <= 200
    assert dtri.count(generated("rmat:10"), memory_budget="64KiB", backend="cpu").triangles


def test_explain_under_a_small_budget_says_what_the_tasks_plan_for():
    plan = dtri.count(generated("rmat:8"), memory_budget="256KiB", explain=True,
                      backend="cpu").plan
    assert "its tasks plan for --memory-budget 256.00 kiB" in plan["placement"]
    assert "fits one task's budget" not in plan["placement"]


def test_a_small_budget_is_refused_before_a_cluster_starts(tmp_path):
    path = tmp_path / "big.txt"
    path.write_text("".join(f"{i} {i + 1}\n" for i in range(200_000)))
    line = refused("count", str(path), "--memory-budget", "16KiB", "--workers", "2")
    assert "--memory-budget 16.00 kiB is below the minimum for this input" in line


@pytest.mark.parametrize("args", [
    ["--scheduler", "synchronous", "--workers", "2"],
    ["--scheduler", "threads", "--memory-limit", "1GiB"],
    ["--scheduler", "tcp://127.0.0.1:1", "--protocol", "tcp"],
    ["--scheduler", "tcp://127.0.0.1:1", "--scheduler-file", "s.json"],
])
def test_a_local_scheduler_or_a_running_cluster_refuse_local_cluster_options(args):
    line = refused("count", KARATE, *args)
    assert "only to the local cluster that dtri starts" in line \
        or "both name a scheduler" in line


def test_conflicting_options_are_refused_from_python_too():
    with pytest.raises(ConfigurationError) as error:
        Options(scheduler="synchronous", workers=2)
    assert str(error.value) == ("--workers applies only to the local cluster that dtri starts, "
                                "not to --scheduler synchronous (in this process, no workers); "
                                "give one or the other")
    with pytest.raises(ConfigurationError) as error:
        dtri.count(KARATE, scheduler_file="s.json", memory_limit="1GiB", spill_directory="x")
    assert str(error.value).startswith("--memory-limit, --spill-directory apply only to the "
                                       "local cluster that dtri starts, not to the cluster at "
                                       "s.json; give a running cluster's workers")


def test_a_spill_directory_in_a_missing_parent_is_refused(tmp_path):
    wanted = tmp_path / "missing" / "spill"
    line = refused("count", KARATE, "--spill-directory", str(wanted))
    assert f"its parent {wanted.parent} does not exist" in line
    assert not wanted.parent.exists()


@pytest.mark.parametrize(("url", "module", "package"), [
    ("s3://bucket/graph/x.parquet", "s3fs", "pip install s3fs"),
    ("http://example.invalid/x.txt", "aiohttp", "aiohttp"),
])
def test_a_url_without_its_package_names_the_package(url, module, package):
    if importlib.util.find_spec(module) is not None:
        pytest.skip(f"{module} is installed")
    line = refused("count", url)
    assert "needs a package that is not installed" in line and package in line


@pytest.mark.parametrize(("suffix", "compression"), [(".gz", "gzip"), (".bz2", "bz2"),
                                                     (".xz", "xz")])
def test_an_empty_compressed_file_is_refused(tmp_path, suffix, compression):
    path = tmp_path / f"graph.txt{suffix}"
    path.write_bytes(b"")
    line = refused("count", str(path))
    assert line.endswith(f"graph.txt{suffix}: the file is empty (0 bytes), not a {compression} "
                         "stream: truncated or never written")
    with pytest.raises(InputError, match="the file is empty"):
        dtri.count(str(path))


def test_an_empty_plain_file_and_an_empty_gzip_stream_are_empty_graphs(tmp_path):
    plain = tmp_path / "graph.txt"
    plain.write_bytes(b"")
    packed = tmp_path / "packed.txt.gz"
    packed.write_bytes(gzip.compress(b""))
    assert dtri.count_triangles(str(plain)) == 0
    assert dtri.count_triangles(str(packed)) == 0


def test_a_refused_scheduler_connection_fails_at_once():
    """Nothing listens at port 1: refused within 2 s (and so the command within
    :data:`QUICK_SECONDS`), where Dask's client tried again for 31 s."""
    line = refused("count", KARATE, "--scheduler", "tcp://127.0.0.1:1")
    assert line == ("dtri: error: cannot reach the Dask scheduler at tcp://127.0.0.1:1: the "
                    "connection was refused (nothing listens at that port)")


@pytest.mark.parametrize("option", ["--memory-budget", "--blocksize", "--memory-limit"])
def test_a_size_past_any_integer_is_one_line(option):
    assert "'1e400' is not a size such as 2GiB" in refused("count", KARATE, option, "1e400")
    assert "more bytes than any machine has" in refused("count", KARATE, option, "1e30")
    with pytest.raises(ConfigurationError, match="'1e400' is not a size"):
        Options(memory_budget="1e400")


@pytest.mark.parametrize("args", [["count", KARATE, "--workers", "0"],
                                  ["count", KARATE, "--workers", "-1"],
                                  ["count", KARATE, "--jsn"], ["cont", KARATE], ["--bogus"]],
                         ids=["workers-0", "workers-minus-1", "option", "command", "group"])
def test_usage_errors_are_dtri_errors(args):
    """click's usage errors in dtri's form: one line, the command to ask for help."""
    line = refused(*args)
    assert line.endswith("--help)") and "Usage:" not in line


def test_the_least_budget_named_is_one_the_next_run_takes():
    """karate under --memory-budget 1: each check had named only its own minimum (13, then
    32, then 256 B); the first refusal now names one that every check takes."""
    line = refused("count", KARATE, "--memory-budget", "1")
    budget = line.split("give --memory-budget ")[1].split(" or more")[0]
    done = subprocess.run([sys.executable, "-m", "dtri", "count", KARATE, "--memory-budget",
                           budget, "--json"], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["triangles"] == 45
