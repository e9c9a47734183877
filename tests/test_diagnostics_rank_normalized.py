"""The vectorised rank-normalised estimators (`diagnostics.rank_normalized`) against ArviZ's,
coordinate by coordinate, on draws that exercise every branch of Geyer's sequences: slowly
mixing (hundreds of lags), antithetic (pair sums that end at once), discrete (ties, a tail
quantile equal to a draw), constant, short (odd draw counts, the fewest draws ArviZ takes),
one chain, a coordinate holding a NaN, and float32 draws (which tie, when folded, as they
do in ArviZ only if kept in float32 until it casts them)."""

from __future__ import annotations

import arviz as az
import numpy as np
import pytest

from bomcmc.diagnostics import rank_normalized as rn
from bomcmc.diagnostics.checks import numpy_path


def _ar1(rng, chains, n, k, phi):
    x = np.zeros((chains, n, k))
    e = rng.normal(size=(chains, n, k))
    x[:, 0] = e[:, 0] / np.sqrt(1 - phi ** 2)
    for t in range(1, n):
        x[:, t] = phi * x[:, t - 1] + e[:, t]
    return x


def _cases():
    rng = np.random.default_rng(7)
    cases = {
        "slow": _ar1(rng, 4, 623, 6, 0.995),
        "mixing": _ar1(rng, 4, 400, 6, 0.5),
        "antithetic": _ar1(rng, 3, 301, 6, -0.9),
        "discrete": rng.poisson(0.4, size=(4, 200, 6)).astype(float),
        "coarse": np.round(_ar1(rng, 2, 150, 6, 0.8)),
        "short": _ar1(rng, 2, 9, 6, 0.3),
        "fewest": _ar1(rng, 3, 4, 6, 0.3),
        "one chain": _ar1(rng, 1, 501, 6, 0.9),
        "stuck chains": np.repeat(rng.normal(size=(4, 1, 6)), 50, axis=1),
    }
    with_nan = _ar1(rng, 4, 100, 6, 0.7)
    with_nan[2, 17, 3] = np.nan
    with_nan[:, :, 5] = 1.5  # a constant coordinate
    cases["nan and constant"] = with_nan
    cases["float32"] = np.round(_ar1(rng, 4, 300, 6, 0.9), 3).astype(np.float32)
    return cases


CASES = _cases()


def _arviz(x, kind):
    ds = az.convert_to_dataset(x)
    with numpy_path(), np.errstate(all="ignore"):
        if kind == "rhat":
            out = az.rhat(ds)
        elif kind == "mcse_mean":
            out = az.mcse(ds, method="mean")
        else:
            out = az.ess(ds, method=kind.removeprefix("ess_"))
    return np.asarray(out["x"])


@pytest.mark.parametrize("kind", ["ess_bulk", "ess_tail", "ess_mean", "mcse_mean", "rhat"])
@pytest.mark.parametrize("case", list(CASES))
def test_each_estimator_is_arviz_s(case, kind):
    x = CASES[case]
    if kind == "rhat" and x.shape[0] < 2:
        assert np.isnan(rn.rhat(x)).all()
        return
    ours = getattr(rn, kind)(x)
    ref = _arviz(x, kind)
    assert ours.shape == ref.shape == x.shape[2:]
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(ref))
    # rounding only: sums in another order (measured ≤ 5e-16 relative)
    np.testing.assert_allclose(ours, ref, rtol=1e-10, atol=0)


def test_the_cases_reach_every_branch():
    """The cases above end the initial positive sequence late (slow draws: τ of dozens of
    lags) and at once (antithetic draws: τ at its floor, below 1), and the monotone sequence
    lowers some pair sums inside the positive sequence (else the comparison with ArviZ
    would not test it)."""
    tau, lowered = [], False
    for x in (CASES["slow"], CASES["antithetic"], CASES["mixing"]):
        z = rn._z_scale(rn._split(rn._coords(x)[0]))
        tau.append(np.median(z.shape[1] * z.shape[2] / rn._geyer_ess(z)))
        sums = rn._pair_sums(rn._rho(z))
        kept = rn._positive_pairs(sums)
        inside = np.arange(sums.shape[1])[None, :] < kept[:, None]
        lowered |= bool(np.any((rn._monotone(sums) < sums) & inside))
    assert tau[0] > 20 and tau[1] < 1 and lowered


def test_a_dataset_keeps_its_variables_dims_and_coords():
    rng = np.random.default_rng(1)
    ds = az.convert_to_dataset({"a": rng.normal(size=(2, 50, 3, 2)), "b": rng.normal(size=(2, 50))},
                               coords={"a_dim_0": ["x", "y", "z"]})
    out = rn.on_dataset(ds, rn.ess_bulk)
    ref = az.ess(ds, method="bulk")
    assert out["a"].dims == ref["a"].dims and list(out["a"].a_dim_0.values) == ["x", "y", "z"]
    np.testing.assert_allclose(out["a"].values, ref["a"].values, rtol=1e-10)
    np.testing.assert_allclose(float(out["b"]), float(ref["b"]), rtol=1e-10)


@pytest.mark.parametrize("case", ["slow", "mixing", "coarse"])
def test_a_broken_monotone_sequence_is_caught(case, monkeypatch):
    """Without the initial monotone sequence (the positive one alone), the bulk ESS differs
    from ArviZ's by far more than the comparison's tolerance (measured: 7-65 %)."""
    x = CASES[case]
    monkeypatch.setattr(rn, "_monotone", lambda sums: sums)
    ours = rn.ess_bulk(x)
    assert np.max(np.abs(ours / _arviz(x, "ess_bulk") - 1)) > 0.01


def test_a_broken_end_of_the_positive_sequence_is_caught(monkeypatch):
    """Summing every lag pair read (no end at the first non-positive pair sum) is caught."""
    x = CASES["mixing"]
    monkeypatch.setattr(rn, "_positive_pairs",
                        lambda sums: np.full(sums.shape[0], sums.shape[1] - 1))
    assert np.max(np.abs(rn.ess_bulk(x) / _arviz(x, "ess_bulk") - 1)) > 0.01


def test_coordinates_go_through_in_blocks_of_bounded_memory(monkeypatch):
    """A posterior of many coordinates is computed a block of coordinates at a time: the
    figures are those of the whole at once, and the memory the computation allocates stays
    a small multiple of a block, not of the draws (a network's 10⁵ weights × 4 chains × 1000
    draws would otherwise need tens of GB for the FFT)."""
    import tracemalloc

    x = _ar1(np.random.default_rng(3), 2, 200, 3000, 0.8)  # 9.6 MB of draws
    whole = {k: getattr(rn, k)(x) for k in ("ess_bulk", "ess_tail", "rhat")}
    monkeypatch.setattr(rn, "BLOCK_DRAWS", 4000)  # 10 coordinates per block
    for kind, value in whole.items():
        tracemalloc.start()
        blocked = getattr(rn, kind)(x)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        np.testing.assert_array_equal(blocked, value)
        # measured 0.33-0.37 MB (the output and a block's arrays); all at once, 77-88 MB
        assert peak < 0.1 * x.nbytes, (kind, peak)
