"""The R-MAT and G(n, m) generators: deterministic, partition-count independent, in range."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import dtri
from dtri.cli import main
from dtri.errors import ConfigurationError
from dtri.input.generate import (
    MAX_PARTITION_EDGES,
    default_partitions,
    from_spec,
    gnm,
    is_spec,
    parse_spec,
    rmat,
    rmat_arrays,
    scramble,
)
from dtri.kernels.hashing import splitmix64, splitmix64_int
from tests.oracles import networkx_triangles


def edges_of(frame) -> np.ndarray:
    return frame.compute()[["src", "dst"]].to_numpy()


def test_rmat_shape_dtypes_and_range():
    frame = rmat(10, 4, seed=1, npartitions=3)
    assert frame.npartitions == 3
    table = frame.compute()
    assert list(table.columns) == ["src", "dst"]
    assert (table.dtypes == np.int64).all()
    assert len(table) == 4 * 2**10
    assert table.index.tolist() == list(range(4 * 2**10))  # the global edge numbers
    assert table.to_numpy().min() >= 0 and table.to_numpy().max() < 2**10


def test_same_seed_same_edges_for_any_partition_count():
    reference = edges_of(rmat(9, seed=5, npartitions=1))
    for parts in (2, 3, 7, 64):
        assert np.array_equal(edges_of(rmat(9, seed=5, npartitions=parts)), reference)
    assert np.array_equal(edges_of(rmat(9, seed=5)), reference)
    assert not np.array_equal(edges_of(rmat(9, seed=6)), reference)
    pairs = edges_of(gnm(1000, 5000, seed=2, npartitions=1))
    assert np.array_equal(edges_of(gnm(1000, 5000, seed=2, npartitions=9)), pairs)
    assert not np.array_equal(edges_of(gnm(1000, 5000, seed=3)), pairs)


def test_the_edges_are_pinned():
    """The generator's output is part of its interface: a change here changes every benchmark."""
    table = rmat(10, seed=0, npartitions=2).compute()
    assert table.head(4).to_numpy().tolist() == [[138, 355], [877, 770], [980, 1], [877, 1011]]
    assert (int(table.src.sum()), int(table.dst.sum())) == (9175368, 9143660)


def test_partitions_are_made_by_dtri_generate_tasks():
    frame = rmat(6, npartitions=4)
    keys = frame.optimize().__dask_keys__()
    assert len(keys) == 4 and all(key[0].startswith("dtri-generate-") for key in keys)
    assert frame.divisions == (0, 256, 512, 768, 1023)


def test_default_partition_count():
    assert default_partitions(1) == 1
    assert default_partitions(MAX_PARTITION_EDGES) == 1
    assert default_partitions(MAX_PARTITION_EDGES + 1) == 2
    assert rmat(24, 1).npartitions == 1
    assert rmat(24, 16).npartitions == 16
    assert gnm(10, 0).npartitions == 1 and len(gnm(10, 0).compute()) == 0
    assert gnm(10, 3, npartitions=8).npartitions == 3  # no empty partitions


@pytest.mark.parametrize("scale", [1, 2, 3, 7, 12])
def test_scramble_is_a_permutation(scale):
    ids = np.arange(2**scale, dtype=np.uint64)
    for seed in (0, 1, 12345):
        image = scramble(np, ids, scale, seed)
        assert np.array_equal(np.sort(image), ids)
    if scale >= 7:
        assert not np.array_equal(scramble(np, ids, scale, 0), ids)
        assert not np.array_equal(scramble(np, ids, scale, 0), scramble(np, ids, scale, 1))


def test_splitmix64_arrays_match_python_ints():
    values = [0, 1, 2**63, 2**64 - 1, 0x0123456789ABCDEF]
    hashed = splitmix64(np, np.array(values, dtype=np.uint64))
    assert hashed.tolist() == [splitmix64_int(v) for v in values]
    assert splitmix64_int(0) == 0xE220A8397B1DCDAF  # splitmix64's first output for state 0


