"""Adaptive HMC as a first-class sampler (tuning/ahmc_tuner.py, kernels/ahmc.py):
`sample(..., sampler="ahmc")` and `--sampler ahmc`.

The HMC kernel with random trajectory lengths, driven by the GP bandit on the paper's burn-in
schedule (k = 100 BO steps of m = ⌊B/100⌋ transitions, then annealed adaptation), with a
relative ε box and an optional diagonal metric learned in burn-in (docs/tuning.md, "AHMC").
"""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest
from reference import assert_matches, compare
from tiers import by_default

import bomcmc
from bomcmc.cli import main as cli
from bomcmc.diagnostics import summarize
from bomcmc.tuning import ahmc_tuner
from bomcmc.kernels.hmc import HMCKnobs
from bomcmc.tuning.history import summarize_tuning, tuning_from_idata

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
FAST = dict(chains=4, progress=False, float64=True)


pytestmark = pytest.mark.usefixtures("compilation_cache")  # fixture in conftest.py


def _chunks(path):
    return [dict(np.load(p)) for p in sorted((path / "chunks").glob("*.npz"))]


def _knobs(chains=4, dim=3):
    return HMCKnobs(step_size=np.full(chains, 0.1), num_steps=np.full(chains, 10, np.int32),
                    inverse_mass_matrix=np.ones((chains, dim)),
                    random_steps=np.ones(chains, bool))


# ---------------------------------------------------------------------------------------
# The schedule
# ---------------------------------------------------------------------------------------
def _lengths(tuner, n, phase_of=lambda j: 0):
    """Chunk lengths the tuner asks for over n chunks (feeding it trivial chunks)."""
    kn = tuner.initial_knobs(_knobs())
    out = []
    for j in range(n):
        d = tuner.chunk_draws(kn, 10_000)
        out.append(d)
        info = {"esjd": np.ones((4, d)), "n_grad": np.ones((4, d))}
        kn = tuner.after_chunk(kn, {"phase": phase_of(j), "positions": np.zeros((4, d, 3)),
                                    "info": info})
    return out


def test_chunk_lengths_follow_the_papers_schedule_unit():
    opts = dict(eps_bounds=(0.01, 0.2), mass="identity", maxfun=20, polish=False)
    t = ahmc_tuner.AHMCTuner(warmup=1000, **opts)
    assert (t.burn_steps, t.step_transitions, t.longer, t.proposal_probability(100),
            t.proposal_probability(101)) == (100, 10, 0, 1.0, 2 ** -0.5)
    assert _lengths(t, 103, lambda j: int(j >= 100)) == [10] * 103
    # B = 1050: still k = 100 BO steps covering B exactly (the first 50 one longer)
    t = ahmc_tuner.AHMCTuner(warmup=1050, **opts)
    assert _lengths(t, 102, lambda j: int(j >= 100)) == [11] * 50 + [10] * 52
    t = ahmc_tuner.AHMCTuner(warmup=50, **opts)  # B < 100: k = B steps of one transition
    assert (t.burn_steps, t.step_transitions, t.proposal_probability(50),
            t.proposal_probability(51)) == (50, 1, 1.0, 2 ** -0.5)
    assert ahmc_tuner.AHMCTuner(warmup=0, **opts).chunk_draws(None, 100) == ahmc_tuner.DEFAULT_M
    assert ahmc_tuner.AHMCTuner(warmup=1000, thin=3, **opts).sampling_draws == 3
    # metric windows: (10, 25] and (25, 50] of the 100 burn-in BO steps
    assert ahmc_tuner.AHMCTuner(warmup=1000, eps_bounds=(0.01, 0.2)).windows == [10, 25, 50]
    assert ahmc_tuner.AHMCTuner(warmup=5, eps_bounds=(0.01, 0.2)).windows == []


