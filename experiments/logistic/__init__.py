"""The parts of `experiments/logistic_ess.py` (Wang, Mohamed & de Freitas 2013 §5.1, Fig. 2),
split by job:

- `results`: the experiment's vocabulary (data sets, samplers, labels) and the readers of
  its results;
- `probe`: the instrumentation that times a bomcmc run's phases and the AHMC tuner;
- `runs`: one run per (data set, sampler, seed) and its figures (ESS per gradient, per
  second, per chain);
- `figure`: the Fig. 2 style box plots;
- `tables`: the markdown of `docs/logistic_ess.md`.
"""
