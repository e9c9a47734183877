"""Comparing a sampler's draws with a posteriordb reference posterior.

Per parameter, on the constrained scale (names as Stan flattens them, `theta[1]`):

    z_mean  = |mean − ref mean| / sqrt(MCSE² + ref MCSE²)     must be < 4
    sd_err  = |sd − ref sd| / ref sd                           must be < 0.10

MCSE is ArviZ's `mcse(method="mean")` of the run's (chain, draw) draws; the reference MCSE is
the one stored with the reference summary (ArviZ's, from its 10 × 1000 Stan draws). The sd
bound is relative, not in MCSE units: with ESS draws the sd's own relative MCSE is about
1/sqrt(2·ESS), ≈ 1.6% at ESS 2000, so 10% leaves room but is not loose for a parameter with
a low ESS.
"""

from __future__ import annotations

import dataclasses

import arviz as az
import numpy as np

Z_MAX = 4.0
SD_TOL = 0.10


@dataclasses.dataclass
class Row:
    param: str
    mean: float
    ref_mean: float
    mcse: float
    ref_mcse: float
    z: float
    sd: float
    ref_sd: float
    sd_err: float
    ess: float

    def ok(self, z_max: float = Z_MAX, sd_tol: float = SD_TOL) -> bool:
        return self.z < z_max and self.sd_err < sd_tol


def compare(draws: dict[str, np.ndarray], ref: dict[str, dict]) -> list[Row]:
    """One Row per reference parameter; `draws` maps each name to a (chain, draw) array."""
    missing = sorted(set(ref) - set(draws))
    if missing:
        raise AssertionError(f"the draws lack reference parameters {missing}")
    rows = []
    for p, r in ref.items():
        x = np.asarray(draws[p], dtype=np.float64)
        if x.ndim != 2:
            raise AssertionError(f"{p}: draws must be (chain, draw), got {x.shape}")
        mcse = float(np.ravel(az.mcse(x, method="mean"))[0])
        ess = float(np.ravel(az.ess(x, method="bulk"))[0])
        mean, sd = float(x.mean()), float(x.std(ddof=1))
        z = abs(mean - r["mean"]) / float(np.hypot(mcse, r["mcse_mean"]))
        rows.append(Row(p, mean, r["mean"], mcse, r["mcse_mean"], z, sd, r["sd"],
                        abs(sd - r["sd"]) / r["sd"], ess))
    return rows


def worst(rows: list[Row]) -> tuple[float, float]:
    """(max z of the means, max relative sd error)."""
    return max(r.z for r in rows), max(r.sd_err for r in rows)


def table(rows: list[Row]) -> str:
    lines = [f"{'param':>14} {'mean':>11} {'ref':>11} {'z':>6} {'sd':>10} {'ref sd':>10} "
             f"{'sd err':>7} {'ess':>7}"]
    for r in rows:
        flag = "" if r.ok() else "  <--"
        lines.append(f"{r.param:>14} {r.mean:11.4g} {r.ref_mean:11.4g} {r.z:6.2f} {r.sd:10.4g} "
                     f"{r.ref_sd:10.4g} {r.sd_err:7.3f} {r.ess:7.0f}{flag}")
    return "\n".join(lines)


def assert_matches(rows: list[Row], label: str, z_max: float = Z_MAX,
                   sd_tol: float = SD_TOL) -> tuple[float, float]:
    z, sd = worst(rows)
    assert z < z_max and sd < sd_tol, (
        f"{label}: max |z| of means {z:.2f} (bound {z_max}), max relative sd error {sd:.3f} "
        f"(bound {sd_tol})\n{table(rows)}")
    return z, sd
