"""The page of a graph's profile (``dtri profile -o``): one HTML file that needs no
JavaScript, its figures drawn by matplotlib as SVG inside it, and the figures' data beside
it as JSON (``profile.json``: the numbers and every binned table).

matplotlib is an optional extra (``pip install "dtri[report]"``); :func:`require_matplotlib`
says so in one line before any input is read. The page is written into the output's
temporary folder and renamed into place when complete (:mod:`dtri.output`).
"""

from __future__ import annotations

import html
import io
import json
import posixpath
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dtri.errors import ConfigurationError

if TYPE_CHECKING:
    from dtri.analytics.profile import Profile
    from dtri.output import OutputFolder

PAGE = "index.html"
DATA = "profile.json"
MISSING = ('the profile page needs matplotlib: pip install "dtri[report]" (or pip install '
           'matplotlib)')


def require_matplotlib() -> None:
    """Fail in one line naming the ``report`` extra where matplotlib cannot be imported."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as error:
        raise ConfigurationError(MISSING) from error


def svg(draw: Callable[[Any], None], title: str) -> str:
    """An SVG figure (its ``<svg>`` element) of ``draw(axes)``, with ``title``; drawn on a
    figure of its own (no pyplot state), text kept as text and ids fixed, so a page is the
    same bytes for the same data."""
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "dtri",
                                "font.size": 9}):
        figure = Figure(figsize=(5.2, 3.4), layout="constrained")
        axes = figure.add_subplot()
        axes.set_title(title)
        draw(axes)
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def points(x: Any, y: Any, xlabel: str, ylabel: str) -> Callable[[Any], None]:
    """Draws ``y`` against ``x`` as points on log-log axes."""
    def draw(axes: Any) -> None:
        from matplotlib.ticker import NullFormatter

        axes.loglog(x, y, "o", markersize=3)
        for axis in (axes.xaxis, axes.yaxis):  # no labels at minor ticks: a short range
            axis.set_minor_formatter(NullFormatter())  # labelled them over each other
        axes.set_xlabel(xlabel)
        axes.set_ylabel(ylabel)

    return draw


def bars(x: Any, y: Any, xlabel: str, ylabel: str, ticks: list[str] | None = None
         ) -> Callable[[Any], None]:
    """Draws ``y`` against ``x`` as bars on a log scale (``ticks``: names under them)."""
    def draw(axes: Any) -> None:
        axes.bar(x, y, width=0.8)
        if ticks is not None:
            axes.set_xticks(x, ticks, rotation=45, ha="right")
        axes.set_yscale("log")
        axes.set_xlabel(xlabel)
        axes.set_ylabel(ylabel)

    return draw


def per_value(table: Any) -> Any:
    """A bin's count over its width: vertices per value of the binned quantity."""
    return table["vertices"] / (table["high"] - table["low"])


def degree_figure(profile: Profile) -> tuple[str, Callable[[Any], None]]:
    """Vertices per degree, log-log."""
    table = profile.degree[profile.degree["low"] > 0]
    return "Degree distribution", points(table["low"], per_value(table), "degree k",
                                         "vertices per degree")


def triangles_figure(profile: Profile) -> tuple[str, Callable[[Any], None]]:
    """Mean triangles at a vertex against its degree, log-log."""
    table = profile.degree[(profile.degree["low"] > 0) & (profile.degree["triangles_mean"] > 0)]
    return "Triangles per vertex by degree", points(
        table["low"], table["triangles_mean"], "degree k", "mean triangles per vertex")


def triangle_distribution_figure(profile: Profile) -> tuple[str, Callable[[Any], None]]:
    """Vertices per triangle count, log-log."""
    table = profile.triangles[profile.triangles["low"] > 0]
    return "Triangles per vertex", points(table["low"], per_value(table),
                                          "triangles at a vertex", "vertices per count")


def clustering_figure(profile: Profile) -> tuple[str, Callable[[Any], None]]:
    """The clustering spectrum C(k): mean local clustering against degree."""
    table = profile.degree[(profile.degree["low"] > 1) & (profile.degree["clustering_mean"] > 0)]
    return "Clustering spectrum", points(table["low"], table["clustering_mean"], "degree k",
                                         "mean clustering C(k)")


