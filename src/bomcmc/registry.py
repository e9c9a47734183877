"""Samplers by name: each pairs a kernel with its default warm-up and its default tuner.

A `Sampler` is what a user picks with `sample(..., sampler=NAME)`: a `Kernel` (pure
`init`/`step`), the in-loop warm-up adapter that `adapt="auto"` chooses, and the host-side tuner
the driver builds from the options named in `tuner_options` when the user gives no `tuner=`.
Every field is explicit; the table below is the whole registry. Sampler names are spelt with
underscores; a hyphen is read as an underscore (`nuts-gibbs` is `nuts_gibbs`).

    hmc          HMC with fixed knobs (no warm-up unless adapt="window")
    nuts         NUTS, Stan's window warm-up
    nuts_async   the same NUTS transition run one leapfrog step per loop iteration
    ahmc         adaptive HMC: the GP bandit over (ε, L) (Wang, Mohamed & de Freitas 2013)
    two_phase    expected improvement in warm-up, then a frozen SIR mixture of HMC kernels
                 (Mahendran et al. 2012)

Samplers built for one model (Neal's Gibbs-within-HMC and its relatives for a network) are
`Sampler` objects too, made by `bomcmc.bnn.samplers`, and passed as `sampler=`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from .errors import BomcmcError
from .kernels import ahmc, hmc, hmc_mixture, nuts, nuts_machine, rwm
from .kernels.base import Kernel
from .tuning import ahmc_tuner, two_phase

# make_tuner(options, spec, flat, states) -> Tuner
TunerFactory = Callable[[dict, Any, Any, Any], Any]


@dataclasses.dataclass(frozen=True)
class Sampler:
    """A kernel with its defaults.

    Args:
        kernel: the transition (`bomcmc.kernels.base.Kernel`).
        adapter: the warm-up adapter `adapt="auto"` picks ("window", "dual_averaging"), or None.
        make_tuner: builds the default tuner, `make_tuner(options, spec, flat, states)`, from
            the keyword arguments of `sample` named in `tuner_options`; None: no tuner.
        tuner_options: those keyword arguments' names (recorded in config.json).
        adapt_hint: the end of the error that refuses an adapter beside the tuner.
        name: the name runs record; the kernel's by default.
    """

    kernel: Kernel
    adapter: str | None = None
    make_tuner: TunerFactory | None = None
    tuner_options: tuple[str, ...] = ()
    adapt_hint: str = ""
    name: str = ""

    def __post_init__(self):
        if not self.name:
            object.__setattr__(self, "name", self.kernel.name)

    @property
    def tunes_itself(self) -> bool:
        return self.make_tuner is not None


# The sampler of `sample()` and `bomcmc sample` when none is named: the self-tuning sampler
# that passed the most of the correctness suite (docs/defaults.md, measured with
# experiments/suite_margins.py). No fixed-knob sampler is ever the default.
DEFAULT = "ahmc"

SAMPLERS: dict[str, Sampler] = {
    "hmc": Sampler(hmc.kernel),
    "nuts": Sampler(nuts.kernel, adapter="window"),  # NUTS has no usable fixed step size
    "nuts_async": Sampler(nuts_machine.kernel, adapter="window"),
    "ahmc": Sampler(ahmc.kernel, make_tuner=ahmc_tuner.make_tuner,
                    tuner_options=ahmc_tuner.TUNER_OPTIONS,
                    adapt_hint="; for a learned metric use mass='diag'"),
    "rwm": Sampler(rwm.kernel),  # random-walk Metropolis (a baseline; bandit via tuner=)
    "two_phase": Sampler(hmc_mixture.kernel, make_tuner=two_phase.make_tuner,
                         tuner_options=two_phase.TUNER_OPTIONS,
                         adapt_hint="; for a learned metric use mass='diag'"),
}


def canonical(name: str) -> str:
    """The registry's spelling of a sampler name: underscores, lower case."""
    return name.strip().lower().replace("-", "_")


def get(sampler: "str | Sampler | Kernel") -> Sampler:
    """The Sampler for a name, a Sampler (returned as it is) or a bare Kernel (no defaults)."""
    if isinstance(sampler, Sampler):
        return sampler
    if isinstance(sampler, Kernel):
        return Sampler(sampler)
    if not isinstance(sampler, str):
        raise BomcmcError("sampler must be a name, a bomcmc.Sampler or a kernel")
    try:
        return SAMPLERS[canonical(sampler)]
    except KeyError:
        raise BomcmcError(
            f"unknown sampler '{sampler}' (available: {', '.join(sorted(SAMPLERS))})"
        ) from None


def names() -> list[str]:
    return sorted(SAMPLERS)


__all__ = ["DEFAULT", "SAMPLERS", "Sampler", "canonical", "get", "names"]
