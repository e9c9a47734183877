"""The tuner protocol: host-side strategies that set a sampler's knobs between chunks.

The driver runs one chunk of transitions (a super-transition, Wang 2012 §3.2) with fixed
knobs, hands the chunk's draws and info to the tuner, and uses the knobs it returns for the
next chunk. Knobs are arrays with a leading chain axis; changing their values never
recompiles.

A tuner subclasses `Tuner` and overrides what it needs:

    initial_knobs(knobs) -> knobs            before the first chunk
    after_chunk(knobs, chunk) -> knobs       chunk: {"positions", "lp", "info", "phase"}
    chunk_draws(knobs, chunk_size) -> int | None   draws in the next chunk (at most chunk_size,
                                             the compiled buffer): a super-transition of a
                                             fixed leapfrog budget has budget // L draws;
                                             None leaves the length to the driver
    state_dict(history=False) -> dict        JSON-able, saved with every chunk so that a
    load_state_dict(state, history)          resumed run continues the tuner exactly
    chunk_history() -> list[dict]            this chunk's history entries: the driver stores
                                             them per chunk, rebuilds the full history on
                                             resume and writes it as the InferenceData
                                             group `tuning`
    burn_in_end() -> int | None              the warm-up transitions after which the tuner
                                             ended its burn-in early (a run whose warm-up is
                                             "auto"): the driver samples from there; None:
                                             the run's warm-up count holds
    burn_in_report() -> dict | None          how the burn-in ended, for run.json
    take_grads() -> int                      gradients the tuner spent outside the chunks
                                             since the last call (a step-size heuristic, a
                                             Hessian), for the driver to count
    surface() -> dict | None                 the learned reward surface of a GP tuner, for
                                             plots: {"names", "x", "y", "mean", "sd",
                                             "tried_x", "tried_y", "tried_n", "final"}
                                             (`surface.bandit_surface`); None otherwise
"""

from __future__ import annotations

from typing import Any

WARMUP, SAMPLING = 0, 1  # chunk["phase"]: a chunk of warm-up or of sampling transitions


class Tuner:
    """The base of every tuner: by default it changes nothing and keeps no state."""

    name = "tuner"
    # whether after_chunk reads the chunk's draws ("positions", "lp"): in a run over several
    # processes the driver then gathers every process's draws for it at each chunk's end
    reads_draws = True
    # the metric the tuner learned, "dense" or "diag" (AHMC's `mass="auto"` resolved), if any
    metric_kind: str | None = None

    def initial_knobs(self, knobs: Any) -> Any:
        return knobs

    def after_chunk(self, knobs: Any, chunk: dict) -> Any:
        return knobs

    def chunk_draws(self, knobs: Any, chunk_size: int) -> int | None:
        return None

    def state_dict(self, history: bool = True) -> dict:
        return {}

    def load_state_dict(self, state: dict, history: list[dict] | None = None) -> None:
        pass

    def chunk_history(self) -> list[dict]:
        return []

    def burn_in_end(self) -> int | None:
        return None

    def burn_in_report(self) -> dict | None:
        return None

    def take_grads(self) -> int:
        return 0

    def surface(self) -> dict | None:
        return None


class FixedTuner(Tuner):
    """No tuning: the user's knobs for the whole run."""

    name = "fixed"
    reads_draws = False
