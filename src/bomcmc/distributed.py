"""Runs across processes on JAX's distributed runtime.

JAX's runtime is multi-controller: every process runs the same program, owns some devices and
joins collectives (Gloo on CPU, NCCL on GPU). A bomcmc run over N processes splits its chains
into N equal, contiguous ranges: process p runs chains [p·C/N, (p+1)·C/N) with the keys and
starting points those chains have in a one-process run, writes its own chunk files, and at
every chunk boundary gathers what the tuner reads from every process, so that every process
holds the same tuner state. Process 0 assembles the run.

    initialize(coordinator, num_processes, process_id)   join (or form) the runtime
    group()                    this process's place: Group(rank, size)
    allgather(tree)            every process's arrays, concatenated along the chain axis
    agree(config, what)        a one-line error unless every process holds the same config
    on_main(fn)                fn on process 0, its BomcmcError raised on every process
"""

from __future__ import annotations

import json
import socket
from typing import Any, NamedTuple

import numpy as np

from .errors import BomcmcError

HEARTBEAT_S = 10  # seconds without a heartbeat before the runtime declares a process lost
INIT_TIMEOUT_S = 120  # seconds to wait for every process to join


class Group(NamedTuple):
    """This process's place in the run: its rank and the number of processes."""

    rank: int = 0
    size: int = 1

    def chains(self, total: int) -> slice:
        """The contiguous range of the run's `total` chains this process runs."""
        per = total // self.size
        return slice(self.rank * per, (self.rank + 1) * per)

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def group() -> Group:
    """Group(rank, size) of the running JAX program (Group(0, 1) when it is one process)."""
    import jax

    return Group(jax.process_index(), jax.process_count())


def check_split(chains: int, processes: int) -> None:
    """The chains split evenly over the processes, each with at least one."""
    if processes > chains:
        raise BomcmcError(f"{processes} processes for {chains} chains: every process needs at "
                          "least one chain (use as many chains as processes, or more)")
    if chains % processes:
        raise BomcmcError(f"chains ({chains}) must be a multiple of the number of processes "
                          f"({processes}) so that every process runs as many chains")


def parse_address(address: str) -> tuple[str, int]:
    """HOST:PORT, checked."""
    host, sep, port = str(address).rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise BomcmcError(f"coordinator must be HOST:PORT with a port in 1..65535, got "
                          f"{address!r}")
    return host, int(port)


def check_port_free(host: str, port: int) -> None:
    """A one-line error when the coordinator's port is taken (process 0 binds it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host if host not in ("localhost",) else "127.0.0.1", port))
        except OSError as e:
            raise BomcmcError(f"coordinator port {port} on {host} is not free ({e.strerror}): "
                              "choose another --coordinator HOST:PORT") from None


def free_port() -> int:
    """A port the system reports free on the loopback interface."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def initialize(coordinator: str | None = None, num_processes: int | None = None,
               process_id: int | None = None) -> Group:
    """Join JAX's distributed runtime before any JAX computation of this process.

    With no arguments, JAX detects a SLURM or Open MPI job itself. CPU collectives use Gloo.
    A lost process stops the others within HEARTBEAT_S seconds (the runtime's heartbeat)."""
    import jax

    given = [coordinator is not None, num_processes is not None, process_id is not None]
    if any(given) and not all(given):
        raise BomcmcError("give --coordinator HOST:PORT, --num-processes N and --process-id I "
                          "together (or none of them under SLURM or Open MPI)")
    if all(given):
        host, port = parse_address(coordinator)
        if not (isinstance(num_processes, int) and num_processes >= 1):
            raise BomcmcError(f"num_processes must be a positive integer, got {num_processes!r}")
        if not (isinstance(process_id, int) and 0 <= process_id < num_processes):
            raise BomcmcError(f"process_id must be in 0..{num_processes - 1}, got {process_id!r}")
        if process_id == 0:
            check_port_free(host, port)
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    # JAX's preemption service takes SIGTERM for its sync points, which bomcmc does not use:
    # without it a SIGTERM (the launcher stopping the rest of a failed run, a scheduler)
    # ends the process at once instead of after the launcher's grace period's SIGKILL
    jax.config.update("jax_enable_preemption_service", False)
    try:
        jax.distributed.initialize(coordinator, num_processes, process_id,
                                   heartbeat_timeout_seconds=HEARTBEAT_S,
                                   initialization_timeout=INIT_TIMEOUT_S)
    except (RuntimeError, ValueError) as e:
        text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise BomcmcError(f"could not join the distributed runtime: {text}") from None
    return group()


def allgather(tree: Any) -> Any:
    """Every process's leaves concatenated along their leading (chain) axis, in process
    order; the tree itself in a one-process program."""
    import jax

    if jax.process_count() == 1:
        return tree
    from jax.experimental import multihost_utils

    return jax.tree_util.tree_map(
        lambda a: np.asarray(multihost_utils.process_allgather(np.asarray(a), tiled=True)),
        tree)


def gather_texts(text: str) -> list[str]:
    """Every process's text, in process order."""
    import jax

    if jax.process_count() == 1:
        return [text]
    from jax.experimental import multihost_utils

    data = np.frombuffer(text.encode(), dtype=np.uint8)
    lengths = np.asarray(multihost_utils.process_allgather(np.array([data.size])))
    padded = np.zeros(int(lengths.max()), np.uint8)
    padded[:data.size] = data
    rows = np.asarray(multihost_utils.process_allgather(padded))
    return [bytes(r[:int(n)]).decode() for r, n in zip(rows, lengths.ravel())]


def agree(config: dict, what: str = "run configuration") -> None:
    """A one-line error on every process unless all hold the same `config` (a JSON-able
    dict), naming the first field that differs and the processes' values."""
    import jax

    if jax.process_count() == 1:
        return
    texts = gather_texts(json.dumps(config, sort_keys=True, default=repr))
    if len(set(texts)) == 1:
        return
    dicts = [json.loads(t) for t in texts]
    for key in sorted(set().union(*dicts)):
        values = [d.get(key) for d in dicts]
        if any(v != values[0] for v in values):
            shown = ", ".join(f"process {i}: {v!r}" for i, v in enumerate(values))
            raise BomcmcError(f"the processes were started with different {what}: {key} "
                              f"differs ({shown}); start every process with the same flags")


def on_main(fn) -> Any:
    """`fn()` on process 0 alone (creating the run directory, writing its results); a
    BomcmcError it raises is raised on every process, so that none waits for the others
    forever. Every process returns when process 0 is done."""
    import jax

    if jax.process_count() == 1:
        return fn()
    result, error = None, ""
    if jax.process_index() == 0:
        try:
            result = fn()
        except BomcmcError as e:
            error = str(e) or "failed"
    error = gather_texts(error)[0]
    if error:
        raise BomcmcError(error)
    return result


def barrier(name: str) -> None:
    """Wait until every process reaches the barrier `name`."""
    import jax

    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices(name)


def broadcast(tree: Any) -> Any:
    """Process 0's leaves on every process."""
    import jax

    if jax.process_count() == 1:
        return tree
    from jax.experimental import multihost_utils

    return jax.tree_util.tree_map(np.asarray, multihost_utils.broadcast_one_to_all(tree))


__all__ = ["Group", "agree", "allgather", "barrier", "broadcast", "check_split", "free_port",
           "gather_texts", "group", "initialize", "on_main", "parse_address"]
