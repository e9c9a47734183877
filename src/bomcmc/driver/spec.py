"""The run's specification: what config.json holds, validated, and its JSON form.

config.json is the RunSpec's fields, with the `SamplerConfig`'s four spread at the top level
(`knobs`, `adapt`, `adapter_options`, `tuner_options`); a run written before the
SamplerConfig has `adapt_options` for `adapter_options`, and still loads.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import numpy as np

from .._version import __version__
from ..errors import BomcmcError
from ..options import SamplerConfig
from ..posterior import INIT_STRATEGIES
from ..validation import choice, integer, is_number
from .until import check_target


AUTO = "auto"
AUTO_WARMUP_CAP = 1000  # warmup="auto": at most this many warm-up transitions (Stan's count)


def warmup_count(warmup) -> tuple[int, bool]:
    """(transitions, auto) of a `warmup` argument: N (exactly N), or "auto" (up to
    AUTO_WARMUP_CAP, fewer where the sampler's tuner decides its burn-in has learned)."""
    if isinstance(warmup, str) and warmup.strip().lower() == AUTO:
        return AUTO_WARMUP_CAP, True
    if isinstance(warmup, str):
        raise BomcmcError(f"warmup must be a non-negative integer or 'auto', got {warmup!r}")
    integer("warmup", warmup, lo=0)
    return int(warmup), False


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
    config: SamplerConfig = SamplerConfig()  # knobs, adapter and tuner options, validated
    max_grad: int | None = None  # stop after the chunk whose gradients per chain reach this
    model: str | None = None  # FILE.py:NAME of a model loaded from a file; resume reloads it
    # chains vmapped together, the others of a process in a loop over such blocks (None: all
    # of a process's chains at once). A run over N processes sets chains // N, so that a
    # resume over another number of processes computes every chain exactly as before.
    chain_block: int | None = None
    # every process runs every chain, and the posterior's `Data` rows are split over all
    # devices of all processes (`data.Data.sharded`): one chain spans them
    shard_data: bool = False
    # run until precise (`until.py`): min bulk and tail ESS at least this and R-hat <= 1.01,
    # `draws` then being a cap, and `until_seconds` a cap on the sampling's seconds
    until_ess: float | None = None
    until_seconds: float | None = None
    # warmup="auto": `warmup` is a cap, and a tuner that can tell when its burn-in has
    # learned (AHMC's, `tuning.settle`) starts sampling there; other samplers run `warmup`
    warmup_auto: bool = False
    version: str = __version__

    def validate_counts(self) -> None:
        """The counts as Python ints and the targets and caps as floats, or a one-line
        BomcmcError: NumPy numbers (a seed from `rng.integers`) become Python ones, which
        config.json and run.json can hold."""
        self.chains, self.draws = integer("chains", self.chains), integer("draws", self.draws)
        self.thin, self.seed = integer("thin", self.thin), integer("seed", self.seed, lo=0)
        self.warmup = integer("warmup", self.warmup, lo=0)
        self.chunk_size = integer("chunk_size", self.chunk_size)
        if self.max_grad is not None:
            self.max_grad = integer("max_grad", self.max_grad)
        if self.chain_block is not None:
            self.chain_block = integer("chain_block", self.chain_block)
        self.chunk_seconds, self.until_ess, self.until_seconds, self.init_jitter = (
            float(v) if is_number(v) else v
            for v in (self.chunk_seconds, self.until_ess, self.until_seconds, self.init_jitter))

    def validate(self) -> None:
        """`validate_counts`, then the fields' rules: a one-line BomcmcError for the first
        bad field."""
        self.validate_counts()
        if self.chain_block is not None and self.chains % self.chain_block:
            raise BomcmcError(f"chain_block ({self.chain_block}) must divide the chains "
                              f"({self.chains})")
        if self.chunk_seconds is not None and not self.chunk_seconds > 0:
            raise BomcmcError(f"chunk_seconds must be positive, got {self.chunk_seconds}")
        choice("init_strategy", self.init_strategy, INIT_STRATEGIES)
        check_target(self.until_ess, self.chains)
        v = self.until_seconds
        if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise BomcmcError(f"until_seconds must be a positive number, got {v!r}")
        if v is not None and self.until_ess is None:
            raise BomcmcError("until_seconds caps a run until precise: give until_ess too")
        if self.shard_data and self.chain_block is not None:
            raise BomcmcError("shard_data runs every chain on every process: it takes no "
                              "chain_block")
        if not (math.isfinite(self.init_jitter) and self.init_jitter >= 0):
            raise BomcmcError(f"init_jitter must be a non-negative number, got {self.init_jitter}")

    @property
    def total_iterations(self) -> int:
        return self.warmup + self.draws * self.thin

    def to_json(self) -> dict:
        """config.json's content: the fields, the SamplerConfig's spread at the top level."""
        out = dataclasses.asdict(self)  # a NamedTuple field stays a tuple: take it as is
        out.pop("config")
        return {**self.config._asdict(), **out}

    @classmethod
    def from_json(cls, cfg: dict) -> "RunSpec":
        """The RunSpec of a config.json (TypeError on unknown or missing fields)."""
        cfg = dict(cfg)
        if "adapt_options" in cfg:  # written before the SamplerConfig
            cfg.setdefault("adapter_options", cfg.pop("adapt_options"))
        config = SamplerConfig(**{k: cfg.pop(k) for k in SamplerConfig._fields if k in cfg})
        return cls(**cfg, config=config._replace(knobs=config.knobs or {},
                                                 adapter_options=config.adapter_options or {}))


def json_config(config: SamplerConfig) -> SamplerConfig:
    """The config with its values as config.json stores them (what a resumed run reads)."""
    return config._replace(
        knobs={k: jsonable(v) for k, v in config.knobs.items()},
        adapter_options={k: jsonable(v) for k, v in config.adapter_options.items()},
        tuner_options=None if config.tuner_options is None else json_options(config.tuner_options))


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
