"""A warm-up that stops when it has learned (tuning/settle.py, AHMCTuner(settle=True), the
driver's warmup="auto"): the stopping rule on synthetic histories, the tuner's schedule
after an early stop, warmup=N run exactly, and a run cut after its stop resumed bit for bit."""

import json
import shutil

import numpy as np
import pytest

import bomcmc
from bomcmc import BomcmcError
from bomcmc.driver.spec import AUTO_WARMUP_CAP, warmup_count
from bomcmc.kernels.hmc import HMCKnobs
from bomcmc.store import DiskStore
from bomcmc.tuning import ahmc_tuner, learned_metric, settle
from bomcmc.tuning.base import SAMPLING, WARMUP

pytestmark = pytest.mark.usefixtures("compilation_cache")  # fixture in conftest.py

RULE = settle.SettleRule()
FLAT = tuple([1.0] * RULE.min_steps)
DONE = dict(metric_done=True, learns_metric=True, growing=False)


def _state(trace, change=0.1, calm=RULE.window, under=None):
    return settle.SettleState(trace=tuple(trace), metric_change=change, calm=calm,
                              under=len(trace) if under is None else under)


# ---------------------------------------------------------------------------------------
# The rule on synthetic histories
# ---------------------------------------------------------------------------------------
def test_fires_when_the_incumbent_and_the_metric_have_settled():
    reason = settle.settled(RULE, _state(FLAT), **DONE)
    assert reason is not None and reason.startswith("settled")
    # a reward that moved by less than 5 % either way has settled too
    assert settle.settled(RULE, _state(FLAT[:-1] + (1.04,)), **DONE) is not None
    assert settle.settled(RULE, _state(FLAT[:-1] + (0.96,)), **DONE) is not None


def test_does_not_fire_while_still_improving_or_correcting():
    rising = tuple(1.01 ** j for j in range(RULE.min_steps))  # +10.5 % over the last 10 steps
    assert settle.settled(RULE, _state(rising), **DONE) is None
    assert settle.settled(RULE, _state(FLAT[:-1] + (1.06,)), **DONE) is None
    # a best setting found overrated (its predicted reward fell) has not settled either
    assert settle.settled(RULE, _state(FLAT[:-1] + (0.94,)), **DONE) is None


def test_needs_the_minimum_steps_a_settled_metric_and_no_growing_cap():
    assert settle.settled(RULE, _state(FLAT[:RULE.min_steps - 1]), **DONE) is None
    assert settle.settled(RULE, _state(FLAT[:RULE.min_steps]), **DONE) is not None
    assert settle.settled(RULE, _state(FLAT, change=0.5), **DONE) is None  # metric moving
    assert settle.settled(RULE, _state(FLAT, change=None), **DONE) is None  # never updated
    assert settle.settled(RULE, _state(FLAT), **{**DONE, "metric_done": False}) is None
    assert settle.settled(RULE, _state(FLAT), **{**DONE, "growing": True}) is None
    # a divergence in the last 10 steps: the bandit is still learning where ε is unstable
    assert settle.settled(RULE, _state(FLAT, calm=RULE.window - 1), **DONE) is None
    # no metric learned (mass="identity"): the metric test holds trivially
    no_metric = {**DONE, "learns_metric": False}
    assert "no metric" in settle.settled(RULE, _state(FLAT, change=None), **no_metric)
    assert settle.settled(RULE, _state((0.0,) * 20), **DONE) is None  # no positive reward


def test_an_update_that_kept_the_gp_keeps_the_trace_but_waits_a_window_under_the_metric():
    kept = settle.new_epoch(_state(FLAT), 0.05, kept=True)
    assert kept.trace == FLAT and kept.under == 0 and kept.metric_change == 0.05
    assert settle.new_epoch(_state(FLAT), 0.5).trace == ()  # a reset GP: a new trace
    # the incumbent's trace is long enough, but the final metric has not run a window yet
    assert settle.settled(RULE, _state(FLAT, under=RULE.window - 1), **DONE) is None
    reason = settle.settled(RULE, _state(FLAT, under=RULE.window), **DONE)
    assert reason is not None and f"{RULE.window} under the final metric" in reason
    assert settle.observed(kept, 1.0, 10).under == 1


def test_metric_change_is_scale_free_and_reads_dense_metrics():
    d = np.array([1.0, 4.0, 9.0])
    assert learned_metric.metric_change(d, 7.0 * d) == pytest.approx(0.0, abs=1e-12)
    assert learned_metric.metric_change(d, np.diag(d)) == pytest.approx(0.0, abs=1e-12)
    # λ = (1, 1, e²): centred logs (-2/3, -2/3, 4/3), RMS √(8/9)
    assert learned_metric.metric_change(d, d * np.array([1, 1, np.e ** 2])) == pytest.approx(
        np.sqrt(8 / 9))
    rho = np.array([[1.0, 0.9], [0.9, 1.0]])  # eigenvalues 0.1 and 1.9 against the identity
    assert learned_metric.metric_change(np.ones(2), rho) == pytest.approx(0.5 * np.log(19))


