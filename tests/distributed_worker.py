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
WHOLE_ON = {"logistic": 0, "bnn": 0, "cv": 1}  # the process computing its unsharded values
KNOBS = {"hmc": dict(step_size=0.05, steps=8), "nuts": {}, "ahmc": dict(bo_steps=10)}
# a network's bandit with the ceiling on η: in seed 0 one chain diverges (at η = 1.01 in the
# sixth super-transition, measured), so the ceiling is set from one process's chain
NET_SETTINGS = dict(chains=2, draws=400, warmup=0, max_grad=800, seed=0,
                    eps_bounds=(0.01, 1.01), steps_bounds=(2, 20), budget=100,
                    divergence_margin=0.8, float64=True, progress=False, checks=False)


def network(rng=None):
    """A 3-4-1 network on 37 rows (odd: a sharded run pads them), its data the first draws
    of `rng` (default: a generator seeded 0)."""
    import numpy as np

    from bomcmc.bnn.network import BNN

    rng = np.random.default_rng(0) if rng is None else rng
    X = rng.normal(size=(37, 3))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=37)
    return BNN(X, y, hidden=(4,), prior="ih 0.05:0.5 bh 0.05:0.5 ho x0.05:0.5 bo 100",
               noise="0.05:0.5")


def sharded_values(rank: int, root: str) -> None:
    """Log density, gradient, Gibbs draw and curvature of a logistic regression and of
    networks whose rows (odd in number: padded) are split over the two processes, beside the
    unsharded values (each model's on the process `WHOLE_ON` names), saved as
    ROOT/sharded-RANK.npz for the test to compare."""
    import jax
    import numpy as np

    from bomcmc.bnn.cv import CVModel
    from bomcmc.data import data_mesh, local, replicated, with_data
    from bomcmc.models.logistic import synthetic

    mesh = data_mesh()
    rng = np.random.default_rng(0)
    net = network(rng)  # the points below are the generator's next draws
    models = {"logistic": (synthetic(101), None), "bnn": (net.posterior(), net),
              "cv": (CVModel(net, folds=3).posterior(), CVModel(net, folds=3))}
    out, todo = {}, []
    for name, (post, model) in models.items():
        from bomcmc.posterior import flatten

        flat = flatten(post, check_finite=False)  # its values are what the test compares
        # a point in NumPy, as uniform(-2, 2) starts scaled by 0.3 (`init_flat` would compile
        # a program for each model's starts and their log densities)
        x = rng.uniform(-0.6, 0.6, flat.dim)
        fns = {"value_and_grad": jax.value_and_grad(flat.logdensity_fn)}
        if name == "cv":  # the folds' masks weigh the padding rows for Gibbs and curvature
            fns["gibbs"] = lambda x: model.gibbs(jax.random.PRNGKey(2), model.unravel(x))
            fns["curvature"] = lambda x: model.curvature(model.unravel(x))

        def every(x, fns=fns):  # one program per model
            return {what: fn(x) for what, fn in fns.items()}

        sharded = local(jax.jit(with_data(every, post.data))(post.data.sharded(mesh),
                                                             replicated(mesh, x)))
        for what in fns:
            for i, a in enumerate(jax.tree_util.tree_leaves(sharded[what])):
                out[f"{name}.{what}.{i}.sharded"] = np.asarray(a)
        todo.append((name, every, x, fns))
    # the unsharded values once, after the collectives, each model's by one process (the same
    # program on both): process 0 also assembles the runs, so process 1 takes the CV model's
    for name, every, x, fns in todo:
        if WHOLE_ON[name] == rank:
            whole = jax.jit(every)(x)
            for what in fns:
                for i, b in enumerate(jax.tree_util.tree_leaves(whole[what])):
                    out[f"{name}.{what}.{i}.whole"] = np.asarray(b)
    np.savez(f"{root}/sharded-{rank}.npz", **out)


def skew_the_tuner() -> None:
    """Process 1 as a host whose tuner rounds otherwise: every knob it chooses is off in the
    sixth digit. The runs still give the one-process draws only because every process runs
    process 0's knobs (`host_loop.execute`)."""
    import jax
    import numpy as np

    from bomcmc.driver import host_loop

    tune = host_loop._tune

    def skewed(*args):
        knobs, seconds = tune(*args)
        off = jax.tree_util.tree_map(
            lambda a: np.asarray(a) * (1 + 1e-6) if np.issubdtype(np.asarray(a).dtype,
                                                                   np.floating) else a, knobs)
        return off, seconds

    host_loop._tune = skewed


def main(rank: int, port: int, root: str) -> None:
    import bomcmc

    bomcmc.distributed.initialize(f"127.0.0.1:{port}", 2, rank)
    if rank == 1:
        skew_the_tuner()
    for name in RUNS:
        res = bomcmc.sample(sampler=name, out=f"{root}/{name}", **SETTINGS, **KNOBS[name])
        assert (res.idata is None) == (rank != 0)  # process 0 assembles the run
    # the data's rows over the two processes, every chain on both
    res = bomcmc.sample(sampler="hmc", out=f"{root}/hmc-sharded", shard_data=True,
                        **SETTINGS, **KNOBS["hmc"])
    assert res.idata is not None  # every process has the whole result
    from bomcmc.bnn.samplers import ahmc_gibbs_sampler

    net = network()
    bomcmc.sample(net.posterior(), sampler=ahmc_gibbs_sampler(net), out=f"{root}/ahmc-net",
                  **NET_SETTINGS)
    sharded_values(rank, root)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
