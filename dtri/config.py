"""dtri's tuning keys in ``dask.config``: their defaults, registered when this module is imported.

Every ``dtri.*`` key lives in one file, ``dtri/dtri.yaml``, with its default and a comment
line on what it does. Importing this module registers them with
``dask.config.update_defaults``, as Dask registers ``dask.yaml`` and distributed its
``distributed.yaml``. A value set before (``dask.config.set``, a YAML file under
``~/.config/dask/``, a ``DASK_DTRI__...`` variable) is kept. ``import dtri`` imports this
module once: at once where Dask is imported already, else the moment ``dask.config`` is
(``dtri/__init__.py``), so ``import dtri`` alone costs no Dask import. Every module of dtri
imports ``dtri`` first, on a worker too, so a key is read without a default of its own:
``dask.config.get("dtri.gpu-min-edges")``.
"""

from __future__ import annotations

import re
from importlib.resources import files
from typing import Any

import yaml
from dask import config as dask_config  # not dask.config: dask may be mid-import

DEFAULTS_FILE = "dtri.yaml"
"""The defaults file, beside this module in the package."""


def defaults_text() -> str:
    """The defaults file as it is written, comments included."""
    return files("dtri").joinpath(DEFAULTS_FILE).read_text(encoding="utf-8")


def defaults() -> dict[str, Any]:
    """The defaults file's values: ``{"dtri": {...}}``."""
    return yaml.safe_load(defaults_text())


def described_keys() -> dict[str, tuple[Any, str]]:
    """Each key of the defaults file by its dotted name (``dtri.gpu-min-edges``, or
    ``dtri.read.numpy-parser-max-bytes``), with its default and the comment line above it
    (``""`` where it has none)."""
    values = defaults()
    found: dict[str, tuple[Any, str]] = {}
    path: list[tuple[int, str]] = []
    comment = ""
    for line in defaults_text().splitlines():
        stripped = line.strip()
        if not stripped:
            comment = ""
            continue
        if stripped.startswith("#"):
            comment = stripped.lstrip("#").strip()
            continue
        match = re.match(r"( *)([A-Za-z0-9_.-]+):", line)
        if match is None:
            continue
        indent = len(match.group(1))
        path = [(depth, name) for depth, name in path if depth < indent]
        path.append((indent, match.group(2)))
        names = [name for _, name in path]
        value: Any = values
        for name in names:
            value = value[name]
        if not isinstance(value, dict) or not value:  # a leaf, or a mapping of overrides
            found[".".join(names)] = (value, comment)
        comment = ""
    return found


dask_config.update_defaults(defaults())
