"""Checkpoints (dtri/prepared/checkpoint.py): a run killed at each stage boundary and run
again is exact and says what it skipped; checkpoints of other input, other options, another
dtri, or damaged, are refused in one line; a real run killed with SIGKILL resumes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

import dtri
from dtri.input.generate import generated
from dtri.prepared.checkpoint import CHECKPOINT_NAME, CheckpointError
from dtri.prepared.saved import SavedGraphError
from tests.oracles import host, networkx_graph

EDGES = np.random.default_rng(11).integers(0, 300, size=(6000, 2))
GRAPH = networkx_graph(EDGES)
TRIANGLES = sum(nx.triangles(GRAPH).values()) // 3
# three sorted partitions, many wedge batches: many units to kill between (the wedges join
# named: with numba's kernels loaded, auto takes the fused join, one unit per bin reached)
OPTIONS = {"npartitions": 3, "memory_budget": "256KiB", "scheduler": "synchronous",
           "join": "wedges"}


def count(checkpoint: Path, **options) -> dtri.CountResult:
    return dtri.count(EDGES, checkpoint=str(checkpoint), **{**OPTIONS, **options})


def unit_files(checkpoint: Path) -> list[Path]:
    return sorted(checkpoint.glob("count-*/*.json"))


def test_a_run_again_skips_what_is_done_and_is_exact(tmp_path):
    checkpoint = tmp_path / "ck"
    first = count(checkpoint)
    assert first.triangles == TRIANGLES and first.resumed == {}
    units = unit_files(checkpoint)
    assert len(units) > 4
    again = count(checkpoint)  # everything done: the prepare and every unit skipped
    assert again.triangles == TRIANGLES
    assert set(again.resumed) == {"prepare", "wedges_join"}
    assert again.resumed["wedges_join"]["tasks"] == again.resumed["wedges_join"]["of"] \
        == len(units)
    assert "canonicalize" not in again.seconds and "open" in again.seconds


@pytest.mark.parametrize("kept", [0.0, 0.5, 0.9])
def test_killed_during_the_join(kept, tmp_path):
    """A kill mid-join leaves some units' files: those are reused, the others run."""
    checkpoint = tmp_path / "ck"
    count(checkpoint)
    units = unit_files(checkpoint)
    for unit in units[int(len(units) * kept):]:
        unit.unlink()
    again = count(checkpoint)
    assert again.triangles == TRIANGLES
    reused = int(len(units) * kept)
    if reused:
        assert again.resumed["wedges_join"]["tasks"] == reused
    else:
        assert "wedges_join" not in again.resumed
    assert "prepare" in again.resumed
    assert len(unit_files(checkpoint)) == len(units)  # the rest written this time


def test_killed_while_saving_the_prepared_graph(tmp_path):
    """A kill before the prepared graph was renamed into place leaves its temporary folder:
    the run again prepares, and removes it."""
    checkpoint = tmp_path / "ck"
    count(checkpoint)
    import shutil

    shutil.rmtree(checkpoint / "prepared")
    for folder in checkpoint.glob("count-*"):
        shutil.rmtree(folder)
    (checkpoint / ".prepared.dtri-tmp-0123").mkdir()
    (checkpoint / ".prepared.dtri-tmp-0123" / "half").write_text("x")
    again = count(checkpoint)
    assert again.triangles == TRIANGLES and again.resumed == {}
    assert not list(checkpoint.glob(".prepared.dtri-tmp-*"))


def test_per_vertex_and_per_edge_results_are_kept(tmp_path):
    checkpoint = tmp_path / "ck"
    options = {**OPTIONS, "checkpoint": str(checkpoint)}
    with dtri.prepare(EDGES, **options) as graph:
        triangles = host(graph.triangles().compute()).to_dict()
        support = host(graph.edge_support().compute())
    assert triangles == nx.triangles(GRAPH)
    with dtri.prepare(EDGES, **options) as graph:
        assert host(graph.triangles().compute()).to_dict() == triangles
        again = host(graph.edge_support().compute())
        assert set(graph.resumed) == {"prepare", "triangles", "support"}
        assert again.sort_values(["u", "v"]).support.tolist() == \
            support.sort_values(["u", "v"]).support.tolist()
    # killed before the stage's done.json: its partition files are not trusted
    (next(checkpoint.glob("triangles-*")) / "done.json").unlink()
    with dtri.prepare(EDGES, **options) as graph:
        assert host(graph.triangles().compute()).to_dict() == triangles
        assert "triangles" not in graph.resumed


