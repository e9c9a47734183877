"""The driver: posterior → kernel → tuner → chunks → store → InferenceData.

`spec` (the run's configuration), `rows` (a chunk's buffers), `lockstep` and `ticks` (the two
compiled loops), `engine` (keys, sharding, compilation), `host_loop` (chunks, tuner, store,
progress), `assemble` (InferenceData and totals) and `api` (`sample`, `resume`, `load`).
"""

from .api import SampleResult, load, resume, run_spec, sample

__all__ = ["SampleResult", "load", "resume", "run_spec", "sample"]
