"""The worker plugin that gives each worker its staging state (imported where a cluster's
workers need it, not with dtri: it imports ``distributed``)."""

from __future__ import annotations

from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from dtri.runtime.staging import PLUGIN_NAME, StagingState, pinned_arena


class StagingPlugin(WorkerPlugin):
    """Gives each worker a :class:`StagingState` while a host-staged GPU session is open
    (registered as :data:`PLUGIN_NAME`; a worker that joins or restarts meanwhile gets one
    too), and frees it when unregistered."""

    name = PLUGIN_NAME

    def __init__(self, cache_limit: int, pinned: bool):
        self.cache_limit = cache_limit
        self.pinned = pinned
        self.state: StagingState | None = None

    def setup(self, worker: Any) -> None:
        self.state = StagingState(self.cache_limit, pinned_arena() if self.pinned else None)

    def teardown(self, worker: Any) -> None:
        if self.state is not None:
            self.state.close()
            self.state = None
