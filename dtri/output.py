"""Result folders written whole or not at all.

A result (``-o`` of the analytics, ``dtri generate -o``) is written into a temporary folder
beside its final name, ``.NAME.dtri-tmp-<uuid>`` in the same parent, and renamed into place
only once it is complete. On a local file system the rename is atomic: a run killed at any
moment leaves nothing under the final name, and of two runs aimed at the same name one wins
and the other fails (a folder is never renamed onto a folder that holds files). On other
fsspec file systems (object stores) the result is moved with the file system's ``mv``, which
may copy file by file: there the move is not atomic.
"""

from __future__ import annotations

import errno
import os
import posixpath
import shutil
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, overload

from fsspec.implementations.local import LocalFileSystem

from dtri.errors import DtriError
from dtri.input.sources import filesystem

TEMPORARY_MARK = ".dtri-tmp-"
"""What the name of a temporary result folder holds, between ``.NAME`` and a uuid."""
TAKEN_ERRORS = (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR)
"""What a rename or ``rmdir`` fails with when something is already at the final name."""


def already_exists(out: str) -> DtriError:
    """The error of an output name that something else holds."""
    return DtriError(f"{out} already exists; give a new or empty directory")


@dataclass
class OutputFolder:
    """A result's final name (``out`` as given; ``path`` on ``fs``) and the temporary folder
    (``temporary_path``) it is written into until :meth:`commit` renames it into place. As a
    context manager, it removes the temporary folder unless committed."""

    out: str
    fs: Any
    path: str
    temporary_path: str
    committed: bool = False

    @property
    def local(self) -> bool:
        """Whether the folder is on this machine's file system (an atomic rename)."""
        return isinstance(self.fs, LocalFileSystem)

    @property
    def temporary(self) -> str:
        """Where writers write: the temporary folder, as a path or a URL of ``fs``."""
        return self.temporary_path if self.local else self.fs.unstrip_protocol(
            self.temporary_path)

    def write_parquet(self, frame: Any, compute: Callable[[Any], Any] | None = None) -> str:
        """Write ``frame`` (a Dask DataFrame) as Parquet, one file per partition, and rename it
        into place; return ``out``. ``compute``: runs the write (given it unrun, as
        ``to_parquet(compute=False)`` makes it), where the caller times it or shows its
        progress."""
        if compute is None:
            frame.to_parquet(self.temporary, write_index=False)
        else:
            compute(frame.to_parquet(self.temporary, write_index=False, compute=False))
        self.commit()
        return self.out

    def commit(self) -> None:
        """Rename the complete result into place; fail if something took the name meanwhile."""
        if self.local:
            self._rename()
        else:
            if self.fs.exists(self.path) and (not self.fs.isdir(self.path)
                                              or self.fs.ls(self.path)):
                raise already_exists(self.out)
            self.fs.mv(self.temporary_path, self.path, recursive=True)
        self.committed = True

    def _rename(self) -> None:
        """The local rename: an empty folder at the name (which the checks allow) is removed
        first, which fails if another run has filled it since; a rename never lands on a
        folder that holds files."""
        try:
            if os.path.isdir(self.path) and not os.path.islink(self.path):
                os.rmdir(self.path)
            os.rename(self.temporary_path, self.path)
        except OSError as error:
            if error.errno in TAKEN_ERRORS:
                raise already_exists(self.out) from error
            raise DtriError(f"{self.out}: cannot move the result into place: "
                            f"{error.strerror or error}") from error

    def discard(self) -> None:
        """Remove the temporary folder and what was written into it, if it is still there."""
        if self.local:
            shutil.rmtree(self.temporary_path, ignore_errors=True)
        elif self.fs.exists(self.temporary_path):
            self.fs.rm(self.temporary_path, recursive=True)

    def __enter__(self) -> OutputFolder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if not self.committed:
            self.discard()


def reserve_output(out: str) -> OutputFolder:
    """Check ``out`` before any input is read, and make the temporary folder beside it that
    the result goes into (which also proves the parent writable): ``out`` must not be an
    existing file or a folder that holds files, and a local one's parent must exist."""
    if out == "-":
        raise DtriError("a result is a folder of files and cannot go to standard output; "
                        "give a folder")
    if not out.strip():
        raise DtriError("the output path is empty; give a folder")
    fs, path = filesystem(out)  # a missing fsspec package: one line naming it
    path = path.rstrip("/") or path
    if fs.exists(path) and (not fs.isdir(path) or fs.ls(path)):
        raise already_exists(out)
    parent, name = posixpath.split(path)
    temporary_path = posixpath.join(parent, f".{name}{TEMPORARY_MARK}{uuid.uuid4().hex}")
    folder = OutputFolder(out, fs, path, temporary_path)
    if folder.local:
        if not os.path.isdir(parent):
            raise DtriError(f"{out}: its folder {parent} does not exist")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise DtriError(f"{out}: cannot write in {parent}: {os.strerror(errno.EACCES)}")
    try:
        fs.makedirs(temporary_path, exist_ok=False)
    except OSError as error:
        raise DtriError(f"{out}: cannot create a folder in {parent}: "
                        f"{error.strerror or error}") from error
    return folder


@overload
def reserved_output(out: str) -> AbstractContextManager[OutputFolder]: ...
@overload
def reserved_output(out: None) -> AbstractContextManager[None]: ...
@overload
def reserved_output(out: str | None) -> AbstractContextManager[OutputFolder | None]: ...


def reserved_output(out: str | None) -> AbstractContextManager[OutputFolder | None]:
    """:func:`reserve_output` of ``out`` (``None``: no output), its temporary folder removed
    on the way out unless the result was committed (an error, an interrupt)."""
    return nullcontext() if out is None else reserve_output(out)
