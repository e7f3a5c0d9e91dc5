"""Tuning in one defaults file: every ``dtri.*`` key that dtri reads from ``dask.config`` is in
``dtri/dtri.yaml`` with a comment, every key there is read, no call site carries a default of
its own, and ``import dtri`` registers them (:mod:`dtri.config`) before any of them is read."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dtri.config import described_keys

PACKAGE = Path(__file__).resolve().parents[1] / "dtri"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def constants(tree: ast.Module) -> dict[str, list[str]]:
    """The module's top-level names bound to a string, or to a dict of strings (its values)."""
    found: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            value = node.value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                found[node.targets[0].id] = [value.value]
            elif isinstance(value, ast.Dict) and all(
                    isinstance(v, ast.Constant) and isinstance(v.value, str)
                    for v in value.values):
                found[node.targets[0].id] = [v.value for v in value.values]
    return found


def is_config_call(node: ast.AST, verb: str) -> bool:
    return isinstance(node, ast.Call) and ast.unparse(node.func) == f"dask.config.{verb}"


class Reads:
    """Every ``dask.config.get`` of dtri: the keys it reads, where, and with what arguments."""

    def __init__(self) -> None:
        self.trees = {module_name(path): ast.parse(path.read_text(encoding="utf-8"))
                      for path in PACKAGE.rglob("*.py")}
        self.names = {module: constants(tree) for module, tree in self.trees.items()}
        self.keys: dict[str, set[str]] = {}
        """Key: the modules that read it."""
        self.with_default: list[str] = []

    def resolve(self, module: str, node: ast.expr) -> list[str]:
        """The strings an argument can be: a literal, a module constant (its own or imported
        by ``from m import NAME``), or a subscript of a constant dict."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, ast.Subscript):
            return self.resolve(module, node.value)
        if isinstance(node, ast.Name):
            if node.id in self.names[module]:
                return self.names[module][node.id]
            for statement in ast.walk(self.trees[module]):
                if isinstance(statement, ast.ImportFrom) and statement.module in self.names \
                        and any(alias.name == node.id for alias in statement.names):
                    return self.names[statement.module].get(node.id, [])
        return []

    def collect(self) -> Reads:
        for module, tree in self.trees.items():
            for node in ast.walk(tree):
                if not is_config_call(node, "get") or not node.args:
                    continue
                keys = [key for key in self.resolve(module, node.args[0])
                        if key.startswith("dtri.")]
                for key in keys:
                    self.keys.setdefault(key, set()).add(module)
                if keys and (len(node.args) > 1 or node.keywords):
                    self.with_default.append(f"{module}: {ast.unparse(node)}")
        return self


READS = Reads().collect()


def test_the_reads_are_found():
    assert "dtri.runtime.resolve" in READS.keys["dtri.gpu-min-edges"]  # through a constant
    assert "dtri.kernels.strategy" in READS.keys["dtri.kernel-threads"]  # a literal
    assert "dtri.kernels.tuning" in READS.keys["dtri.kernel-tuning"]
    assert "dtri.runtime.host_plan" in READS.keys["dtri.worker-overhead-gpu"]  # a dict's value
    assert "dtri.kernels.intersect" in READS.keys["dtri.kernel-parallel-min-edges"]  # imported
    assert "dtri.input.text" in READS.keys["dtri.read.numpy-parser-max-bytes"]


def test_every_key_read_is_in_the_defaults_file_and_every_key_there_is_read():
    in_file = set(described_keys())
    assert sorted(set(READS.keys) - in_file) == []
    assert sorted(in_file - set(READS.keys)) == []


def test_no_call_site_reads_a_key_with_a_default_of_its_own():
    assert READS.with_default == []


def test_every_key_has_a_one_line_comment():
    assert [key for key, (_, comment) in described_keys().items() if not comment] == []


def test_every_key_says_why_a_user_would_change_it():
    """Each comment ends in a clause on when to change the key: raise, lower, set, re-fit,
    add or drop it."""
    why = re.compile(r"; (?:[^;]*\b)?(raise|lower|set|re-fit|add|drop) ")
    assert [key for key, (_, comment) in described_keys().items()
            if not why.search(comment)] == []


@pytest.mark.parametrize("first", ["import dtri.kernels.strategy, dask",
                                   "import dask, dtri.kernels.strategy",
                                   "import dtri; import dask.config"])
def test_import_dtri_registers_the_defaults_whichever_comes_first(first):
    """No module of dtri imports :mod:`dtri.config` for its side effect: ``import dtri``
    registers the defaults, whether Dask is imported before it or after."""
    readers = {module for modules in READS.keys.values() for module in modules}
    assert [m for m in sorted(readers) if "dtri.config" in {
        alias.name for node in ast.walk(READS.trees[m]) if isinstance(node, ast.Import)
        for alias in node.names}] == []
    code = f"{first}\nprint(dask.config.get('dtri.gpu-min-edges'))\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["12000"]


def test_the_defaults_are_registered_and_a_value_set_before_is_kept():
    code = ("import dask\n"
            "dask.config.set({'dtri.gpu-min-edges': 7})\n"
            "import dtri.config\n"
            "print(dask.config.get('dtri.gpu-min-edges'), dask.config.get('dtri.meter'),\n"
            "      dask.config.get('dtri.read.numpy-parser-max-bytes'))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    defaults = described_keys()
    assert done.stdout.split() == ["7", defaults["dtri.meter"][0],
                                   str(defaults["dtri.read.numpy-parser-max-bytes"][0])]


@pytest.fixture(scope="module")
def fresh_values() -> dict:
    """Every dtri.* key's value in a fresh process that imports dtri (no test has set any)."""
    code = ("import json, dask, dtri.config\n"
            "from dtri.config import described_keys\n"
            "print(json.dumps({key: dask.config.get(key) for key in described_keys()}))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("key", sorted(described_keys()))
def test_each_default_is_what_dask_config_gives(key, fresh_values):
    assert fresh_values[key] == described_keys()[key][0]


def test_a_key_set_in_a_block_leaves_the_defaults_when_the_block_ends():
    # dask.config.set removes on exit what it inserted: had the defaults been registered
    # inside the block, the whole ``dtri`` entry would go with it
    karate = Path(__file__).resolve().parents[1] / "examples" / "karate.txt"
    code = ("import dask\nimport dtri\n"
            "with dask.config.set({'dtri.cpu-kernel': 'hash'}):\n"
            f"    first = dtri.count_triangles({str(karate)!r})\n"
            f"print(first, dtri.count_triangles({str(karate)!r}),"
            " dask.config.get('dtri.cpu-kernel'))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["45", "45", "auto"]


def test_the_defaults_file_is_packaged():
    """A non-editable install holds the file only where pyproject names it as package data."""
    import tomllib

    from dtri.config import DEFAULTS_FILE

    project = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))
    assert DEFAULTS_FILE in project["tool"]["setuptools"]["package-data"]["dtri"]
    assert (PACKAGE / DEFAULTS_FILE).is_file()


def test_every_kernel_constant_that_may_be_overridden_is_read():
    """``dtri.kernel-tuning`` names exactly the constants that dtri reads through ``tuned``."""
    from dtri.kernels.orient import JOIN_EDGE_COST
    from dtri.kernels.tuning import NAMES

    read = {name for path in PACKAGE.rglob("*.py")
            for name in re.findall(r'\btuned\("([a-z-]+)"', path.read_text(encoding="utf-8"))}
    read |= {f"join-edge-cost-{kernel}" for kernel in JOIN_EDGE_COST}  # tuned(f"...{kernel}")
    assert sorted(read) == sorted(NAMES)
