#!/usr/bin/env python
"""Count triangles with dtri on a SLURM cluster, through dask-jobqueue.

This script runs the Dask scheduler in its own process (run it on a login node, or inside a
small allocation), submits one batch job per node with ``sbatch``, waits for the workers,
counts, prints the result as JSON, and cancels the jobs on exit.

* ``--backend gpu``: each job asks for ``--gres=gpu:N`` and runs one ``dask cuda worker``,
  which starts one worker process per GPU that SLURM gave the job (SLURM sets
  ``CUDA_VISIBLE_DEVICES``). Needs ``dtri[cuda13]`` (or ``[cuda12]``) on the nodes and here.
* ``--backend cpu``: each job runs ``dask worker`` with one single-threaded worker process
  per core it asks for.

Examples::

    python cluster/slurm.py --dry-run --partition gpu --account proj --nodes 2 --gpus-per-node 4 \\
        /shared/graphs/big.parquet                    # print the job script, submit nothing
    python cluster/slurm.py --partition gpu --account proj --nodes 2 --gpus-per-node 4 \\
        --walltime 00:30:00 --memory 256GB /shared/graphs/big.parquet
    python cluster/slurm.py --backend cpu --partition cpu --nodes 4 --cores 32 --generate rmat:24

The graph must be at the same absolute path on every node (a shared filesystem), or at a URL
every worker can read (``s3://...``). Needs ``pip install "dtri[cluster]"`` (dask-jobqueue).

The count keeps its finished stages in a checkpoint folder (``dtri count --checkpoint``):
``dtri-checkpoints/KEY`` under the working directory, ``KEY`` being the SLURM job
(``job-$SLURM_JOB_ID``) where this script runs inside one, so that a requeued job (``sbatch
--requeue``; SLURM keeps its id) resumes where the last attempt stopped, else the job name
with a digest of the input and backend, so that the same command run again resumes. The
folder must be one every worker can write (a shared filesystem). ``--checkpoint DIR`` names
another, ``--no-checkpoint`` keeps none; a checkpoint is removed once its count is printed,
unless ``--keep-checkpoint``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sys
from typing import Any

GPU_WORKER_COMMAND = "dask cuda worker"
"""Run as ``python -m dask cuda worker`` (dask-jobqueue runs ``python -m WORKER_COMMAND``): the
``dask`` command line with dask-cuda's ``cuda`` subcommand, i.e. ``dask cuda worker``."""
CPU_WORKER_COMMAND = "distributed.cli.dask_worker"
"""dask-jobqueue's default: ``python -m distributed.cli.dask_worker``, i.e. ``dask worker``."""


def build_cluster(*, backend: str = "gpu", nodes: int = 1, gpus_per_node: int = 1,
                  cores: int = 16, memory: str = "64GB", partition: str | None = None,
                  account: str | None = None, walltime: str = "01:00:00",
                  interface: str | None = None, local_directory: str | None = None,
                  log_directory: str | None = None, job_name: str = "dtri",
                  prologue: list[str] | tuple[str, ...] = (),
                  extra_directives: list[str] | tuple[str, ...] = (),
                  worker_args: list[str] | tuple[str, ...] = (),
                  python: str | None = None,
                  scheduler_options: dict[str, Any] | None = None) -> Any:
    """A ``dask_jobqueue.SLURMCluster`` whose jobs (one per node) run dtri's workers.

    Nothing is submitted until ``cluster.scale(jobs=nodes)``; ``cluster.job_script()`` shows
    the script each job will run. ``nodes`` is not used here (see :func:`expected_workers`).

    ``cores`` and ``memory`` are what one job (one node) asks for: ``--cpus-per-task`` and
    ``--mem``. On the GPU backend the job runs one ``dask cuda worker`` with ``gpus_per_node``
    single-threaded worker processes, each with ``memory / gpus_per_node`` of host memory; on
    the CPU backend, ``cores`` single-threaded ``dask worker`` processes with
    ``memory / cores`` each.
    """
    from dask_jobqueue import SLURMCluster

    if backend not in ("cpu", "gpu"):
        raise ValueError(f"backend must be cpu or gpu, got {backend!r}")
    if min(nodes, gpus_per_node, cores) < 1:
        raise ValueError("nodes, gpus_per_node and cores must be at least 1")
    options: dict[str, Any] = dict(
        queue=partition, account=account, walltime=walltime, memory=memory,
        interface=interface, local_directory=local_directory, log_directory=log_directory,
        job_name=job_name, job_script_prologue=list(prologue),
        worker_extra_args=list(worker_args),
        scheduler_options={"dashboard_address": ":8787", **(scheduler_options or {})},
    )
    if python is not None:
        options["python"] = python
    if backend == "gpu":
        # dask-jobqueue names a job's workers NAME-0 .. NAME-(processes-1) and dask cuda worker
        # names its per-GPU workers the same way, so processes = GPUs keeps scaling in step.
        # --nthreads (cores / processes) is 1 per GPU worker; job_cpu still books `cores`.
        options.update(
            cores=gpus_per_node, processes=gpus_per_node, job_cpu=cores,
            worker_command=GPU_WORKER_COMMAND,
            job_extra_directives=[f"--gres=gpu:{gpus_per_node}", *extra_directives],
        )
    else:
        options.update(
            cores=cores, processes=cores, worker_command=CPU_WORKER_COMMAND,
            job_extra_directives=list(extra_directives),
        )
    return SLURMCluster(**options)


