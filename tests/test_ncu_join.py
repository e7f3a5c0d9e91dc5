"""examples/benchmarks/ncu_join.py without a GPU: Nsight Compute's raw page (``ncu --import
REPORT --csv --page raw --print-units base --print-metric-name name``) parsed from samples
in its format, the figures and rankings made of it, and the whole script against a stand-in
``ncu`` that runs the count on the CPU and hands back the samples as its reports."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.test_benchmark_results import BENCHMARKS, ROOT, module, schema_problems

HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
          '"Block Size","Grid Size","Device","CC",')
JOIN_CSV = HEADER + (
    '"dram__bytes_read.sum","dram__bytes_write.sum",'
    '"dram__throughput.avg.pct_of_peak_sustained_elapsed","gpu__time_duration.sum",'
    '"l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",'
    '"l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",'
    '"l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed",'
    '"launch__grid_size","launch__registers_per_thread","launch__shared_mem_per_block_dynamic",'
    '"lts__t_sector_hit_rate.pct","sm__maximum_warps_per_active_cycle_pct",'
    '"sm__warps_active.avg.pct_of_peak_sustained_active",'
    '"smsp__average_warp_latency_per_inst_issued.ratio",'
    '"smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",'
    '"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",'
    '"smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio",'
    '"smsp__average_warps_issue_stalled_selected_per_issue_active.ratio",'
    '"smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio"\n'
    '"","","","","","","","","","","","byte","byte","%","nsecond","","","%","","register/thread",'
    '"byte","%","%","%","","","","","",""\n'
    '"0","4242","python3.12","gpu-host","search_edges","1","7","(256, 1, 1)","(65536, 1, 1)",'
    '"0","9.0","1,048,576,000","4,096","41.25","1,000,000","0","0","0","65,536","40","0",'
    '"52.5","100","71.5","12.5","0.25","8.75","0","1","0.5"\n'
    '"1","4242","python3.12","gpu-host","hash_pieces","1","7","(256, 1, 1)","(4096, 1, 1)",'
    '"0","9.0","2,000,000,000","8,192","80","3,000,000","1,234","9,000,000","35.5","4,096",'
    '"48","65,536","n/a","50","44","20","2","11","5","1","3"\n'
    '"2","4242","python3.12","gpu-host","hash_pieces","1","7","(256, 1, 1)","(2048, 1, 1)",'
    '"0","9.0","1,000,000,000","4,096","60","1,000,000","66","3,000,000","45.5","2,048",'
    '"48","32,768","70","50","36","16","4","7","9","1","2"\n')
KERNELS_CSV = HEADER + (
    '"gpu__time_duration.sum"\n'
    '"","","","","","","","","","","","nsecond"\n'
    '"0","4242","python3.12","gpu-host","DeviceRadixSortOnesweepKernel","1","7","(256, 1, 1)",'
    '"(1024, 1, 1)","0","9.0","5,000,000"\n'
    '"1","4242","python3.12","gpu-host","cupy_bincount","1","7","(128, 1, 1)","(512, 1, 1)",'
    '"0","9.0","2,000,000"\n'
    '"2","4242","python3.12","gpu-host","DeviceRadixSortOnesweepKernel","1","7","(256, 1, 1)",'
    '"(1024, 1, 1)","0","9.0","4,000,000"\n'
    '"3","4242","python3.12","gpu-host","hash_pieces","1","7","(256, 1, 1)","(4096, 1, 1)","0",'
    '"9.0","3,000,000"\n')
DEMANGLED = {"DeviceRadixSortOnesweepKernel":
             ["void cub::DeviceRadixSortOnesweepKernel<long, int>(long *, int *)",
              "void cub::DeviceRadixSortOnesweepKernel<int, int>(int *, int *)"],
             "hash_pieces": ["void hash_pieces<0>(const long long *, unsigned int)"]}


def demangled(text: str) -> str:
    """``text`` with each kernel named as ``--print-kernel-base demangled`` names it."""
    seen: dict[str, int] = {}

    def name(kernel: str) -> str:
        if kernel not in DEMANGLED:
            return kernel
        seen[kernel] = seen.get(kernel, -1) + 1
        return DEMANGLED[kernel][min(seen[kernel], len(DEMANGLED[kernel]) - 1)]

    lines = text.splitlines(keepends=True)
    out = lines[:2]
    for line in lines[2:]:
        cells = line.split('","')
        cells[4] = name(cells[4])
        out.append('","'.join(cells))
    return "".join(out)


@pytest.fixture(scope="module")
def ncu_join():
    return module("ncu_join")


def test_the_raw_page_parses_in_seconds_and_bytes(ncu_join):
    """The header is found after ncu's and the application's lines, the units row scales
    each column, thousands separators go, ``n/a`` is None and only metrics are metrics."""
    text = ("==PROF== Connected to process 4242 (/usr/bin/python3.12)\n"
            '{"triangles": 5}\n' + JOIN_CSV + "==PROF== Disconnected from process 4242\n")
    launches = ncu_join.read_raw_csv(text)
    assert [(launch["id"], launch["kernel"]) for launch in launches] == [
        (0, "search_edges"), (1, "hash_pieces"), (2, "hash_pieces")]
    first, second = launches[0]["metrics"], launches[1]["metrics"]
    assert first["gpu__time_duration.sum"] == pytest.approx(1e-3)
    assert first["dram__bytes_read.sum"] == 1_048_576_000
    assert second["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"] == 9_000_000
    assert second["lts__t_sector_hit_rate.pct"] is None
    assert launches[1]["grid"] == "(4096, 1, 1)" and launches[1]["block"] == "(256, 1, 1)"
    assert "CC" not in first and "Device" not in first and len(first) == 19
    assert ncu_join.read_raw_csv("==PROF== no kernels were profiled\n") == []


def test_a_launch_s_figures_and_its_top_stalls(ncu_join):
    (_, hashed, _) = ncu_join.read_raw_csv(JOIN_CSV)
    figures = ncu_join.launch_figures(hashed)
    assert figures["kernel"] == "hash_pieces" and figures["seconds"] == pytest.approx(3e-3)
    assert figures["dram_read_GB_per_s"] == pytest.approx(2e9 / 3e-3 / 1e9, rel=1e-3)
    assert figures["dram_throughput_pct"] == 80 and figures["shared_throughput_pct"] == 35.5
    assert figures["achieved_occupancy_pct"] == 44 and figures["theoretical_occupancy_pct"] == 50
    assert figures["shared_bank_conflicts"] == 1234 and figures["l2_hit_rate_pct"] is None
    # "selected" (a warp issuing) is no stall
    assert [s["reason"] for s in figures["stalls_top"]] == [
        "long_scoreboard", "mio_throttle", "short_scoreboard"]
    assert [s["value"] for s in figures["stalls_top"]] == [11, 5, 3]
    assert figures["stalls_unit"] == "cycles per issued instruction"


def test_stalls_come_from_the_first_family_found(ncu_join):
    older = {"smsp__pcsamp_warps_issue_stalled_long_scoreboard": 90.0,
             "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued": 500.0,
             "smsp__pcsamp_warps_issue_stalled_wait": 30.0,
             "smsp__warp_issue_stalled_wait_per_warp_active.pct": 12.0,
             "smsp__warp_issue_stalled_barrier_per_warp_active.pct": 3.0}
    assert ncu_join.stall_reasons(older) == ({"wait": 12.0, "barrier": 3.0},
                                             "% of active warps")
    del older["smsp__warp_issue_stalled_wait_per_warp_active.pct"]
    del older["smsp__warp_issue_stalled_barrier_per_warp_active.pct"]
    assert ncu_join.stall_reasons(older) == ({"long_scoreboard": 90.0, "wait": 30.0},
                                             "PC samples")
    assert ncu_join.stall_reasons({"gpu__time_duration.sum": 1.0}) == ({}, None)


def test_a_kernel_s_figures_are_weighted_by_its_launches_durations(ncu_join):
    figures = [ncu_join.launch_figures(launch) for launch in ncu_join.read_raw_csv(JOIN_CSV)]
    summary = ncu_join.kernel_summary(figures)
    hashed = summary["hash_pieces"]
    assert hashed["launches"] == 2 and hashed["seconds"] == pytest.approx(4e-3)
    assert hashed["dram_read_bytes"] == 3e9
    assert hashed["dram_throughput_pct"] == pytest.approx((80 * 3 + 60) / 4)
    assert hashed["achieved_occupancy_pct"] == pytest.approx((44 * 3 + 36) / 4)
    assert hashed["l2_hit_rate_pct"] == 70  # the one launch that had it
    assert hashed["stalls"]["mio_throttle"] == pytest.approx((5 * 3 + 9) / 4)
    assert hashed["stalls"]["short_scoreboard"] == pytest.approx((3 * 3 + 2) / 4)
    assert hashed["stalls_top"][0]["reason"] == "long_scoreboard"
    assert hashed["dram_read_GB_per_s"] == pytest.approx(3e9 / 4e-3 / 1e9, rel=1e-3)
    assert summary["search_edges"]["launches"] == 1


def test_every_kernel_is_ranked_by_its_total_time(ncu_join):
    launches = ncu_join.read_raw_csv(KERNELS_CSV)
    names = {launch["id"]: launch["kernel"]
             for launch in ncu_join.read_raw_csv(demangled(KERNELS_CSV))}
    ranking = ncu_join.ranked_kernels(launches, names, count=2)
    assert ranking["launches"] == 4 and ranking["kernels"] == 3
    assert ranking["seconds"] == pytest.approx(14e-3)
    first, second = ranking["top"]
    assert (first["kernel"], first["launches"], first["variants"]) == (
        "DeviceRadixSortOnesweepKernel", 2, 2)
    assert first["seconds"] == pytest.approx(9e-3) and first["share"] == pytest.approx(9 / 14,
                                                                                      abs=1e-4)
    assert first["top_variant"].startswith("void cub::DeviceRadixSortOnesweepKernel<long")
    assert second["kernel"] == "hash_pieces" and second["longest_seconds"] == pytest.approx(3e-3)


def test_without_ncu_the_script_says_so(ncu_join):
    with pytest.raises(SystemExit, match="not on PATH"):
        ncu_join.find_ncu("ncu-that-is-not-installed")


def test_a_step_past_its_timeout_is_stopped(ncu_join):
    step = ncu_join.run_step([sys.executable, "-c", "import time; time.sleep(60)"], 0.5)
    assert step.returncode is None and step.seconds < 30


STAND_IN = '''\
#!{python}
"""A stand-in for ncu: records its arguments, runs the application after its options, and
writes the sample of its step as the report; --import prints that sample."""
import json, subprocess, sys
from pathlib import Path

args = sys.argv[1:]
with open({calls!r}, "a") as calls:
    calls.write(json.dumps(args) + "\\n")
if args == ["--version"]:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\\nVersion 2099.1.0.0 (build 1)")
    sys.exit(0)
if "--import" in args:
    samples = json.loads(Path(args[args.index("--import") + 1]).read_text())
    print(samples[args[args.index("--print-kernel-base") + 1]], end="")
    sys.exit(0)
Path(args[args.index("--log-file") + 1]).write_text(
    "==PROF== Connected to process 4242\\n==WARNING== a stand-in's warning\\n")
done = subprocess.run(args[args.index("-m") - 1:])
samples = {samples!r}
Path(args[args.index("--export") + 1]).write_text(
    json.dumps(samples["join" if "--section" in args else "kernels"]))
sys.exit(done.returncode)
'''


def test_the_script_runs_its_steps_and_writes_lines_in_the_schema(tmp_path):
    """Against a stand-in ncu, on the CPU: the count runs plainly and under each step, a
    line per profiled join launch then the summary, all in the schema, and the steps' ncu
    options are the ones the docstring names."""
    calls = tmp_path / "calls.jsonl"
    samples = {step: {"function": text, "demangled": demangled(text)}
               for step, text in (("join", JOIN_CSV), ("kernels", KERNELS_CSV))}
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "ncu").write_text(STAND_IN.format(python=sys.executable, calls=str(calls),
                                                samples=samples))
    (folder / "ncu").chmod(0o755)
    out = tmp_path / "out" / "ncu.jsonl"
    out.parent.mkdir()
    environ = {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}",
               "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "ncu_join.py"), "--scale", "8", "--dtri-args",
         "--backend cpu", "--timeout", "120", "--out", str(out)],
        capture_output=True, text=True, timeout=400, cwd=ROOT, env=environ, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(text) for text in out.read_text().splitlines()]
    assert lines == [json.loads(text) for text in done.stdout.splitlines()]
    assert all(schema_problems(line) == [] for line in lines)
    *launches, summary = lines
    assert [line["detail"]["kind"] for line in launches] == ["launch"] * 3
    assert [line["detail"]["kernel"] for line in launches] == [
        "search_edges", "hash_pieces", "hash_pieces"]
    assert summary["detail"]["kind"] == "summary" and summary["graph"] == "rmat:8"
    assert summary["seconds"] == pytest.approx(5e-3)
    assert summary["triangles"] > 0 and summary["detail"]["same_triangles"] is True
    assert set(summary["detail"]["join_kernels"]) == {"search_edges", "hash_pieces"}
    ranking = summary["detail"]["kernels_by_time"]
    assert ranking["top"][0]["kernel"] == "DeviceRadixSortOnesweepKernel"
    assert ranking["capped"] is False
    assert summary["detail"]["join_profile"]["ncu_messages"] == [
        "==WARNING== a stand-in's warning"]
    assert summary["detail"]["ncu_version"] == "Version 2099.1.0.0 (build 1)"
    assert {path.name for path in out.parent.iterdir()} >= {
        "ncu-join.ncu-rep", "ncu-join.csv", "ncu-join.log", "ncu-kernels.csv"}
    recorded = [json.loads(text) for text in calls.read_text().splitlines()]
    join, *imports = [args for args in recorded if "--section" in args or "--import" in args]
    assert join[join.index("--kernel-name") + 1] == (
        r"regex:^(hash_pieces|hash_warps|search_edges)(<.*>)?$")
    assert [join[i + 1] for i, word in enumerate(join) if word == "--section"] == [
        "SpeedOfLight", "MemoryWorkloadAnalysis", "Occupancy", "LaunchStats", "WarpStateStats"]
    assert join[join.index("--launch-count") + 1] == "40"
    assert "dram__bytes_read.sum" in join[join.index("--metrics") + 1].split(",")
    profiled_dtri = join[join.index("-m") - 1:]
    assert profiled_dtri[2:10] == ["dtri", "count", "--generate", "rmat:8", "--backend", "gpu",
                                   "--scheduler", "synchronous"]
    assert all(args[args.index("--page") + 1] == "raw" and "--csv" in args
               and args[args.index("--print-units") + 1] == "base" for args in imports)