def test_settle_state_round_trips_through_json():
    s = settle.SettleState(trace=(0.1, 0.2 / 3), metric_change=0.123456789, transitions=70,
                           stop={"bo_step": 7, "transitions": 70, "reason": "x"}, calm=3,
                           under=1)
    assert settle.from_json(json.loads(json.dumps(settle.to_json(s)))) == s
    old = settle.to_json(s)
    del old["settle"]["under"]  # a state saved before `under`: every step was under the metric
    assert settle.from_json(old).under == 2


# ---------------------------------------------------------------------------------------
# The tuner: where burn-in ends, the cap, and the schedule after an early stop
# ---------------------------------------------------------------------------------------
def _knobs(chains=4, dim=3):
    return HMCKnobs(step_size=np.full(chains, 0.1), num_steps=np.full(chains, 10, np.int32),
                    inverse_mass_matrix=np.ones((chains, dim)),
                    random_steps=np.ones(chains, bool))


def _feed(tuner, steps, jump=lambda j: 1.0, diverges=lambda j: False):
    """Feed `steps` chunks whose reward (ESJD / √L) is jump(j) whatever the setting, in the
    phase the tuner's burn-in end says; the phases seen and the chunk lengths asked for."""
    kn = tuner.initial_knobs(_knobs())
    phases, lengths, done = [], [], 0
    for j in range(steps):
        d = tuner.chunk_draws(kn, 10_000)
        end = tuner.burn_in_end()
        phase = WARMUP if (done < 1000 if end is None else done < end) else SAMPLING
        sq = jump(j) * np.sqrt(np.asarray(kn.num_steps, float))[:, None]
        info = {"esjd": np.broadcast_to(sq, (4, d)), "n_grad": np.ones((4, d)),
                "diverging": np.full((4, d), diverges(j))}
        kn = tuner.after_chunk(kn, {"phase": phase, "positions": np.zeros((4, d, 3)),
                                    "info": info})
        phases.append(phase)
        lengths.append(d)
        done += d
    return phases, lengths


OPTS = dict(warmup=1000, eps_bounds=(0.01, 0.2), mass="identity", steps_cap=0, maxfun=20,
            polish=False)


def test_tuner_stops_at_the_minimum_when_flat_and_goes_on_sampling_schedule():
    t = ahmc_tuner.AHMCTuner(settle=True, **OPTS)
    phases, lengths = _feed(t, RULE.min_steps + 4)
    assert t.settle.stop["bo_step"] == RULE.min_steps
    assert t.burn_in_end() == RULE.min_steps * 10  # m = 1000 // 100 transitions per step
    assert phases[:RULE.min_steps] == [WARMUP] * RULE.min_steps
    assert phases[RULE.min_steps:] == [SAMPLING] * 4
    assert t.burn.points is None  # every chain runs the incumbent from the stop on
    # p_i goes on as if burn-in had run its 100 steps: (i − s + 1)^{−1/2} after a stop at s
    assert t.history[-1]["p_i"] == pytest.approx((4 + 1) ** -0.5)
    assert t.burn_in_report()["reason"].startswith("settled")


def test_a_divergence_puts_the_stop_off_by_the_window():
    t = ahmc_tuner.AHMCTuner(settle=True, **OPTS)
    _feed(t, 40, diverges=lambda j: j == 14)  # BO step 15 diverged
    assert t.settle.stop["bo_step"] == 15 + RULE.window


def test_tuner_without_the_rule_or_still_improving_runs_the_cap():
    t = ahmc_tuner.AHMCTuner(**OPTS)  # warmup=N: never stops early
    _feed(t, 20)
    assert t.burn_in_end() is None and t.burn_in_report() is None
    rising = ahmc_tuner.AHMCTuner(settle=True, **OPTS)
    phases, _ = _feed(rising, 100, jump=lambda j: 1.2 ** j)
    assert rising.burn_in_end() is None and phases == [WARMUP] * 100
    assert rising.burn_in_report()["reason"].startswith("cap")


def _metric_tuner(spread, settle=True):
    """A diagonal-metric tuner fed chunks whose positions have sd `spread` per coordinate
    from the identity metric: its first update (BO step 25) moves M⁻¹ by δ ≈ the spread's
    centred log-variances' RMS (0 when equal)."""
    t = ahmc_tuner.AHMCTuner(settle=settle, **{**OPTS, "mass": "diag"})
    kn = t.initial_knobs(_knobs())
    rng = np.random.default_rng(0)
    seen = []
    for _ in range(26):
        d = t.chunk_draws(kn, 10_000)
        info = {"esjd": np.ones((4, d)) * np.sqrt(np.asarray(kn.num_steps, float))[:, None],
                "n_grad": np.ones((4, d))}
        pos = rng.normal(size=(4, d, 3)) * np.asarray(spread)
        kn = t.after_chunk(kn, {"phase": WARMUP, "positions": pos, "info": info})
        seen.append(t.gp.n_obs)
    return t, seen


