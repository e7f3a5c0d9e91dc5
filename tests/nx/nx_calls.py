"""A pytest plugin for runs of NetworkX's own tests against the backend: counts the calls
that reach dtri's implementation of each function it claims, and writes them as JSON to
``$DTRI_NX_CALLS`` at the end (NetworkX falls back to its own code for the calls dtri
declines, so a passing suite alone does not show that dtri ran)."""

from __future__ import annotations

import json
import os
from collections import Counter

CALLS: Counter = Counter()


def pytest_configure(config) -> None:
    from dtri.nx import backend
    from dtri.nx.info import FUNCTIONS

    for name in FUNCTIONS:
        implementation = getattr(backend.BackendInterface, name)

        def counted(*args, _name=name, _implementation=implementation, **kwargs):
            CALLS[_name] += 1
            return _implementation(*args, **kwargs)

        setattr(backend.backend_interface, name, counted)


def pytest_unconfigure(config) -> None:
    path = os.environ.get("DTRI_NX_CALLS")
    if path:
        with open(path, "w") as handle:
            json.dump(dict(CALLS), handle)
