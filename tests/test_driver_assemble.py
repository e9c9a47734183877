"""The InferenceData a run assembles: warm-up draws kept on request, in ArviZ's groups."""

import numpy as np

import bomcmc

KW = dict(posterior="gauss-iid-2", sampler="hmc", chains=2, draws=15, warmup=20, seed=0,
          step_size=0.3, steps=3, progress=False, float64=True, chunk_size=10)


def test_save_warmup_writes_the_warmup_groups(tmp_path):
    res = bomcmc.sample(save_warmup=True, out=tmp_path / "run", **KW)
    idata = res.idata
    assert idata.warmup_posterior["x"].shape == (2, 20, 2)
    assert idata.posterior["x"].shape == (2, 15, 2)
    assert {"lp", "diverging", "n_grad"} <= set(idata.warmup_sample_stats.data_vars)
    # the warm-up draws are those of the stored warm-up chunks, and survive the NetCDF file
    loaded = bomcmc.load(tmp_path / "run").idata
    np.testing.assert_array_equal(loaded.warmup_posterior["x"].values,
                                  idata.warmup_posterior["x"].values)
    assert not np.array_equal(idata.warmup_posterior["x"].values[:, -15:],
                              idata.posterior["x"].values)


def test_warmup_is_not_kept_by_default():
    idata = bomcmc.sample(**KW).idata
    assert "warmup_posterior" not in idata.groups()


def test_the_cli_flag(tmp_path):
    from bomcmc.cli.main import main

    out = tmp_path / "run"
    assert main(["sample", "--posterior", "gauss-iid-2", "--sampler", "hmc", "--chains", "2",
                 "--draws", "10", "--warmup", "12", "--no-progress", "--no-plots",
                 "--save-warmup", "--json", "--out", str(out)]) == 0
    assert bomcmc.load(out).idata.warmup_posterior["x"].shape == (2, 12, 2)
