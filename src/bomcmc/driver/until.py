"""Run until precise: sampling chunks until every coordinate's estimates are precise enough.

A run with `until_ess=E` keeps sampling, chunk after chunk, until the minimum over the
coordinates of the rank-normalised bulk ESS and of the tail ESS reach E and the largest split
R-hat is at most 1.01 (Vehtari et al. 2021, the bounds `diagnostics.checks` warns at), or
until a cap: `draws` (then an upper bound), or `until_seconds` of sampling. It reads every
chain's draws so far (in a run over several processes, those gathered at each chunk's end, so
that every process takes the same decision); a resumed run reads the stored chunks again, and
stops at once where they already suffice. Stan, NumPyro and PyMC leave this loop to their
users.

The MCSE form: the Monte-Carlo standard error of a mean is sd / √ESS, so asking every mean's
MCSE to be at most a fraction r of its posterior sd is `until_ess = 1 / r²`
(`ess_for_mcse`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..diagnostics import rank_normalized as rn
from ..diagnostics.checks import RHAT_MAX
from ..tuning.base import SAMPLING

MIN_DRAWS = 20  # per chain before the rule is first read (ESS of a few draws means little)


class Precision(NamedTuple):
    """The draws' precision: minimum bulk and tail ESS and maximum R-hat over coordinates."""

    draws: int
    ess_bulk: float
    ess_tail: float
    rhat: float

    def reaches(self, target: float) -> bool:
        return self.ess_bulk >= target and self.ess_tail >= target and self.rhat <= RHAT_MAX


def ess_for_mcse(fraction: float) -> float:
    """The ESS at which a mean's MCSE is `fraction` of its posterior sd: 1 / fraction²
    (to 12 significant digits, so that 0.1 asks for 100, not 99.99999999999999)."""
    return float(f"{1.0 / float(fraction) ** 2:.12g}")


def _figures(positions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bulk ESS, tail ESS and R-hat of every coordinate of draws (chains, draws, ...). An
    undefined figure never counts as precise: a NaN ESS as 0, a NaN R-hat (a coordinate
    constant within every chain, or one chain) as inf."""
    x = np.asarray(positions, np.float64)
    x = x.reshape(x.shape[0], x.shape[1], -1)
    return (np.nan_to_num(rn.ess_bulk(x), nan=0.0), np.nan_to_num(rn.ess_tail(x), nan=0.0),
            np.nan_to_num(rn.rhat(x), nan=math.inf))


def _short(figures, target: float) -> np.ndarray:
    """Per coordinate, whether it falls short of the rule."""
    bulk, tail, rhat = figures
    return (bulk < target) | (tail < target) | (rhat > RHAT_MAX)


def _precision_of(figures, draws: int) -> Precision:
    bulk, tail, rhat = figures
    return Precision(int(draws), float(bulk.min()), float(tail.min()), float(rhat.max()))


def precision(positions: np.ndarray) -> Precision:
    """Of draws (chains, draws, dim): the minimum bulk and tail ESS and the maximum R-hat."""
    return _precision_of(_figures(positions), positions.shape[1])


class Until:
    """The stopping rule of one run: the sampling draws so far, every chain's.

    After each chunk the rule first reads the coordinate that fell short last time, alone,
    and computes every coordinate's figures (at once, `rank_normalized`) only where that one
    no longer falls short: the same decisions as reading every coordinate each time.
    `last` is the last whole precision; `report` computes it for the draws so far where the
    last reading stopped short."""

    def __init__(self, target: float, seconds: float | None):
        self.target, self.seconds = float(target), seconds
        self.parts: list[np.ndarray] = []
        self.wall = 0.0
        self.last: Precision | None = None
        self.done = False
        self._short: int | None = None  # the coordinate short at the last whole reading

    @classmethod
    def resumed(cls, target: float, seconds: float | None, store) -> "Until":
        """The rule with the stored sampling chunks' draws (a resumed run) read again."""
        until = cls(target, seconds)
        for rec in store.chunks():
            if rec.phase == SAMPLING:
                until.add(rec.positions, rec.wall_s)
        return until

    @property
    def draws(self) -> int:
        """The sampling draws so far, per chain."""
        return sum(p.shape[1] for p in self.parts)

    def add(self, positions: np.ndarray, wall_s: float) -> None:
        """A sampling chunk's draws (chains, n, dim) of every chain, and its seconds."""
        self.parts.append(np.asarray(positions))
        self.wall += float(wall_s)
        draws = self.draws
        if self.seconds is not None and self.wall >= self.seconds:
            self.done = True
        if draws >= MIN_DRAWS:
            x = np.concatenate(self.parts, axis=1)
            flat = x.reshape(x.shape[0], x.shape[1], -1)
            if self._short is not None and _short(
                    _figures(flat[:, :, self._short:self._short + 1]), self.target)[0]:
                return  # still short: the whole reading would not stop the run
            figures = _figures(flat)
            self.last = _precision_of(figures, draws)
            short = np.flatnonzero(_short(figures, self.target))
            self._short = int(short[0]) if short.size else None
            self.done = self.done or self.last.reaches(self.target)

    def report(self) -> dict:
        """What run.json records: the target, whether it was reached, and the precision."""
        stale = self.last is None or self.last.draws != self.draws  # a reading fell short
        if self.draws >= MIN_DRAWS and stale:
            self.last = precision(np.concatenate(self.parts, axis=1))
        out = {"until_ess": self.target, "until_seconds": self.seconds,
               "reached": bool(self.last is not None and self.last.reaches(self.target)),
               "sampling_s": self.wall}
        if self.last is not None:
            out.update(self.last._asdict())
        return out