def test_run_chunk_lengths_and_annealed_adaptation_after_burn_in(tmp_path):
    # the paper's burn-in: one shared (ε, L), the whole L box (batch=1, steps_cap=0)
    res = bomcmc.sample(posterior="gauss-2d-corr", sampler="ahmc", warmup=250, draws=60,
                        seed=1, out=tmp_path / "run", mass="identity", eps_bounds=(0.01, 0.3),
                        steps_bounds=(1, 30), batch=1, steps_cap=0, **FAST)
    recs = _chunks(tmp_path / "run")
    warm = [int(r["n_draws"]) for r in recs if int(r["phase"]) == 0]
    samp = [int(r["n_draws"]) for r in recs if int(r["phase"]) == 1]
    assert warm == [3] * 50 + [2] * 50  # k = 100 BO steps, m = ⌊250/100⌋, covering B
    assert samp == [2] * 30  # m transitions per BO step after burn-in too
    hist = tuning_from_idata(res.idata)[1]
    assert len(hist) == 130 and [h["i"] for h in hist] == list(range(1, 131))
    assert all(h["p_i"] == 1.0 for h in hist[:100])
    assert [h["p_i"] for h in hist[100:]] == pytest.approx(
        [(i - 99) ** -0.5 for i in range(101, 131)])
    assert all(h["proposed"] for h in hist[:99])  # p = 1 in burn-in
    assert hist[99]["incumbent"] and not hist[99]["proposed"]  # sampling starts at the best
    after = [h["proposed"] for h in hist[100:]]
    assert 0 < sum(after) < len(after)  # annealed: some, not all, sampling steps propose
    # the sampler: random L_r ≤ L, the bandit's ε
    stats = res.idata.sample_stats
    n_steps, eps = np.asarray(stats["n_steps"]), np.asarray(stats["step_size"])
    assert n_steps.min() >= 1 and n_steps.max() <= 30 and len(np.unique(n_steps)) > 3
    assert 0.01 * (1 - 1e-9) <= eps.min() and eps.max() <= 0.3 * (1 + 1e-9)
    # the tuner's host seconds: recorded per chunk, summed in totals, inside the chunks' wall
    per_chunk = [float(r["tuner_s"]) for r in recs]
    assert all(t > 0 for t in per_chunk) and all(
        t <= float(r["wall_s"]) for t, r in zip(per_chunk, recs))
    assert res.totals["tuner_s"] == pytest.approx(sum(per_chunk), rel=1e-12)
    share = summarize(res.idata, res.totals)["run"]["tuner_share"]
    assert share == pytest.approx(
        res.totals["tuner_s"] / (res.totals["wall_s"] + res.totals["wall_s_warmup"]))
    assert 0 < share < 1 and res.totals["tuner"] == "ahmc"


# ---------------------------------------------------------------------------------------
# API, CLI, defaults
# ---------------------------------------------------------------------------------------
def test_api_options_are_recorded_and_errors_are_one_line(tmp_path):
    out = tmp_path / "run"
    bomcmc.sample(posterior="gauss-2d-corr", sampler="ahmc", warmup=40, draws=20, seed=0,
                  out=out, eps_bounds=(0.01, 0.3), steps_bounds=(2, 40), reward="esjd",
                  mass="identity", **FAST)
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["sampler"] == "ahmc" and cfg["adapt"] is None
    assert cfg["tuner_options"] == {"eps_bounds": [0.01, 0.3], "steps_bounds": [2, 40],
                                    "reward": "esjd", "mass": "identity"}
    assert "eps_bounds" not in cfg["knobs"]
    first = _chunks(out)[0]
    assert bool(first["knobs.random_steps"].all())  # AHMC's random trajectory lengths
    kw = dict(posterior="gauss-2d-corr", sampler="ahmc", warmup=20, draws=10, **FAST)
    bad = [({"mass": "full"}, "mass"), ({"eps_bounds": (0.3, 0.1)}, "eps_bounds"),
           ({"steps_bounds": (0.2, 0.5)}, "integer"), ({"reward": "nope"}, "reward"),
           ({"reward": lambda ch: 1.0}, "tuner=GPBanditTuner"), ({"adapt": "window"}, "itself"),
           ({"bo_steps": 0}, "bo_steps"),
           ({"tuner": bomcmc.tuning.gp_bandit.GPBanditTuner(), "eps_bounds": (0.1, 1)},
            "tuner= replaces")]
    for extra, needle in bad:
        with pytest.raises(bomcmc.BomcmcError, match=needle):
            bomcmc.sample(**{**kw, **extra})
    with pytest.raises(bomcmc.BomcmcError, match="eps_bounds"):  # not an hmc option
        bomcmc.sample(posterior="gauss-2d-corr", sampler="hmc", eps_bounds=(0.1, 1.0),
                      warmup=10, draws=10, **FAST)
    assert "ahmc" in bomcmc.registry.names()


