"""The side-by-side benchmark harness behind `benchmarks/run.py`, split by job.

- `settings`: the knobs every entrant gets (the NUTS settings, the fixed HMC knobs);
- `runners`: the entrants by name; their runners live by family in `bomcmc_runners`
  (bomcmc's samplers and the long reference run), `nuts_peers` (NumPyro's and BlackJAX's
  NUTS), `bare_hmc` (the driver-free reference loop), and `benchmarks/peers_blackjax.py`
  and `benchmarks/peers_nutpie.py` (BlackJAX's self-tuning samplers, nutpie);
- `floor`: the gradient floor and the compile-time clock;
- `stats`: the figures of one run (ESS, R-hat, the means against the reference, overhead);
- `comparison`: bomcmc's NUTS against the other NUTS, and repeats pooled over runs;
- `tables`: the markdown of `docs/benchmarks.md`;
- `environment`: the machine, the versions, the command line, the compile-cache check;
- `cli`: the command line and the loop over posteriors, samplers and repeats.

A runner is `run(ctx, seed) -> dict`: `ctx` holds the posterior's name, its flat form, the
flat log density, the starting points and the run's sizes; the dict holds one run's raw
figures with its `draws` (C, D, d) and, where it has them, its `grad_steps` (C, D).
"""