def test_resumed_on_two_workers(dask_client, backend, tmp_path):
    checkpoint = tmp_path / "ck"
    options = {"npartitions": 3, "memory_budget": "256KiB", "backend": backend}
    first = dtri.count(EDGES, checkpoint=str(checkpoint), **options)
    assert first.workers == 2 and first.triangles == TRIANGLES  # dask_client's workers
    units = unit_files(checkpoint)
    for unit in units[len(units) // 2:]:
        unit.unlink()
    again = dtri.count(EDGES, checkpoint=str(checkpoint), **options)
    assert again.triangles == TRIANGLES
    assert again.resumed["wedges_join"]["tasks"] == len(units) // 2


# ------------------------------------------------------------------------- refusals

def test_a_checkpoint_of_other_input_is_refused(tmp_path):
    checkpoint = tmp_path / "ck"
    graph_file = tmp_path / "g.txt"
    graph_file.write_text("0 1\n1 2\n0 2\n")
    dtri.count(str(graph_file), checkpoint=str(checkpoint))
    graph_file.write_text("0 1\n1 2\n0 2\n2 3\n")  # the same file, changed: stale
    with pytest.raises(CheckpointError, match=r"made from other input .*g\.txt"):
        dtri.count(str(graph_file), checkpoint=str(checkpoint))
    with pytest.raises(CheckpointError, match="other input"):
        count(checkpoint)  # foreign
    with pytest.raises(CheckpointError, match="other input"):
        dtri.count(generated("rmat:8"), checkpoint=str(checkpoint))


def test_an_edit_that_keeps_the_size_and_time_is_refused(tmp_path):
    """The file's bytes are fingerprinted: an edit of one line at the same size, its
    modification time put back, no longer resumes a count of the old edges."""
    checkpoint = tmp_path / "ck"
    graph_file = tmp_path / "g.txt"
    graph_file.write_text("0 1\n1 2\n0 2\n2 3\n")
    assert dtri.count(str(graph_file), checkpoint=str(checkpoint)).triangles == 1
    before = graph_file.stat()
    graph_file.write_text("0 1\n1 2\n0 3\n2 3\n")  # the same size, no triangle
    os.utime(graph_file, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert graph_file.stat().st_size == before.st_size
    with pytest.raises(CheckpointError, match=r"g\.txt has other bytes than when it was made"):
        dtri.count(str(graph_file), checkpoint=str(checkpoint))


def test_a_large_file_is_fingerprinted_by_samples(tmp_path):
    """Past ``dtri.checkpoint-hash-whole-bytes`` the fingerprint hashes evenly spread samples
    and the size: a byte in a sample changes it, a byte between samples does not (the rule
    the module documents)."""
    import dask
    from fsspec.implementations.local import LocalFileSystem

    from dtri.prepared.checkpoint import file_fingerprint

    fs, path = LocalFileSystem(), tmp_path / "big"
    data = bytearray(np.random.default_rng(1).integers(0, 256, 10_000, dtype=np.uint8))
    settings = {"dtri.checkpoint-hash-whole-bytes": 1000, "dtri.checkpoint-hash-samples": 3,
                "dtri.checkpoint-hash-sample-bytes": 100}

    def fingerprint(changed: int | None = None) -> str:
        edited = bytearray(data)
        if changed is not None:
            edited[changed] ^= 0xFF
        path.write_bytes(bytes(edited))
        with dask.config.set(settings):
            return file_fingerprint(fs, str(path), len(edited))

    whole = fingerprint()
    assert "3-samples" in whole
    for sampled in (0, 99, 4950, 9999):  # samples at 0, 4950 and 9900, 100 bytes each
        assert fingerprint(sampled) != whole
    assert fingerprint(2000) == whole
    assert file_fingerprint(fs, str(path), 10_000).startswith("blake2b:")  # whole by default


def test_a_live_run_holds_its_checkpoint(tmp_path):
    """While a graph of the checkpoint is open its lock is held: another run is refused in one
    line, then takes it once the graph is released; a lock whose process has ended is taken
    over."""
    from dtri.prepared.checkpoint import LOCK_NAME

    checkpoint = tmp_path / "ck"
    with dtri.prepare(EDGES, checkpoint=str(checkpoint), **OPTIONS) as graph:
        assert json.loads((checkpoint / LOCK_NAME).read_text())["pid"] == os.getpid()
        with pytest.raises(CheckpointError, match=r"in use by another run \(pid \d+"):
            count(checkpoint)
        assert graph.count().triangles == TRIANGLES  # the holder goes on, exact
    assert not (checkpoint / LOCK_NAME).exists()
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)
    (checkpoint / LOCK_NAME).write_text(json.dumps(
        {"pid": int(ended.stdout), "host": os.uname().nodename, "started": 1.0}))
    assert count(checkpoint).triangles == TRIANGLES  # a dead run's lock: taken over
    assert not (checkpoint / LOCK_NAME).exists()


def test_the_cli_refuses_a_checkpoint_in_use_in_one_line(tmp_path):
    """``dtri count`` against a checkpoint whose lock names a live process: one line, exit
    2, and the lock left as it was."""
    import psutil

    from dtri.prepared.checkpoint import LOCK_NAME

    checkpoint = tmp_path / "ck"
    done = subprocess.run([sys.executable, "-m", "dtri", "count", "--generate", "rmat:8",
                           "--checkpoint", str(checkpoint)], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock = json.dumps({"pid": holder.pid, "host": os.uname().nodename,
                           "started": round(psutil.Process(holder.pid).create_time(), 2)})
        (checkpoint / LOCK_NAME).write_text(lock)
        again = subprocess.run([sys.executable, "-m", "dtri", "count", "--generate", "rmat:8",
                                "--checkpoint", str(checkpoint)], capture_output=True,
                               text=True, check=False)
    finally:
        holder.kill()
        holder.wait()
    assert again.returncode == 2 and again.stderr.count("\n") == 1, again.stderr
    assert "in use by another run" in again.stderr and "Traceback" not in again.stderr
    assert (checkpoint / LOCK_NAME).read_text() == lock


def test_a_checkpoint_with_other_options_or_dtri_is_refused(tmp_path):
    checkpoint = tmp_path / "ck"
    count(checkpoint)
    with pytest.raises(CheckpointError, match="orientation 'auto', this run gives 'id'"):
        count(checkpoint, orientation="id")
    manifest = checkpoint / CHECKPOINT_NAME
    made = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**made, "dtri_version": "0.0.1"}))
    with pytest.raises(CheckpointError, match=r"made by dtri 0\.0\.1"):
        count(checkpoint)


