"""``dtri list``: every triangle of a graph, once, written to Parquet (columns ``a``, ``b``,
``c``: input ids, ``a < b < c``), partition by partition, renamed into place when complete."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from dtri.cli.analytics import run_analytic
from dtri.cli.graph_input import INPUT_MEANING, graph_source, output_folder
from dtri.cli.program import fail, main


def read_vertices(path: str) -> list[int]:
    """The vertex ids of ``--vertices FILE``: integers separated by white space or commas,
    ``#`` to the end of a line a comment."""
    try:
        text = Path(path).read_text()
    except OSError as error:
        fail(f"{path}: cannot read the vertices: {error.strerror or error}")
    listed = []
    for number, line in enumerate(text.splitlines(), start=1):
        for word in line.split("#", 1)[0].replace(",", " ").split():
            try:
                vertex = int(word)
            except ValueError:
                fail(f"{path}, line {number}: {word!r} is not a vertex id")
            if not 0 <= vertex < 2**63:
                fail(f"{path}, line {number}: {word} is not a vertex id (0 to 2**63-1)")
            listed.append(vertex)
    return listed


@main.command("list", epilog=INPUT_MEANING)
@graph_source
@output_folder("write the triangles to, as Parquet files (one per listing task)")
@click.option("--limit", type=click.IntRange(min=0), metavar="N",
              help="Write at most N triangles: any N of them (the first the listing's tasks "
                   "find, in their order; which ones depends on how the graph was prepared). "
                   "Every task still runs its join.")
@click.option("--vertices", "vertices_file", metavar="FILE",
              help="Only the triangles with at least one vertex listed in FILE (input ids "
                   "separated by white space or commas, '#' comments), as "
                   "networkx.all_triangles(G, nbunch); ids not in the graph are ignored.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def list_command(paths: tuple[str, ...], spec: str | None, seed: int, out: str, as_json: bool,
                 limit: int | None, vertices_file: str | None, **values: Any) -> None:
    """Every triangle of the graph in PATHS (or --generate SPEC), once, written to -o PATH as
    Parquet (int64 columns a, b, c: the input's vertex ids, a < b < c). The triangles are
    found by the count's join and written as each task lists them, never held whole."""
    vertices = None if vertices_file is None else read_vertices(vertices_file)

    def analyse(graph: Any, folder: Any) -> dict[str, Any]:
        from dtri.report import listing_summary

        return listing_summary(graph, folder, limit, vertices)

    run_analytic(paths, spec, seed, out, as_json, values, analyse)
