"""Nothing lost: results appear whole or not at all (the output checked before the input is
read, the result written beside its name and renamed into place when complete)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from dtri import cli
from dtri.errors import DtriError
from dtri.output import TEMPORARY_MARK, OutputFolder, reserve_output

KARATE = "examples/karate.txt"
LOCAL = ["--scheduler", "synchronous", "--backend", "cpu"]


def dtri_process(*args: str, code: str | None = None) -> subprocess.Popen:
    """``python -m dtri ARGS`` (or ``python -c CODE ARGS``) started, its output piped."""
    command = ["-c", code, *args] if code else ["-m", "dtri", *args]
    return subprocess.Popen([sys.executable, *command], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def one_line(result) -> str:
    """A failed command's single stderr line (and nothing on stdout)."""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and result.stdout == "", result.output
    return lines[0]


def temporary_folders(parent: Path) -> list[str]:
    return [name for name in os.listdir(parent) if TEMPORARY_MARK in name]


def karate_triangles() -> dict[int, int]:
    import networkx as nx

    return nx.triangles(nx.read_edgelist(KARATE, nodetype=int))


@pytest.fixture
def no_input_read(monkeypatch):
    """Fail the test if a command reads or generates its input."""
    def read(*args, **kwargs):
        raise AssertionError("the input was read before the output was checked")

    monkeypatch.setattr("dtri.prepare", read)
    monkeypatch.setattr("dtri.input.generate.from_spec", read)


@pytest.mark.parametrize(("out", "message"), [
    ("/proc/x", "dtri: error: /proc/x: cannot create a folder in /proc: No such file or "
                "directory"),
    ("-", "dtri: error: a result is a folder of files and cannot go to standard output; "
          "give a folder"),
    ("", "dtri: error: the output path is empty; give a folder"),
])
@pytest.mark.parametrize("command", [["triangles", "--generate", "rmat:10"],
                                     ["support", KARATE], ["generate", "rmat:10"],
                                     ["profile", KARATE]])
def test_an_unusable_output_fails_in_one_line_before_the_input(no_input_read, command, out,
                                                               message):
    result = CliRunner().invoke(cli.main, [*command, "-o", out])
    assert result.exit_code == 2
    assert one_line(result) == message


def test_a_missing_parent_a_file_or_a_full_folder_is_refused_first(no_input_read, tmp_path):
    (tmp_path / "file").write_text("not a folder\n")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "part.0.parquet").write_text("someone's result\n")
    missing = tmp_path / "missing" / "x"
    for out, message in ((missing, f"{missing}: its folder {missing.parent} does not exist"),
                         (tmp_path / "file", f"{tmp_path / 'file'} already exists"),
                         (tmp_path / "full", f"{tmp_path / 'full'} already exists")):
        result = CliRunner().invoke(cli.main, ["clustering", KARATE, "-o", str(out)])
        assert result.exit_code == 2 and one_line(result).startswith(f"dtri: error: {message}")
    assert (tmp_path / "full" / "part.0.parquet").read_text() == "someone's result\n"
    assert temporary_folders(tmp_path) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to a directory without write "
                                              "permission all the same")
def test_a_read_only_parent_is_refused_first(no_input_read, tmp_path):
    parent = tmp_path / "read-only"
    parent.mkdir(mode=0o500)
    try:
        result = CliRunner().invoke(cli.main, ["triangles", KARATE, "-o", str(parent / "x")])
    finally:
        parent.chmod(0o700)
    assert result.exit_code == 2
    assert one_line(result) == (f"dtri: error: {parent / 'x'}: cannot write in {parent}: "
                                f"{os.strerror(13)}")


def test_an_unusable_output_fails_fast_from_the_shell():
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "dtri", "triangles", "--generate", "rmat:16",
                           "-o", "/proc/x"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("dtri: error: /proc/x: cannot create a folder")
    assert time.perf_counter() - started < 10  # the import only: rmat:16 is never made


def frame_of(values: list[int]):
    import dask.dataframe as dd

    return dd.from_pandas(pd.DataFrame({"vertex": values}), npartitions=1)


@pytest.mark.parametrize("empty_folder_first", [False, True])
def test_of_two_writes_to_one_name_one_wins_whole(tmp_path, empty_folder_first):
    out = tmp_path / "result"
    if empty_folder_first:  # an empty folder is accepted: it must not let both through
        out.mkdir()
    with reserve_output(str(out)) as first, reserve_output(str(out)) as second:
        assert first.write_parquet(frame_of([1, 2, 3])) == str(out)
        with pytest.raises(DtriError, match="result already exists; give a new or empty"):
            second.write_parquet(frame_of([4, 5]))
    assert pd.read_parquet(out)["vertex"].tolist() == [1, 2, 3]
    assert temporary_folders(tmp_path) == []  # the loser's folder is removed


