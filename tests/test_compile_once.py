"""Compile once per shape: a model's data are the inputs of the compiled programs, not
constants in them, so a fit on other data of the same shapes loads every executable from
JAX's persistent cache, which `sample` turns on by default and several processes share."""

import contextlib
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import bomcmc

pytestmark = pytest.mark.usefixtures("compilation_cache")  # fixture in conftest.py

# Neal's scheme at a fixed L: the number of draws, and so every shape, is the budget's
NET = dict(hidden=(3,), super_transitions=3, budget=150, pretrain_steps=50, progress=False,
           sampler="neal_gibbs", steps=10)


def _cache_events(fn) -> Counter:
    """The persistent cache's hits and misses while `fn()` runs."""
    from jax import monitoring

    events = Counter()

    def listen(name, **_):
        if name.startswith("/jax/compilation_cache/cache_"):
            events[name.rsplit("/", 1)[1]] += 1

    monitoring.register_event_listener(listen)
    try:
        fn()
    finally:
        monitoring.unregister_event_listener(listen)
    return events


def _data(n: int, seed: int):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    return X, np.sin(X[:, 0]) + 0.1 * rng.normal(size=n)


def test_a_second_fit_on_new_data_of_the_same_shape_compiles_nothing():
    bomcmc.BayesianMLPRegressor(**NET).fit(*_data(61, 0))
    # new data, and a case more (a cross-validation fold a case larger), padded to the same
    # 64 cases: compiled once
    again = _cache_events(lambda: bomcmc.BayesianMLPRegressor(**NET).fit(*_data(62, 2)))
    assert again["cache_misses"] == 0 and again["cache_hits"] >= 4, again
    # the count can fail: data of another shape compile anew
    other = _cache_events(lambda: bomcmc.BayesianMLPRegressor(**NET).fit(*_data(90, 3)))
    assert other["cache_misses"] >= 4, other


RUN = """
import sys
from jax import monitoring
import bomcmc
hits = []
monitoring.register_event_listener(
    lambda name, **_: hits.append(name) if name.endswith("cache_hits") else None)
bomcmc.sample(posterior="logistic-heart", sampler="hmc", step_size=0.05, steps=5, chains=2,
              draws=20, warmup=0, progress=False)
print("hits", len(hits))
"""


