"""The InferenceData a run assembles: warm-up draws kept on request, in ArviZ's groups."""

import json

import numpy as np

import bomcmc
from bomcmc.tuning.base import Tuner

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


class SurfaceTuner(Tuner):
    """A tuner that changes nothing but reports a history, its own gradients and a surface."""

    name = "stub"

    def __init__(self, surface=True):
        self.with_surface = surface

    def chunk_history(self):
        return [{"i": 1, "reward": 0.5}]

    def take_grads(self):
        return 3

    def surface(self):
        if not self.with_surface:
            return None
        return {"names": ("eps", "L"), "x": np.array([0.1, 0.2, 0.3]), "y": np.array([1.0, 2.0]),
                "mean": np.arange(6.0).reshape(2, 3), "sd": np.full((2, 3), 0.5),
                "tried_x": np.array([0.1, 0.3]), "tried_y": np.array([2.0, 1.0]),
                "tried_n": np.array([4, 1]), "final": (0.3, 1.0)}


def test_the_tuning_group_carries_the_tuners_surface(tmp_path):
    res = bomcmc.sample(tuner=SurfaceTuner(), out=tmp_path / "run", **KW)
    for tuning in (res.idata.tuning, bomcmc.load(tmp_path / "run").idata.tuning,
                   _netcdf_round_trip(res.idata, tmp_path).tuning):
        assert tuning["surface_mean"].dims == ("surface_y", "surface_x")
        np.testing.assert_array_equal(tuning["surface_mean"].values, np.arange(6.0).reshape(2, 3))
        np.testing.assert_array_equal(tuning["surface_sd"].values, 0.5)
        np.testing.assert_array_equal(tuning["surface_x"].values, [0.1, 0.2, 0.3])
        np.testing.assert_array_equal(tuning["surface_y"].values, [1.0, 2.0])
        assert tuning["surface_tried_n"].dims == ("surface_tried",)
        np.testing.assert_array_equal(tuning["surface_tried_x"].values, [0.1, 0.3])
        np.testing.assert_array_equal(tuning["surface_tried_y"].values, [2.0, 1.0])
        np.testing.assert_array_equal(tuning["surface_tried_n"].values, [4, 1])
        assert tuning.attrs["surface_names"] == "eps,L"
        assert json.loads(tuning.attrs["surface_final"]) == [0.3, 1.0]
        assert tuning.attrs["tuner"] == "" and "tuner_state" in tuning.attrs
        assert list(tuning["reward"].values) == [0.5] * 4  # the history, one row per chunk
    # the tuner's own gradients join the warm-up's, through the protocol's take_grads
    plain = bomcmc.sample(**KW)
    assert res.totals["n_grad_warmup"] == plain.totals["n_grad_warmup"] + 3 * 4
    assert res.totals["tuner"] == "stub"


def test_a_tuner_without_a_surface_writes_none(tmp_path):
    tuning = bomcmc.sample(tuner=SurfaceTuner(surface=False), **KW).idata.tuning
    assert not any(str(k).startswith("surface") for k in [*tuning.variables, *tuning.attrs])
    assert _netcdf_round_trip(bomcmc.sample(tuner=SurfaceTuner(surface=False), **KW).idata,
                              tmp_path).tuning["reward"].shape == (4,)


def _netcdf_round_trip(idata, tmp_path):
    import arviz as az

    path = tmp_path / "copy.nc"
    idata.to_netcdf(path)
    return az.from_netcdf(path)


def test_a_record_in_memory_equals_the_one_on_disk(tmp_path, monkeypatch):
    """Only the store converts a ChunkRecord to a file and back: the records a run keeps in
    memory and those read back from its chunk files agree field by field (seconds aside)."""
    from bomcmc.driver import api
    from bomcmc.store import DiskStore, MemoryStore

    kept = []

    class Kept(MemoryStore):
        def __init__(self):
            super().__init__()
            kept.append(self)

    monkeypatch.setattr(api, "MemoryStore", Kept)
    bomcmc.sample(tuner=SurfaceTuner(), **KW)
    mem = list(kept[0].chunks())
    disk = list(DiskStore(bomcmc.sample(tuner=SurfaceTuner(), out=tmp_path / "run",
                                        **KW).path).chunks())
    assert [r.index for r in disk] == [0, 1, 2, 3] and [r.phase for r in disk] == [0, 0, 1, 1]
    assert [r.start_grads for r in disk] == [0] * 4 and [r.tuner_grads for r in disk] == [3] * 4
    assert set(disk[0].info) >= {"n_grad", "diverging", "acceptance_rate"}
    assert set(disk[0].state) >= {"position", "logdensity"} and disk[0].adapt == {}
    for a, b in zip(mem, disk):
        for f in a._fields:
            x, y = a._asdict()[f], b._asdict()[f]
            if f in ("wall_s", "tuner_s"):
                assert type(x) is type(y) is float
            elif isinstance(x, dict) and f != "tuner_state":
                assert list(x) == list(y), f
                for k in x:
                    np.testing.assert_array_equal(x[k], y[k], err_msg=f"{f}.{k}")
                    assert x[k].dtype == y[k].dtype
            elif isinstance(x, np.ndarray):
                np.testing.assert_array_equal(x, y, err_msg=f)
                assert x.dtype == y.dtype
            else:
                assert x == y and type(x) is type(y), f


