"""Every name the docs and docstrings give exists: a ``dtri.``-dotted name (a module, an
attribute of one, a ``dask.config`` key of ``dtri/dtri.yaml``, a logger, or a field of
``dtri bench``'s record), a ``module.name`` in backticks where ``module`` is one of dtri's,
and the target of a docstring's ``:func:``, ``:class:`` or ``:meth:`` role."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from dtri.config import described_keys

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dtri"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

DOTTED = re.compile(r"(?<![\w./<-])dtri(?:\.[A-Za-z_][\w-]*)+")
"""``dtri.x.y``, not inside a path (``dtri/dtri.yaml``) or another name (``backends.dtri.x``)."""
IN_BACKTICKS = re.compile(r"(?:``?|:[a-z]+:`~?)([A-Za-z_]\w*)\.([A-Za-z_]\w*)")
"""```module.name``, or a role's target."""
ROLE = re.compile(r":(?:func|class|data|meth|attr|exc|obj):`~?([\w.]+)`")
NOT_NAMES = {"py", "yaml", "md", "json", "jsonl", "cu", "txt", "toml"}
"""What follows a file's name (``read.py``)."""
OTHER_PACKAGES = {"distributed", "nx", "dask", "numba", "cupy", "cudf", "pandas", "numpy"}
"""Packages named as dtri's modules are (``dtri.prepared.distributed``): their names in
backticks are theirs."""


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py")}


@cache
def tree(module: str) -> ast.Module:
    return ast.parse(MODULES[module].read_text(encoding="utf-8"))


@cache
def defined(module: str) -> frozenset[str]:
    """Every name a module binds, at any depth: functions, classes, methods, attributes,
    fields, imported names."""
    names: set[str] = set()
    for node in ast.walk(tree(module)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return frozenset(names)


@cache
def top_level(module: str) -> dict[str, ast.AST]:
    """A module's top-level definitions and assignments, by name."""
    found: dict[str, ast.AST] = {}
    for node in tree(module).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found[node.name] = node
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:  # a name, or names unpacked (``A, B = 0, 1``)
                names = target.elts if isinstance(target, ast.Tuple) else [target]
                found.update((n.id, node) for n in names if isinstance(n, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            found.update(((a.asname or a.name).split(".")[0], node) for a in node.names)
    return found


def class_members(node: ast.ClassDef) -> set[str]:
    names = set()
    for statement in node.body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(statement.name)
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            names.add(statement.target.id)
        elif isinstance(statement, ast.Assign):
            names.update(t.id for t in statement.targets if isinstance(t, ast.Name))
    return names


def attribute_exists(module: str, attributes: list[str]) -> bool:
    """Whether ``module`` has the attribute path, read from its source (a GPU module need not
    import here); a path that goes through something imported is looked up by import."""
    if not attributes:
        return True
    node = top_level(module).get(attributes[0])
    if node is None:
        if MODULES[module].name == "__init__.py":
            sub = f"{module}.{attributes[0]}"
            if sub in MODULES:
                return attribute_exists(sub, attributes[1:])
            value = importlib.import_module(module)
            return hasattr(value, attributes[0])
        return False
    for name in attributes[1:]:
        if not isinstance(node, ast.ClassDef) or name not in class_members(node):
            return False
        node = next(s for s in node.body if getattr(s, "name", None) == name) \
            if any(getattr(s, "name", None) == name for s in node.body) else ast.Pass()
    return True


@cache
def other_names() -> frozenset[str]:
    """``dtri.``-dotted names that are no Python names: the ``dask.config`` keys (and the
    kernel constants' overrides), the loggers, and the fields of ``dtri bench``'s record
    (``dtri.end_to_end_seconds``)."""
    loggers = {match for path in MODULES.values()
               for match in re.findall(r'getLogger\("([^"]+)"\)', path.read_text("utf-8"))}
    bench = {f"dtri.{node.value}" for node in ast.walk(tree("dtri.bench"))
             if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    from dtri.kernels.tuning import KEY, NAMES

    kernel = {f"{KEY}.{name}" for name in NAMES}  # the overrides of dtri.kernel-tuning
    return frozenset({*described_keys(), *loggers, *bench, *kernel})


def dotted_exists(name: str) -> bool:
    if name in other_names() or any(key.startswith(name + "-") for key in described_keys()):
        return True
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        if module in MODULES:
            return attribute_exists(module, parts[cut:])
    return False


def texts() -> Iterator[tuple[str, str, str | None]]:
    """``(where, text, module)``: every docstring (and attribute docstring) of dtri, and
    every line of the README and docs/."""
    for module, path in MODULES.items():
        for node in ast.walk(tree(module)):
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
                    and isinstance(node.value.value, str):
                yield f"{path.relative_to(ROOT)}:{node.lineno}", node.value.value, module
    for path in DOCS:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            yield f"{path.relative_to(ROOT)}:{number}", line, None


SHORT_NAMES: dict[str, list[str]] = {}
for _module in MODULES:
    SHORT_NAMES.setdefault(_module.rsplit(".", 1)[-1], []).append(_module)


def public_members() -> set[str]:
    """The members of dtri's public classes, which docs call on variables named as modules
    are (``graph.count()``, ``session.prepare``)."""
    import dtri

    names: set[str] = set()
    for name in dtri.__all__:
        value = getattr(dtri, name)
        if isinstance(value, type):
            names.update(dir(value))
            names.update(getattr(value, "__dataclass_fields__", {}))
    return names


def missing_names(found: Iterator[tuple[str, str, str | None]] | None = None) -> list[str]:
    """The names of ``found`` (default: :func:`texts`) that do not exist, with where."""
    members = public_members()
    missing = []
    for where, text, module in texts() if found is None else found:
        for match in DOTTED.finditer(text):
            name = match.group(0).rstrip("-.")
            if not dotted_exists(name):
                missing.append(f"{where}: {name}")
        for match in IN_BACKTICKS.finditer(text):
            first, second = match.groups()
            if first in SHORT_NAMES and first not in OTHER_PACKAGES and first != "dtri" \
                    and second not in NOT_NAMES and second not in members \
                    and not any(second in top_level(m) for m in SHORT_NAMES[first]):
                missing.append(f"{where}: {first}.{second}")
        if module is None:
            continue
        for match in ROLE.finditer(text):
            first = match.group(1).split(".")[0]
            if first == "dtri" or first in defined(module) or first in dir(__builtins__) \
                    or any(first in top_level(m) for m in MODULES) \
                    or importlib.util.find_spec(first) is not None:
                continue
            missing.append(f"{where}: {match.group(1)}")
    return missing


def test_every_name_in_the_docs_and_docstrings_exists():
    assert missing_names() == []


@pytest.mark.parametrize("text", [
    "see ``dtri.pipeline.count_pipeline``",  # a module that is gone
    "`dtri.kernels.intersect.edge_class`",  # a name that moved
    "by ``intersect.count_group``",  # module.function
    "opened by :func:`open_session`",  # a role
    "`dtri.gpu-min-edge` in `dask.config`",  # a key that is not in dtri.yaml
])
def test_a_name_that_does_not_exist_is_found(text):
    assert len(missing_names(iter([("here", text, "dtri.runtime.session")]))) == 1


@pytest.mark.parametrize("text", [
    "``dtri.kernels.strategy.edge_class``", "`dtri.gpu-min-edges`", "`dtri.Session`",
    "``dtri.runtime.gpu.PinnedPool``", "`dtri/dtri.yaml`", "`nx.config.backends.dtri.min_edges`",
    "`graph.count()`", "`read.py`", ":func:`gpu_min_edges`",
    "`dtri.worker-overhead-<backend>`", "`dtri.end_to_end_seconds`",
])
def test_a_name_that_exists_is_not_reported(text):
    assert missing_names(iter([("here", text, "dtri.runtime.session")])) == []


def test_every_dtri_name_the_examples_import_exists():
    """The examples and benchmark scripts import what dtri has (a probe once imported a
    removed ``open_session``)."""
    missing = []
    for path in sorted((ROOT / "examples").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "dtri":
                missing += [f"{path.relative_to(ROOT)}:{node.lineno}: {node.module}.{a.name}"
                            for a in node.names if not dotted_exists(f"{node.module}.{a.name}")]
            elif isinstance(node, ast.Import):
                missing += [f"{path.relative_to(ROOT)}:{node.lineno}: {a.name}"
                            for a in node.names if a.name.split(".")[0] == "dtri"
                            and not dotted_exists(a.name)]
    assert missing == []
