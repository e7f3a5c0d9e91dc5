"""No import circles in dtri: every module can be read, tested and replaced on its own. The
graph counts every import (at the top of a module or inside a function, where a circle is as
real: the two modules still need each other), not those under ``if TYPE_CHECKING:``."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

PACKAGE = Path(__file__).resolve().parents[1] / "dtri"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(tree: ast.AST, name: str, is_package: bool) -> set[str]:
    """The names a module's import statements mention (``from a import b``: ``a`` and
    ``a.b``), relative imports resolved, those under ``if TYPE_CHECKING:`` left out."""
    found: set[str] = set()

    class Imports(ast.NodeVisitor):
        def visit_If(self, node: ast.If) -> None:
            if "TYPE_CHECKING" in ast.unparse(node.test):
                for statement in node.orelse:
                    self.visit(statement)
                return
            self.generic_visit(node)

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
    assert graph.has_edge("dtri.cli", "dtri.api")
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
