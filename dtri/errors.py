"""Errors a user can act on: each names what was wrong and, for files, where."""

from __future__ import annotations


class DtriError(Exception):
    """Base class of every error dtri raises on purpose (the CLI prints it as one line)."""


class InputError(DtriError, ValueError):
    """Input that is not an edge list dtri can read, with the file and line when known."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None):
        super().__init__(message, path, line)
        self.message = message
        self.path = path
        self.line = line

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = f"{self.path}:{self.line}: " if self.line is not None else f"{self.path}: "
        return f"{where}{self.message}"


class InputNotFoundError(InputError):
    """No file matches a path here; the workers of a cluster may still see it."""


class ConfigurationError(DtriError, ValueError):
    """An option or environment that cannot work (unknown backend, no GPU for a GPU run...)."""


class ListTooLongError(ConfigurationError):
    """A vertex's adjacency list cannot fit one task of the memory budget. ``rank`` is the
    vertex in dtri's order; the pipeline names it by its input id where it can."""

    def __init__(self, message: str, rank: int):
        super().__init__(message)
        self.rank = rank


class OutOfMemoryError(DtriError, MemoryError):
    """A task ran out of memory (an RMM pool, the GPU, or the host): names the stage and what
    to change."""


class WorkerLostError(DtriError):
    """A worker that tasks of the run are pinned to (the 2D decomposition's blocks and
    rounds) left the cluster while a stage waited for them: they cannot run elsewhere."""
