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
from ..errors import BomcmcError
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


def check_target(until_ess, chains: int) -> None:
    """A run until precise's target and chains, or a one-line BomcmcError: the target a
    positive number, and two chains at least (one chain's R-hat is undefined, so the rule
    could never hold)."""
    if until_ess is None:
        return
    if not (isinstance(until_ess, (int, float)) and math.isfinite(until_ess) and until_ess > 0):
        raise BomcmcError(f"until_ess must be a positive number, got {until_ess!r}")
    if chains < 2:
        raise BomcmcError("a run until precise needs chains >= 2: its R-hat compares chains")


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


# one coordinate's figures, each with the test it fails (NaN never passes)
_TESTS = (lambda x, t: not rn.rhat(x)[0] <= RHAT_MAX,
          lambda x, t: not rn.ess_bulk(x)[0] >= t,
          lambda x, t: not rn.ess_tail(x)[0] >= t)


def _still_short(x: np.ndarray, target: float, first: int) -> int | None:
    """Of one coordinate's draws x (chains, draws, 1): the index of a test it fails (trying
    test `first` first: the one that failed last time usually fails again), or None."""
    x = np.asarray(x, np.float64)
    for i in (first,) + tuple(j for j in range(len(_TESTS)) if j != first):
        if _TESTS[i](x, target):
            return i
    return None


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

    After each chunk the rule first reads the coordinates that fell short at the last whole
    reading, one by one, and computes every coordinate's figures (at once,
    `rank_normalized`) only where none of them falls short any longer: the same decisions
    as reading every coordinate each time. The draws are kept in a buffer grown by
    doubling, and read as a view.
    `last` is the last whole precision; `report` computes it for the draws so far where the
    last reading stopped short."""

    def __init__(self, target: float, seconds: float | None, watch=None, burn_in: float = 0.0):
        self.target, self.seconds = float(target), seconds
        self.watch, self.burn_in = watch, float(burn_in)
        self.draws = 0  # the sampling draws so far, per chain
        # what the rule reads of every draw so far, (chains, capacity, quantities), and each
        # draw's gradients (the chains' mean): grown by doubling, so that a run of many short
        # chunks copies each draw a few times, not once per chunk
        self._x: np.ndarray | None = None
        self._grads = np.zeros(0)
        self.wall = 0.0
        self.last: Precision | None = None
        self.done = False
        # the coordinates short at the last whole reading, and the test that failed last
        self._short = np.zeros(0, int)
        self._test = 0
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
    def first(self) -> int:
        """The first draw the rule reads: the burn-in's end (`burn_in_end`)."""
        return burn_in_end(self._grads[:self.draws], self.burn_in)

    def _read(self) -> np.ndarray:
        """(chains, draws read, quantities): the watched draws after the burn-in (a view)."""
        return self._x[:, self.first:self.draws]

    def _append(self, x: np.ndarray, grads: np.ndarray) -> None:
        x = x.reshape(x.shape[0], x.shape[1], -1)
        n, end = x.shape[1], self.draws + x.shape[1]
        if self._x is None or end > self._x.shape[1]:
            cap = max(end, 2 * (0 if self._x is None else self._x.shape[1]), 64)
            grown = np.empty((x.shape[0], cap, x.shape[2]), x.dtype)
            grads_grown = np.zeros(cap)
            if self._x is not None:
                grown[:, :self.draws] = self._x[:, :self.draws]
                grads_grown[:self.draws] = self._grads[:self.draws]
            self._x, self._grads = grown, grads_grown
        self._x[:, self.draws:end] = x
        self._grads[self.draws:end] = grads
        self.draws = end

    def add(self, positions: np.ndarray, wall_s: float, n_grad=None) -> None:
        """A sampling chunk's draws (chains, n, dim) of every chain, its seconds and its
        draws' gradients (chains, n) (None: one each, for a rule without burn-in)."""
        positions = np.asarray(positions)
        n = positions.shape[1]
        self._append(positions if self.watch is None else np.asarray(self.watch(positions)),
                     np.ones(n) if n_grad is None
                     else np.asarray(n_grad, np.float64).reshape(-1, n).mean(axis=0))
        self.wall += float(wall_s)
        if self.seconds is not None and self.wall >= self.seconds:
            self.done = True
        flat = self._read()
        draws = flat.shape[1]
        if draws >= MIN_DRAWS:
            for k in self._short:
                test = _still_short(flat[:, :, k:k + 1], self.target, self._test)
                if test is not None:  # the whole reading would not stop the run
                    self._test = test
                    return
            figures = _figures(flat)
            self.last, self._read_at = _precision_of(figures, draws), self.draws
            self._short = np.flatnonzero(_short(figures, self.target))
            self.done = self.done or self.last.reaches(self.target)

    def report(self) -> dict:
        """What run.json records: the target, whether it was reached, and the precision (its
        `draws` those the rule read; with a burn-in, `burn_in_draws` the draws before them)."""
        read = self._read() if self.draws else None
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
