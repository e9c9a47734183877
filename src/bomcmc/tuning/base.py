"""The tuner protocol: host-side strategies that set a sampler's knobs between chunks.

The driver runs one chunk of transitions (a super-transition, seed 000 §3.2) with fixed knobs,
hands the chunk's draws and info to the tuner, and uses the knobs it returns for the next
chunk. Knobs are arrays with a leading chain axis; changing their values never recompiles.

    initial_knobs(knobs) -> knobs            before the first chunk
    after_chunk(knobs, chunk) -> knobs       chunk: {"positions", "info": {...}, "phase", ...}
    state_dict() -> dict / load_state_dict   JSON-able, saved with every chunk so a resumed
                                             run continues the tuner exactly
"""

from __future__ import annotations

from typing import Any, Protocol


class Tuner(Protocol):
    name: str

    def initial_knobs(self, knobs: Any) -> Any: ...

    def after_chunk(self, knobs: Any, chunk: dict) -> Any: ...

    def state_dict(self) -> dict: ...

    def load_state_dict(self, state: dict) -> None: ...


class FixedTuner:
    """No tuning: the user's knobs for the whole run."""

    name = "fixed"

    def initial_knobs(self, knobs):
        return knobs

    def after_chunk(self, knobs, chunk):
        return knobs

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass
