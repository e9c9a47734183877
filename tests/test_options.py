"""One typed path for a sampler's options: the schemas (bomcmc.schemas), their validation
into a SamplerConfig (registry.configure), config.json, and the command line's flags."""

import inspect
import json
import subprocess
import sys

import jax.numpy as jnp
import numpy as np
import pytest

import bomcmc
from bomcmc import registry, schemas
from bomcmc.cli import main as cli
from bomcmc.adaptation.dual_averaging import dual_averaging_adaptation
from bomcmc.adaptation.window_adaptation import window_adaptation
from bomcmc.driver.spec import RunSpec
from bomcmc.kernels import ahmc, hmc, hmc_mixture, mams, nuts, rmhmc, rwm
from bomcmc.options import SamplerConfig

FAST = dict(chains=2, progress=False)


def _defaults(fn) -> dict:
    return {n: p.default for n, p in inspect.signature(fn).parameters.items()
            if p.default is not inspect.Parameter.empty}


KNOB_FUNCTIONS = {
    "hmc": hmc.default_knobs, "ahmc": ahmc.make_knobs, "two_phase": hmc_mixture.make_knobs,
    "mams": mams.make_knobs, "amams": mams.bandit_kernel.make_knobs, "nuts": nuts.make_knobs,
    "nuts_async": nuts.make_knobs, "rwm": rwm.make_knobs,
    "rmhmc": rmhmc.kernel_for_metric(lambda x: jnp.eye(2)).make_knobs,
    "rmhmc_constant": rmhmc.kernel_for_metric(np.ones(2)).make_knobs,
}


@pytest.mark.parametrize("name", sorted(KNOB_FUNCTIONS))
def test_knob_defaults_are_those_of_make_knobs(name):
    """Each declared knob is a keyword of the kernel's make_knobs, with the same default, and
    the kernel takes no knob the schema does not declare."""
    sig = _defaults(KNOB_FUNCTIONS[name])
    declared = {o.name: o.default for o in schemas.KNOBS[name]}
    assert declared == sig


@pytest.mark.parametrize("name, fn", [("window", window_adaptation),
                                      ("dual_averaging", dual_averaging_adaptation)])
def test_adapter_defaults_are_those_of_the_adapters(name, fn):
    assert {o.name: o.default for o in schemas.ADAPTER_OPTIONS[name]} == _defaults(fn)


def test_tuner_defaults_agree_with_the_constructors_where_they_declare_one():
    """A tuner option's declared default is the constructor's, where a constructor (or a base
    class's) declares it and the sampler's factory does not set its own."""
    from bomcmc.tuning import ahmc_tuner, block_bandit, gp_bandit, im_tuner, two_phase

    set_by_factory = {("two_phase", "reward"), ("amams", "mass"), ("im_bayesopt", "reward")}
    classes = {"ahmc": ahmc_tuner.AHMCTuner, "amams": ahmc_tuner.AHMCTuner,
               "two_phase": two_phase.TwoPhaseTuner, "im_bandit": im_tuner.IMBanditTuner,
               "im_bayesopt": im_tuner.IMBayesOptTuner,
               "armhmc": block_bandit.BlockBanditTuner}
    compared = 0
    for name, cls in classes.items():
        found = {}
        for klass in reversed([*cls.__mro__, gp_bandit.GPBanditTuner]):
            if "__init__" in vars(klass):
                found.update(_defaults(klass.__init__))
        for o in schemas.TUNERS[name]:
            if o.name in found and (name, o.name) not in set_by_factory and o.default is not None:
                default = found[o.name]
                assert o.default == (tuple(default) if isinstance(default, list) else default), \
                    (name, o.name)
                compared += 1
    assert compared >= 20


def test_every_registry_sampler_has_its_schemas():
    assert set(registry.SAMPLERS) == set(schemas.SAMPLERS)
    for name, s in registry.SAMPLERS.items():
        declared = schemas.SAMPLERS[name]
        assert (s.knobs, s.tuner_options, s.adapter) == (declared.knobs, declared.tuner,
                                                         declared.adapter), name
        assert (s.make_tuner is not None or s.build is not None) == bool(declared.tuner) \
            or s.build is not None, name