def test_quadrant_thresholds():
    scale = 6
    corner = scramble(np, np.array([0, 2**scale - 1], dtype=np.uint64), scale, 0).astype(np.int64)
    src, dst = rmat_arrays(np, 0, 100, scale, 1.0, 0.0, 0.0, 0)  # always top-left
    assert (src == corner[0]).all() and (dst == corner[0]).all()
    src, dst = rmat_arrays(np, 0, 100, scale, 0.0, 1.0, 0.0, 0)  # always top-right
    assert (src == corner[0]).all() and (dst == corner[1]).all()
    src, dst = rmat_arrays(np, 0, 100, scale, 0.0, 0.0, 1.0, 0)  # always bottom-left
    assert (src == corner[1]).all() and (dst == corner[0]).all()
    src, dst = rmat_arrays(np, 0, 100, scale, 0.0, 0.0, 0.0, 0)  # always bottom-right
    assert (src == corner[1]).all() and (dst == corner[1]).all()


def test_rmat_degrees_are_skewed():
    table = rmat(12, seed=3).compute()
    degrees = np.bincount(np.concatenate([table.src, table.dst]), minlength=2**12)
    assert degrees.max() > 20 * degrees.mean()
    assert (degrees == 0).sum() > 2**12 // 10  # R-MAT leaves many vertices isolated
    pairs = gnm(2**12, len(table), seed=3).compute()
    uniform = np.bincount(np.concatenate([pairs.src, pairs.dst]), minlength=2**12)
    assert uniform.max() < 3 * uniform.mean()


def test_gnm_range_and_size():
    table = gnm(37, 10_000, seed=4, npartitions=3).compute()
    assert len(table) == 10_000 and (table.dtypes == np.int64).all()
    assert table.to_numpy().min() == 0 and table.to_numpy().max() == 36
    big = gnm(2**62 + 1, 1000).compute().to_numpy()
    assert big.min() >= 0 and big.max() <= 2**62 and big.max() > 2**60


def test_count_of_a_generated_graph_matches_networkx():
    frame = rmat(8, seed=0)
    result = dtri.count(frame, scheduler="synchronous")
    assert result.triangles == networkx_triangles(edges_of(frame))
    assert dtri.count(rmat(8, seed=0, npartitions=5), scheduler="threads").triangles == (
        result.triangles)
    pairs = gnm(300, 3000, seed=1)
    assert dtri.count(pairs, scheduler="synchronous").triangles == networkx_triangles(
        edges_of(pairs))


@pytest.mark.parametrize(("spec", "expected"), [
    ("rmat:22", ("rmat", (22, 16))),
    ("rmat:22:8", ("rmat", (22, 8))),
    ("RMAT:5:2", ("rmat", (5, 2))),
    ("gnm:1000:5000", ("gnm", (1000, 5000))),
    (" gnm:1_000:5_000 ", ("gnm", (1000, 5000))),
])
def test_parse_spec(spec, expected):
    assert parse_spec(spec) == expected
    assert is_spec(spec)


@pytest.mark.parametrize(("spec", "message"), [
    ("rmat", "bad generator spec"),
    ("rmat:", "non-negative integers"),
    ("rmat:x", "non-negative integers"),
    ("rmat:-3", "non-negative integers"),
    ("rmat:3:4:5", "wrong number of fields"),
    ("gnm:10", "wrong number of fields"),
    ("ba:10:3", "unknown generator 'ba'"),
    ("rmat:0", "scale must be between 1 and 31"),
    ("rmat:32", "scale must be between 1 and 31"),
    ("rmat:60", "scale must be between 1 and 31"),
    ("rmat:31:1024", "more than the 1,099,511,627,776"),
    ("gnm:10:1099511627777", "more than the 1,099,511,627,776"),
    ("gnm:4294967296:2147483649", "more than the 2\\*\\*31"),
    ("rmat:4:0", "edge_factor must be at least 1"),
    ("gnm:0:5", "n must be between 1"),
])
def test_bad_specs_raise_configuration_errors(spec, message):
    with pytest.raises(ConfigurationError, match=message):
        from_spec(spec)
    assert issubclass(ConfigurationError, ValueError)