def test_named_dims_keep_each_variable_whose_shape_fits():
    """`Posterior.dims` reach ArviZ only where a variable's shape fits them; the rest keep
    ArviZ's default names rather than failing the run's assembly."""
    from types import SimpleNamespace

    from bomcmc.driver.assemble import named_dims

    source = SimpleNamespace(
        dims={"a": ["k"], "b": ["k", None, None], "c": ["k", "t"], "d": ["k"], "e": ["t"],
              "f": ["t", "t"], "g": ["k"]},
        coords={"k": ["x", "y", "z"], "unused": [1]})
    arrays = {"a": np.zeros((2, 5, 3)),     # fits
              "b": np.zeros((2, 5, 3, 4)),  # an unnamed axis the variable lacks: trimmed
              "c": np.zeros((2, 5, 3)),     # a named axis it lacks: default names
              "d": np.zeros((2, 5, 2)),     # 2 entries, 3 labels
              "e": np.zeros((2, 5, 4)),     # t: 4, the first to use it
              "f": np.zeros((2, 5, 4, 4)),  # t named twice
              "g": np.zeros((2, 5))}        # a scalar
    dims, coords = named_dims(source, arrays, lead=2)
    assert dims == {"a": ["k"], "b": ["k", "b_dim_1"], "e": ["t"]}
    assert coords == {"k": ["x", "y", "z"]}
    assert named_dims(SimpleNamespace(dims=None, coords=None), arrays, lead=2) == ({}, {})
    # a dimension without labels takes its length from the first variable that names it
    two = SimpleNamespace(dims={"e": ["t"], "e2": ["t"]}, coords=None)
    assert named_dims(two, {"e": np.zeros((2, 5, 4)), "e2": np.zeros((2, 5, 5))},
                      lead=2) == ({"e": ["t"]}, {})


def test_a_posteriors_dims_and_coords_name_the_axes_labels_warnings_and_plots(tmp_path):
    """A model's dims and coords name the InferenceData's axes (kept through the NetCDF
    file and the warm-up group), and the warnings, the summary table and the trace plots
    label coordinates by them."""
    import jax.numpy as jnp

    from bomcmc.diagnostics import check_run
    from bomcmc.diagnostics.plots import coordinates

    post = bomcmc.Posterior(lambda p: -0.5 * jnp.sum(p["x"] ** 2), {"x": jnp.zeros(2)},
                            dims={"x": ["side"]}, coords={"side": ["left", "right"]})
    kw = {k: v for k, v in KW.items() if k != "posterior"}
    res = bomcmc.sample(posterior=post, save_warmup=True, out=tmp_path / "run", **kw)
    for idata in (res.idata, bomcmc.load(tmp_path / "run").idata):
        for group in ("posterior", "warmup_posterior"):
            assert idata[group]["x"].dims == ("chain", "draw", "side")
            assert list(idata[group]["side"].values) == ["left", "right"]
    assert [label for label, _ in coordinates(res.idata)] == ["x[left]", "x[right]"]
    said = " ".join(check_run(res.idata))  # 15 draws: too few for the ESS bar
    assert "x[left]" in said or "x[right]" in said, said
    summary = bomcmc.summarize(res.idata)
    assert summary["variables"]["x"]["coords"] == ["left", "right"]
    table = bomcmc.diagnostics.format_table(summary)
    assert "x[left]" in table and "x[right]" in table and "x[0]" not in table, table
    plain = bomcmc.summarize(bomcmc.sample(**KW).idata)  # default labels: none recorded
    assert "coords" not in plain["variables"]["x"]
    assert "x[1]" in bomcmc.diagnostics.format_table(plain)
