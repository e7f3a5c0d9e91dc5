"""Tests of dtri.input.read: every format, splitting into blocks, and exact errors for bad input."""

from __future__ import annotations

import bz2
import errno
import gzip
import io
import json
import random
import re
from pathlib import Path

import fsspec
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from fsspec.utils import read_block
from hypothesis import given, settings
from hypothesis import strategies as st

import dtri
from dtri.cli import main
from dtri.errors import ConfigurationError, InputError
from dtri.input.parquet import MAX_ROW_GROUP_SLICES, parquet_pieces
from dtri.input.read import plan_read, read_edges
from dtri.input.sources import FORMATS, format_from_name
from dtri.input.text import Layout, TextBlock, _read_stream_block, parse_block
from dtri.input.text_lines import WHITESPACE
from tests.oracles import BAD_IDS, SHARED_DATA, bad_id_folder, networkx_triangles


@pytest.fixture(scope="module", autouse=True, params=["numpy", "pandas", "numba"])
def fast_parser(request: pytest.FixtureRequest):
    """Every reading test with small blocks parsed by NumPy's parser (the default without
    numba's kernels loaded), by pandas' (the default for large blocks) and by numba's
    (:func:`dtri.kernels.parse.parse_id_pairs`, whitespace-separated text where numba's
    kernels are loaded): all must read the same, and leave every bad line to the exact
    parser."""
    import dask

    if request.param == "numba":
        import dtri.kernels.parse  # noqa: F401  (loaded, as the parser's rule asks)
    limit = -1 if request.param == "pandas" else None
    with dask.config.set({"dtri.read.numpy-parser-max-bytes": limit} if limit else {}), \
            pytest.MonkeyPatch.context() as patch:
        patch.setattr("dtri.input.text.compiled_kernels_ready",
                      lambda items=None: request.param == "numba")
        yield request.param


def frame(edges: list[tuple[int, int]]) -> pd.DataFrame:
    ids = np.array(edges, dtype=np.int64).reshape(-1, 2)
    return pd.DataFrame({"src": ids[:, 0], "dst": ids[:, 1]})


def check(ddf, edges: list[tuple[int, int]]) -> None:
    """The collection and its result have exactly int64 src/dst and the expected rows."""
    assert list(ddf.columns) == ["src", "dst"]
    assert list(ddf.dtypes) == [np.int64, np.int64]
    result = ddf.compute().reset_index(drop=True)
    pd.testing.assert_frame_equal(result, frame(edges))


def write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def random_edges(count: int, seed: int = 0) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    return [(rng.randrange(10**6), rng.randrange(10**6)) for _ in range(count)]


def snap_text(edges: list[tuple[int, int]]) -> str:
    return "".join(f"{s}\t{t}\n" for s, t in edges)


# ---------------------------------------------------------------------------- formats


def test_snap_comments_tabs_leading_spaces_and_extra_columns(tmp_path):
    path = write(
        tmp_path / "g.txt",
        "# Directed graph\n% another comment\n\n  1 2\n3\t4\n5 6 0.5 1700000000\n"
        "   # indented comment\n7  8 # trailing comment\n9 9223372036854775807\n",
    )
    check(read_edges(path), [(1, 2), (3, 4), (5, 6), (7, 8), (9, 2**63 - 1)])


def test_snap_rows_with_varying_field_counts_and_crlf(tmp_path):
    path = write(tmp_path / "g.edges", "1 2\r\n3 4 5\r\n6 7\r\n8 9 1 1\r\n")
    check(read_edges(path), [(1, 2), (3, 4), (6, 7), (8, 9)])


def test_snap_without_trailing_newline(tmp_path):
    check(read_edges(write(tmp_path / "g.txt", "1 2\n3 4")), [(1, 2), (3, 4)])


@pytest.mark.parametrize("text", ["", "# only\n% comments\n\n", "\n\n"])
def test_empty_and_comment_only_files_give_no_rows(tmp_path, text):
    check(read_edges(write(tmp_path / "g.txt", text)), [])


def test_csv_with_header_detected(tmp_path):
    path = write(tmp_path / "g.csv", "# exported\nsrc,dst,weight\n1,2,0.5\n3,4,1.5\n")
    check(read_edges(path), [(1, 2), (3, 4)])


def test_csv_without_header(tmp_path):
    check(read_edges(write(tmp_path / "g.csv", "1,2\n3,4\n")), [(1, 2), (3, 4)])


def test_csv_columns_by_name_and_by_position(tmp_path):
    path = write(tmp_path / "g.csv", "weight,to,from\n0.5,2,1\n1.5,4,3\n")
    check(read_edges(path, columns=("from", "to")), [(1, 2), (3, 4)])
    check(read_edges(path, columns=(2, 1)), [(1, 2), (3, 4)])


def test_csv_explicit_header_flag(tmp_path):
    path = write(tmp_path / "g.csv", "1,2\n3,4\n")
    check(read_edges(path, header=True), [(3, 4)])
    with pytest.raises(InputError, match="no header"):
        read_edges(write(tmp_path / "h.csv", "a,b\n1,2\n"), header=False, columns=("a", "b"))


def test_csv_header_after_a_byte_order_mark(tmp_path):
    path = write(tmp_path / "g.csv", b"\xef\xbb\xbfsrc,dst\n1,2\n")
    check(read_edges(path, columns=("src", "dst")), [(1, 2)])
    check(read_edges(write(tmp_path / "g.txt", b"\xef\xbb\xbf1 2\n3 4 x\n")), [(1, 2), (3, 4)])


def test_csv_unknown_column_name(tmp_path):
    path = write(tmp_path / "g.csv", "a,b\n1,2\n")
    with pytest.raises(InputError, match="no column 'x'") as info:
        read_edges(path, columns=("a", "x"))
    assert info.value.path == str(path)


def test_tsv_with_header(tmp_path):
    path = write(tmp_path / "g.tsv", "source\ttarget\n1\t2\n3\t4\n")
    check(read_edges(path), [(1, 2), (3, 4)])
    check(read_edges(path, columns=("target", "source")), [(2, 1), (4, 3)])


