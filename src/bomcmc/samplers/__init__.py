"""Samplers by name. Each module holds one algorithm; see `base.Sampler` for the protocol."""

from __future__ import annotations

from ..errors import BomcmcError
from . import ahmc, hmc, hmc_mixture, nuts, nuts_machine
from .base import Sampler

_SAMPLERS: dict[str, Sampler] = {"hmc": hmc.sampler, "nuts": nuts.sampler,
                               "nuts_async": nuts_machine.sampler, "ahmc": ahmc.sampler,
                               "bo2": hmc_mixture.sampler}


def get(name: str) -> Sampler:
    try:
        return _SAMPLERS[name]
    except KeyError:
        raise BomcmcError(
            f"unknown sampler '{name}' (available: {', '.join(sorted(_SAMPLERS))})"
        ) from None


def register(sampler: Sampler) -> None:
    _SAMPLERS[sampler.name] = sampler


def names() -> list[str]:
    return sorted(_SAMPLERS)


__all__ = ["Sampler", "get", "register", "names", "ahmc", "hmc", "hmc_mixture", "nuts",
           "nuts_machine"]
