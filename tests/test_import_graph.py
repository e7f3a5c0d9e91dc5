"""No import circles in dtri, and every layer imports only what docs/design.md allows it: every
module can be read, tested and replaced on its own. The graph counts every import: at the top
of a module, inside a function and under ``if TYPE_CHECKING:``, where a circle is as real (the
two modules still need each other to be read). The map of what each layer may import
(:data:`ALLOWED`) is the table under "Layering" in docs/design.md, and the outer layers
(:data:`PUBLIC_ONLY`) take from ``dtri`` itself only the names of ``dtri.__all__``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import networkx as nx

PACKAGE = Path(__file__).resolve().parents[1] / "dtri"
DESIGN = PACKAGE.parent / "docs" / "design.md"

ALLOWED: dict[str, set[str]] = {
    "dtri": {"dtri.version", "dtri.config", "dtri.api", "dtri.analytics", "dtri.input",
             "dtri.runtime", "dtri.options", "dtri.errors"},
    "dtri.version": set(),
    "dtri.__main__": {"dtri.cli"},
    "dtri.errors": set(),
    "dtri.config": set(),
    "dtri.options": {"dtri.errors"},
    "dtri.kernels": {"dtri.config", "dtri.errors"},
    "dtri.runtime": {"dtri.kernels", "dtri.options", "dtri.config", "dtri.errors"},
    "dtri.input": {"dtri.runtime", "dtri.kernels", "dtri.options", "dtri.config", "dtri.errors"},
    "dtri.output": {"dtri.input", "dtri.errors"},
    "dtri.prepared": {"dtri.version", "dtri.output", "dtri.input", "dtri.runtime",
                      "dtri.kernels", "dtri.options", "dtri.config", "dtri.errors"},
    "dtri.analytics": {"dtri.prepared", "dtri.input", "dtri.runtime", "dtri.kernels",
                       "dtri.options", "dtri.config", "dtri.errors"},
    "dtri.api": {"dtri.analytics", "dtri.prepared", "dtri.output", "dtri.profile_page",
                 "dtri.input", "dtri.runtime", "dtri.options", "dtri.errors"},
    "dtri.profile_page": {"dtri.analytics", "dtri.output", "dtri.errors"},
    "dtri.bench": {"dtri", "dtri.options", "dtri.input", "dtri.prepared", "dtri.runtime"},
    "dtri.report": {"dtri", "dtri.output"},
    "dtri.cli": {"dtri", "dtri.options", "dtri.output", "dtri.report", "dtri.bench"},
    "dtri.nx": {"dtri"},
}
"""What each layer (a subpackage, or a module of the package's top) may import besides its own
modules. ``dtri`` as a target is the package itself: its public names (``dtri/__init__.py``),
not its modules."""
PUBLIC_ONLY = ("dtri.cli", "dtri.report", "dtri.nx")
"""The outer layers: of ``dtri`` itself they import only the names of ``dtri.__all__``."""


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(tree: ast.AST, name: str, is_package: bool) -> set[str]:
    """The names a module's import statements mention (``from a import b``: ``a`` and
    ``a.b``), relative imports resolved, those under ``if TYPE_CHECKING:`` included."""
    found: set[str] = set()

    class Imports(ast.NodeVisitor):
        def visit_Import(self, node: ast.Import) -> None:
            found.update(alias.name for alias in node.names)

        def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
            module = node.module or ""
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                module = ".".join(base + ([module] if module else []))
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)

    Imports().visit(tree)
    return found


def import_graph() -> nx.DiGraph:
    paths = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph = nx.DiGraph()
    graph.add_nodes_from(paths)
    for name, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for target in imported(tree, name, path.name == "__init__.py"):
            if target in paths and target != name:
                graph.add_edge(name, target)
    return graph


def test_the_graph_sees_the_imports_it_should():
    graph = import_graph()
    assert graph.has_edge("dtri.api", "dtri.prepared.graph")  # a top-level import
    assert graph.has_edge("dtri.kernels.backends", "dtri.kernels.gpu")  # one in a function
    assert graph.has_edge("dtri.cli.graph_input", "dtri")  # from dtri import prepare
    assert not graph.has_edge("dtri.kernels.dispatch", "dtri.kernels.gpu")


def circles(graph: nx.DiGraph) -> list[str]:
    """Each import circle as one line, ``a -> b -> ... -> a``."""
    shown = []
    for component in nx.strongly_connected_components(graph):
        if len(component) > 1:
            cycle = [edge[0] for edge in nx.find_cycle(graph.subgraph(component))]
            shown.append(" -> ".join([*cycle, cycle[0]]))
    return shown


def test_no_module_of_dtri_imports_itself_back_through_others():
    found = circles(import_graph())
    assert not found, "import circles:\n" + "\n".join(found)


def test_a_lazy_import_back_is_a_circle():
    graph = import_graph()
    graph.add_edge("dtri.kernels.dispatch", "dtri.kernels.gpu")  # as dispatch.py once had
    (circle,) = circles(graph)
    assert set(circle.split(" -> ")) == {"dtri.kernels.dispatch", "dtri.kernels.gpu"}


def layer_of(module: str) -> str:
    """A module's layer: ``dtri`` for the package itself, else its first two name parts."""
    return ".".join(module.split(".")[:2])


