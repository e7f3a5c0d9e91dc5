"""The ``dtri`` command line: a thin layer over :func:`dtri.prepare` and the analytics.

Every command takes its options from :class:`dtri.options.Options` (:func:`cli_options`), so
an option means the same everywhere and is checked once. Errors are one ``dtri: error:`` line
on stderr and exit status 2, an interrupt one ``dtri: interrupted`` line and status 130;
results go to stdout (a short summary, or one JSON object with ``--json``) and, for per-vertex
and per-edge results, to Parquet with ``-o``, renamed into place when complete.
"""

from dtri.cli import (  # noqa: F401 (they add commands)
    analytics,
    benchmark,
    count,
    graph_files,
    listing,
    profile,
)
from dtri.cli.program import exit_status, main, run

__all__ = ["exit_status", "main", "run"]
