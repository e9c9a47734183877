"""The tuner protocol: host-side strategies that set a sampler's knobs between chunks.

The driver runs one chunk of transitions (a super-transition, seed 000 §3.2) with fixed knobs,
hands the chunk's draws and info to the tuner, and uses the knobs it returns for the next
chunk. Knobs are arrays with a leading chain axis; changing their values never recompiles.

    initial_knobs(knobs) -> knobs            before the first chunk
    after_chunk(knobs, chunk) -> knobs       chunk: {"positions", "info": {...}, "phase", ...}
    chunk_draws(knobs, chunk_size) -> int | None   draws in the next chunk (at most chunk_size,
                                             the compiled buffer): a super-transition of a
                                             fixed leapfrog budget has budget // L draws;
                                             None leaves the length to the driver
    state_dict() -> dict / load_state_dict   JSON-able, saved with every chunk so a resumed
                                             run continues the tuner exactly
    chunk_history() -> list[dict]            optional: this chunk's history entries; a tuner
                                             that has it saves state_dict(history=False) per
                                             chunk and gets load_state_dict(state, history)
                                             on resume (history rebuilt from the chunks, and
                                             stored as the InferenceData group `tuning`)
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Protocol


class Tuner(Protocol):
    name: str

    def initial_knobs(self, knobs: Any) -> Any: ...

    def after_chunk(self, knobs: Any, chunk: dict) -> Any: ...

    def chunk_draws(self, knobs: Any, chunk_size: int) -> int | None: ...

    def state_dict(self) -> dict: ...

    def load_state_dict(self, state: dict) -> None: ...


class FixedTuner:
    """No tuning: the user's knobs for the whole run."""

    name = "fixed"

    def initial_knobs(self, knobs):
        return knobs

    def after_chunk(self, knobs, chunk):
        return knobs

    def chunk_draws(self, knobs, chunk_size: int) -> int | None:
        return None

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass


class Adapter(NamedTuple):
    """Warm-up adaptation that runs inside the compiled chunk, after every warm-up transition,
    for each chain separately (Stan's scheme: dual averaging, metric windows).

        init(position, knobs, num_warmup) -> adapt_state          one chain
        update(key, adapt_state, t, state, info, knobs, logdensity_fn) -> (adapt_state, knobs)

    `t` is the global transition index (0-based; warm-up is t < num_warmup). The update at
    t = num_warmup - 1 must return the knobs for sampling. `adapt_state` is a NamedTuple of
    arrays: the driver saves it with every chunk, so a run killed in warm-up resumes exactly.
    """

    name: str
    init: Callable[..., Any]
    update: Callable[..., Any]