WORKERS_LATE = 3
"""Exit status when the workers did not all arrive within ``--timeout`` (the jobs queued, or
the nodes could not start them): nothing was counted, and no count failed."""


def job_states(cluster: Any) -> str:
    """The states SLURM gives the cluster's jobs (``squeue``), as ``id STATE`` pairs."""
    import subprocess

    ids = [str(job.job_id) for job in cluster.workers.values() if getattr(job, "job_id", None)]
    if not ids:
        return "none submitted"
    done = subprocess.run(["squeue", "-h", "-j", ",".join(ids), "-o", "%i %T"],
                          capture_output=True, text=True, timeout=30, check=False)
    return ", ".join(line for line in done.stdout.splitlines() if line.strip()) \
        or "none left in squeue"


def expected_workers(backend: str, nodes: int, gpus_per_node: int, cores: int) -> int:
    """Dask workers that ``nodes`` jobs start: one per GPU, or one per core."""
    return nodes * (gpus_per_node if backend == "gpu" else cores)


CHECKPOINTS = "dtri-checkpoints"
"""The folder of the checkpoints under the working directory."""


def checkpoint_folder(args: argparse.Namespace, environ: dict[str, str] | None = None,
                      cwd: str | None = None) -> str | None:
    """The count's checkpoint folder: ``--checkpoint``, none with ``--no-checkpoint``, else
    ``dtri-checkpoints/KEY`` under ``cwd``, keyed by the SLURM job this runs in (a requeued
    job keeps its id) or by the job name, the input and the backend."""
    import hashlib

    if args.no_checkpoint:
        return None
    if args.checkpoint:
        return args.checkpoint
    environ = os.environ if environ is None else environ
    if environ.get("SLURM_JOB_ID"):
        key = f"job-{environ['SLURM_JOB_ID']}"
    else:
        run = json.dumps([args.paths, args.generate, args.seed, args.backend,
                          args.memory_budget])
        key = f"{args.job_name}-{hashlib.sha256(run.encode()).hexdigest()[:12]}"
    return os.path.join(cwd or os.getcwd(), CHECKPOINTS, key)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Count triangles with dtri on Dask workers submitted to SLURM "
                    "(dask-jobqueue).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="graph files, globs, directories or URLs (one graph), at the same "
                             "path on every node")
    parser.add_argument("--generate", metavar="SPEC",
                        help="count a generated graph instead: rmat:SCALE[:EDGE_FACTOR] or "
                             "gnm:N:M")
    parser.add_argument("--seed", type=int, default=0, help="seed of the --generate graph")
    parser.add_argument("--backend", choices=("gpu", "cpu"), default="gpu",
                        help="dask cuda worker (cuDF partitions) or dask worker (pandas)")
    parser.add_argument("--nodes", type=int, default=1, help="jobs to submit, one per node")
    parser.add_argument("--gpus-per-node", type=int, default=1,
                        help="GPUs per job (--gres=gpu:N); one worker each")
    parser.add_argument("--cores", type=int, default=16,
                        help="CPU cores per job (--cpus-per-task); with --backend cpu also "
                             "the number of single-threaded workers per node")
    parser.add_argument("--memory", default="64GB", help="host memory per job (--mem)")
    parser.add_argument("--partition", help="SLURM partition (-p)")
    parser.add_argument("--account", help="SLURM account (-A)")
    parser.add_argument("--walltime", default="01:00:00", help="time limit per job (-t)")
    parser.add_argument("--interface",
                        help="network interface the workers and the scheduler use, e.g. ib0")
    parser.add_argument("--local-directory", help="node-local scratch for the workers")
    parser.add_argument("--log-directory", help="where SLURM writes the jobs' stdout/stderr")
    parser.add_argument("--job-name", default="dtri", help="SLURM job name (-J)")
    parser.add_argument("--prologue", action="append", default=[], metavar="COMMAND",
                        help="a shell line run before the worker, e.g. 'source ~/venv/bin/"
                             "activate' (repeatable)")
    parser.add_argument("--directive", action="append", default=[], metavar="OPTION",
                        help="an extra '#SBATCH OPTION' line, e.g. --directive=--exclusive "
                             "(repeatable)")
    parser.add_argument("--python", help="Python on the nodes (default: this one's path)")
    parser.add_argument("--memory-budget", help="dtri's memory budget per worker, e.g. 16GiB")
    parser.add_argument("--timeout", type=float, default=3600,
                        help="seconds to wait for all the workers (queueing included)")
    parser.add_argument("--lost-workers-timeout", type=float, default=300,
                        help="seconds the count waits once every worker is gone (a job "
                             "cancelled or preempted) before it fails; the scheduler's "
                             "distributed.scheduler.no-workers-timeout, where not set")
    parser.add_argument("--checkpoint", metavar="DIR",
                        help="the count's checkpoint folder, on a filesystem every worker "
                             "writes (default: dtri-checkpoints/job-$SLURM_JOB_ID in the "
                             "working directory inside a SLURM job, so a requeued job "
                             "resumes; else dtri-checkpoints/JOB_NAME-DIGEST of the input)")
    parser.add_argument("--no-checkpoint", action="store_true",
                        help="keep no checkpoint: a count that dies starts again")
    parser.add_argument("--keep-checkpoint", action="store_true",
                        help="keep the checkpoint once the count is printed (default: "
                             "removed)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the job script and exit without submitting anything")
    args = parser.parse_args(argv)
    if not args.dry_run and bool(args.paths) == bool(args.generate):
        parser.error("give PATHS or --generate SPEC (one of them)")
    if not args.dry_run and shutil.which("sbatch") is None:
        parser.error("sbatch is not on PATH: run this on a SLURM login node (or use --dry-run)")
    return args


