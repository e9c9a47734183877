"""The summary table: columns that never run together, whatever the numbers."""

import numpy as np

from bomcmc.diagnostics.summary import format_table


def _summary(values):
    run = {k: 0 for k in ("chains", "draws", "n_grad", "n_grad_warmup", "divergences")}
    run.update(wall_s=1.0, wall_s_warmup=1.0, compile_s=1.0, accept_mean=0.5,
               **{k: {"min": 1.0, "median": 1.0, "max": 1.0}
                  for k in ("ess_bulk", "ess_per_grad", "ess_per_s")})
    return {"variables": {"x": values}, "run": run}


def test_a_failed_runs_numbers_stay_apart():
    """The defect: tail ESS 2 and R-hat 9.86e+15 printed as '29.86e+15'."""
    s = _summary({"mean": [-0.012], "sd": [0.004], "mcse_mean": [0.0025],
                  "ess_bulk": [2.0], "ess_tail": [2.0], "r_hat": [9.86e15]})
    row = format_table(s).splitlines()[1]
    assert row.split() == ["x", "-0.012", "0.004", "0.0025", "2", "2", "9.86e+15"]


def test_every_column_lines_up_and_nan_is_shown():
    s = _summary({"mean": [1.0, -123456.789, np.nan], "sd": [1e-9, 2.0, 3.0],
                  "mcse_mean": [None, 0.1, 0.2], "ess_bulk": [4000.0, 12.0, 1e7],
                  "ess_tail": [3999.0, 11.0, 1e7], "r_hat": [1.0, 1.5, 1e300]})
    lines = format_table(s).splitlines()[:4]
    assert len({len(line) for line in lines}) == 1  # one width for header and rows
    for line in lines[1:]:
        assert len(line.split()) == 7
    assert "nan" in lines[1] and "nan" in lines[3]
