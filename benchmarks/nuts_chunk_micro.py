"""bomcmc's NUTS chunk against BlackJAX's bare loop on identical trajectories, timed directly.

    python benchmarks/nuts_chunk_micro.py [--posteriors A,B,...] [--reps 7] [--chains 4]

For each posterior: bomcmc's window warm-up (one compiled chunk of `--warmup` transitions)
gives the post-warm-up states and knobs; then `--draws` sampling transitions run with
bomcmc's key scheme (transition t of chain c uses fold_in(key_c, t)) in

- `bomcmc chunk`: the driver's compiled chunk (`driver.engine.Run.run_chunk`, as `bomcmc.sample`
  calls it);
- `async chunk`: the same for sampler "nuts_async" (`kernels/nuts_machine.py`: one leapfrog
  step of every chain per loop iteration, so chains do not wait for each other's trees);
- `nuts.step scan`: `vmap(bomcmc.kernels.nuts.step)` in a bare `lax.scan` (positions out);
- `blackjax scan`: `vmap(blackjax.nuts.build_kernel())` in a bare `lax.scan`, the loop
  `benchmarks/run.py` times for blackjax-nuts (positions, steps, divergences, acceptance out).

All compute the same draws (checked, bit for bit; "DRAWS DIFFER" flags a variant whose
float32 rounding took another path); the lockstep variants the same gradients. They are
called in turn, `--reps` times, and the minimum CPU and wall seconds of each is divided by
BlackJAX's. No host work but the call itself is timed (benchmarks/run.py times whole runs).
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np

DEFAULT_POSTERIORS = (
    "eight_schools-eight_schools_noncentered,sblri-blr,sblrc-blr,arK-arK,"
    "low_dim_gauss_mix-low_dim_gauss_mix,mesquite-logmesquite,kidiq-kidscore_interaction,"
    "logistic-australian,logistic-german,logistic-heart,logistic-pima,logistic-ripley"
)


def setup(name: str, chains: int, warmup: int, draws: int, seed: int):
    """A compiled bomcmc NUTS run of `name` after its warm-up: (run, states, knobs, adapt)."""
    from bomcmc import models
    from bomcmc import registry
    from bomcmc.driver import engine as R
    from bomcmc.options import SamplerConfig
    from bomcmc.store import MemoryStore

    spec = R.RunSpec(posterior=name, sampler="nuts", chains=chains, draws=draws,
                     warmup=warmup, seed=seed, chunk_size=max(draws, warmup),
                     config=SamplerConfig(knobs=dict(max_tree_depth=10), adapt="window",
                                          adapter_options=dict(target_accept=0.8)))
    run = R.Run(spec, models.get(name), MemoryStore(), None, registry.get(spec.sampler))
    st = run.initial_state()
    ad = run.initial_adapt_state(st)
    t0 = time.perf_counter()
    run.compile(st, ad)
    compile_s = time.perf_counter() - t0
    st, kn, ad = run.run_chunk(st, run.knobs, ad, 0, warmup, 1)[:3]
    return run, st, kn, ad, compile_s


def bare_scans(run, states, knobs, draws: int):
    """Compiled bare scans over transitions warmup .. warmup+draws-1 (bomcmc's keys)."""
    import blackjax

    from bomcmc.kernels import nuts

    logdensity = run.flat.logdensity_fn
    keys, start = run.chain_keys, run.spec.warmup
    kernel = blackjax.nuts.build_kernel()
    ts = jnp.arange(start, start + draws, dtype=jnp.int32)

    def ours(states, knobs):
        def body(st, t):
            k = jax.vmap(jax.random.fold_in, (0, None))(keys, t)
            st, _ = jax.vmap(lambda k, s, kn: nuts.step(k, s, logdensity, kn))(k, st, knobs)
            return st, st.position
        return jax.lax.scan(body, states, ts)

    def theirs(states, knobs):
        bstate = blackjax.mcmc.hmc.HMCState(states.position, states.logdensity,
                                            states.logdensity_grad)

        def body(st, t):
            k = jax.vmap(jax.random.fold_in, (0, None))(keys, t)
            st, info = jax.vmap(lambda k, s, e, m: kernel(k, s, logdensity, e, m,
                                                          max_num_doublings=10))(
                k, st, knobs.step_size, knobs.inverse_mass_matrix)
            return st, (st.position, info.num_integration_steps, info.is_divergent,
                        info.acceptance_rate)
        return jax.lax.scan(body, bstate, ts)

    out = {}
    for label, f in (("nuts.step scan", ours), ("blackjax scan", theirs)):
        t0 = time.perf_counter()
        c = jax.jit(f).lower(states, knobs).compile()
        out[label] = (lambda c=c: c(states, knobs), time.perf_counter() - t0)
    return out


def async_chunk(run, states, adapt, knobs, args):
    """The "nuts_async" sampler's compiled chunk on the same states, knobs and keys."""
    from bomcmc import models
    from bomcmc import registry
    from bomcmc.driver import engine as R
    from bomcmc.store import MemoryStore
    from bomcmc.kernels import nuts_machine

    r = R.Run(run.spec, models.get(run.spec.posterior), MemoryStore(), None,
              registry.get(nuts_machine.kernel))
    r.compile(states, adapt)
    return {"async chunk": (lambda: r.run_chunk(states, knobs, adapt, args.warmup,
                                                args.draws, 1), r.compile_s)}


def positions(label: str, out) -> np.ndarray:
    """(chains, draws, d) from any variant's output."""
    if label.endswith("chunk"):
        return np.asarray(out[3])
    pos = out[1][0] if isinstance(out[1], tuple) else out[1]
    return np.swapaxes(np.asarray(pos), 0, 1)


def time_variants(variants: dict, reps: int) -> dict:
    res = {k: {"cpu": [], "wall": []} for k in variants}
    for _ in range(reps):
        for k, f in variants.items():
            c0, w0 = time.process_time(), time.perf_counter()
            jax.block_until_ready(f())
            res[k]["cpu"].append(time.process_time() - c0)
            res[k]["wall"].append(time.perf_counter() - w0)
    return res


def main(extra=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--posteriors", default=DEFAULT_POSTERIORS)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    ref = "blackjax scan"
    print(f"min CPU s (wall s) of {args.draws} transitions x {args.chains} chains, "
          f"÷ {ref}; {args.reps} interleaved calls")
    for name in args.posteriors.split(","):
        run, st, kn, ad, compile_s = setup(name, args.chains, args.warmup, args.draws,
                                           args.seed)
        variants = {"bomcmc chunk": (lambda: run.run_chunk(st, kn, ad, args.warmup,
                                                           args.draws, 1), compile_s)}
        variants.update(async_chunk(run, st, ad, kn, args))
        variants.update(bare_scans(run, st, kn, args.draws))
        if extra is not None:  # hook for scratch comparisons: {label: (call, compile_s)}
            variants.update(extra(run, st, kn, ad, args))
        calls = {k: v[0] for k, v in variants.items()}
        first = {k: positions(k, f()) for k, f in calls.items()}
        base = first[ref]
        same = {k: bool(np.array_equal(v, base)) for k, v in first.items()}
        res = time_variants(calls, args.reps)
        cpu = {k: min(v["cpu"]) for k, v in res.items()}
        wall = {k: min(v["wall"]) for k, v in res.items()}
        med = {k: statistics.median(v["wall"]) for k, v in res.items()}
        cells = [f"{k} {cpu[k] / cpu[ref]:.3f} ({wall[k] / wall[ref]:.3f}; median wall "
                 f"{med[k] / med[ref]:.3f}; compile {variants[k][1]:.1f} s)"
                 + ("" if same[k] else " DRAWS DIFFER") for k in calls if k != ref]
        # gradients a lockstep batch pays (Σ_t max_c n) over those of the busiest chain
        n = np.asarray(calls["bomcmc chunk"]()[5].n_grad)
        factor = n.max(axis=0).sum() / n.sum(axis=1).max()
        print(f"{name}: lockstep factor {factor:.2f}; {ref} {cpu[ref] * 1e3:.1f} ms CPU; "
              + "; ".join(cells), flush=True)


if __name__ == "__main__":
    main()
