"""The run's specification: what config.json holds, validated, and its JSON form."""

from __future__ import annotations

import dataclasses
import math

import jax
import numpy as np

from .._version import __version__
from ..errors import BomcmcError
from ..posterior import INIT_STRATEGIES
from ..validation import choice, integer


@dataclasses.dataclass
class RunSpec:
    posterior: str
    sampler: str
    chains: int
    draws: int
    warmup: int
    seed: int
    thin: int = 1
    chunk_size: int = 100  # draws the compiled buffer holds (the longest chunk)
    chunk_seconds: float | None = None  # None: every chunk is chunk_size long; else a target
    float64: bool = False
    init_jitter: float = 0.0
    init_strategy: str = "uniform"  # dispersed starts; "init": every chain at the init
    init_per_chain: bool = False  # the init held one start per chain (a leading chain axis)
    save_warmup: bool = False
    knobs: dict = dataclasses.field(default_factory=dict)
    adapt: str | None = None
    adapt_options: dict = dataclasses.field(default_factory=dict)
    tuner_options: dict | None = None  # options of the sampler's default tuner ("ahmc")
    max_grad: int | None = None  # stop after the chunk whose gradients per chain reach this
    model: str | None = None  # FILE.py:NAME of a model loaded from a file; resume reloads it
    version: str = __version__

    def validate(self) -> None:
        for name in ("chains", "draws", "thin", "chunk_size"):
            integer(name, getattr(self, name))
        for name in ("warmup", "seed"):
            integer(name, getattr(self, name), lo=0)
        if self.max_grad is not None:
            integer("max_grad", self.max_grad)
        if self.chunk_seconds is not None and not self.chunk_seconds > 0:
            raise BomcmcError(f"chunk_seconds must be positive, got {self.chunk_seconds}")
        choice("init_strategy", self.init_strategy, INIT_STRATEGIES)
        if not (math.isfinite(self.init_jitter) and self.init_jitter >= 0):
            raise BomcmcError(f"init_jitter must be a non-negative number, got {self.init_jitter}")

    @property
    def total_iterations(self) -> int:
        return self.warmup + self.draws * self.thin


def json_options(options: dict) -> dict:
    """Options as config.json stores them (tuples -> lists, numpy -> Python)."""
    def conv(v):
        return [conv(x) for x in v] if isinstance(v, (tuple, list)) else jsonable(v)
    return {k: conv(v) for k, v in options.items()}


def jsonable(v):
    if isinstance(v, (np.ndarray, jax.Array)):
        return np.asarray(v).tolist()
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    return v
