"""A cluster of nodes on one machine: a Dask scheduler and P CPU workers, each worker in a
Linux network namespace of its own, joined through a bridge by veth links that ``tc``
shapes to a chosen bandwidth and latency. What crosses between the workers then crosses a
link of its own, as between nodes, and the run's bytes and seconds across nodes can be
measured here (``examples/benchmarks/scale_out.py``) and tested (``tests/runtime/test_netns.py``).

    python cluster/netns.py run 4 --rate 1gbit --delay 0.2ms -- dtri count GRAPH --json
    # runs the command with DASK_SCHEDULER_ADDRESS set to the cluster's scheduler

It needs root (``ip netns``, ``tc``: Debian's iproute2) and takes only addresses of its own:
a ``10.77.N.0/24`` subnet that exists only on its bridge and in its namespaces, with no
default route, so nothing beyond them is ever reached. Every name carries the run's id, so
two runs do not meet. It cleans up what it made (the workers, the namespaces, the links,
the bridge) when it ends, and a reaper process of its own does it too if the process that
made them is killed, even by SIGKILL. :func:`sweep` removes what a run left behind.

A qdisc shapes only what leaves its interface, so each link is shaped at both ends: on the
bridge's side (towards the node) and inside the namespace (from it). ``netem`` adds the
latency, with a token bucket (``tbf``) under it for the rate.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field

PREFIX = "dtri"
"""The first letters of every namespace, link and bridge a run makes."""
SUBNET = "10.77"
"""The run's subnet is ``10.77.N.0/24``, ``N`` from its id."""


class NamespacesUnavailable(RuntimeError):
    """Network namespaces cannot be made here (not root, no iproute2, or not allowed)."""


