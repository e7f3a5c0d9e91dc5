"""The ``dtri`` program: its click group, and how a command ends. Errors are one
``dtri: error:`` line on stderr and exit status 2; an interrupt one ``dtri: interrupted`` line
and status 130 (SIGTERM 143); a closed stdout quietly 141."""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import click

INTERRUPTED = 130
"""The exit status of a command ended by an interrupt (Ctrl-C, SIGINT): 128 + SIGINT's 2."""
TERMINATED = 143
"""The exit status of a command ended by SIGTERM (``timeout``, SLURM, Kubernetes): 128 + 15."""
PIPE_CLOSED = 141
"""The exit status of a command whose stdout was closed (``| head``): 128 + SIGPIPE's 13."""


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so that the run unwinds as an interrupt does: its
    cluster closed, its temporary files removed (a ``BaseException``, as
    ``KeyboardInterrupt``, so that no handler of errors takes it)."""


class Signalled:
    """The signal that is ending this command, once one is: what its cluster's teardown
    then raises (its workers gone too, where the signal went to the process group) is part
    of the interrupt, not an error to report."""

    number: int | None = None


def _signalled(signum: int, frame: Any) -> None:
    """The handler of SIGINT and SIGTERM: the run unwinds, quietly (distributed's and
    asyncio's logs of the closing connections are silenced)."""
    import logging
    import signal

    Signalled.number = signum
    for name in ("distributed", "asyncio", "tornado"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)
    raise KeyboardInterrupt if signum == signal.SIGINT else Terminated


def _usage_error(ctx: click.Context, error: click.UsageError) -> None:
    """A usage error as every dtri error is: one ``dtri: error:`` line (click's message,
    with the command to ask for help), status 2."""
    command = error.ctx.command_path if error.ctx is not None else ctx.command_path
    message = " ".join(error.format_message().split())
    click.echo(f"dtri: error: {message} (see {command} --help)", err=True)
    ctx.exit(2)


def _interrupted(ctx: click.Context, terminated: bool) -> None:
    click.echo("dtri: interrupted", err=True)
    ctx.exit(TERMINATED if terminated else INTERRUPTED)


class Commands(click.Group):
    """dtri's commands: an interrupted one (Ctrl-C, SIGINT, to dtri or its process group)
    ends with one ``dtri: interrupted`` line and status 130 (the shell's convention), not
    click's ``Aborted!`` and status 1; SIGTERM the same way with status 143; a closed stdout
    quietly with status 141. Each unwinds the run first: its local cluster and their folders
    go, and no temporary output remains."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as error:
            _usage_error(ctx, error)
            raise  # not reached: _usage_error exits

    def invoke(self, ctx: click.Context) -> Any:
        import signal

        previous = {}
        if threading.current_thread() is threading.main_thread():
            previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, _signalled)
            if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not ignored
                previous[signal.SIGINT] = signal.signal(signal.SIGINT, _signalled)
        Signalled.number = None
        try:
            return super().invoke(ctx)
        except click.UsageError as error:  # a command's options and arguments
            _usage_error(ctx, error)
        except (KeyboardInterrupt, click.Abort):
            _interrupted(ctx, Signalled.number == signal.SIGTERM)
        except Terminated:
            _interrupted(ctx, True)
        except BrokenPipeError:
            _quiet_stdout()
            ctx.exit(PIPE_CLOSED)
        except Exception:
            if Signalled.number is None:
                raise
            _interrupted(ctx, Signalled.number == signal.SIGTERM)
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)


def _quiet_stdout() -> None:
    """Point stdout at ``/dev/null``: the reader has gone, and the flush at exit would
    otherwise fail again, loudly."""
    with suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="dtri")
def main() -> None:
    """dtri: exact triangle counting, and the analytics built on triangles, for graphs too big
    for one GPU, as a Dask pipeline on cuDF (GPU) or pandas (CPU) partitions."""


def fail(message: Any, code: int = 2) -> None:
    """Print one ``dtri: error:`` line on stderr and exit."""
    click.echo(f"dtri: error: {message}", err=True)
    sys.exit(code)


@contextmanager
def errors_as_one_line() -> Iterator[None]:
    """dtri's own errors, bad values, missing files, and a broken compressed stream as one line
    and exit 2 (click would print a bare ``Aborted!`` for an ``EOFError``)."""
    from dtri import DtriError

    try:
        yield
    except BrokenPipeError:
        raise  # stdout closed: quietly (:class:`Commands`)
    except (DtriError, ValueError, OSError, EOFError) as error:
        if Signalled.number is not None:  # the teardown of an interrupted run
            raise
        fail(error)


def run() -> None:
    """The ``dtri`` program (``python -m dtri`` too): :func:`main`, then the process ends once
    its output is out, skipping Python's teardown of a GPU run's CUDA and UCX state (0.9 s
    after a four-GPU count). It keeps the steps that come before: the threading module's exit
    hooks, the threads that are not daemons joined (:func:`dtri.start_cuda_driver`'s), the
    ``atexit`` handlers; the standard streams are flushed, and the process ends with the
    status :func:`main` gave. An error that escapes :func:`main` ends it as Python would."""
    try:
        main()
    except SystemExit as end:
        status = exit_status(end.code)
    else:
        status = 0
    shutdown = getattr(threading, "_shutdown", None)  # CPython's first step of its end
    if shutdown is None or threading.current_thread() is not threading.main_thread():
        sys.exit(status)  # Python's own end
    shutdown()  # the threading module's exit hooks, then every thread not a daemon joined
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with suppress(OSError, ValueError):  # a closed pipe (| head): nothing more to say
            stream.flush()
    os._exit(status)


def exit_status(code: Any) -> int:
    """The status a process ends with for ``SystemExit(code)``, as Python gives it: 0 for
    ``None``, an int as it is, and 1 for anything else, which is printed on stderr."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1