def test_a_damaged_checkpoint_is_refused(tmp_path):
    checkpoint = tmp_path / "ck"
    count(checkpoint)
    unit = unit_files(checkpoint)[0]
    unit.write_text('{"value": ')
    with pytest.raises(CheckpointError, match=str(unit.name)):
        count(checkpoint)
    unit.unlink()
    part = checkpoint / "prepared" / "edges" / "part-00001.parquet"
    part.write_bytes(part.read_bytes()[:40])
    with pytest.raises(SavedGraphError, match=r"part-00001\.parquet: damaged"):
        count(checkpoint)
    (checkpoint / CHECKPOINT_NAME).write_text("not json")
    with pytest.raises(CheckpointError, match=CHECKPOINT_NAME):
        count(checkpoint)


def test_a_folder_that_is_no_checkpoint_is_refused(tmp_path):
    (tmp_path / "ck").mkdir()
    (tmp_path / "ck" / "notes.txt").write_text("mine")
    with pytest.raises(CheckpointError, match="is not a dtri checkpoint"):
        count(tmp_path / "ck")
    assert (tmp_path / "ck" / "notes.txt").read_text() == "mine"
    (tmp_path / "file").write_text("")
    with pytest.raises(dtri.ConfigurationError, match="is a file"):
        count(tmp_path / "file")
    with pytest.raises(dtri.ConfigurationError, match="does not exist"):
        count(tmp_path / "missing" / "ck")


def test_the_cli_refuses_in_one_line(tmp_path):
    from click.testing import CliRunner

    from dtri.cli import main

    checkpoint = str(tmp_path / "ck")
    runner = CliRunner()
    done = runner.invoke(main, ["count", "--generate", "rmat:8", "--checkpoint", checkpoint])
    assert done.exit_code == 0, done.output
    done = runner.invoke(main, ["count", "--generate", "rmat:8", "--seed", "2",
                                "--checkpoint", checkpoint])
    assert done.exit_code == 2 and "Traceback" not in done.output
    assert done.output.count("\n") == 1 and "a checkpoint of another run" in done.output


# ------------------------------------------------------------------------- a real kill

def test_a_run_killed_with_sigkill_resumes_exactly(tmp_path):
    """``dtri count --checkpoint`` in its own process, killed with SIGKILL once its prepared
    graph is saved, then run again: exact, and the preparation skipped."""
    checkpoint = tmp_path / "ck"
    command = [sys.executable, "-m", "dtri", "count", "--generate", "rmat:15",
               "--checkpoint", str(checkpoint), "--memory-budget", "4MiB", "--json"]
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           cwd=tmp_path)
    try:
        deadline = time.monotonic() + 300
        while not (checkpoint / "prepared" / "dtri-graph.json").exists():
            assert run.poll() is None, run.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline
            time.sleep(0.01)
        os.kill(run.pid, signal.SIGKILL)
        run.wait(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == -signal.SIGKILL
    again = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path,
                           timeout=600, check=False)
    assert again.returncode == 0, again.stderr[-3000:]
    report = json.loads(again.stdout)
    assert report["triangles"] == dtri.count_triangles(generated("rmat:15"))
    assert "prepare" in report["resumed"] and report["resumed"]["prepare"]["seconds"] > 0


def test_the_fused_joins_units_are_kept_and_skipped_too(tmp_path):
    checkpoint = tmp_path / "ck"
    first = count(checkpoint, join="intersect")
    units = unit_files(checkpoint)
    assert first.triangles == TRIANGLES and units
    assert all(unit.name.startswith("intersect-") for unit in units)
    units[-1].unlink()  # killed before its last unit was written
    again = count(checkpoint, join="intersect")
    assert again.triangles == TRIANGLES
    assert again.resumed["wedges_join"]["tasks"] == len(units) - 1
    assert again.resumed["wedges_join"]["of"] == len(units)
