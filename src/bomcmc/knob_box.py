"""The box a tuner searches and its coordinates (`tuning/bandit.py` searches it; the
diagnostics read a saved one to show a run's points in the knobs' own units).

A `KnobBox` names two knobs with their bounds, which are integer, and which are searched on a
log scale or on a scale stretched around a point (`KnobBox.warp`). A point in search
coordinates is (log ε, L) for HMC or (u(γ), k) for the IM sampler; `to_search` and
`to_knobs` map between the two.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np


class KnobBox(NamedTuple):
    """The bandit's search box: knob `names` (fields of the kernel's knobs), their `lower`
    and `upper` bounds in the knobs' own units, which axes are `integer` and which are
    searched on a `log` scale."""

    names: tuple[str, ...]
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    integer: tuple[bool, ...]
    log: tuple[bool, ...]
    # per axis None, or (c, s): searched in u = sign(v − c) log(1 + |v − c| / s), which
    # stretches the axis around c (the IM sampler's γ around β, `im_tuner.im_box`)
    warp: tuple = ()

    def axis_names(self) -> tuple[str, ...]:
        """The search coordinates' names: "log_step_size" for a log axis."""
        return tuple(("log_" + n) if lg else ("warped_" + n) if wp else n
                     for n, lg, wp in zip(self.names, self.log, self.warps()))

    def warps(self) -> tuple:
        return self.warp or (None,) * len(self.names)



def lower(box: KnobBox) -> np.ndarray:
    """The box's lower corner in search coordinates (log where searched so, ⌈·⌉ if integer)."""
    return np.array([_coord(v, lg, wp, math.ceil if it else None)
                     for v, lg, wp, it in zip(box.lower, box.log, box.warps(), box.integer)])


def upper(box: KnobBox) -> np.ndarray:
    """The box's upper corner in search coordinates (⌊·⌋ if integer)."""
    return np.array([_coord(v, lg, wp, math.floor if it else None)
                     for v, lg, wp, it in zip(box.upper, box.log, box.warps(), box.integer)])


def _coord(v: float, log: bool, warp, rounding=None):
    if log:
        v = math.log(v)
    elif warp is not None:
        c, s = warp
        v = math.copysign(math.log1p(abs(v - c) / s), v - c)
    return rounding(v) if rounding else v


def _value(x: float, log: bool, warp) -> float:
    if log:
        return math.exp(x)
    if warp is not None:
        c, s = warp
        return c + math.copysign(s * math.expm1(abs(x)), x)
    return x


def to_search(box: KnobBox, values) -> tuple[float, ...]:
    """Knob values (ε, L) to search coordinates (log ε, L)."""
    return tuple(_coord(v, lg, wp) for v, lg, wp in zip(values, box.log, box.warps()))


def to_knobs(box: KnobBox, point) -> tuple:
    """A point (log ε, L) to knob values (ε, L); a warped axis's clipped to its bounds,
    which its rounding error could leave."""
    return tuple(min(max(_value(x, lg, wp), lo), hi) if wp else _value(x, lg, wp)
                 for x, lg, wp, lo, hi in zip(point, box.log, box.warps(), box.lower,
                                              box.upper))


def box_from_json(d: dict | None) -> KnobBox | None:
    if d is None:
        return None
    return KnobBox(tuple(d["names"]), tuple(float(v) for v in d["lower"]),
                   tuple(float(v) for v in d["upper"]), tuple(bool(v) for v in d["integer"]),
                   tuple(bool(v) for v in d["log"]),
                   tuple(None if w is None else (float(w[0]), float(w[1]))
                         for w in d.get("warp", ())))