def main(argv: list[str] | None = None) -> int:
    import dask
    import distributed  # noqa: F401  (loads distributed's configuration defaults)

    args = parse_args(argv)
    if importlib.util.find_spec("dask_jobqueue") is None:
        print('slurm.py: error: needs dask-jobqueue: pip install "dtri[cluster]"',
              file=sys.stderr)
        return 2
    # the scheduler (started here, with the cluster) fails tasks that wait this long with no
    # worker, so a count whose jobs are all gone ends with an error instead of waiting forever
    lost = dask.config.get("distributed.scheduler.no-workers-timeout", None) \
        or f"{args.lost_workers_timeout}s"
    with dask.config.set({"distributed.scheduler.no-workers-timeout": lost}):
        cluster = build_cluster(
            backend=args.backend, nodes=args.nodes, gpus_per_node=args.gpus_per_node,
            cores=args.cores, memory=args.memory, partition=args.partition,
            account=args.account, walltime=args.walltime, interface=args.interface,
            local_directory=args.local_directory, log_directory=args.log_directory,
            job_name=args.job_name, prologue=args.prologue, extra_directives=args.directive,
            python=args.python,
        )
    with cluster:  # on exit, the jobs are cancelled (scancel), on success or failure
        checkpoint = checkpoint_folder(args)
        if args.dry_run:
            print(cluster.job_script())
            print(f"# checkpoint: {checkpoint or 'none'}")
            return 0
        from distributed import Client

        import dtri

        workers = expected_workers(args.backend, args.nodes, args.gpus_per_node, args.cores)
        cluster.scale(jobs=args.nodes)
        with Client(cluster) as client:
            print(f"waiting for {workers} workers ({args.nodes} jobs); dashboard: "
                  f"{client.dashboard_link}", file=sys.stderr)
            try:
                client.wait_for_workers(workers, timeout=args.timeout)
            except TimeoutError:  # distributed's WorkerStartTimeoutError is one
                arrived = len(client.nthreads())
                print(f"slurm.py: error: {arrived} of {workers} workers arrived within "
                      f"{args.timeout:g} s (their jobs: {job_states(cluster)}); give a longer "
                      "--timeout, or check the partition's queue; the jobs are cancelled",
                      file=sys.stderr)
                return WORKERS_LATE
            if args.generate:
                from dtri.input.generate import generated

                # built on the workers, and named by its spec and seed in the checkpoint
                edges: Any = generated(args.generate, seed=args.seed)
                source: dict[str, Any] = {"generate": args.generate, "seed": args.seed}
            else:
                edges = list(args.paths)
                source = {"paths": edges}
            try:
                # dtri.count uses the active Client (this one): it runs on the SLURM workers
                if checkpoint is not None:
                    os.makedirs(os.path.dirname(checkpoint) or ".", exist_ok=True)
                result = dtri.count(edges, backend=args.backend,
                                    memory_budget=args.memory_budget, checkpoint=checkpoint)
            except Exception as error:  # a lost job, a bad input: one line, no count
                print(f"slurm.py: error: the count failed ({type(error).__name__}: "
                      f"{str(error).strip() or 'no message'}); its jobs are cancelled",
                      file=sys.stderr)
                return 1
        print(json.dumps({**source, **result.to_dict()}))
    if checkpoint is not None and not args.keep_checkpoint:
        shutil.rmtree(checkpoint, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