def run(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    """One ``ip``/``tc`` command, its output captured."""
    return subprocess.run(argv, check=check, capture_output=True, text=True)


def unavailable() -> str | None:
    """Why namespaces cannot be made here, or ``None`` where they can (a probe namespace is
    made and removed)."""
    if os.name != "posix" or not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"{tool!r} is not installed (Debian's iproute2)"
    probe = f"{PREFIX}-probe-{secrets.token_hex(2)}"
    made = run("ip", "netns", "add", probe, check=False)
    if made.returncode:
        return f"ip netns add failed: {made.stderr.strip() or made.returncode}"
    run("ip", "netns", "del", probe, check=False)
    return None


@dataclass
class Nodes:
    """The namespaces, links and bridge of one run (see the module docstring)."""

    workers: int
    rate: str | None = "1gbit"
    """Each link's bandwidth, as ``tc`` takes it (``None``: not shaped)."""
    delay: str | None = None
    """Each link's added latency, each way (``None``: none)."""
    run_id: str = field(default_factory=lambda: secrets.token_hex(2))

    @property
    def bridge(self) -> str:
        return f"{PREFIX}br{self.run_id}"

    @property
    def subnet(self) -> str:
        return f"{SUBNET}.{int(self.run_id, 16) % 250 + 1}"

    @property
    def scheduler_host(self) -> str:
        """The bridge's address, where the scheduler listens (the root namespace)."""
        return f"{self.subnet}.1"

    def namespace(self, k: int) -> str:
        return f"{PREFIX}-{self.run_id}-{k}"

    def link(self, k: int) -> str:
        return f"{PREFIX}v{self.run_id}{k}"

    def address(self, k: int) -> str:
        return f"{self.subnet}.{k + 2}"

    def shaping(self) -> list[str]:
        """The qdisc of one end of a link: ``netem`` where there is a delay (its ``rate``
        for the bandwidth), else a token bucket (``tbf``) for the rate alone."""
        if self.delay:
            rate = ["rate", self.rate] if self.rate else []
            return ["netem", "delay", self.delay, *rate, "limit", "100000"]
        if self.rate:
            return ["tbf", "rate", self.rate, "burst", "256kb", "latency", "50ms"]
        return []

    def make(self) -> None:
        """The bridge, and per worker a namespace, its link and its shaping. A delay needs
        the kernel's ``netem`` qdisc (the module ``sch_netem``): where it is missing, a
        :class:`NamespacesUnavailable` says so before anything is made."""
        if self.delay and not netem_available():
            raise NamespacesUnavailable(f"a delay of {self.delay} needs the kernel's netem "
                                        "qdisc (sch_netem), which this kernel lacks; "
                                        "shape the rate alone (tbf)")
        run("ip", "link", "add", self.bridge, "type", "bridge")
        run("ip", "addr", "add", f"{self.scheduler_host}/24", "dev", self.bridge)
        run("ip", "link", "set", self.bridge, "up")
        shape = self.shaping()
        for k in range(self.workers):
            ns, link = self.namespace(k), self.link(k)
            run("ip", "netns", "add", ns)
            run("ip", "link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", ns)
            run("ip", "link", "set", link, "master", self.bridge, "up")
            run("ip", "-n", ns, "addr", "add", f"{self.address(k)}/24", "dev", "eth0")
            run("ip", "-n", ns, "link", "set", "eth0", "up")
            run("ip", "-n", ns, "link", "set", "lo", "up")
            if shape:
                run("tc", "qdisc", "add", "dev", link, "root", *shape)
                run("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "eth0", "root",
                    *shape)

    def received_bytes(self) -> dict[int, int]:
        """The bytes each worker's namespace has received on its link so far (the kernel's
        count of what crossed the wire, framing included)."""
        received = {}
        for k in range(self.workers):
            try:
                text = run("ip", "netns", "exec", self.namespace(k), "cat",
                           "/sys/class/net/eth0/statistics/rx_bytes").stdout
                received[k] = int(text.strip())
            except (subprocess.CalledProcessError, ValueError):
                received[k] = 0
        return received

    def remove(self) -> None:
        """Everything :meth:`make` made, and every process left in its namespaces."""
        remove_run(self.run_id, self.workers)


def remove_run(run_id: str, workers: int | None = None) -> None:
    """The namespaces (their processes killed first), links and bridge of run ``run_id``."""
    names = [name for name in namespaces() if name.startswith(f"{PREFIX}-{run_id}-")]
    for name in names:
        pids = run("ip", "netns", "pids", name, check=False).stdout.split()
        for pid in pids:
            with suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
    for name in names:
        run("ip", "netns", "del", name, check=False)
    run("ip", "link", "del", f"{PREFIX}br{run_id}", check=False)


def netem_available() -> bool:
    """Whether the kernel has the ``netem`` qdisc (tried on a veth pair made and removed)."""
    link = f"{PREFIX}nt{secrets.token_hex(2)}"
    if run("ip", "link", "add", link, "type", "veth", "peer", "name", f"{link}p",
           check=False).returncode:
        return False
    try:
        return not run("tc", "qdisc", "add", "dev", link, "root", "netem", "delay", "1ms",
                       check=False).returncode
    finally:
        run("ip", "link", "del", link, check=False)


def namespaces() -> list[str]:
    """The network namespaces of this machine, by name."""
    listed = run("ip", "netns", "list", check=False).stdout.splitlines()
    return [line.split()[0] for line in listed if line.strip()]


def sweep() -> list[str]:
    """Remove every namespace and bridge that a run of this module left behind (its name
    starts ``dtri-``); returns the runs removed."""
    runs = sorted({name.split("-")[1] for name in namespaces()
                   if name.startswith(f"{PREFIX}-") and name.count("-") == 2
                   and not name.startswith(f"{PREFIX}-probe")})
    for run_id in runs:
        remove_run(run_id)
    return runs


def reap(parent: int, run_id: str) -> None:
    """Wait for process ``parent`` to end, then remove run ``run_id`` (the reaper: started
    in a session of its own, so the signal that killed the parent does not reach it)."""
    while True:
        try:
            os.kill(parent, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    remove_run(run_id)


@dataclass
class NamespaceCluster:
    """A running cluster on :class:`Nodes` (:func:`namespace_cluster`)."""

    nodes: Nodes
    address: str
    processes: list[subprocess.Popen] = field(default_factory=list)


@contextmanager
def namespace_cluster(workers: int, rate: str | None = "1gbit", delay: str | None = None,
                      nthreads: int = 1, memory_limit: str = "auto",
                      timeout: float = 60.0) -> Iterator[NamespaceCluster]:
    """A scheduler on the bridge and ``workers`` single-threaded ``dask worker`` processes,
    each in its own namespace behind a link shaped to ``rate`` and ``delay``; yields the
    cluster once every worker has joined, and removes it all on the way out (and, through
    a reaper process, if this process is killed). Raises :class:`NamespacesUnavailable`
    where namespaces cannot be made."""
    why = unavailable()
    if why is not None:
        raise NamespacesUnavailable(why)
    nodes = Nodes(workers, rate, delay)
    reaper = subprocess.Popen([sys.executable, os.path.abspath(__file__), "reap",
                               str(os.getpid()), nodes.run_id], start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cluster = NamespaceCluster(nodes, f"tcp://{nodes.scheduler_host}:8786")
    module = [sys.executable, "-m"]
    try:
        nodes.make()
        port = free_port(nodes.scheduler_host)
        cluster.address = f"tcp://{nodes.scheduler_host}:{port}"
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        cluster.processes.append(subprocess.Popen(
            [*module, "distributed.cli.dask_scheduler", "--host", nodes.scheduler_host,
             "--port", str(port), "--no-dashboard"], **quiet))
        for k in range(workers):
            cluster.processes.append(subprocess.Popen(
                ["ip", "netns", "exec", nodes.namespace(k), *module,
                 "distributed.cli.dask_worker", cluster.address, "--nthreads", str(nthreads),
                 "--nworkers", "1", "--host", nodes.address(k), "--no-dashboard",
                 "--memory-limit", memory_limit, "--name", f"node-{k}"], **quiet))
        wait_for_workers(cluster.address, workers, timeout)
        yield cluster
    finally:
        for process in cluster.processes:
            process.terminate()
        for process in cluster.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        nodes.remove()
        reaper.kill()
        reaper.wait()


def free_port(host: str) -> int:
    """A TCP port free on ``host``."""
    import socket

    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def wait_for_workers(address: str, workers: int, timeout: float) -> None:
    """Return once ``workers`` workers have joined the scheduler at ``address``."""
    from distributed import Client

    with Client(address, timeout=timeout) as client:
        client.wait_for_workers(workers, timeout=timeout)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="action")
    up = sub.add_parser("run", help="start the cluster, run a command against it, remove it")
    up.add_argument("workers", type=int)
    up.add_argument("--rate", default="1gbit", help="each link's bandwidth ('none': unshaped)")
    up.add_argument("--delay", default=None, help="each link's added latency, e.g. 0.2ms")
    reaper = sub.add_parser("reap")
    reaper.add_argument("parent", type=int)
    reaper.add_argument("run_id")
    sub.add_parser("sweep", help="remove what runs of this module left behind")
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[argv.index("--") + 1:] if "--" in argv else []
    args = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    if args.action == "reap":
        reap(args.parent, args.run_id)
        return 0
    if args.action == "sweep":
        print("removed:", " ".join(sweep()) or "nothing")
        return 0
    if args.action != "run":
        parser.print_help()
        return 2
    rate = None if args.rate == "none" else args.rate
    try:
        with namespace_cluster(args.workers, rate, args.delay) as cluster:
            print(f"scheduler {cluster.address}: {args.workers} workers behind "
                  f"{rate or 'unshaped'} links", file=sys.stderr)
            if not command:
                return 0
            env = {**os.environ, "DASK_SCHEDULER_ADDRESS": cluster.address}
            return subprocess.run(command, env=env).returncode
    except NamespacesUnavailable as error:
        print(f"netns: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
