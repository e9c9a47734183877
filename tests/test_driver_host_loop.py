"""The progress bar: what it counts, what it shows, and when it is quiet."""

import bomcmc
from bomcmc.driver.host_loop import show_progress

KW = dict(posterior="gauss-iid-2", sampler="hmc", chains=2, draws=30, warmup=20, seed=0,
          step_size=0.3, steps=4, float64=True, chunk_size=10)


def test_quiet_off_a_terminal_unless_asked(capsys):
    assert show_progress(False) is False and show_progress(True) is True
    assert show_progress(None) is False  # pytest's stderr is not a terminal
    bomcmc.sample(**KW)
    assert capsys.readouterr().err == ""


def test_the_bar_shows_compiling_knobs_and_divergences_by_phase(capsys):
    bomcmc.sample(progress=True, **KW)
    err = capsys.readouterr().err
    assert "hmc: compiling... " in err and " s\n" in err
    assert "div=" in err and "/" in err.split("div=")[-1].split()[0]  # warm-up/sampling
    assert "eps=0.3" in err and "L=" in err


def test_with_a_leapfrog_budget_the_bar_counts_gradients_to_the_budget(capsys):
    bomcmc.sample(progress=True, max_grad=100, **{**KW, "draws": 1000})
    err = capsys.readouterr().err
    assert "100/100" in err and "grad" in err


def test_each_chunk_is_planned_by_phase_within_the_run():
    """Warm-up transitions one by one up to the warm-up's end, then sampling draws of `thin`
    transitions each, never past the draws asked for."""
    from types import SimpleNamespace

    from bomcmc.driver.host_loop import ChunkPlan, _plan
    from bomcmc.tuning.base import SAMPLING, WARMUP

    spec = SimpleNamespace(draws=7, warmup=5, thin=3)  # the RunSpec fields a plan reads
    assert _plan(spec, 0, 0, 4) == ChunkPlan(0, WARMUP, 0, 4, 1)
    assert _plan(spec, 1, 4, 4) == ChunkPlan(1, WARMUP, 4, 1, 1)  # stops at the warm-up's end
    assert _plan(spec, 2, 5, 4) == ChunkPlan(2, SAMPLING, 5, 4, 3)
    assert _plan(spec, 3, 5 + 4 * 3, 4) == ChunkPlan(3, SAMPLING, 17, 3, 3)  # 7 − 4 left