@pytest.mark.parametrize(
    ("field", "entries"),
    [
        ("pattern", ["1 2", "3 1"]),
        ("integer", ["1 2 7", "3 1 -4"]),
        ("real", ["1 2 0.5", "3 1 1e-3"]),
    ],
)
@pytest.mark.parametrize("symmetry", ["general", "symmetric"])
def test_mtx(tmp_path, field, entries, symmetry):
    text = (
        f"%%MatrixMarket matrix coordinate {field} {symmetry}\n% a comment\n%\n"
        f"3 3 2\n" + "\n".join(entries) + "\n"
    )
    check(read_edges(write(tmp_path / "m.mtx", text)), [(1, 2), (3, 1)])


def test_mtx_size_line_in_a_later_block(tmp_path):
    comments = "".join(f"% comment line {i}\n" for i in range(20))
    text = f"%%MatrixMarket matrix coordinate pattern general\n{comments}5 5 3\n1 2\n2 3\n4 5\n"
    ddf = read_edges(write(tmp_path / "m.mtx", text), blocksize=16)
    check(ddf, [(1, 2), (2, 3), (4, 5)])


def test_mtx_array_format_is_rejected(tmp_path):
    path = write(tmp_path / "m.mtx", "%%MatrixMarket matrix array real general\n2 2\n1.0\n2.0\n")
    with pytest.raises(InputError, match="'array' is not supported") as info:
        read_edges(path)
    assert (info.value.path, info.value.line) == (str(path), 1)


def test_mtx_bad_size_line(tmp_path):
    path = write(tmp_path / "m.mtx", "%%MatrixMarket matrix coordinate pattern general\n%\n3 3\n")
    with pytest.raises(InputError, match="size line") as info:
        read_edges(path)
    assert info.value.line == 3


def test_parquet_default_named_and_positional_columns(tmp_path):
    path = tmp_path / "g.parquet"
    pd.DataFrame({"w": [0.5, 1.5], "dst": [2, 4], "src": [1, 3]}).to_parquet(path)
    check(read_edges(path), [(1, 2), (3, 4)])
    check(read_edges(path, columns=("dst", "src")), [(2, 1), (4, 3)])
    check(read_edges(path, columns=(2, 1)), [(1, 2), (3, 4)])


def test_parquet_directory_and_smaller_integer_types(tmp_path):
    folder = tmp_path / "edges"
    folder.mkdir()
    for k in range(3):
        table = pd.DataFrame(
            {"a": np.array([k, k + 10], np.uint32), "b": np.array([1, 2], np.int16)}
        )
        table.to_parquet(folder / f"part.{k}.parquet")
    write(folder / "_SUCCESS", "")
    check(read_edges(folder), [(0, 1), (10, 2), (1, 1), (11, 2), (2, 1), (12, 2)])


