"""``dtri profile``: a graph's headline numbers and distributions, binned on the workers, as
one HTML page with its figures' data beside it (:func:`dtri.profile`)."""

from __future__ import annotations

from typing import Any

import click

from dtri.cli.graph_input import INPUT_MEANING, command_input, graph_source, input_fields
from dtri.cli.printing import print_summary
from dtri.cli.program import errors_as_one_line, main

SHOWN = ("vertices", "edges", "triangles", "transitivity", "average_clustering", "max_truss",
         "seconds", "peak_device_bytes", "peak_host_bytes", "spilled_bytes", "read_back_bytes",
         "worker_host_bytes", "client_peak_bytes")
"""The profile's numbers the command prints, in order."""


@main.command("profile", epilog=INPUT_MEANING)
@graph_source
@click.option("-o", "--output", "out", required=True, metavar="PATH",
              help="The folder (or fsspec URL) to write the page in: index.html (figures as "
                   "SVG inside it, no JavaScript) and profile.json (the numbers and every "
                   "figure's binned data). Its parent exists, and it must not exist or be "
                   "empty; written beside it and renamed to it when complete.")
@click.option("--graphlets", is_flag=True,
              help="Count the graphlets up to four vertices too, and show their totals.")
@click.option("--title", help="The page's title (default: the input).")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object with the numbers instead of text.")
def profile_command(paths: tuple[str, ...], spec: str | None, seed: int, out: str,
                    graphlets: bool, title: str | None, as_json: bool, **values: Any) -> None:
    """A page that shows the graph in PATHS (or --generate SPEC): vertices, edges, triangles,
    transitivity, average clustering and the largest non-empty k-truss; the degree
    distribution, triangles and clustering against degree (the clustering spectrum C(k)),
    the truss-number spectrum and the edges each k-truss keeps (and the graphlet totals with
    --graphlets), with the run's stage seconds and peaks. Every distribution is binned on the
    workers; only the bins reach this process. Needs matplotlib: pip install "dtri[report]"."""
    from dtri import profile

    with errors_as_one_line():
        edges, options = command_input(paths, spec, seed, values)
        result = profile(edges, output=out, graphlets=graphlets, title=title, **options)
    numbers = result.numbers
    summary = {name: numbers[name] for name in SHOWN if name in numbers}
    summary["output"] = result.output
    print_summary(summary, as_json, input_fields(paths, spec, seed))