def test_every_option_of_every_sampler_is_in_sample_help(capsys):
    assert cli.main(["sample", "--help"]) == 0
    text = capsys.readouterr().out
    for name, s in schemas.SAMPLERS.items():
        for o in s.knobs + s.tuner:
            assert o.flag in text, (name, o.flag)
    for options in schemas.ADAPTER_OPTIONS.values():
        for o in options:
            assert o.flag in text or not o.cli


def test_one_flag_per_name_agrees_in_kind_and_shape():
    """A name several samplers declare is one flag: its declarations agree in kind and nargs."""
    from bomcmc.cli.flags import sampler_options

    for name, decls in sampler_options().items():
        assert len({(o.kind, o.nargs) for _, o in decls}) == 1, name


@pytest.mark.parametrize("argv", [["--help"], ["sample", "--help"], ["bnn", "fit", "--help"]])
def test_help_imports_nothing_heavy(argv):
    """`bomcmc --help` and the subcommands' help are built from declarations that import no
    JAX, SciPy, scikit-learn or ArviZ (the whole parser: the sampler flags come from
    `schemas`, `bnn fit`'s from `bnn.defaults`); 4.8 s before `bnn.defaults`, 0.2 s after."""
    code = ("import contextlib, io, sys\n"
            "from bomcmc.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
            f"    assert main({argv!r}) == 0\n"
            "assert 'usage' in out.getvalue()\n"
            "heavy = {'jax', 'scipy', 'sklearn', 'arviz'}\n"
            "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_the_gibbs_kernels_say_their_step_size_is_eta():
    from bomcmc.bnn import samplers

    for knobs in (samplers.NEAL_KNOBS, samplers.CHOO_KNOBS, samplers.NUTS_GIBBS_KNOBS):
        assert "η" in next(o for o in knobs if o.name == "step_size").help


# ---------------------------------------------------------------------------------------
# Validation into a SamplerConfig
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("sampler, extra, needle", [
    ("ahmc", dict(dense_mass=True), "sampler 'ahmc' does not take dense_mass (it takes: "),
    ("nuts", dict(eps_bounds=(0.1, 1.0)), "sampler 'nuts' does not take eps_bounds"),
    ("hmc", dict(target_accept=0.9), "warm-up adaptation"),
    ("nuts", dict(adapt_options={"delta": 0.9}), "adaptation 'window' does not take delta"),
    ("nuts", dict(adapt="stan"), "unknown warm-up adaptation 'stan'"),
])
def test_an_option_the_sampler_does_not_take_is_one_line(sampler, extra, needle):
    with pytest.raises(bomcmc.BomcmcError) as e:
        bomcmc.sample(posterior="gauss-2d-corr", sampler=sampler, warmup=10, draws=10,
                      **FAST, **extra)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_configure_routes_each_option_by_its_schema():
    smp = registry.get("nuts")
    cfg = registry.configure(smp, dict(max_tree_depth=6, target_accept=0.9), warmup=10)
    assert cfg == SamplerConfig(knobs={"max_tree_depth": 6}, adapt="window",
                                adapter_options={"target_accept": 0.9}, tuner_options=None)
    cfg = registry.configure(registry.get("ahmc"), dict(steps=3, reward="ess"), warmup=10)
    assert cfg == SamplerConfig({"steps": 3}, None, {}, {"reward": "ess"})
    assert registry.configure(registry.get("nuts"), {}, warmup=0).adapt is None


def test_config_and_keywords_give_the_same_run(tmp_path):
    kw = dict(posterior="gauss-2d-corr", sampler="hmc", warmup=20, draws=10, seed=3, **FAST)
    a = bomcmc.sample(step_size=0.3, steps=4, adapt="window", target_accept=0.7, **kw)
    b = bomcmc.sample(config=SamplerConfig(knobs={"step_size": 0.3, "steps": 4},
                                           adapt="window",
                                           adapter_options={"target_accept": 0.7}), **kw)
    np.testing.assert_array_equal(a.idata.posterior["x"], b.idata.posterior["x"])
    with pytest.raises(bomcmc.BomcmcError, match="not both"):
        bomcmc.sample(config=SamplerConfig(), steps=3, **kw)


def test_an_old_config_json_still_loads_and_resumes(tmp_path):
    """A run written before the SamplerConfig (adapt_options) loads and resumes."""
    out = tmp_path / "run"
    first = bomcmc.sample(posterior="gauss-2d-corr", sampler="hmc", warmup=20, draws=10,
                          adapt="window", adapt_options={"target_accept": 0.7}, out=out,
                          step_size=0.3, steps=4, **FAST)
    cfg = json.loads((out / "config.json").read_text())
    old = {k: v for k, v in cfg.items() if k != "adapter_options"}
    old["adapt_options"] = cfg["adapter_options"]
    (out / "config.json").write_text(json.dumps(old))
    spec = RunSpec.from_json(old)
    assert spec.config == SamplerConfig({"step_size": 0.3, "steps": 4}, "window",
                                        {"target_accept": 0.7}, None)
    again = bomcmc.resume(out, progress=False)
    np.testing.assert_array_equal(first.idata.posterior["x"], again.idata.posterior["x"])


def test_cli_refuses_an_option_of_another_sampler(tmp_path, capsys):
    assert cli.main(["sample", "--posterior", "gauss-2d-corr", "--sampler", "ahmc",
                     "--dense-mass", "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not take --dense-mass" in err


def test_a_misspelt_or_foreign_argument_is_told_the_name_it_meant_and_that_name_works():
    """`draw=`, NumPyro's `num_samples=` and PyMC's `tune=` land among the sampler's options;
    the error names the argument meant (`bomcmc.sample`'s own, or an option the sampler
    takes), and the call with that name runs. A name with no likely meaning gets no guess."""
    from bomcmc.options import PEER_NAMES, RUN_ARGUMENTS, did_you_mean

    assert set(RUN_ARGUMENTS) <= set(inspect.signature(bomcmc.sample).parameters)
    run = dict(posterior="gauss-iid-2", chains=2, warmup=20, draws=20, progress=False)
    for wrong, sampler, meant in [("draw", "hmc", "draws"), ("num_samples", "hmc", "draws"),
                                  ("tune", "nuts", "warmup"), ("random_seed", "ahmc", "seed"),
                                  ("adapt_delta", "nuts", "target_accept"),
                                  ("max_treedepth", "nuts", "max_tree_depth"),
                                  ("num_steps", "hmc", "steps"), ("stepsize", "hmc", "step_size")]:
        value = {"target_accept": 0.9, "max_tree_depth": 8, "steps": 5, "step_size": 0.3}.get(
            meant, 30)
        with pytest.raises(bomcmc.BomcmcError, match=rf"does not take {wrong} \(did you mean "
                                                     rf"{meant}\?\)"):
            bomcmc.sample(sampler=sampler, **{**run, wrong: value})
        bomcmc.sample(sampler=sampler, **{**run, meant: value})
    with pytest.raises(bomcmc.BomcmcError, match=r"not take banana \(it takes"):
        bomcmc.sample(sampler="hmc", banana=1, **run)
    # another library's name is told ours only where the sampler takes it
    assert did_you_mean("adapt_delta", ["step_size"]) is None
    assert PEER_NAMES["adapt_delta"] == "target_accept"
    assert did_you_mean("dense_mass", ["mass"]) is None  # a bool there, a string here
    with pytest.raises(bomcmc.BomcmcError, match=r"unknown sampler 'nut' \(did you mean 'nuts'"):
        bomcmc.sample(sampler="nut", **run)