def test_a_metric_update_that_barely_moves_the_metric_keeps_the_bandit():
    """Under warmup="auto", an update below KEEP_GP keeps the GP's observations, its box
    and the settle trace (epoch 0, the bandit proposes on); one far above it resets them
    (epoch 1), and so does any update of a fixed warm-up."""
    kept, seen = _metric_tuner([1.0, 1.0, 1.0])
    assert kept.metric.weight is not None  # the update ran (step 25)
    assert kept.settle.metric_change < learned_metric.KEEP_GP
    assert kept.epoch == 0 and seen[25] == seen[24] + 2 and len(kept.settle.trace) == 25
    assert kept.settle.under == 1
    moved, seen = _metric_tuner([1.0, 10.0, 0.1])
    assert moved.settle.metric_change > 1.0  # log-variances ±4.6: δ ≈ 3.8
    assert moved.epoch == 1 and seen[25] == 2 and len(moved.settle.trace) == 1
    # warmup=N runs its fixed schedule: the same small update resets the bandit
    fixed, seen = _metric_tuner([1.0, 1.0, 1.0], settle=False)
    assert fixed.metric.weight is not None and fixed.epoch == 1 and seen[25] == 2


def test_warmup_argument():
    assert warmup_count("auto") == (AUTO_WARMUP_CAP, True)
    assert warmup_count(250) == (250, False)
    with pytest.raises(BomcmcError, match="'auto'"):
        warmup_count("soon")
    with pytest.raises(BomcmcError):
        warmup_count(-1)


# ---------------------------------------------------------------------------------------
# The driver: warmup=N exactly, warmup="auto" recorded, a cut run resumed bit for bit
# ---------------------------------------------------------------------------------------
# seed 4: the rule settles before the cap on 3 of seeds 0-4 with either search (DIRECT: 2, 3,
# 4; the grid, the default since: 1, 2, 4), and seed 3 was one of DIRECT's
KW = dict(posterior="gauss-2d-corr", sampler="ahmc", chains=4, draws=30, seed=4,
          chunk_size=10, float64=True, progress=False)


def _phases(path):
    return [(rec.phase, rec.n_draws) for rec in DiskStore(path).chunks()]


@pytest.fixture(scope="module")
def auto_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("auto") / "run"
    return out, bomcmc.sample(warmup="auto", out=out, **KW)


def test_auto_warmup_stops_early_and_says_why(auto_run):
    out, res = auto_run
    w = res.totals["warmup"]
    assert w["auto"] and w["cap"] == AUTO_WARMUP_CAP
    assert 0 < w["transitions"] < AUTO_WARMUP_CAP and w["reason"].startswith("settled")
    warm = sum(n for p, n in _phases(out) if p == WARMUP)
    assert warm == w["transitions"]
    # its metric update barely moved the metric and kept the GP (the resume tests below cut
    # after it): no restart, and the reason counts the steps under the final metric
    state = json.loads(res.idata.tuning.attrs["tuner_state"])
    assert state["metric_weight"] is not None and state["epoch"] == 0
    assert "under the final metric" in w["reason"]
    assert json.loads((out / "run.json").read_text())["warmup"] == w
    assert res.idata.posterior["x"].shape == (4, 30, 2)


def test_explicit_warmup_is_run_exactly(tmp_path, auto_run):
    n = auto_run[1].totals["warmup"]["transitions"] + 10  # where "auto" would have stopped
    res = bomcmc.sample(warmup=n, out=tmp_path / "run", **KW)
    assert sum(k for p, k in _phases(tmp_path / "run") if p == WARMUP) == n
    assert res.totals["warmup"] == {"auto": False, "requested": n, "transitions": n,
                                    "reason": f"warmup={n} given"}


@pytest.mark.parametrize("cut", ["at_the_stop", "before_the_stop"])
def test_run_cut_around_the_stop_resumes_bit_identically(tmp_path, auto_run, cut):
    ref_out, ref = auto_run
    out = tmp_path / "run"
    shutil.copytree(ref_out, out)
    phases = _phases(out)
    last_warm = max(j for j, (p, _) in enumerate(phases) if p == WARMUP)
    keep = last_warm if cut == "at_the_stop" else last_warm - 2  # chunks 0..keep stay
    for p in sorted((out / "chunks").glob("*.npz"))[keep + 1:]:
        p.unlink()
    (out / "idata.nc").unlink()
    (out / "run.json").unlink()
    again = bomcmc.resume(out, progress=False)
    np.testing.assert_array_equal(np.asarray(again.idata.posterior["x"]),
                                  np.asarray(ref.idata.posterior["x"]))
    assert _phases(out) == phases
    assert again.totals["warmup"] == ref.totals["warmup"]