def test_sample_uses_a_shared_persistent_cache_by_default(tmp_path):
    """Two processes fill one cache at once, then a third loads its programs from it."""
    env = {**os.environ, "BOMCMC_CACHE_DIR": str(tmp_path), "PYTHONPATH":
           str(Path(__file__).resolve().parents[1] / "src") + os.pathsep
           + os.environ.get("PYTHONPATH", "")}
    env.pop("BOMCMC_NO_CACHE", None)
    env.pop("BOMCMC_CACHE_MAX_BYTES", None)  # the default: capped, locked, shared

    def start():
        return subprocess.Popen([sys.executable, "-c", RUN], env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    outs = [p.communicate(timeout=120) for p in [start(), start()]]
    outs.append(start().communicate(timeout=120))
    for out, err in outs:
        assert "Error reading persistent compilation cache" not in err, err[-2000:]
        assert out.startswith("hits"), err[-2000:]
    assert any((tmp_path / "jax").iterdir())
    assert int(outs[-1][0].split()[1]) >= 2  # the chains' start and the chunk, from the cache


BUILD = """
from jax import monitoring
import numpy as np, numpyro, numpyro.distributions as dist
import bomcmc
events = []
monitoring.register_event_listener(
    lambda name, **_: events.append(name.rsplit("/", 1)[1]) if "cache" in name else None)

def model(sigma, y=None):
    mu = numpyro.sample("mu", dist.Normal(0, 5))
    tau = numpyro.sample("tau", dist.HalfCauchy(5))
    with numpyro.plate("J", len(sigma)):
        theta = numpyro.sample("theta", dist.Normal(mu, tau))
        numpyro.sample("obs", dist.Normal(theta, sigma), obs=y)

bomcmc.from_numpyro(model, np.array([15.0, 10, 16, 11]), y=np.array([28.0, 8, -3, 7]))
print("hits", events.count("cache_hits"), "misses", events.count("cache_misses"),
      "uncached", events.count("compile_requests_use_cache") - events.count("cache_hits")
      - events.count("cache_misses"))  # compiled while the cache was not yet on
"""


def test_a_numpyro_model_built_in_a_new_process_finds_its_programs_in_the_cache(tmp_path):
    """NumPyro initialises a model op by op, each new primitive and shape a small program
    (about a hundred, several seconds, docs/benchmarks.md). `from_numpyro` turns the
    persistent cache on first, before its data check traces the model, so a second process
    finds them there; built before the cache was on, as `sample` alone turns it on, none was
    written (0 misses, 0 hits), and a program compiled before it was on is never looked up
    ("uncached": 23 of this model's 103 when the data check ran first)."""
    env = {**os.environ, "BOMCMC_CACHE_DIR": str(tmp_path), "PYTHONPATH":
           str(Path(__file__).resolve().parents[1] / "src") + os.pathsep
           + os.environ.get("PYTHONPATH", "")}
    env.pop("BOMCMC_NO_CACHE", None)

    def build():
        out = subprocess.run([sys.executable, "-c", BUILD], env=env, text=True,
                             capture_output=True, timeout=120)
        assert out.stdout.startswith("hits"), out.stderr[-2000:]
        _, hits, _, misses, _, uncached = out.stdout.split()
        return int(hits), int(misses), int(uncached)

    first, second = build(), build()
    assert first[1] >= 20, first  # written by the first process
    assert second[0] >= 20 and second[1] <= first[1] // 4, (first, second)
    assert first[2] == second[2] == 0, (first, second)


def test_a_cache_holding_uncapped_entries_still_takes_new_programs(tmp_path, monkeypatch):
    """A program cached with no size cap (by bomcmc before it set one, or by another program
    sharing the directory) has no access-time file; JAX's capped cache then failed every
    write (its eviction reads that file), so no new program was cached again. bomcmc dates
    such entries when it turns the cache on."""
    import warnings

    import jax

    (tmp_path / "jax").mkdir()
    (tmp_path / "jax" / f"jit_old-{'0' * 64}-cache").write_bytes(b"an uncapped entry")
    before = jax.config.jax_compilation_cache_dir
    try:
        with monkeypatch.context() as m:
            m.delenv("BOMCMC_CACHE_MAX_BYTES", raising=False)  # the default cap
            bomcmc.enable_compilation_cache(tmp_path / "jax")
        assert jax.config.jax_compilation_cache_max_size == bomcmc.config.CACHE_MAX_BYTES
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # JAX warns when it cannot write an entry
            jax.jit(lambda x: jax.numpy.sin(x) * 3.25 + 0.5)(np.arange(7.0)).block_until_ready()
        new = [p.name for p in (tmp_path / "jax").glob("*-cache") if "jit_old" not in p.name]
        assert new, "the new program was not cached"
    finally:
        bomcmc.enable_compilation_cache(before)  # the session's settings (tests/conftest.py)


def test_the_cache_cap_is_read_from_the_environment(tmp_path, monkeypatch):
    """BOMCMC_CACHE_MAX_BYTES: a cap in bytes, or -1 for none (then JAX takes no lock and
    keeps no access times); anything else is a one-line error naming the variable."""
    import jax

    from bomcmc.errors import BomcmcError

    before = jax.config.jax_compilation_cache_dir
    try:
        for text, cap in (("-1", -1), ("1000000", 1000000)):
            monkeypatch.setenv("BOMCMC_CACHE_MAX_BYTES", text)
            d = bomcmc.enable_compilation_cache(tmp_path / text)
            assert jax.config.jax_compilation_cache_max_size == cap
            jax.jit(lambda x, c=cap: x * 2.5 + c)(np.arange(3.0)).block_until_ready()
            assert any(d.glob("*-cache"))
            assert any(d.glob("*-atime")) == (cap != -1)
        for bad in ("0", "-2", "4GB"):
            monkeypatch.setenv("BOMCMC_CACHE_MAX_BYTES", bad)
            with pytest.raises(BomcmcError, match="BOMCMC_CACHE_MAX_BYTES"):
                bomcmc.enable_compilation_cache(tmp_path / "bad")
    finally:
        monkeypatch.undo()  # the session's environment, then its cache (tests/conftest.py)
        bomcmc.enable_compilation_cache(before)


def _regression(x, y):
    import numpyro
    import numpyro.distributions as dist

    beta = numpyro.sample("beta", dist.Normal(0.0, 1.0))
    numpyro.sample("y", dist.Normal(beta * x, 1.0), obs=y)


def _grouped(group, y):
    import numpyro
    import numpyro.distributions as dist

    mu = numpyro.sample("mu", dist.Normal(0.0, 1.0).expand([int(group.max()) + 1]))
    numpyro.sample("y", dist.Normal(mu[group], 1.0), obs=y)


def test_a_numpyro_model_on_new_data_of_the_same_shape_compiles_nothing():
    rng = np.random.default_rng(0)
    run = dict(sampler="hmc", step_size=0.1, steps=5, chains=2, draws=20, warmup=0,
               progress=False)

    def sample(seed):
        x = rng.normal(size=30)
        post = bomcmc.from_numpyro(_regression, x, 0.5 * x + rng.normal(size=30))
        assert post.data is not None  # the arrays are the chunk's inputs
        bomcmc.sample(posterior=post, seed=seed, **run)

    sample(0)
    again = _cache_events(lambda: sample(1))
    assert again["cache_misses"] == 0 and again["cache_hits"] >= 2, again
    # a model that reads its data's values while traced keeps them as constants, and runs
    group = np.arange(30) % 3
    post = bomcmc.from_numpyro(_grouped, group, rng.normal(size=30))
    assert post.data is None
    res = bomcmc.sample(posterior=post, **run)
    assert res.idata.posterior["mu"].shape == (2, 20, 3)


def _gaussian(x):
    return -0.5 * jnp.sum((x - 1.0) ** 2 / jnp.array([1.0, 4.0]))


@contextlib.contextmanager
def _counting_chunk_builds():
    """A list that gets an entry each time a run traces its chunk program anew."""
    from bomcmc.driver import engine

    traced, build = [], engine.build_chunk_fn

    def counting(*args, **kw):
        traced.append(1)
        return build(*args, **kw)

    engine.build_chunk_fn = counting
    try:
        yield traced
    finally:
        engine.build_chunk_fn = build


@pytest.mark.filterwarnings("ignore::bomcmc.SamplingWarning")
def test_a_second_run_of_the_same_posterior_reuses_its_program():
    """Another seed, other draws, another warm-up length, other knob values: the same
    program, reused in the process without tracing it again; its draws are those of a run
    that compiles it anew. A run that changes the program (another buffer) compiles its
    own."""
    from bomcmc.driver import engine

    post = bomcmc.Posterior(_gaussian, jnp.zeros(2), name="gauss")
    run = dict(posterior=post, sampler="hmc", chains=2, warmup=20, draws=30, chunk_size=50,
               progress=False, adapt="none")
    bomcmc.sample(seed=0, **run, step_size=0.5)
    with _counting_chunk_builds() as traced:
        again = bomcmc.sample(seed=1, **{**run, "draws": 40}, step_size=0.4)
        assert traced == [] and again.totals["compile_s"] < 0.5
        engine.PROGRAMS.clear()
        anew = bomcmc.sample(seed=1, **{**run, "draws": 40}, step_size=0.4)
        assert traced == [1]
        bomcmc.sample(seed=1, **{**run, "warmup": 21}, step_size=0.4)
        assert traced == [1]
        bomcmc.sample(seed=1, **{**run, "chunk_size": 51}, step_size=0.4)
        assert traced == [1, 1]
    for var in ("x",):
        np.testing.assert_array_equal(again.idata.posterior[var].values,
                                      anew.idata.posterior[var].values)


@pytest.mark.filterwarnings("ignore::bomcmc.SamplingWarning")
def test_runs_of_other_lengths_with_stans_warm_up_share_one_program():
    """NUTS with Stan's windowed warm-up: the warm-up's length is an argument of the chunk,
    not a constant in it, and the default buffer is rounded up (120 and 150 warm-up
    transitions both fill a buffer of 200), so the second run traces nothing; its adaptation
    still ends where its own warm-up does (the step sizes differ)."""
    from bomcmc.driver import engine

    post = bomcmc.Posterior(_gaussian, jnp.zeros(2), name="gauss")
    run = dict(posterior=post, sampler="nuts", chains=2, draws=60, progress=False, seed=3)
    first = bomcmc.sample(warmup=120, **run)
    with _counting_chunk_builds() as traced:
        second = bomcmc.sample(warmup=150, **run)
        assert traced == []
        engine.PROGRAMS.clear()
        anew = bomcmc.sample(warmup=150, **run)
        assert traced == [1]
    np.testing.assert_array_equal(second.idata.posterior["x"].values,
                                  anew.idata.posterior["x"].values)
    steps = [r.idata.sample_stats["step_size"].values[:, 0] for r in (first, second)]
    assert not np.array_equal(*steps)


def test_a_second_ahmc_run_reuses_its_start_and_its_tuners_compiled_functions():
    """AHMC's L-BFGS start, Stan's step-size heuristic and the Laplace metric's Hessian are
    compiled once per posterior in a process (`config.Latest` caches, keyed by the flattened
    posterior's log density): a second run adds no entry to them, and its draws are those
    of a run that builds them anew."""
    from bomcmc import config
    from bomcmc.driver import engine
    from bomcmc.tuning import learned_metric, step_heuristic

    post = bomcmc.Posterior(_gaussian, jnp.zeros(2), name="gauss")
    run = dict(posterior=post, sampler="ahmc", chains=4, warmup=40, draws=20, progress=False)
    bomcmc.sample(seed=0, **run)
    caches = (engine.PROGRAMS, step_heuristic._COMPILED, learned_metric._HESSIANS)
    before = [c.keys() for c in caches]
    assert all(before), before
    again = bomcmc.sample(seed=1, **run)
    assert [c.keys() for c in caches] == before
    config.clear_caches()
    anew = bomcmc.sample(seed=1, **run)
    np.testing.assert_array_equal(again.idata.posterior["x"].values,
                                  anew.idata.posterior["x"].values)


def test_a_built_in_posterior_is_built_once_and_its_runs_share_a_program():
    from bomcmc import models
    from bomcmc.driver import engine

    post = models.get("gauss-2d-corr")
    assert models.get("gauss-2d-corr") is post and models.get("gauss-2d-corr-wide") is not post
    run = dict(posterior="gauss-2d-corr", sampler="hmc", chains=2, warmup=10, draws=10,
               chunk_size=20, progress=False, adapt="none", step_size=0.1)
    bomcmc.sample(seed=0, **run)
    programs = engine.PROGRAMS.keys()
    bomcmc.sample(seed=1, **run)
    assert engine.PROGRAMS.keys() == programs  # no program added: the same one ran


def test_a_sampler_built_for_a_posterior_is_built_once():
    """rmhmc is built for its posterior; the same posterior gets the same kernel, so its runs
    share a program; another posterior gets its own."""
    from bomcmc import models, registry

    post = models.get("logistic-heart")
    a = registry.get("rmhmc", post)
    assert registry.get("rmhmc", post) is a
    assert registry.get("rmhmc", models.get("logistic-pima")).kernel is not a.kernel
