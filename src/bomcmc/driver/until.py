"""Run until precise: sampling chunks until every coordinate's estimates are precise enough.

A run with `until_ess=E` keeps sampling, chunk after chunk, until the minimum over the
coordinates of the rank-normalised bulk ESS and of the tail ESS reach E and the largest split
R-hat is at most 1.01 (Vehtari et al. 2021, the bounds `diagnostics.checks` warns at), or
until a cap: `draws` (then an upper bound), or `until_seconds` of sampling. It reads every
chain's draws so far (in a run over several processes, those gathered at each chunk's end, so
that every process takes the same decision); a resumed run reads the stored chunks again, and
stops at once where they already suffice. Stan, NumPyro and PyMC leave this loop to their
users.

What the rule reads can be chosen (`watch`): a function of a chunk's draws giving the
quantities whose estimates must be precise, such as a network's predictions, identified where
its weights are not; and it can skip a burn-in (`burn_in`): the draws before the first given
fraction of the sampling's gradients so far, as the network estimators discard them.

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


def burn_in_end(grads: np.ndarray, fraction: float) -> int:
    """The first draw after the burn-in: the first whose cumulative gradients (`grads`, per
    draw) exceed `fraction` of their total; 0 where `fraction` is 0."""
    if fraction <= 0 or grads.size == 0:
        return 0
    spent = np.cumsum(grads)
    return int(np.argmax(spent > fraction * spent[-1]))


class Until:
    """The stopping rule of one run: the sampling draws so far, every chain's (or what
    `watch` makes of them: (chains, n, dim) -> (chains, n, ...)), after the burn-in.

    After each chunk the rule first reads the coordinate that fell short last time, alone,
    and computes every coordinate's figures (at once, `rank_normalized`) only where that one
    no longer falls short: the same decisions as reading every coordinate each time.
    `last` is the last whole precision; `report` computes it for the draws so far where the
    last reading stopped short."""

    def __init__(self, target: float, seconds: float | None, watch=None, burn_in: float = 0.0):
        self.target, self.seconds = float(target), seconds
        self.watch, self.burn_in = watch, float(burn_in)
        self.parts: list[np.ndarray] = []
        self.grads: list[np.ndarray] = []  # each draw's gradients, the chains' mean
        self.wall = 0.0
        self.last: Precision | None = None
        self.done = False
        self._short: int | None = None  # the coordinate short at the last whole reading
        self._read_at = 0  # the draws so far at the last whole reading

    @classmethod
    def resumed(cls, target: float, seconds: float | None, store, watch=None,
                burn_in: float = 0.0) -> "Until":
        """The rule with the stored sampling chunks' draws (a resumed run) read again."""
        until = cls(target, seconds, watch, burn_in)
        for rec in store.chunks():
            if rec.phase == SAMPLING:
                until.add(rec.positions, rec.wall_s, rec.info.get("n_grad"))
        return until

    @property
    def draws(self) -> int:
        """The sampling draws so far, per chain."""
        return sum(p.shape[1] for p in self.parts)

    @property
    def first(self) -> int:
        """The first draw the rule reads: the burn-in's end (`burn_in_end`)."""
        return burn_in_end(np.concatenate(self.grads) if self.grads else np.zeros(0),
                           self.burn_in)

    def _read(self) -> np.ndarray:
        """(chains, draws read, quantities): the watched draws after the burn-in."""
        x = np.concatenate(self.parts, axis=1)[:, self.first:]
        return x.reshape(x.shape[0], x.shape[1], -1)

    def add(self, positions: np.ndarray, wall_s: float, n_grad=None) -> None:
        """A sampling chunk's draws (chains, n, dim) of every chain, its seconds and its
        draws' gradients (chains, n) (None: one each, for a rule without burn-in)."""
        positions = np.asarray(positions)
        n = positions.shape[1]
        self.parts.append(positions if self.watch is None else np.asarray(self.watch(positions)))
        self.grads.append(np.ones(n) if n_grad is None
                          else np.asarray(n_grad, np.float64).reshape(-1, n).mean(axis=0))
        self.wall += float(wall_s)
        if self.seconds is not None and self.wall >= self.seconds:
            self.done = True
        flat = self._read()
        draws = flat.shape[1]
        if draws >= MIN_DRAWS:
            if self._short is not None and _short(
                    _figures(flat[:, :, self._short:self._short + 1]), self.target)[0]:
                return  # still short: the whole reading would not stop the run
            figures = _figures(flat)
            self.last, self._read_at = _precision_of(figures, draws), self.draws
            short = np.flatnonzero(_short(figures, self.target))
            self._short = int(short[0]) if short.size else None
            self.done = self.done or self.last.reaches(self.target)

    def report(self) -> dict:
        """What run.json records: the target, whether it was reached, and the precision (its
        `draws` those the rule read; with a burn-in, `burn_in_draws` the draws before them)."""
        read = self._read() if self.parts else None
        if read is not None and read.shape[1] >= MIN_DRAWS and self._read_at != self.draws:
            self.last, self._read_at = precision(read), self.draws  # a reading fell short
        out = {"until_ess": self.target, "until_seconds": self.seconds,
               "reached": bool(self.last is not None and self.last.reaches(self.target)),
               "sampling_s": self.wall}
        if self.last is not None:
            out.update(self.last._asdict())
        if self.burn_in:
            out.update(burn_in=self.burn_in, burn_in_draws=self.first)
        return out
