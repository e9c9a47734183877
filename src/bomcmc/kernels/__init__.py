"""Transition kernels: pure `init`/`step` functions on one chain (see `base.Kernel`).

One algorithm per module: `hmc`, `windowed_hmc` (HMC with Neal's 1994 accept and reject
windows), `nuts`, `nuts_machine` (NUTS one leapfrog step at a time), `ahmc` (HMC started by
L-BFGS towards the mode), `hmc_mixture` (a mixture of HMC kernels),
`neal_gibbs_hmc` (Neal's Gibbs-within-HMC) and `nuts_gibbs`, with the `integrators` they share.
Kernels know nothing of tuners, adapters, models or the driver.
"""

from .base import Kernel, tree_where

__all__ = ["Kernel", "tree_where"]
