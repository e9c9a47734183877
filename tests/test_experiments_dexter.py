"""experiments/dexter.py end to end on its small budget (a subset of cases and features, a
small network): fold-wise features, the ten networks as one chain, every method at the same
leapfrog budget, the validation errors and the table. The error figures are not checked."""

import importlib.util
import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.usefixtures("compilation_cache")  # fixture in conftest.py

SCRIPT = Path(__file__).resolve().parents[1] / "experiments" / "dexter.py"


@pytest.mark.filterwarnings("ignore::bomcmc.SamplingWarning")  # 4 super-transitions
@pytest.mark.slow  # the experiment script end to end: -m slow (CI time)
def test_dexter_small_budget_runs_end_to_end(tmp_path):
    spec = importlib.util.spec_from_file_location("dexter_experiment", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--budget", "small", "--methods", "ahmc_cv,neal_gibbs",
                     "--out", str(tmp_path), "--figures", str(tmp_path / "fig")]) == 0
    result = json.loads((tmp_path / "dexter.json").read_text())
    assert [r["method"] for r in result["runs"]] == ["ahmc_cv", "neal_gibbs"]
    budget = result["budget"]["supers"] * result["budget"]["steps"]
    for r in result["runs"]:
        e = r["errors"]
        assert len(e["per_network"]) == 10
        assert all(0 <= v <= 1 for v in e["per_network"] + [e["mean"], e["vote"]])
        assert budget <= r["n_grad"] < 2 * budget  # spent, and at most a chunk beyond
    # Fig. 4.5's curve ends where the table's figures are: all kept draws averaged
    curve = result["runs"][0]["curve"]
    e = result["runs"][0]["errors"]
    assert curve["vote"][-1] == e["vote"] and abs(curve["mean"][-1] - e["mean"]) < 1e-12
    assert sorted(p.name for p in (tmp_path / "fig").iterdir()) == [
        "error_vs_draws.png", "reward_slice_eta0.22.png", "reward_surface.png"]
    table = (tmp_path / "dexter.md").read_text()
    assert "| ahmc_cv (small) | 1 |" in table and "0.0667" in table


@pytest.mark.filterwarnings("ignore::bomcmc.SamplingWarning")
@pytest.mark.slow
def test_dexter_chains_are_scored_one_by_one(tmp_path):
    """--chains C gives C rows of one run (independent chains for Neal's scheme), each scored
    on its own kept draws, and an AHMC run records its bandit's settings and rewards."""
    spec = importlib.util.spec_from_file_location("dexter_experiment", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--budget", "small", "--methods", "neal_gibbs,ahmc_cv", "--chains", "2",
                     "--no-checks", "--out", str(tmp_path)]) == 0
    runs = json.loads((tmp_path / "dexter.json").read_text())["runs"]
    assert [(r["method"], r["chain"]) for r in runs] == [
        ("neal_gibbs", 0), ("neal_gibbs", 1), ("ahmc_cv", 0), ("ahmc_cv", 1)]
    neal = runs[:2]
    assert neal[0]["kept_draws"] == neal[1]["kept_draws"] > 0
    assert neal[0]["errors"]["per_network"] != neal[1]["errors"]["per_network"]
    bandit = runs[2]["bandit"]
    assert len(bandit["eps"]) == len(bandit["L"]) == len(bandit["reward"]) >= 4
    assert len(bandit["accept"]) == len(bandit["divergent"]) == len(bandit["L"])
    assert all(a is None or 0 <= a <= 1 for a in bandit["accept"])
    assert all(0.01 <= e <= 0.61 + 1e-9 and 20 <= L <= 200
               for e, L in zip(bandit["eps"], bandit["L"]))


def test_bandit_summary_counts_stuck_and_divergent_super_transitions():
    """experiments/dexter_bandit.py: a super-transition is stuck when its chains' acceptance
    probabilities sum to under 1/2 without a divergence (L = 2000 in 2000 steps is one
    transition, at 0.4; L = 500 is four, at 0.1 each: 0.4), divergent when any transition
    diverged; the first, four transitions at 0.9, moved."""
    spec = importlib.util.spec_from_file_location(
        "dexter_bandit", SCRIPT.parent / "dexter_bandit.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    row = {"method": "ahmc_cv", "seed": 0, "errors": {"mean": 0.1, "median": 0.1, "vote": 0.05},
           "bandit": {"eps": [0.01, 0.3, 0.2, 0.05], "L": [500, 500, 2000, 500],
                      "reward": [8.0, 0.0, 6.0, 7.0], "accept": [0.9, 0.0, 0.4, 0.1],
                      "divergent": [0, 2, 0, 0]}}
    s = mod.summarise(row, steps=2000)
    assert (s["supers"], s["divergent_supers"], s["stuck_supers"]) == (4, 1, 2)
    assert s["stuck_rewards"] == [6.0, 7.0] and s["moving_rewards_range"] == [8.0, 8.0]
    assert s["failed_share"] == 0.75