def forbidden_imports(graph: nx.DiGraph) -> list[str]:
    """Each import that leaves its layer for one the map does not allow it, as one line."""
    found = []
    for source, target in sorted(graph.edges):
        here, there = layer_of(source), layer_of(target)
        if here not in ALLOWED:
            found.append(f"{source}: its layer {here} is not in the map")
        elif there != here and target not in ALLOWED[here] and there not in ALLOWED[here]:
            found.append(f"{source} -> {target}")
    return found


def test_every_layer_imports_only_what_the_map_allows():
    found = forbidden_imports(import_graph())
    assert not found, "imports the map in docs/design.md does not allow:\n" + "\n".join(found)


def test_the_map_catches_an_outer_layer_reaching_in():
    graph = import_graph()
    graph.add_edge("dtri.cli", "dtri.kernels.graphlets")  # as cli.py once had
    graph.add_edge("dtri.kernels.sampling", "dtri.input.generate")  # as sampling.py once had
    assert forbidden_imports(graph) == ["dtri.cli -> dtri.kernels.graphlets",
                                        "dtri.kernels.sampling -> dtri.input.generate"]


def names_from_dtri(path: Path) -> set[str]:
    """The names a module imports from ``dtri`` itself (``from dtri import name``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return {alias.name for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "dtri" and not node.level
            for alias in node.names}


def test_the_outer_layers_take_only_public_names_from_dtri():
    import dtri

    public = set(dtri.__all__)
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        if layer_of(name) not in PUBLIC_ONLY:
            continue
        for imported_name in names_from_dtri(path):
            module = f"dtri.{imported_name}"
            assert imported_name in public or module in ALLOWED[layer_of(name)], \
                f"{name} imports dtri.{imported_name}, which is not public (dtri.__all__)"


def design_map() -> dict[str, set[str]]:
    """The table under "### Layering" in docs/design.md: each layer and what it may import."""
    text = DESIGN.read_text(encoding="utf-8")
    section = text.split("### Layering", 1)[1].split("\n#", 1)[0]
    rows = [line.split("|")[1:3] for line in section.splitlines() if line.startswith("| `")]
    return {re.findall(r"`([^`]+)`", layer)[0]: set(re.findall(r"`([^`]+)`", targets))
            for layer, targets in rows}


def test_the_map_is_the_one_docs_design_md_gives():
    assert design_map() == ALLOWED


def test_docs_design_md_names_every_module_file():
    """Every module of dtri/ (Python, and the CUDA sources beside them) is named in the layout
    table of docs/design.md: a top-level module by its path, one in a subpackage in its
    subpackage's row."""
    text = DESIGN.read_text(encoding="utf-8")
    rows = {}
    for line in text.split("### Layout", 1)[1].splitlines():
        if line.startswith("| `dtri/"):
            first, rest = line.split("|")[1], "|".join(line.split("|")[2:])
            for path in re.findall(r"`(dtri/[^`]*)`", first):
                rows[path] = rest
    missing = []
    for path in sorted([*PACKAGE.rglob("*.py"), *PACKAGE.rglob("*.cu")]):
        relative = path.relative_to(PACKAGE.parent).as_posix()
        if path.name == "__init__.py" and path.parent == PACKAGE:
            continue
        folder = path.parent.relative_to(PACKAGE.parent).as_posix() + "/"
        named = relative in rows if path.parent == PACKAGE else \
            folder in rows and (f"`{path.name}`" in rows[folder] or path.name == "__init__.py")
        if not named:
            missing.append(relative)
    assert not missing, "modules docs/design.md does not name: " + ", ".join(missing)