def truss_figure(profile: Profile) -> tuple[str, Callable[[Any], None]]:
    """Edges per truss number."""
    table = profile.truss[profile.truss["edges"] > 0]
    return "Truss-number spectrum", bars(table["k"], table["edges"], "truss number k", "edges")


def kept_figure(profile: Profile) -> tuple[str, Callable[[Any], None]]:
    """The edges each k-truss keeps."""
    table = profile.truss[profile.truss["kept"] > 0]
    return "Edges kept by each k-truss", bars(table["k"], table["kept"], "k",
                                              "edges in the k-truss")


def orbits_figure(profile: Profile) -> tuple[str, Callable[[Any], None]]:
    """Each graphlet orbit's total over the vertices."""
    assert profile.orbits is not None
    table = profile.orbits
    return "Graphlet orbit totals", bars(
        list(range(len(table))), table["total"].clip(lower=1), "orbit", "total over vertices",
        [name.replace("sigma", "σ") for name in table["orbit"]])


def graphlets_figure(profile: Profile) -> tuple[str, Callable[[Any], None]]:
    """The graph's copies of each graphlet."""
    assert profile.graphlets is not None
    table = profile.graphlets
    return "Graphlets", bars(list(range(len(table))), table["copies"].clip(lower=1),
                             "graphlet", "copies", list(table["graphlet"]))


FIGURES: dict[str, Callable[[Any], tuple[str, Callable[[Any], None]]]] = {
    "degree": degree_figure, "triangles": triangles_figure,
    "triangle-distribution": triangle_distribution_figure, "clustering": clustering_figure,
    "truss": truss_figure, "kept": kept_figure, "orbits": orbits_figure,
    "graphlets": graphlets_figure}
"""Each figure of the page by its element id, in the page's order: its title and how it is
drawn."""
HEADLINE = ("vertices", "edges", "triangles", "transitivity", "average_clustering",
            "max_truss", "backend", "workers", "partitions", "client_peak_bytes")


def figures(profile: Profile) -> dict[str, str]:
    """The page's figures (SVG) by id: every one, graphlets where counted."""
    drawn = {}
    for name, figure in FIGURES.items():
        if name in ("orbits", "graphlets") and profile.graphlets is None:
            continue  # not counted
        title, draw = figure(profile)
        drawn[name] = svg(draw, title)
    return drawn


def shown(value: Any) -> str:
    """A headline value as the page shows it."""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def rows(pairs: dict[str, Any]) -> str:
    """Table rows of ``name: value`` pairs, escaped."""
    return "\n".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(shown(v))}</td></tr>"
                     for k, v in pairs.items())


def page(profile: Profile, title: str) -> str:
    """The whole page: the headline numbers, the stage seconds and peaks, every figure."""
    numbers = profile.numbers
    headline = {name: numbers[name] for name in HEADLINE if numbers.get(name) is not None}
    peaks = {f"{kind} {stage}": value for kind in ("peak_device_bytes", "peak_host_bytes")
             for stage, value in (numbers.get(kind) or {}).items()}
    drawn = "\n".join(f'<figure id="{name}">{image}</figure>'
                      for name, image in figures(profile).items())
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;max-width:70em;margin:1em auto}}
figure{{display:inline-block;margin:.5em}}th{{text-align:left;padding-right:1em}}
td{{text-align:right}}</style></head>
<body><h1>{html.escape(title)}</h1>
<table id="numbers">{rows(headline)}</table>
<h2>Stage seconds</h2><table id="seconds">{rows(numbers.get("seconds") or {})}</table>
<h2>Peaks (bytes)</h2><table id="peaks">{rows(peaks)}</table>
<h2>Distributions</h2>
<p>Binned on the workers: {DATA} beside this page holds every figure's data.</p>
{drawn}
</body></html>
"""


def write_page(profile: Profile, folder: OutputFolder, title: str) -> str:
    """Write the page and its data into ``folder``'s temporary folder and rename it into
    place; returns the output's name."""
    text, data = page(profile, title), json.dumps(profile.to_dict(), indent=1)
    for name, content in ((PAGE, text), (DATA, data)):
        with folder.fs.open(posixpath.join(folder.temporary_path, name), "w",
                            encoding="utf-8") as file:
            file.write(content)
    folder.commit()
    return folder.out
