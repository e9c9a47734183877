"""The network estimators' defaults and sampler names, in a module that imports nothing, so
that the command line builds `bnn fit`'s flags without JAX or scikit-learn."""

DEFAULT_PRIOR = "ih 0.05:0.5 bh 0.05:0.5 ho x0.05:0.5 bo 100"  # FBM's regression recipe
DEFAULT_NOISE = "0.05:0.5"
# the leapfrog budget per chain: SUPER_TRANSITIONS × BUDGET gradients (docs/bnn.md)
SUPER_TRANSITIONS = 100
BUDGET = 4000
SAMPLERS = ("ahmc_cv", "ahmc_gibbs", "neal_gibbs", "nuts", "nuts_gibbs", "dyn_a", "dyn_b",
            "dyn_b_gn")


def sampler_name(name: str) -> str:
    """The canonical spelling (underscores) of an estimator's sampler name."""
    return name.strip().lower().replace("-", "_")
