"""The network estimators' defaults and sampler names, in a module that imports nothing, so
that the command line builds `bnn fit`'s flags without JAX or scikit-learn."""

DEFAULT_PRIOR = "ih 0.05:0.5 bh 0.05:0.5 ho x0.05:0.5 bo 100"  # FBM's regression recipe
DEFAULT_NOISE = "0.05:0.5"
# the leapfrog budget per chain: SUPER_TRANSITIONS × BUDGET gradients (docs/bnn.md)
SUPER_TRANSITIONS = 100
BUDGET = 4000
# The bandit's box for η, FBM's step-size factor. Wang's box for the robot arm is [0.01, 1.01]:
# at the estimators' defaults it diverged on every data set tried; a quarter of it removed
# the divergences on the robot arm and breast cancer and in 2 of 3 seeds on sin, at level
# scores, and not on diabetes, where η ≥ 0.1 diverges (docs/bnn.md, "The estimators' η box").
# The reproductions of Wang's tables pass his box.
ETA_BOUNDS = (0.0025, 0.25)
# Once an η has diverged, the bandit keeps η at most this × the smallest η that diverged
# (tuning/ceiling_bandit.py, docs/bnn.md "Divergences and the η ceiling"); None: Wang's bandit.
DIVERGENCE_MARGIN = 0.8
SAMPLERS = ("ahmc_cv", "ahmc_gibbs", "neal_gibbs", "nuts", "nuts_gibbs", "dyn_a", "dyn_b",
            "dyn_b_gn")


def sampler_name(name: str) -> str:
    """The canonical spelling (underscores) of an estimator's sampler name."""
    return name.strip().lower().replace("-", "_")