def test_cli_flags_and_summary_plots(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BOMCMC_NO_CACHE", "1")  # leave this process's JAX config alone
    args = cli.build_parser().parse_args(
        ["sample", "--posterior", "gauss-2d-corr", "--out", "x", "--sampler", "ahmc",
         "--eps-bounds", "0.01", "0.3", "--steps-bounds", "1", "40", "--reward", "esjd",
         "--mass", "identity", "--acquisition", "ei", "--schedule", "exponential",
         "--bo-steps", "20", "--batch", "2", "--steps-cap", "0"])
    kw = cli.commands.sample_kwargs(args)
    assert kw["batch"] == 2 and kw["steps_cap"] == 0  # 0: the whole L box from the start
    assert kw["sampler"] == "ahmc" and kw["eps_bounds"] == [0.01, 0.3]
    assert kw["steps_bounds"] == [1, 40] and kw["reward"] == "esjd" and kw["mass"] == "identity"
    assert kw["acquisition"] == "ei" and kw["schedule"] == "exponential" and kw["bo_steps"] == 20
    plain = cli.commands.sample_kwargs(cli.build_parser().parse_args(
        ["sample", "--posterior", "p", "--out", "x"]))
    from bomcmc.options import names
    from bomcmc.schemas import TUNERS

    assert not set(plain) & set(names(TUNERS["ahmc"]))  # only the flags given are passed
    assert cli.main(["sample", "--posterior", "gauss-2d-corr", "--sampler", "ahmc",
                     "--reward", "nope", "--out", str(tmp_path / "bad")]) == 2

    out = tmp_path / "run"
    assert cli.main(["sample", "--posterior", "gauss-2d-corr", "--sampler", "ahmc",
                     "--eps-bounds", "0.01", "0.3", "--steps-bounds", "1", "40",
                     "--reward", "esjd", "--mass", "identity", "--chains", "4",
                     "--bo-steps", "40", "--warmup", "200", "--draws", "40",
                     "--no-progress", "--json",
                     "--out", str(out)]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["tuning"]["bo_steps"] == 48 and s["tuning"]["bo_steps_warmup"] == 40
    assert s["tuning"]["eps_bounds"] == [0.01, 0.3]
    assert not list(out.glob("*.png"))  # plots are opt-in on sample
    assert cli.main(["summary", str(out), "--plots"]) == 0  # the table, the bandit's lines
    text = capsys.readouterr().out
    # 4 chains: 2 groups, each with its own setting, in the 40 burn-in steps
    assert "GP bandit of ahmc: 48 BO steps (40 in warm-up; 88 observations" in text
    assert "learned setting ε = " in text and "(the tried setting of highest GP mean" in text
    assert "tuner (ahmc) host time" in text and "% of warm-up + sampling" in text
    for name in ("trace.png", "autocorr.png", "reward_surface.png", "reward_slice.png"):
        assert (out / name).read_bytes()[:8] == PNG_MAGIC, name


# logistic-german repeats the claim on a further posterior (`-m slow`)
@pytest.mark.parametrize("name", by_default(["gauss-100-illcond", "logistic-german"], keep=1))
def test_defaults_give_a_working_run(name):
    """Nothing but the sampler: the relative box from Stan's heuristic, L ∈ {1..100}, the
    diagonal metric, k = 100 BO steps."""
    res = bomcmc.sample(posterior=name, sampler="ahmc", warmup=500, draws=300, seed=0,
                        **FAST)
    cfg = json.loads(res.idata.posterior.attrs["config"])
    assert cfg["tuner_options"] == {} and cfg["knobs"] == {}
    t = summarize_tuning(res.idata)
    assert t["bo_steps_warmup"] == 100 and t["gp_resets"] == 2 and t["steps_bounds"] == [1, 100]
    tuner, hist = tuning_from_idata(res.idata)
    lo, hi = tuner.eps_bounds
    assert hi / lo == pytest.approx(100.0)  # [ε₀/10, 10 ε₀]
    assert lo <= t["final"]["step_size"] <= hi
    summary = res.summary()
    assert summary["run"]["divergences"] <= 0.05 * 4 * 300  # exploratory blocks of 4 × m
    assert summary["run"]["ess_bulk"]["min"] > 200
    rhat = np.concatenate([np.ravel(v["r_hat"]) for v in summary["variables"].values()])
    assert np.nanmax(rhat) < 1.05
    if name == "gauss-100-illcond":  # the learned metric tracks the variances
        x = np.asarray(res.idata.posterior["x"]).reshape(-1, 100)
        sd = np.logspace(-2, 0, 100)
        z = np.abs(x.mean(0)) / (sd / math.sqrt(summary["run"]["ess_bulk"]["min"]))
        assert z.max() < 5.0
        assert np.abs(x.std(0) / sd - 1).max() < 0.15


# ---------------------------------------------------------------------------------------
# Resume
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("keep", [30, 110])  # cut between the metric windows / in sampling
def test_cut_run_resumes_to_identical_draws_and_tuner_history(tmp_path, keep, monkeypatch,
                                                              capsys):
    """A run directory cut to its first `keep` chunks (what a kill leaves: chunks are written
    atomically) resumes, with the tuner rebuilt from config.json alone, to the same draws,
    the same tuner history and the same final metric and state."""
    kw = dict(posterior="gauss-iid-3", sampler="ahmc", warmup=300, draws=60, seed=5,
              steps_bounds=(1, 30), **FAST)
    full = bomcmc.sample(out=tmp_path / "full", **kw)
    cut = tmp_path / "cut"
    shutil.copytree(tmp_path / "full", cut)
    for name in ("idata.nc", "run.json"):
        (cut / name).unlink()
    files = sorted((cut / "chunks").glob("*.npz"))
    assert len(files) == 120
    for f in files[keep:]:
        f.unlink()
    if keep < 100:
        resumed = bomcmc.resume(cut, progress=False)  # the tuner comes from config.json
    else:  # `bomcmc resume DIR`
        monkeypatch.setenv("BOMCMC_NO_CACHE", "1")
        assert cli.main(["resume", str(cut), "--no-progress", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["tuning"]["bo_steps"] == 120
        resumed = bomcmc.load(cut)
    a, b = full.idata, resumed.idata
    np.testing.assert_array_equal(np.asarray(a.posterior["x"]), np.asarray(b.posterior["x"]))
    for v in ("step_size", "n_steps", "acceptance_rate"):
        np.testing.assert_array_equal(np.asarray(a.sample_stats[v]),
                                      np.asarray(b.sample_stats[v]))
    ha, hb = tuning_from_idata(a)[1], tuning_from_idata(b)[1]
    # one entry per chain group and BO step: 2 groups (4 chains) in burn-in, 1 after
    assert ha == hb and len({h["i"] for h in ha}) == 120 and len(ha) == 2 * 100 + 20
    assert {h["epoch"] for h in ha} == {0, 1, 2}
    assert a.tuning.attrs["tuner_state"] == b.tuning.attrs["tuner_state"]
    ca, cb = _chunks(tmp_path / "full")[-1], _chunks(cut)[-1]
    np.testing.assert_array_equal(ca["next_knobs.inverse_mass_matrix"],
                                  cb["next_knobs.inverse_mass_matrix"])
    assert str(ca["tuner_state"]) == str(cb["tuner_state"])


# ---------------------------------------------------------------------------------------
# History storage
# ---------------------------------------------------------------------------------------
def test_history_is_stored_per_chunk_and_in_the_inference_data(tmp_path):
    out = tmp_path / "run"
    res = bomcmc.sample(posterior="gauss-2d-corr", sampler="ahmc", warmup=200, draws=100,
                        seed=2, out=out, steps_bounds=(1, 30), **FAST)
    recs = _chunks(out)
    sizes = []
    for j, rec in enumerate(recs):
        state = json.loads(str(rec["tuner_state"]))
        assert "history" not in state  # the small resumable state only
        entries = json.loads(str(rec["tuner_history"]))
        # this chunk's own entries: one per chain group in burn-in (2 of 2 chains), one after
        assert len(entries) == (2 if j < 100 else 1)
        assert [h["i"] for h in entries] == [j + 1] * len(entries)
        assert [h["group"] for h in entries] == list(range(len(entries)))
        sizes.append(len(str(rec["tuner_state"])))
    # no growth with the number of chunks beyond the GP's distinct points
    n_points = len(json.loads(str(recs[-1]["tuner_state"]))["gp"]["X"])
    assert sizes[-1] < 2000 + 120 * n_points
    loaded = bomcmc.load(out).idata
    assert "tuning" in loaded.groups()
    tu = loaded.tuning
    per_step = {k for k in tu.data_vars if tu[k].dims == ("step",)}
    assert per_step == {"i", "phase", "eps", "L", "reward", "p_i", "proposed", "epoch",
                        "incumbent", "group"}
    # the learned surface, for the plots (read without the tuner's code)
    assert {"surface_mean", "surface_sd", "surface_tried_x", "surface_tried_y",
            "surface_tried_n"} <= set(tu.data_vars)
    assert tu.sizes["step"] == 250 and tu["proposed"].dtype == bool
    assert tuning_from_idata(loaded)[1] == tuning_from_idata(res.idata)[1]
    tuner, hist = tuning_from_idata(loaded)
    # the stored final state rebuilds the GP: the last epoch's points only (reset at step 50)
    assert tuner.gp.n_obs == sum(1 for h in hist if h["epoch"] == 2 and h["reward"] is not None)


def test_plots_of_the_reward_surface_and_slice(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt
    from test_diagnostics_plots import unlabelled_axes

    from bomcmc.diagnostics import plots

    res = bomcmc.sample(posterior="gauss-2d-corr", sampler="ahmc", warmup=300, draws=100,
                        seed=0, mass="identity", eps_bounds=(0.01, 0.3), **FAST)
    closed, real_close = [], plt.close
    monkeypatch.setattr(plt, "close", lambda fig=None: (closed.append(fig), real_close(fig)))
    p = plots.plot_reward_surface(res.idata, tmp_path / "s.png")
    q = plots.plot_reward_slice(res, tmp_path / "l.png", steps=20)
    assert p.read_bytes()[:8] == PNG_MAGIC and q.read_bytes()[:8] == PNG_MAGIC
    assert len(closed) == 2 and not any(unlabelled_axes(f) for f in closed)  # issue 31
    tuner, _ = tuning_from_idata(res.idata)
    plots.plot_reward_slice(tuner.surface(), tmp_path / "t.png")  # a tuner's surface too
    # the plots draw what the run recorded: the surface of the tuner's final GP (to rounding:
    # the restored GP's solves go through the BLAS again, 3.9e-9 apart with OpenBLAS's
    # Sandybridge kernels and XLA's code for a CPU without FMA)
    from bomcmc.diagnostics.reward_plots import read_surface

    recorded = read_surface(res)
    np.testing.assert_allclose(recorded["mean"], tuner.surface()["mean"], rtol=1e-7,
                               atol=1e-10)
    assert recorded["names"] == ("log_step_size", "num_steps")
    r = plots.plot_reward_slice(res, tmp_path / "e.png", step_size=0.05)  # fixed ε, L varies
    assert r.read_bytes()[:8] == PNG_MAGIC
    with pytest.raises(ValueError, match="not both"):
        plots.plot_reward_slice(res, tmp_path / "b.png", steps=20, step_size=0.05)
    with pytest.raises(ValueError, match="no reward surface"):
        plots.plot_reward_surface(bomcmc.sample(posterior="gauss-2d-corr", sampler="hmc",
                                                warmup=10, draws=10, **FAST).idata,
                                  tmp_path / "x.png")
    import matplotlib.pyplot as plt

    assert plt.get_fignums() == []


# ---------------------------------------------------------------------------------------
# The metric
# ---------------------------------------------------------------------------------------
def test_diagonal_metric_is_learned_in_burn_in_and_resets_the_gp(tmp_path):
    kw = dict(posterior="gauss-100-illcond", sampler="ahmc", warmup=300, draws=30, seed=0,
              **FAST)
    diag = bomcmc.sample(out=tmp_path / "d", mass="diag", **kw)
    ident = bomcmc.sample(out=tmp_path / "i", mass="identity", **kw)
    inv_d = _chunks(tmp_path / "d")[-1]["next_knobs.inverse_mass_matrix"]
    inv_i = _chunks(tmp_path / "i")[-1]["next_knobs.inverse_mass_matrix"]
    np.testing.assert_array_equal(inv_i, 1.0)
    assert np.all(inv_d == inv_d[0]) and inv_d.min() == pytest.approx(1.0)  # shared, normalised
    var = np.logspace(-2, 0, 100) ** 2
    assert np.corrcoef(np.log(inv_d[0]), np.log(var))[0, 1] > 0.98
    assert inv_d[0].max() / inv_d[0].min() > 1000  # the true ratio is 10⁴
    # the metric changes after BO steps 25 and 50, and nowhere else
    recs = _chunks(tmp_path / "d")
    changed = [j + 1 for j, r in enumerate(recs)
               if not np.array_equal(r["knobs.inverse_mass_matrix"],
                                     r["next_knobs.inverse_mass_matrix"])]
    assert changed == [25, 50]
    hist = {h["i"]: h for h in tuning_from_idata(diag.idata)[1]}  # the last group's entry
    assert [hist[i]["epoch"] for i in range(1, 61)] == [0] * 25 + [1] * 25 + [2] * 10
    assert not hist[25]["proposed"] and not hist[50]["proposed"]  # reset, no proposal
    assert all(h["epoch"] == 0 for h in tuning_from_idata(ident.idata)[1])


# ---------------------------------------------------------------------------------------
# Correctness while adapting
# ---------------------------------------------------------------------------------------
def test_gauss_2d_corr_moments_while_adapting():
    res = bomcmc.sample(posterior="gauss-2d-corr", sampler="ahmc", warmup=1000, draws=1000,
                        seed=3, **FAST)
    x = np.asarray(res.idata.posterior["x"])
    draws = {"x[0]": x[..., 0], "x[1]": x[..., 1]}
    ref = {k: {"mean": 0.0, "sd": 1.0, "mcse_mean": 0.0} for k in draws}
    assert_matches(compare(draws, ref), "gauss-2d-corr [ahmc]")
    corr = np.corrcoef(x.reshape(-1, 2).T)[0, 1]
    assert abs(corr - 0.99) < 0.005


@pytest.mark.slow  # AHMC against posteriordb's reference: tests/test_models_posteriordb.py
def test_posteriordb_reference_while_adapting():
    from bomcmc.models import posteriordb as pdb

    name = "kidiq-kidscore_interaction"
    res = bomcmc.sample(posterior=name, sampler="ahmc", warmup=1000, draws=1000, seed=0,
                        **FAST)
    assert_matches(compare(pdb.flatten_idata(res.idata), pdb.reference(name)),
                   f"{name} [ahmc]")
