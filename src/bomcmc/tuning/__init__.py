"""Tuners: strategies that set a sampler's knobs while it runs (see `base.Tuner`)."""

from .base import FixedTuner, Tuner

__all__ = ["FixedTuner", "Tuner"]
