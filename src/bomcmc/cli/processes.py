"""Which process a `sample` or `resume` command is: the launcher of N local workers
(`--processes N`), one process of a run (`--coordinator HOST:PORT --num-processes N
--process-id I`, or a SLURM or Open MPI job, which JAX detects), or a run of its own."""

from __future__ import annotations

import os

# The variables by which a job's processes know they are several (JAX's own detection reads
# these and more; we join its runtime only when the job really has several processes).
_WORLD_SIZE = ("SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE")


def cluster_size() -> int:
    """The number of processes of the SLURM or Open MPI job this process belongs to (1 when
    none)."""
    for name in _WORLD_SIZE:
        value = os.environ.get(name, "")
        if value.isdigit() and int(value) > 1:
            return int(value)
    return 1


def _without_processes(argv: list[str]) -> list[str]:
    """The command line less its --processes N (the workers are each one process)."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--processes":
            skip = True
        elif not a.startswith("--processes="):
            out.append(a)
    return out


def join_or_launch(args, chains: int | None, run_dir: str) -> int | None:
    """With --processes N: launch the workers and return the run's exit status. With
    --coordinator (or in a SLURM or Open MPI job of several processes): join the runtime and
    return None, so that this process runs its part. Else None: a one-process run."""
    from .. import distributed
    from ..errors import BomcmcError

    joining = any(v is not None for v in (args.coordinator, args.num_processes,
                                          args.process_id))
    if args.processes is not None:
        if joining:
            raise BomcmcError("--processes launches its own workers: give it without "
                              "--coordinator, --num-processes and --process-id")
        if chains is not None:
            distributed.check_split(chains, args.processes)
        if args.processes > 1:
            from .launch import launch

            hint = f"continue the run with `bomcmc resume {run_dir} --processes {args.processes}`"
            return launch(_without_processes(args.argv), args.processes, hint)
        return None
    if joining:
        if chains is not None and args.num_processes is not None:
            distributed.check_split(chains, args.num_processes)
        distributed.initialize(args.coordinator, args.num_processes, args.process_id)
    elif cluster_size() > 1:
        distributed.initialize()
    return None


__all__ = ["cluster_size", "join_or_launch"]
