"""Warm-up adaptation inside the compiled loop: dual averaging, Welford, Stan's windows.

Adapters by name (`get_adapter`), listed here and nowhere else, so that which adapters exist
never depends on which modules happen to be imported.
"""

from __future__ import annotations

from typing import Callable

from ..errors import BomcmcError
from .base import Adapter
from .dual_averaging import dual_averaging_adaptation
from .window_adaptation import window_adaptation

ADAPTERS: dict[str, Callable[..., Adapter]] = {
    "window": window_adaptation,
    "dual_averaging": dual_averaging_adaptation,
}


def get_adapter(name: str, options: dict | None = None) -> Adapter:
    """The adapter `name` built with `options` (one-line BomcmcError on a bad name or option)."""
    try:
        factory = ADAPTERS[name]
    except KeyError:
        raise BomcmcError(
            f"unknown warm-up adaptation '{name}' (available: {', '.join(sorted(ADAPTERS))})"
        ) from None
    try:
        return factory(**(options or {}))
    except TypeError as e:
        raise BomcmcError(f"adaptation '{name}': {e}") from None


def adapter_names() -> list[str]:
    return sorted(ADAPTERS)


__all__ = ["ADAPTERS", "Adapter", "adapter_names", "get_adapter"]
