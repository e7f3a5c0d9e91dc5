"""Where and how tasks run: the session (scheduler, workers, memory caps), stage-named tasks
and exchanges, the stage timer, staging of results between host and device, and per-worker
state."""
