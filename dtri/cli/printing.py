"""How the commands print: a summary as one JSON object or aligned lines
(:func:`print_summary`), and the lines of a run's statistics that every command shares."""

from __future__ import annotations

import json
from typing import Any

import click
from dask.utils import format_bytes


def resumed_line(resumed: dict[str, dict[str, Any]] | None) -> None:
    """The stages a ``--checkpoint`` run skipped and the seconds that saved."""
    if not resumed:
        return
    shown = [f"{stage} ({facts['tasks']} of {facts['of']} tasks)" if "tasks" in facts
             else stage for stage, facts in resumed.items()]
    saved = sum(facts["seconds"] for facts in resumed.values())
    click.echo(f"resumed        {', '.join(shown)} from the checkpoint: saved {saved:.3f} s")


def print_peaks(peaks: dict[str, int] | None, source: str | None, title: str) -> None:
    """The measured peak device bytes per stage, when the workers measured them."""
    if not peaks:
        return
    click.echo(f"{title} ({source}): " + "  ".join(
        f"{stage} {format_bytes(value)}" for stage, value in peaks.items()))


MOVED_STAGES_SHOWN = 3
"""Stages named in the text line of the bytes moved between workers (the most first)."""

HOST_FIELDS = ("peak_host_bytes", "spilled_bytes", "read_back_bytes", "worker_host_bytes")
"""The host side of a run's memory in its summary (as in :meth:`dtri.CountResult.to_dict`):
printed by :func:`print_host`, not as lines of their own."""


def print_host(peaks: dict[str, int] | None, spilled: dict[str, int] | None,
               read_back: dict[str, int] | None, title: str) -> None:
    """The measured peak resident host memory of a worker per stage and, where the workers
    spilled, the bytes written to disk and read back; nothing in this process."""
    if not peaks:
        return
    click.echo(f"{title}: " + "  ".join(
        f"{stage} {format_bytes(value)}" for stage, value in peaks.items()))
    if spilled and spilled.get("total"):
        stages = sorted((stage for stage in spilled if stage != "total"),
                        key=lambda stage: -spilled[stage])
        shown = ", ".join(f"{stage} {format_bytes(spilled[stage])}"
                          for stage in stages[:MOVED_STAGES_SHOWN])
        more = f", {len(stages) - MOVED_STAGES_SHOWN} more" \
            if len(stages) > MOVED_STAGES_SHOWN else ""
        click.echo(f"spilled        {format_bytes(spilled['total'])} to disk ({shown}{more}); "
                   f"read back {format_bytes((read_back or {}).get('total', 0))}")


def print_moves(moved_bytes: dict[str, dict[str, int]] | None,
                bandwidth: float | None) -> None:
    """One line on the bytes moved between workers, when something moved: the total, the
    stages that moved most, the most one worker received, and the transfers' bandwidth."""
    from dtri.report import most_to_one_worker, total_moved

    if not moved_bytes or not (moved := total_moved(moved_bytes)):
        return
    stages = sorted(((sum(workers.values()), stage) for stage, workers in moved_bytes.items()),
                    reverse=True)
    named = ", ".join(f"{stage} {format_bytes(value)}"
                      for value, stage in stages[:MOVED_STAGES_SHOWN])
    more = f", {len(stages) - MOVED_STAGES_SHOWN} more" if len(stages) > MOVED_STAGES_SHOWN \
        else ""
    rate = "" if bandwidth is None else f"; {format_bytes(int(bandwidth))}/s a transfer"
    click.echo(f"moved          {format_bytes(moved)} between workers ({named}{more}); most to "
               f"one worker {format_bytes(most_to_one_worker(moved_bytes))}{rate}")


def print_note(note: str | None) -> None:
    """The line on faster comms (``protocol_note`` of a result)."""
    if note is not None:
        click.echo(f"note           {note}")


def print_summary(summary: dict[str, Any], as_json: bool, source: dict[str, Any]) -> None:
    """One JSON object, or the summary as aligned lines (a top list as a small table)."""
    if as_json:
        click.echo(json.dumps({**source, **summary}))
        return
    for name, value in summary.items():
        if name in ("top", "seconds", "peak_device_bytes", "task_device_bytes",
                    "protocol_note", "resumed", *HOST_FIELDS) \
                or value is None or value == {}:
            continue
        if name == "task_budget":
            value = format_bytes(value)
        click.echo(f"{name:<22} {value}")
    if summary.get("top"):
        columns = list(summary["top"][0])
        click.echo("top")
        click.echo("  " + "  ".join(f"{c:>14}" for c in columns))
        for row in summary["top"]:
            click.echo("  " + "  ".join(f"{_shown(row[c]):>14}" for c in columns))
    click.echo("seconds                " + "  ".join(f"{k} {v:.3f}"
                                                     for k, v in summary["seconds"].items()))
    resumed_line(summary.get("resumed"))
    print_peaks(summary.get("peak_device_bytes"), "measured", "device peak")
    print_host(summary.get("peak_host_bytes"), summary.get("spilled_bytes"),
               summary.get("read_back_bytes"), "host peak (worker RSS)")
    print_note(summary.get("protocol_note"))


def _shown(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)