def test_two_runs_at_once_one_succeeds_and_the_folder_holds_its_result(tmp_path):
    out = tmp_path / "tri"
    runs = [dtri_process("triangles", KARATE, *LOCAL, "-o", str(out)) for _ in range(2)]
    done = [(run.returncode, *output) for run in runs
            for output in [run.communicate(timeout=300)]]
    codes = sorted(code for code, _, _ in done)
    assert codes == [0, 2], done
    loser = next(stderr for code, _, stderr in done if code == 2)
    assert loser.strip() == f"dtri: error: {out} already exists; give a new or empty directory"
    written = pd.read_parquet(out)
    assert dict(zip(written["vertex"], written["triangles"], strict=True)) == karate_triangles()
    assert temporary_folders(tmp_path) == []


def test_a_crash_between_writing_and_renaming_leaves_no_result(tmp_path, monkeypatch):
    written = []

    def crash(folder: OutputFolder) -> None:
        written.extend(os.listdir(folder.temporary_path))
        raise RuntimeError("crashed before the rename")

    monkeypatch.setattr(OutputFolder, "commit", crash)
    out = tmp_path / "tri"
    result = CliRunner().invoke(cli.main, ["triangles", KARATE, *LOCAL, "-o", str(out)])
    assert isinstance(result.exception, RuntimeError)
    assert written and all(name.endswith(".parquet") for name in written)
    assert not out.exists() and temporary_folders(tmp_path) == []
    monkeypatch.undo()
    again = CliRunner().invoke(cli.main, ["triangles", KARATE, *LOCAL, "-o", str(out)])
    assert again.exit_code == 0 and len(pd.read_parquet(out)) == 34


def test_a_failed_run_removes_its_folder(tmp_path):
    out = tmp_path / "tri"
    result = CliRunner().invoke(cli.main, ["triangles", str(tmp_path / "nope.txt"), "-o",
                                           str(out)])
    assert result.exit_code == 2 and "no such file" in result.stderr
    assert os.listdir(tmp_path) == []


DELAYED_RENAME = """\
import sys, time
from dtri import output
commit = output.OutputFolder.commit
def late(folder):
    time.sleep(120)
    commit(folder)
output.OutputFolder.commit = late
from dtri.cli import main
main(sys.argv[1:], prog_name="dtri")
"""
"""``dtri ARGS`` whose rename waits two minutes: a window to kill it with its result written."""


def killed_when(run: subprocess.Popen, ready, timeout: float = 120) -> None:
    """SIGKILL ``run`` once ``ready()`` holds (it must not end first)."""
    deadline = time.monotonic() + timeout
    while not ready():
        assert run.poll() is None, run.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.005)
    run.send_signal(signal.SIGKILL)
    run.communicate(timeout=60)


def test_a_run_killed_at_any_moment_leaves_nothing_under_the_name(tmp_path):
    out = tmp_path / "tri"
    args = ["triangles", "--generate", "rmat:16", "--backend", "cpu", "-o", str(out)]
    killed_when(dtri_process(*args), lambda: temporary_folders(tmp_path))  # as it starts
    assert not out.exists()
    late = dtri_process(*args, code=DELAYED_RENAME)

    def written() -> bool:
        return any(name.endswith(".parquet") for folder in temporary_folders(tmp_path)
                   for name in os.listdir(tmp_path / folder))

    killed_when(late, written)  # its result complete, not yet renamed
    assert not out.exists()
    again = subprocess.run([sys.executable, "-m", "dtri", *args], capture_output=True,
                           text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert len(pd.read_parquet(out)) == 46790


def test_the_fsspec_move_takes_the_same_checks():
    """A result on another fsspec file system (here ``memory://``) is moved with ``mv``; a
    second result for the name fails the same way."""
    import fsspec

    memory = fsspec.filesystem("memory")
    with reserve_output("memory://dtri-outputs/result") as first, \
            reserve_output("memory://dtri-outputs/result") as second:
        assert re.fullmatch(r"memory:///?dtri-outputs/\.result\.dtri-tmp-[0-9a-f]{32}",
                            first.temporary), first.temporary
        first.write_parquet(frame_of([7, 8]))
        with pytest.raises(DtriError, match="already exists"):
            second.write_parquet(frame_of([9]))
    assert pd.read_parquet("memory://dtri-outputs/result")["vertex"].tolist() == [7, 8]
    assert memory.ls("/dtri-outputs", detail=False) == ["/dtri-outputs/result"]
    memory.rm("/dtri-outputs", recursive=True)


def test_generate_writes_whole_and_refuses_a_second_time(tmp_path):
    out = tmp_path / "edges"
    first = CliRunner().invoke(cli.main, ["generate", "rmat:8", "--format", "csv", "-o",
                                          str(out)])
    assert first.exit_code == 0, first.output
    assert sorted(os.listdir(out)) == ["part-00000.csv"]
    second = CliRunner().invoke(cli.main, ["generate", "rmat:8", "-o", str(out)])
    assert second.exit_code == 2 and one_line(second).endswith("already exists; give a new "
                                                               "or empty directory")
    assert sorted(os.listdir(tmp_path)) == ["edges"]
