"""One process of a two-process run, for tests/test_distributed.py (not a test itself).

    python tests/distributed_worker.py RANK PORT OUT_ROOT

joins JAX's distributed runtime as process RANK of 2 through the Python API, then samples the
runs of `RUNS` into OUT_ROOT/<sampler>, each process its half of the chains, as every process
of a SLURM job or an `mpirun` would.
"""

import sys

RUNS = ("hmc", "nuts", "ahmc")
SETTINGS = dict(posterior="logistic-heart", chains=4, draws=20, warmup=30, seed=3,
                float64=True, chunk_size=10, progress=False)
KNOBS = {"hmc": dict(step_size=0.05, steps=8), "nuts": {}, "ahmc": dict(bo_steps=10)}


def main(rank: int, port: int, root: str) -> None:
    import bomcmc

    bomcmc.distributed.initialize(f"127.0.0.1:{port}", 2, rank)
    for name in RUNS:
        res = bomcmc.sample(sampler=name, out=f"{root}/{name}", **SETTINGS, **KNOBS[name])
        assert (res.idata is None) == (rank != 0)  # process 0 assembles the run


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
