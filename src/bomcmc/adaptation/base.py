"""The adapter protocol: warm-up adaptation that runs inside the compiled loop."""

from __future__ import annotations

from typing import Any, Callable, NamedTuple


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
