"""The files a read takes: found from paths, globs, directories, lists or URLs
(:func:`expand_paths`), their formats (:func:`format_from_name`), opened and decompressed
(:func:`open_text`), the columns that hold their ids (:func:`resolve_columns`), and the empty
frame a read's Dask DataFrame describes itself with (:func:`edges_meta`)."""

from __future__ import annotations

import gzip
import lzma
import os
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING

import numpy as np
from fsspec import AbstractFileSystem
from fsspec.core import has_magic, url_to_fs
from fsspec.utils import infer_compression

from dtri.errors import ConfigurationError, InputError, InputNotFoundError

if TYPE_CHECKING:
    import pandas as pd

FORMATS: tuple[str, ...] = ("snap", "csv", "tsv", "mtx", "parquet")
INT64_MAX = 2**63 - 1

_EXTENSIONS = {".mtx": "mtx", ".csv": "csv", ".tsv": "tsv", ".parquet": "parquet", ".pq": "parquet"}


def _display_name(fs: AbstractFileSystem, path: str) -> str:
    protocols = fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)
    return path if "file" in protocols else fs.unstrip_protocol(path)


def _hidden(relative: str) -> bool:
    return any(part.startswith((".", "_")) for part in relative.split("/"))


def _directory_files(fs: AbstractFileSystem, path: str) -> list[str]:
    """Regular files under a directory, sorted, skipping names that start with '.' or '_'."""
    root = path.rstrip("/") + "/"
    found = fs.find(path, withdirs=False, detail=True)
    return sorted(
        p
        for p, info in found.items()
        if info.get("type") == "file" and not _hidden(p[len(root) :] if p.startswith(root) else p)
    )


def _files_at(fs: AbstractFileSystem, path: str) -> list[str]:
    if fs.isfile(path):
        return [path]
    if fs.isdir(path):
        return _directory_files(fs, path)
    if not has_magic(path):
        return []
    files: list[str] = []
    for match, info in sorted(fs.glob(path, detail=True).items()):
        if info.get("type") == "directory":
            files.extend(_directory_files(fs, match))
        else:
            files.append(match)
    return files


def filesystem(url: str, storage_options: dict | None = None
               ) -> tuple[AbstractFileSystem, str]:
    """fsspec's file system of ``url`` and the path in it; a protocol whose package is not
    installed is one line naming the package (fsspec raises an ``ImportError`` deep in a
    traceback)."""
    try:
        return url_to_fs(url, **(storage_options or {}))
    except ImportError as error:
        from fsspec.registry import known_implementations

        protocol = url.split("://", 1)[0] if "://" in url else "file"
        module = known_implementations.get(protocol, {}).get("class", "").split(".")[0]
        install = f" (pip install {module})" if module and module != "fsspec" else ""
        raise ConfigurationError(f"{url}: {protocol}:// needs a package that is not "
                                 f"installed: {error}{install}") from None


def expand_paths(
    urlpath: str | os.PathLike | list[str], storage_options: dict | None = None
) -> list[tuple[AbstractFileSystem, str, str]]:
    """(filesystem, path, display name) of every file a path, glob, directory or list names."""
    items = list(urlpath) if isinstance(urlpath, list | tuple) else [urlpath]
    found: list[tuple[AbstractFileSystem, str, str]] = []
    for item in [os.fspath(given) for given in items]:
        fs, path = filesystem(item, storage_options)
        files = _files_at(fs, path)
        if not files:
            raise InputNotFoundError("no such file or no files match", path=item)
        found.extend((fs, p, item if p == path else _display_name(fs, p)) for p in files)
    return found


def format_from_name(path: str) -> str | None:
    name = path.rstrip("/").lower()
    if infer_compression(name) is not None:
        name = os.path.splitext(name)[0]
    return _EXTENSIONS.get(os.path.splitext(name)[1])


def _corrupt_stream(error: BaseException) -> bool:
    """True for the errors a decompressor raises on a truncated or corrupt stream: EOFError
    (gzip, bz2, xz cut short), zlib/lzma/zip errors, BadGzipFile, and bz2's bare OSError("Invalid
    data stream"), which unlike a file system's OSError has no errno."""
    if isinstance(error, EOFError | zlib.error | lzma.LZMAError | zipfile.BadZipFile):
        return True
    return isinstance(error, gzip.BadGzipFile) or (type(error) is OSError and not error.errno)


@contextmanager
def open_text(
    fs: AbstractFileSystem, path: str, name: str, compression: str | None
) -> Iterator[IO[bytes]]:
    """Open a file to read, decompressing.  A truncated or corrupt stream, met anywhere in the
    ``with`` body, raises an InputError naming the file (a bare EOFError would reach the user
    as click's "Aborted!"); every other error passes unchanged."""
    try:
        with fs.open(path, "rb", compression=compression) as f:
            yield f
    except (EOFError, OSError, zlib.error, lzma.LZMAError, zipfile.BadZipFile) as error:
        if compression is None or not _corrupt_stream(error):
            raise
        message = f"the {compression} stream is truncated or corrupt ({error})"
        raise InputError(message, name) from error


def local_path(fs: AbstractFileSystem, path: str) -> str | None:
    """``path`` itself where ``fs`` is this machine's file system (pylibcudf reads and
    writes it directly, through KvikIO where it can), else ``None``."""
    protocols = fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)
    return path if {"file", "local"} & set(protocols) else None


def resolve_columns(
    columns: tuple[str | int, str | int] | None, header: list[str] | None, name: str
) -> tuple[int, int]:
    """0-based positions of the source and target columns."""
    if columns is None:
        return (0, 1)
    if len(columns) != 2:
        raise InputError(f"columns must name exactly two columns, got {columns!r}", name)
    positions = []
    for column in columns:
        if isinstance(column, int):
            if column < 0:
                raise InputError(f"column positions are 0-based, got {column}", name)
            positions.append(column)
        elif header is None:
            raise InputError(f"column {column!r} given by name, but the file has no header", name)
        elif column not in header:
            raise InputError(f"no column {column!r}; the columns are {header}", name)
        else:
            positions.append(header.index(column))
    if positions[0] == positions[1]:
        raise InputError(f"source and target are the same column {columns!r}", name)
    return (positions[0], positions[1])


def edges_meta() -> pd.DataFrame:
    """The empty ``src, dst`` frame a read's Dask DataFrame describes itself with."""
    import pandas as pd

    return pd.DataFrame({"src": np.empty(0, np.int64), "dst": np.empty(0, np.int64)})
