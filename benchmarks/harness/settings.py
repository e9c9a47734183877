"""The settings every entrant of the harness gets, spelled out once."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS_DIR = ROOT / "benchmarks" / "results"
DOC_PATH = ROOT / "docs" / "benchmarks.md"

# The NUTS settings every NUTS sampler gets, spelled out to each library (they are also all
# three libraries' defaults): diagonal metric, Stan's window warm-up targeting δ = 0.8 from
# ε₀ = 1 and M⁻¹ = I, at most 10 doublings.
NUTS_TARGET_ACCEPT = 0.8
NUTS_MAX_TREE_DEPTH = 10
NUTS_DENSE_MASS = False

# Fixed HMC knobs (step size ε, leapfrog steps L) per posterior for bomcmc-hmc and the bare
# reference loop. The HMC warm-up is plain burn-in at these knobs (no adaptation yet).
# logistic-german: ε=0.05, L=10 gives mean acceptance ≈ 0.85 in float32 (checked).
HMC_KNOBS: dict[str, tuple[float, int]] = {
    "logistic-german": (0.05, 10),
    "logistic-australian": (0.05, 10),
    "logistic-heart": (0.05, 10),
    "logistic-pima": (0.05, 10),
    "logistic-ripley": (0.05, 10),
    "gauss-2d-corr": (0.1, 20),
    "gauss-2d-corr-wide": (0.1, 20),
    "gauss-100-illcond": (0.01, 100),
    "gauss-iid-100": (0.3, 10),
}
DEFAULT_KNOBS = (0.1, 10)


def hmc_knobs(posterior: str, step_size: float | None, steps: int | None) -> tuple[float, int]:
    """(ε, L) for a posterior: the table's, each overridden where given."""
    eps, L = HMC_KNOBS.get(posterior, DEFAULT_KNOBS)
    return (eps if step_size is None else step_size, L if steps is None else steps)