def test_bad_arguments():
    with pytest.raises(ConfigurationError, match="probabilities"):
        rmat(4, a=0.9, b=0.2)
    with pytest.raises(ConfigurationError, match="backend"):
        rmat(4, backend="tpu")
    with pytest.raises(ConfigurationError, match="npartitions"):
        gnm(4, 4, npartitions=0)
    assert not is_spec("graph.txt") and not is_spec("s3://bucket/rmat:3")


def test_from_spec_is_rmat_or_gnm():
    assert np.array_equal(edges_of(from_spec("rmat:7:4", seed=2)), edges_of(rmat(7, 4, seed=2)))
    assert np.array_equal(edges_of(from_spec("gnm:50:70", seed=2)), edges_of(gnm(50, 70, seed=2)))


# ---------------------------------------------------------------------------- command line


def test_count_generate_on_the_command_line():
    runner = CliRunner()
    out = runner.invoke(main, ["count", "--generate", "rmat:8", "--seed", "2", "--json",
                               "--scheduler", "synchronous", "--backend", "cpu"])
    assert out.exit_code == 0, out.output
    report = json.loads(out.stdout)
    assert report["generate"] == "rmat:8" and report["seed"] == 2
    assert report["triangles"] == dtri.count(rmat(8, seed=2), scheduler="sync").triangles


def test_count_wants_paths_or_generate_not_both(tmp_path):
    for args in ([], ["x.txt", "--generate", "rmat:4"]):
        done = subprocess.run([sys.executable, "-m", "dtri", "count", *args,
                               "--scheduler", "synchronous"],
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 2, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
        assert done.stderr.startswith("dtri: error: give PATHS")
    done = subprocess.run([sys.executable, "-m", "dtri", "count", "--generate", "rmat:x",
                           "--scheduler", "synchronous"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and "bad generator spec" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(("fmt", "pattern"), [
    ("parquet", "*.parquet"), ("snap", "part-*.txt"), ("csv", "part-*.csv"),
])
def test_generate_writes_what_count_reads_back(tmp_path, fmt, pattern):
    out = tmp_path / "graph"
    runner = CliRunner()
    done = runner.invoke(main, ["generate", "rmat:9:4", "-o", str(out), "--seed", "3",
                                "--partitions", "3", "--format", fmt])
    assert done.exit_code == 0, done.output
    assert len(list(out.glob(pattern))) == 3
    counted = runner.invoke(main, ["count", str(out), "--json", "--scheduler", "synchronous"])
    assert counted.exit_code == 0, counted.output
    expected = dtri.count(rmat(9, 4, seed=3), scheduler="synchronous")
    report = json.loads(counted.stdout)
    assert (report["triangles"], report["edges"]) == (expected.triangles, expected.edges)
    if fmt != "parquet":
        first = sorted(out.glob(pattern))[0].read_text().splitlines()
        head = pd.Series(first[:2]).tolist()
        if fmt == "csv":
            assert head[0] == "src,dst"
        else:
            assert len(head[0].split(" ")) == 2


def test_generate_refuses_a_non_empty_directory(tmp_path):
    (tmp_path / "old.txt").write_text("1 2\n")
    done = CliRunner().invoke(main, ["generate", "gnm:5:5", "-o", str(tmp_path)])
    assert done.exit_code == 2
    assert done.stderr.strip() == f"dtri: error: {tmp_path} already exists; give a new or " \
                                  "empty directory"


# ---------------------------------------------------------------------------- GPU


@pytest.mark.gpu
def test_gpu_backend_makes_the_same_edges():
    for frame_cpu, frame_gpu in [
        (rmat(11, seed=9, npartitions=3), rmat(11, seed=9, npartitions=2, backend="gpu")),
        (gnm(5000, 20_000, seed=9), gnm(5000, 20_000, seed=9, npartitions=5, backend="gpu")),
    ]:
        gpu = frame_gpu.compute()
        assert type(gpu).__module__.split(".")[0] == "cudf"
        pd.testing.assert_frame_equal(gpu.to_pandas(), frame_cpu.compute(), check_index_type=False)
