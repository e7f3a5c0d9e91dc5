"""The CUDA sources are package data that the one loader (:mod:`dtri.kernels.cuda_source`)
finds, and the numba modules are those :func:`dtri.kernels.dispatch.compiled_kernels_ready`
asks about. No GPU needed: the sources are read, not compiled."""

from __future__ import annotations

import ast
import fnmatch
import tomllib
from pathlib import Path

import pytest

from dtri.kernels.cuda_source import CUDA_SOURCES, cuda_module, cuda_text
from dtri.kernels.dispatch import COMPILED_KERNEL_MODULES

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "dtri"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_data_patterns() -> list[str]:
    with open(ROOT / "pyproject.toml", "rb") as file:
        return tomllib.load(file)["tool"]["setuptools"]["package-data"]["dtri"]


def test_every_cuda_source_is_package_data_the_loader_reads():
    patterns = package_data_patterns()
    for package, name in CUDA_SOURCES:
        text = cuda_text(package, name)
        assert "extern \"C\"" in text or "__global__" in text, (package, name)
        inside = "/".join([*package.split(".")[1:], name])  # relative to dtri/
        assert any(fnmatch.fnmatch(inside, pattern) for pattern in patterns), inside


def test_every_cu_file_of_dtri_is_one_the_loader_names():
    on_disk = {(module_name(path.parent / "__init__.py"), path.name)
               for path in PACKAGE.rglob("*.cu")}
    assert on_disk == set(CUDA_SOURCES)


def test_the_modules_name_their_sources_as_the_loader_lists_them():
    """Each ``CUDA_SOURCE`` constant of a kernel module (and the generator's ``GPU_SOURCE``)
    is a listed source."""
    named = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and any(
                    getattr(target, "id", None) == "CUDA_SOURCE" for target in node.targets):
                named.add(ast.literal_eval(node.value))
    from dtri.input.generate import GPU_SOURCE

    named.add(("dtri.input", GPU_SOURCE))
    assert named == set(CUDA_SOURCES)


def test_the_loader_refuses_a_source_it_does_not_list():
    with pytest.raises(ValueError, match="not one of dtri's CUDA sources"):
        cuda_module("dtri.kernels", "missing.cu")


def test_the_compiled_kernel_modules_are_those_that_import_numba():
    importing = set()
    for path in (PACKAGE / "kernels").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(node, ast.Import) and any(a.name == "numba" for a in node.names)
               for node in tree.body):
            importing.add(module_name(path))
    assert importing == set(COMPILED_KERNEL_MODULES)