def parquet_folder(folder: Path, tables: list[dict[str, np.ndarray]]) -> list[Path]:
    """Parquet files ``part-k.parquet`` in ``folder``, one per table, as written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir()
    paths = [folder / f"part-{k}.parquet" for k in range(len(tables))]
    for path, table in zip(paths, tables, strict=True):
        pq.write_table(pa.table(table), path)
    return paths


@pytest.mark.parametrize("piece_rows", [None, 2])
def test_parquet_files_with_different_integer_widths_read_as_int64(tmp_path, piece_rows):
    """int32 and int64 (and unsigned) ids of the same columns in one folder are read, in one
    piece of several files or a piece per file."""
    parquet_folder(tmp_path / "edges", [
        {"src": np.array([0, 1], np.int32), "dst": np.array([1, 2], np.int32)},
        {"src": np.array([2, 2**40], np.int64), "dst": np.array([0, 5], np.int64)},
        {"src": np.array([7], np.uint16), "dst": np.array([2**63 - 1], np.uint64)}])
    edges = [(0, 1), (1, 2), (2, 0), (2**40, 5), (7, 2**63 - 1)]
    check(read_edges(tmp_path / "edges", max_rows=piece_rows), edges)
    assert dtri.count_triangles(tmp_path / "edges", scheduler="synchronous") == 1


def test_parquet_file_with_other_columns_is_named_in_one_line(tmp_path):
    first, _, other = parquet_folder(tmp_path / "edges", [
        {"src": np.array([0]), "dst": np.array([1])},
        {"src": np.array([1]), "dst": np.array([2])},
        {"u": np.array([2]), "v": np.array([0])}])
    message = f"{other}: has columns ['u', 'v'], expected ['src', 'dst'] as in {first}"
    with pytest.raises(InputError) as info:
        read_edges(tmp_path / "edges")
    assert str(info.value) == message
    result = CliRunner().invoke(main, ["count", str(tmp_path / "edges"),
                                       "--scheduler", "synchronous"])
    assert (result.exit_code, result.output) == (2, f"dtri: error: {message}\n")


def test_parquet_later_file_with_float_or_null_ids_is_named(tmp_path):
    _, floats = parquet_folder(tmp_path / "floats", [
        {"src": np.array([0]), "dst": np.array([1])},
        {"src": np.array([1.0]), "dst": np.array([2])}])
    with pytest.raises(InputError, match="column 'src' has type float64") as info:
        read_edges(tmp_path / "floats")
    assert info.value.path == str(floats)
    import pyarrow as pa

    _, nulls = parquet_folder(tmp_path / "nulls", [
        {"src": np.array([0]), "dst": np.array([1])},
        {"src": np.array([1, 2]), "dst": pa.array([2, None], pa.int64())}])
    with pytest.raises(InputError, match="missing \\(null\\) vertex id in column 'dst'") as info:
        read_edges(tmp_path / "nulls").compute(scheduler="synchronous")
    assert info.value.path == str(nulls)


def test_parquet_rejects_non_integer_and_negative_ids(tmp_path):
    floats = tmp_path / "f.parquet"
    pd.DataFrame({"src": [1.0], "dst": [2.0]}).to_parquet(floats)
    with pytest.raises(InputError, match="column 'src' has type float64") as info:
        read_edges(floats)
    assert info.value.path == str(floats)
    negative = tmp_path / "n.parquet"
    pd.DataFrame({"src": [1, 2], "dst": [3, -5]}).to_parquet(negative)
    with pytest.raises(InputError, match="negative vertex id -5") as info:
        read_edges(negative).compute()
    assert info.value.path == str(negative)


@pytest.mark.parametrize("text", ["", "# only a comment\n", "\n\n"])
def test_a_file_without_edges_reads_empty_and_warns_nothing(tmp_path, text, recwarn):
    path = write(tmp_path / "g.txt", text)
    frame = read_edges(path).compute(scheduler="synchronous")
    assert len(frame) == 0 and list(frame.columns) == ["src", "dst"]
    assert [str(w.message) for w in recwarn] == []


@pytest.mark.parametrize("cut", [0, 1, 2])
def test_a_cut_short_parquet_file_in_a_directory_is_named(tmp_path, cut):
    """A writer stopped mid-directory leaves a file of a few bytes: the error names that
    file, whether it is the first one (its schema is read) or a later one (its footer)."""
    folder = tmp_path / "edges"
    folder.mkdir()
    for k in range(3):
        pd.DataFrame({"src": [k, k + 1], "dst": [k + 2, k + 3]}).to_parquet(
            folder / f"part-{k}.parquet")
    broken = folder / f"part-{cut}.parquet"
    broken.write_bytes(b"PAR1")
    with pytest.raises(InputError, match="not a readable Parquet file") as info:
        read_edges(folder)
    assert str(info.value).startswith(f"{broken}: ")


def test_parquet_unknown_columns(tmp_path):
    path = tmp_path / "g.parquet"
    pd.DataFrame({"a": [1], "b": [2]}).to_parquet(path)
    check(read_edges(path), [(1, 2)])
    with pytest.raises(InputError, match="no column 'src'"):
        read_edges(path, columns=("src", "b"))
    with pytest.raises(InputError, match="no column 5"):
        read_edges(path, columns=(0, 5))


def test_explicit_format_and_option_errors(tmp_path):
    path = write(tmp_path / "g.txt", "1,2\n3,4\n")
    check(read_edges(path, format="csv"), [(1, 2), (3, 4)])
    with pytest.raises(ConfigurationError, match="unknown format"):
        read_edges(path, format="xml")
    with pytest.raises(InputError, match="no column names"):
        read_edges(path, columns=("a", "b"))


@pytest.mark.parametrize("bad", BAD_IDS)
def test_parquet_ids_read_in_process_are_checked_as_on_a_cluster(tmp_path, bad):
    """An in-process CPU count reads Parquet files as arrays, with the checks of the frame
    read: a null, a negative id the footer does not record, an unsigned id past int64,
    each named with its file."""
    path, message = bad_id_folder(tmp_path, bad)
    with pytest.raises(InputError, match=message) as info:
        dtri.count_triangles(str(tmp_path), backend="cpu")
    assert info.value.path == str(path)


def test_parquet_negative_id_without_statistics(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "n.parquet"
    table = pa.table({"src": [1, -2], "dst": [3, 4]})
    pq.write_table(table, path, write_statistics=False)
    with pytest.raises(InputError, match="negative vertex id -2") as info:
        read_edges(path).compute()
    assert info.value.path == str(path)


@pytest.mark.parametrize(("suffix", "compress"), [(".gz", gzip.compress), (".bz2", bz2.compress)])
def test_compressed(tmp_path, suffix, compress):
    edges = random_edges(50)
    path = write(tmp_path / f"g.txt{suffix}", compress(("# c\n" + snap_text(edges)).encode()))
    check(read_edges(path), edges)
    csv_path = write(tmp_path / f"g.csv{suffix}", compress(b"src,dst\n1,2\n"))
    check(read_edges(csv_path), [(1, 2)])


def test_glob_and_directory(tmp_path):
    folder = tmp_path / "parts"
    folder.mkdir()
    write(folder / "a.txt.gz", gzip.compress(b"1 2\n"))
    write(folder / "b.txt.gz", gzip.compress(b"3 4\n"))
    write(folder / "c.txt", "5 6\n")
    write(folder / ".hidden.txt", "7 8\n")
    write(folder / "_meta.txt", "9 10\n")
    check(read_edges(str(folder / "*.txt.gz")), [(1, 2), (3, 4)])
    check(read_edges(folder), [(1, 2), (3, 4), (5, 6)])
    check(read_edges([str(folder / "c.txt"), folder / "a.txt.gz"]), [(5, 6), (1, 2)])


def test_memory_url():
    with fsspec.open("memory://dtri-test/g.txt", "wb") as f:
        f.write(b"# c\n1 2\n3 4\n")
    try:
        check(read_edges("memory://dtri-test/g.txt", blocksize=5), [(1, 2), (3, 4)])
        check(read_edges("memory://dtri-test/*.txt"), [(1, 2), (3, 4)])
    finally:
        fsspec.filesystem("memory").rm("/dtri-test", recursive=True)


def test_formats_from_names():
    assert FORMATS == ("snap", "csv", "tsv", "mtx", "parquet")
    names = {"a.mtx.gz": "mtx", "a.csv": "csv", "a.TSV.bz2": "tsv", "a.pq": "parquet"}
    names |= {"a.parquet": "parquet", "a.txt.gz": "snap", "a.edges": "snap", "a": "snap"}
    for name, fmt in names.items():
        assert (format_from_name(name) or "snap") == fmt, name


# ---------------------------------------------------------------------------- splitting


def test_tiny_blocksize_gives_many_partitions_and_the_same_rows(tmp_path):
    edges = random_edges(300)
    path = write(tmp_path / "g.txt", "# header\n" + snap_text(edges))
    ddf = read_edges(path, blocksize=64)
    assert ddf.npartitions > 50
    check(ddf, edges)
    check(read_edges(path, blocksize="1KiB"), edges)


def test_tiny_blocksize_with_csv_header(tmp_path):
    edges = random_edges(100)
    text = "src,dst\n" + "".join(f"{s},{t}\n" for s, t in edges)
    check(read_edges(write(tmp_path / "g.csv", text), blocksize=32), edges)


def test_large_gzip_splits_into_blocks_of_its_text_each_from_its_own_seek_point(tmp_path):
    """The planner decompresses once and cuts the text itself; each block carries only the
    seek point it starts from (about one 32 KiB window, whatever the file's size)."""
    edges = random_edges(200_000, seed=1)
    text = snap_text(edges).encode()
    path = write(tmp_path / "g.txt.gz", gzip.compress(text))
    blocksize = 64 * 1024
    plan = plan_read(path, blocksize=blocksize)
    assert len(plan) == -(-len(text) // blocksize) > 40
    assert all(len(block.seek_points) <= 40 * 1024 for block in plan)
    assert len({block.seek_points for block in plan}) > 2  # later blocks start further on
    check(read_edges(path, blocksize=blocksize), edges)


def test_seek_points_of_a_block_open_the_stream_at_its_offset(tmp_path):
    from dtri.input.gzip_index import build_index, open_at, points_for

    text = snap_text(random_edges(300_000, seed=4)).encode()
    raw = io.BytesIO(gzip.compress(text, compresslevel=1))
    size, index = build_index(raw, "g.txt.gz", 1 << 20)
    assert size == len(text)
    offsets = (0, 1, len(text) // 3, (1 << 20) + 5, len(text) - 7)
    for offset, points in zip(offsets, points_for(index, offsets), strict=True):
        assert len(points) < len(index) or offset < (1 << 20)
        with open_at(raw, points, "g.txt.gz") as stream:
            stream.seek(offset)
            assert stream.read(4096) == text[offset: offset + 4096]


@settings(max_examples=300, deadline=None)
@given(
    data=st.binary(max_size=300).map(lambda b: b.replace(b"\x00", b"\n")),
    offset=st.integers(0, 320),
    length=st.one_of(st.none(), st.integers(1, 320)),
)
def test_stream_block_matches_read_block(data, offset, length):
    expected = read_block(io.BytesIO(data), offset, length, delimiter=b"\n")
    assert _read_stream_block(io.BytesIO(data), offset, length) == expected


GOOD_OTHER_LINES = ["# comment", "% comment", "", "   ", "  # indented", "\t", "% 1 2"]
BAD_LINE_TEXTS = ["x y", "7", "-1 2", "1.5 2", "3 1e3", "4 18446744073709551616", "5 ,6"]


@st.composite
def edge_lines(draw) -> tuple[str, tuple[int, int] | None]:
    src, dst = draw(st.integers(0, 2**63 - 1)), draw(st.integers(0, 2**63 - 1))
    lead, gap = draw(st.sampled_from(["", " ", "\t "])), draw(st.sampled_from([" ", "\t", "  "]))
    tail = draw(st.sampled_from(["", " ", " 0.5", "\t7 x", " # note"]))
    return f"{lead}{src}{gap}{dst}{tail}", (src, dst)


@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(
        st.one_of(edge_lines(), st.sampled_from(GOOD_OTHER_LINES).map(lambda t: (t, None))),
        max_size=40,
    ),
    bad=st.one_of(st.none(), st.tuples(st.integers(0, 40), st.sampled_from(BAD_LINE_TEXTS))),
    blocksize=st.integers(8, 400),
    gzipped=st.booleans(),
    crlf=st.booleans(),
    final_newline=st.booleans(),
)
def test_any_split_gives_the_same_rows_or_the_same_error(
    lines, bad, blocksize, gzipped, crlf, final_newline
):
    texts = [text for text, _ in lines]
    if bad is not None:
        texts.insert(min(bad[0], len(texts)), bad[1])
    data = (("\r\n" if crlf else "\n").join(texts) + ("\n" if final_newline else "")).encode()
    url = f"memory://dtri-hypothesis/{random.getrandbits(64)}.txt"
    if gzipped:
        data, url = gzip.compress(data), url + ".gz"
        blocksize = max(blocksize, 4 * len(data) // 30)
    with fsspec.open(url, "wb") as f:
        f.write(data)
    try:
        ddf = read_edges(url, blocksize=blocksize)
        if bad is None:
            result = ddf.compute(scheduler="sync").reset_index(drop=True)
            pd.testing.assert_frame_equal(result, frame([e for _, e in lines if e is not None]))
        else:
            with pytest.raises(InputError) as info:
                ddf.compute(scheduler="sync")
            assert (info.value.path, info.value.line) == (url, min(bad[0], len(lines)) + 1)
    finally:
        fsspec.filesystem("memory").rm(url)


# ---------------------------------------------------------------------------- bad input

BAD_LINES = [
    ("1 2\na b\n", 2, "expected two non-negative integer vertex ids, got 'a b'"),
    ("1 2\n# c\n7\n", 3, "expected at least two columns"),
    ("1 2\n3 -3\n", 2, "negative vertex id -3"),
    ("1 2\n1.0 2\n", 2, "expected two non-negative integer vertex ids, got '1.0 2'"),
    ("1e3 2\n", 1, "got '1e3 2'"),
    ("1 2\n3 9223372036854775808\n", 2, "vertex id 9223372036854775808 is larger than 2**63-1"),
    ("1 2\n3 99999999999999999999999\n", 2, "is larger than 2**63-1"),
    ("1 2\n3 0x10\n", 2, "got '3 0x10'"),
    ("1 2\n3 NaN\n", 2, "got '3 NaN'"),
    ("1 2\n3\r4\n", 2, "expected"),
]


@pytest.mark.parametrize(("text", "line", "message"), BAD_LINES)
def test_bad_line_reports_path_and_line(tmp_path, text, line, message):
    path = write(tmp_path / "g.txt", text)
    with pytest.raises(InputError) as info:
        read_edges(path).compute()
    assert (info.value.path, info.value.line) == (str(path), line)
    assert message in info.value.message
    assert str(info.value).startswith(f"{path}:{line}: ")


@pytest.mark.parametrize("blank", ["\v", "\f", "\x1c", "\x1f", "\u00a0", "\u3000", "\u2003",
                                   "\u0085", " \r", "\r"])
@pytest.mark.parametrize("at", ["between", "before"])
def test_blanks_other_than_space_and_tab_are_refused_by_every_parser(tmp_path, blank, at):
    """NumPy's parser split fields at any whitespace (``1\\v2`` was the edge 1-2) and pandas'
    at a CR inside a line, where the exact parser (and a block read by it) refuses them: a
    file meant one thing or another by the size of its blocks."""
    line = f"1{blank}2" if at == "between" else f"{blank}1 2"
    path = write(tmp_path / "g.txt", f"3 4\n{line}\n5 6\n")
    with pytest.raises(InputError, match="expected") as info:
        read_edges(path).compute(scheduler="synchronous")
    assert info.value.line == 2


def test_crlf_ends_and_a_cut_crlf_end_still_read(tmp_path):
    path = write(tmp_path / "g.txt", "1 2\r\n3\t4 # c\r\n\r\n5  6\r")
    check(read_edges(path), [(1, 2), (3, 4), (5, 6)])


def test_binary_garbage_shows_a_short_escaped_excerpt_and_a_hint(tmp_path):
    garbage = random.Random(5).randbytes(2000).replace(b"\n", b"")
    path = write(tmp_path / "g.txt", garbage)
    with pytest.raises(InputError) as info:
        read_edges(path).compute(scheduler="synchronous")
    assert (info.value.path, info.value.line) == (str(path), 1)
    excerpt = re.search(r"got '(.*)'\.\.\.; ", info.value.message).group(1)
    assert len(re.sub(r"\\x[0-9a-f]{2}|\\.", "?", excerpt)) == 40  # 40 characters, escaped
    assert info.value.message.endswith("binary data, not text: is this a Parquet or compressed "
                                       "file? give --format parquet, or name a compressed file "
                                       "by its extension (.gz, .bz2, .xz, .zip)")
    assert len(info.value.message) < 400 and all(c.isprintable() for c in str(info.value))


@pytest.mark.parametrize(("data", "what"), [
    (None, "a Parquet file: give --format parquet (format='parquet' in Python)"),
    (bz2.compress(b"1 2\n" * 100), "bz2 data: name the file *.bz2"),
    (gzip.compress(b"1 2\n" * 100), "gzip data: name the file *.gz")])
def test_a_binary_file_read_as_text_is_named_by_its_magic(tmp_path, data, what):
    path = tmp_path / "edges.bin"
    if data is None:
        pd.DataFrame({"src": range(100), "dst": range(1, 101)}).to_parquet(path)
    else:
        write(path, data)
    result = CliRunner().invoke(main, ["count", str(path), "--format", "snap",
                                       "--scheduler", "synchronous"])
    assert result.exit_code == 2 and result.output.count("\n") == 1
    assert result.output.startswith(f"dtri: error: {path}:1: ")
    assert result.output.endswith(f"; binary data, not text: this looks like {what}\n")
    assert len(result.output) - len(str(path)) < 350


def test_a_long_bad_text_line_is_cut_without_a_hint(tmp_path):
    path = write(tmp_path / "g.txt", "1 2\n" + "3 " + "x" * 500 + "\n")
    with pytest.raises(InputError) as info:
        read_edges(path).compute(scheduler="synchronous")
    assert info.value.line == 2
    assert info.value.message == ("expected two non-negative integer vertex ids, got "
                                  f"'3 {'x' * 38}'...")
    long = write(tmp_path / "n.txt", "1 " + "9" * 300 + "\n")
    with pytest.raises(InputError, match=rf": vertex id {'9' * 40}\.\.\. is larger than 2\*\*63-1, "
                                         rf"in '1 {'9' * 38}'\.\.\.$"):
        read_edges(long).compute(scheduler="synchronous")


def test_bad_csv_line(tmp_path):
    path = write(tmp_path / "g.csv", "src,dst\n1,2\n,4\n")
    with pytest.raises(InputError, match="got ',4'") as info:
        read_edges(path).compute()
    assert info.value.line == 3


def test_bad_line_in_a_later_block(tmp_path):
    lines = [f"{s} {t}" for s, t in random_edges(400)]
    lines[357] = "12 x"
    path = write(tmp_path / "g.txt", "# c\n" + "\n".join(lines) + "\n")
    ddf = read_edges(path, blocksize=64)
    assert ddf.npartitions > 50
    with pytest.raises(InputError, match="got '12 x'") as info:
        ddf.compute()
    assert (info.value.path, info.value.line) == (str(path), 359)


def test_bad_line_in_a_later_block_of_a_gzip_file(tmp_path):
    lines = [f"{s} {t}" for s, t in random_edges(20000, seed=2)]
    lines[17000] = "5 -1"
    path = write(tmp_path / "g.txt.gz", gzip.compress(("\n".join(lines) + "\n").encode()))
    ddf = read_edges(path, blocksize=16 * 1024)
    assert ddf.npartitions > 10
    with pytest.raises(InputError, match="negative vertex id -1") as info:
        ddf.compute()
    assert (info.value.path, info.value.line) == (str(path), 17001)


def test_bad_mtx_entry_line_number(tmp_path):
    text = "%%MatrixMarket matrix coordinate real general\n% c\n3 3 2\n1 2 0.5\n2.5 3 1\n"
    path = write(tmp_path / "m.mtx", text)
    with pytest.raises(InputError, match=re.escape("got '2.5 3 1'")) as info:
        read_edges(path, blocksize=8).compute()
    assert info.value.line == 5


# ---------------------------------------------------------------------------- broken streams


def truncated(compress, text: str) -> bytes:
    """The first half of a valid compressed stream."""
    data = compress(text.encode())
    return data[: len(data) // 2]


@pytest.mark.parametrize(
    ("suffix", "compress", "name"), [(".gz", gzip.compress, "gzip"), (".bz2", bz2.compress, "bz2")]
)
def test_truncated_compressed_file(tmp_path, suffix, compress, name):
    path = write(tmp_path / f"ca.txt{suffix}", truncated(compress, snap_text(random_edges(2000))))
    with pytest.raises(InputError) as info:
        read_edges(path).compute(scheduler="synchronous")
    assert (info.value.path, info.value.line) == (str(path), None)
    assert str(info.value) == (
        f"{path}: the {name} stream is truncated or corrupt "
        "(Compressed file ended before the end-of-stream marker was reached)"
    )


def test_truncated_gzip_in_a_later_block(tmp_path):
    data = truncated(gzip.compress, snap_text(random_edges(20000, seed=3)))
    ddf = read_edges(write(tmp_path / "g.txt.gz", data), blocksize=16 * 1024)
    assert ddf.npartitions > 5
    with pytest.raises(InputError, match="gzip stream is truncated or corrupt"):
        ddf.compute(scheduler="synchronous")


def test_corrupt_gzip_header(tmp_path):
    data = gzip.compress(b"1 2\n3 4\n")
    bad = data[:2] + b"\x07" + data[3:]  # compression method 7, not deflate (8)
    path = write(tmp_path / "g.txt.gz", bad)
    message = "gzip stream is truncated or corrupt (Unknown compression method)"
    with pytest.raises(InputError, match=re.escape(message)) as info:
        read_edges(path).compute(scheduler="synchronous")
    assert info.value.path == str(path)
    not_gzip = write(tmp_path / "g.csv.gz", b"\x1f\x8c" + b"src,dst\n1,2\n")  # read to plan
    with pytest.raises(InputError, match=r"gzip stream is truncated or corrupt \(Not a gzipped"):
        read_edges(not_gzip)


def test_corrupt_compressed_data(tmp_path):
    data = bytearray(gzip.compress(snap_text(random_edges(500)).encode()))
    data[len(data) // 2] ^= 0xFF
    gz = write(tmp_path / "g.txt.gz", bytes(data))
    with pytest.raises(InputError, match="gzip stream is truncated or corrupt") as info:
        read_edges(gz).compute(scheduler="synchronous")
    assert info.value.path == str(gz)
    bz = write(tmp_path / "g.txt.bz2", b"BZh9" + bytes(100))
    with pytest.raises(InputError, match=re.escape("bz2 stream is truncated or corrupt (Invalid")):
        read_edges(bz).compute(scheduler="synchronous")


def test_truncated_gzip_matrix_market_preamble(tmp_path):
    text = "%%MatrixMarket matrix coordinate pattern general\n" + "% comment\n" * 500 + "2 2 1\n"
    path = write(tmp_path / "m.mtx.gz", truncated(gzip.compress, text + "1 2\n"))
    with pytest.raises(InputError, match="gzip stream is truncated or corrupt"):
        read_edges(path)


class _FailingFile(io.RawIOBase):
    """A file whose reads fail as a disk or network would."""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        raise OSError(errno.EIO, "Input/output error")


class _FailingFileSystem:
    def open(self, path: str, mode: str, compression: str | None = None):
        return gzip.GzipFile(fileobj=io.BufferedReader(_FailingFile()), mode="rb")


def test_read_errors_other_than_a_corrupt_stream_pass_unchanged():
    layout = Layout(WHITESPACE, b"#%", (0, 1))
    block = TextBlock(_FailingFileSystem(), "g.txt.gz", "g.txt.gz", "gzip", 0, None, layout)
    with pytest.raises(OSError, match="Input/output error") as info:
        parse_block(block)
    assert not isinstance(info.value, InputError) and info.value.errno == errno.EIO


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("ca.txt.gz", truncated(gzip.compress, snap_text(random_edges(2000)))),
        ("ca.txt.bz2", truncated(bz2.compress, snap_text(random_edges(2000)))),
        ("ca.csv.gz", b"\x1f\x8c" + b"src,dst\n1,2\n"),
    ],
)
def test_cli_reports_a_broken_stream_in_one_line(tmp_path, name, data):
    path = write(tmp_path / name, data)
    result = CliRunner().invoke(
        main, ["count", "--scheduler", "synchronous", "--backend", "cpu", str(path)]
    )
    assert result.exit_code == 2, result.output
    assert "Aborted" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"dtri: error: {path}: the ")
    assert "stream is truncated or corrupt" in lines[0]


# ---------------------------------------------------------------------------- Matrix Market size


def mtx_text(size: str, entries: list[str], comments: int = 1, field: str = "pattern") -> str:
    """A Matrix Market file: banner, ``comments`` comment lines, size line, entries (with a
    value after each unless the field is 'pattern')."""
    value = "" if field == "pattern" else " 0.5"
    preamble = f"%%MatrixMarket matrix coordinate {field} general\n" + "% c\n" * comments
    return preamble + size + "\n" + "".join(f"{entry}{value}\n" for entry in entries)


@pytest.mark.parametrize(
    ("size", "entries", "line", "message"),
    [
        ("4 4 3", ["1 2", "5 3", "4 4"], 5, "entry (5, 3) is outside the declared 4 x 4 matrix "
         "(rows and columns are 1..4)"),
        ("4 4 3", ["1 2", "2 3", "4 9"], 6, "entry (4, 9) is outside the declared 4 x 4 matrix"),
        ("3 5 2", ["3 5", "1 6"], 5, "entry (1, 6) is outside the declared 3 x 5 matrix "
         "(rows are 1..3, columns 1..5)"),
        ("3 5 2", ["4 5", "1 1"], 4, "entry (4, 5) is outside the declared 3 x 5 matrix"),
        ("4 4 3", ["1 2", "0 3", "4 4"], 5, "entry (0, 3) is outside"),
        ("4 4 3", ["1 2", "2 0", "4 4"], 5, "entry (2, 0) is outside"),
        ("4 4 2", ["-1 3", "4 4"], 4, "entry (-1, 3) is outside"),
        ("0 0 1", ["1 1"], 4, "entry (1, 1) is outside the declared 0 x 0 matrix (which has no"),
    ],
)
@pytest.mark.parametrize("field", ["pattern", "real"])
def test_mtx_entry_outside_the_declared_size(tmp_path, size, entries, line, message, field):
    path = write(tmp_path / "g.mtx", mtx_text(size, entries, field=field))
    with pytest.raises(InputError) as info:
        read_edges(path).compute(scheduler="synchronous")
    assert (info.value.path, info.value.line) == (str(path), line)
    assert info.value.message.startswith(message)
    assert str(info.value).startswith(f"{path}:{line}: entry (")


def test_mtx_entry_outside_the_declared_size_in_a_later_block(tmp_path):
    entries = [f"{1 + k % 50} {1 + (k * 7) % 50}" for k in range(200)]
    entries[150] = "51 1"
    path = write(tmp_path / "g.mtx", mtx_text("50 50 200", entries))
    ddf = read_edges(path, blocksize=64)
    assert ddf.npartitions > 10
    with pytest.raises(InputError, match=re.escape("entry (51, 1) is outside")) as info:
        ddf.compute(scheduler="synchronous")
    assert info.value.line == 3 + 151


def test_mtx_negative_size_line(tmp_path):
    path = write(tmp_path / "g.mtx", mtx_text("3 -3 0", []))
    with pytest.raises(InputError, match="size line") as info:
        read_edges(path)
    assert info.value.line == 3


@pytest.mark.parametrize(
    ("nnz", "entries"), [(10, ["1 2"] * 7), (2, ["1 2", "2 3", "3 1"]), (1, [])]
)
def test_mtx_entry_count_differs_from_nnz(tmp_path, nnz, entries):
    path = write(tmp_path / "g.mtx", mtx_text(f"4 4 {nnz}", entries))
    with pytest.raises(InputError) as info:
        read_edges(path).compute(scheduler="synchronous")
    assert str(info.value) == f"{path}: declares {nnz} entries (nnz) but has {len(entries)}"
    assert info.value.line is None


def test_mtx_with_no_entries_reads_as_an_empty_frame(tmp_path):
    check(read_edges(write(tmp_path / "g.mtx", mtx_text("0 0 0", []))), [])
    check(read_edges(write(tmp_path / "h.mtx", mtx_text("5 5 0", []))), [])


def test_mtx_entry_count_over_several_blocks(tmp_path):
    edges = [(1 + k % 30, 1 + (k * 11) % 40) for k in range(150)]
    entries = [f"{s} {t}" for s, t in edges]
    good = write(tmp_path / "good.mtx", mtx_text("30 40 150", entries, comments=3))
    ddf = read_edges(good, blocksize=64)
    assert ddf.npartitions > 10
    check(ddf, edges)
    assert len(ddf.compute(scheduler="synchronous")) == 150
    for nnz in (149, 151):
        bad = write(tmp_path / f"bad{nnz}.mtx", mtx_text(f"30 40 {nnz}", entries))
        ddf = read_edges(bad, blocksize=64)
        assert ddf.npartitions > 10
        with pytest.raises(InputError, match=rf"declares {nnz} entries \(nnz\) but has 150"):
            ddf.compute(scheduler="synchronous")
        with pytest.raises(InputError, match="but has 150"):  # any part waits for the check
            ddf.partitions[0].compute(scheduler="synchronous")


def test_mtx_entry_count_per_file_of_several(tmp_path):
    one = write(tmp_path / "one.mtx", mtx_text("3 3 2", ["1 2", "2 3"]))
    two = write(tmp_path / "two.mtx", mtx_text("3 3 1", ["3 1"]))
    snap = write(tmp_path / "g.txt", "7 8\n")
    ddf = read_edges([one, snap, two, one, one], blocksize=16)
    expected = [(1, 2), (2, 3), (7, 8), (3, 1), (1, 2), (2, 3), (1, 2), (2, 3)]
    check(ddf, expected)
    short = write(tmp_path / "short.mtx", mtx_text("3 3 2", ["1 2"]))
    with pytest.raises(InputError, match="declares 2 entries") as info:
        read_edges([one, short, two], blocksize=16).compute(scheduler="synchronous")
    assert info.value.path == str(short)


def test_missing_file_and_empty_glob(tmp_path):
    missing = str(tmp_path / "nope.txt")
    with pytest.raises(InputError, match="no such file or no files match") as info:
        read_edges(missing)
    assert info.value.path == missing
    with pytest.raises(InputError, match="no such file"):
        read_edges(str(tmp_path / "*.mtx"))


# ---------------------------------------------------------------------------- real data


def test_real_snap_file_row_count():
    path = SHARED_DATA / "ca-GrQc.txt.gz"
    if not path.exists():
        pytest.skip(f"{path} is absent (the shared data folder is not checked out here)")
    with gzip.open(path, "rt") as f:
        expected = sum(1 for line in f if line.strip() and not line.lstrip().startswith("#"))
    ddf = read_edges(path)
    assert len(ddf.compute()) == expected
    assert len(read_edges(path, blocksize="16KiB").compute()) == expected


# ---------------------------------------------------------------------------- pieces by budget


def test_small_row_groups_of_several_files_join_and_a_large_one_is_sliced():
    groups = [("a", "a", 0, 3), ("a", "a", 1, 3), ("b", "b", 0, 4), ("b", "b", 1, 0),
              ("b", "b", 2, 23), ("c", "c", 0, 5)]
    pieces = parquet_pieces(groups, 10)
    assert [[(s.url, s.group, s.start, s.stop) for s in piece] for piece in pieces] == [
        [("a", 0, 0, 3), ("a", 1, 0, 3), ("b", 0, 0, 4)],
        [("b", 2, 0, 8)], [("b", 2, 8, 16)], [("b", 2, 16, 23)],
        [("c", 0, 0, 5)]]
    assert all(sum(s.rows for s in piece) <= 10 for piece in pieces)


def test_a_row_group_too_large_to_slice_is_named_with_how_to_rewrite_it():
    rows = 10 * (MAX_ROW_GROUP_SLICES + 1)
    with pytest.raises(InputError) as error:
        parquet_pieces([("u", "edges.parquet", 3, rows)], 10)
    message = str(error.value)
    assert message.startswith("edges.parquet: row group 3 holds 650 rows")
    assert "row_group_size=" in message and "\n" not in message


@pytest.mark.parametrize("layout", ["one row group", "many row groups", "two files", "text"])
def test_every_read_partition_keeps_to_the_row_cap_whatever_the_layout(tmp_path, layout):
    """One big row group is sliced, small ones joined (across files too), text cut into
    blocks of at most 4 bytes an edge: each partition at most ``max_rows`` rows, all the
    rows there once, in order."""
    import dask
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(7)
    edges = rng.integers(0, 5000, size=(20_000, 2))
    table = pa.table({"src": edges[:, 0], "dst": edges[:, 1]})
    if layout == "one row group":
        pq.write_table(table, tmp_path / "e.parquet", row_group_size=len(edges))
    elif layout == "many row groups":
        pq.write_table(table, tmp_path / "e.parquet", row_group_size=700)
    elif layout == "two files":
        (tmp_path / "e").mkdir()
        pq.write_table(table.slice(0, 12_345), tmp_path / "e" / "0.parquet", row_group_size=300)
        pq.write_table(table.slice(12_345), tmp_path / "e" / "1.parquet", row_group_size=300)
    else:
        np.savetxt(tmp_path / "e.txt", edges, fmt="%d")
    path = next(p for p in tmp_path.iterdir())
    frame = read_edges(str(path), max_rows=1024)
    parts = dask.compute(*frame.to_delayed(), scheduler="sync")
    assert max(len(part) for part in parts) <= 1024
    assert len(parts) >= len(edges) // 1024
    together = pd.concat(parts).to_numpy()
    np.testing.assert_array_equal(together, edges)


SOUP = [b"0", b"1", b"7", b"9", b" ", b"\t", b"\n", b"\r", b"\r\n", b"#", b"%", b"-", b"+",
        b".", b"a", b"\v", b"\xc2\xa0", b"\xef\xbb\xbf", b"12345678901234567890"]


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(st.sampled_from(SOUP), max_size=60), comments=st.sampled_from(
    [b"#", b"#%"]), usecols=st.sampled_from([(0, 1), (1, 0), (0, 2), (2, 1)]))
def test_the_numba_parser_reads_what_the_exact_parser_reads_or_leaves_it(pieces, comments,
                                                                         usecols):
    """Wherever numba's one-pass parser takes a block, the exact parser reads the same
    edges from it; it leaves every block the exact parser refuses (or that it does not read
    the same way) to the others."""
    from dtri.input.text import _parse_exact
    from dtri.kernels.parse import parse_id_pairs

    data = b"".join(pieces)
    layout = Layout(WHITESPACE, comments, usecols)
    src, dst, clean = parse_id_pairs(np.frombuffer(data, dtype=np.uint8), *usecols,
                                     *(comments * 2)[:2])
    block = TextBlock(None, "soup.txt", "soup.txt", None, 0, len(data), layout)
    try:
        expected = _parse_exact(data, block)
    except InputError:
        assert not clean, data
        return
    if clean:
        np.testing.assert_array_equal(src, expected[0])
        np.testing.assert_array_equal(dst, expected[1])
        assert src.dtype == dst.dtype == np.int64


def test_the_numba_parser_takes_snap_text_with_both_comment_marks(tmp_path):
    """A SNAP file with '#' and '%' comments, tabs, CRLF and a last line without its LF is
    numba's to read, and the count is NetworkX's."""
    from dtri.kernels.parse import parse_id_pairs
    from tests.oracles import networkx_triangles

    edges = random_edges(300, seed=4)
    edges = [(s % 40, t % 40) for s, t in edges]
    text = "# a graph\r\n% made up\r\n" + "".join(
        f"{s}\t{t}  # edge\r\n" if k % 7 == 0 else f" {s} {t}\r\n"
        for k, (s, t) in enumerate(edges)).rstrip("\n")
    data = text.encode()
    src, dst, clean = parse_id_pairs(np.frombuffer(data, dtype=np.uint8), 0, 1, 35, 37)
    assert clean and list(zip(src.tolist(), dst.tolist(), strict=True)) == edges
    path = write(tmp_path / "g.txt", data)
    expected = networkx_triangles(np.array(edges))
    assert dtri.count(path, backend="cpu").triangles == expected


def test_the_device_reads_ids_get_the_host_checks_file_by_file():
    """The ids of several files decoded at once are checked file by file, as the host's read
    checks them: the error names the file whose slice holds the fault (here on NumPy arrays;
    the device's are CuPy's)."""
    from dtri.input.parquet import RowSlice, _check_device_ids

    files = [[RowSlice("a", "a.parquet", 0, 0, 2, 2), RowSlice("a", "a.parquet", 1, 0, 1, 1)],
             [RowSlice("b", "b.parquet", 0, 0, 2, 2)]]
    src = np.array([0, 1, 2, 3, 4])
    _check_device_ids((src, np.array([1, 2, 3, 4, 0])), files, ("from", "to"))
    with pytest.raises(InputError, match="negative vertex id -4 in column 'to'") as error:
        _check_device_ids((src, np.array([1, 2, 3, -4, 0])), files, ("from", "to"))
    assert error.value.path == "b.parquet"
    with pytest.raises(InputError, match="larger than 2\\*\\*63-1") as error:
        _check_device_ids((np.array([0, 2**63, 1, 2, 3], dtype=np.uint64), src), files,
                          ("from", "to"))
    assert error.value.path == "a.parquet"


def test_the_api_reads_what_the_cli_reads(tmp_path):
    """One reader rule: an array with a third column (a weight) counts as its text file does
    on the command line, the column left out; a list of pairs is an edge array (and small,
    so it runs in this process without a main guard); a ragged list is one error."""
    import subprocess
    import sys

    rng = np.random.default_rng(3)
    weighted = np.column_stack([rng.integers(0, 60, (500, 2)), rng.integers(0, 9, 500)])
    text = tmp_path / "weighted.txt"
    np.savetxt(text, weighted, fmt="%d")
    done = subprocess.run([sys.executable, "-m", "dtri", "count", str(text), "--json"],
                          capture_output=True, text=True, check=True)
    assert dtri.count(weighted).triangles == json.loads(done.stdout)["triangles"] \
        == networkx_triangles(weighted[:, :2])
    pairs = [(int(a), int(b)) for a, b in weighted[:, :2]]
    assert dtri.count(pairs).triangles == networkx_triangles(weighted[:, :2])
    with pytest.raises(dtri.InputError, match="pairs of vertex ids"):
        dtri.count([(0, 1), (1, 2, 3, 4), (2,)])
