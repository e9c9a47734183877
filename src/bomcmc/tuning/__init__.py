"""Tuners and warm-up adapters: strategies that set a sampler's knobs while it runs.

- `base.Tuner`: host-side, between chunks (super-transitions): the Bayesian-optimization bandit.
- `base.Adapter`: inside the compiled loop, after every warm-up transition: Stan-style windows.
"""

from __future__ import annotations

from typing import Callable

from ..errors import BomcmcError
from .base import Adapter, FixedTuner, Tuner
from .window_adaptation import window_adaptation

_ADAPTERS: dict[str, Callable[..., Adapter]] = {}


def register_adapter(name: str, factory: Callable[..., Adapter]) -> None:
    _ADAPTERS[name] = factory


def get_adapter(name: str, options: dict | None = None) -> Adapter:
    try:
        factory = _ADAPTERS[name]
    except KeyError:
        raise BomcmcError(
            f"unknown warm-up adaptation '{name}' (available: {', '.join(sorted(_ADAPTERS)) or 'none'})"
        ) from None
    try:
        return factory(**(options or {}))
    except TypeError as e:
        raise BomcmcError(f"adaptation '{name}': {e}") from None


register_adapter("window", window_adaptation)


def adapter_names() -> list[str]:
    return sorted(_ADAPTERS)


__all__ = ["Adapter", "FixedTuner", "Tuner", "get_adapter", "register_adapter", "adapter_names"]
