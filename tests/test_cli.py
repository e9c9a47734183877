"""The `bomcmc` command line: the stable command forms, the files a run leaves, and the
one-line errors for bad input.

Each subprocess pays JAX's start-up (~3 s), so there are ten of them (one `posteriors`, one
tiny `sample` shared by several tests, one `summary --json`, seven failures); the rest of
the checks call `bomcmc.cli.main` in-process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import bomcmc
from bomcmc.cli import main as cli

SRC = Path(__file__).resolve().parents[1] / "src"
TINY = ["--posterior", "gauss-2d-corr", "--sampler", "hmc", "--chains", "2", "--draws", "50",
        "--warmup", "20", "--no-progress"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def cache_dir():
    """The test session's compilation cache (tests/conftest.py): the command-line runs share
    programs with every other test's subprocesses."""
    return Path(os.environ["BOMCMC_CACHE_DIR"])


def run_cli(cache_dir: Path, *args, cwd=None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["BOMCMC_CACHE_DIR"] = str(cache_dir)
    env.pop("BOMCMC_DEBUG", None)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC)] + [p for p in [env.get("PYTHONPATH")] if p])
    return subprocess.run([sys.executable, "-m", "bomcmc", *map(str, args)], env=env,
                          cwd=cwd, capture_output=True, text=True, timeout=600)


def assert_one_line_error(proc: subprocess.CompletedProcess, code: int = 2) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("bomcmc: error: "), proc.stderr
    return lines[0]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, cache_dir):
    """One tiny run through the CLI, with explicit knobs and small chunks (1 warm-up chunk,
    3 sampling chunks) so that resuming it can be checked too."""
    out = tmp_path_factory.mktemp("runs") / "run"
    proc = run_cli(cache_dir, "sample", *TINY, "--seed", "3", "--chunk-size", "20",
                   "--step-size", "0.2", "--steps", "5", "--random-steps", "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return out, proc


# ---------------------------------------------------------------------------------------
# Subprocesses
# ---------------------------------------------------------------------------------------
def test_posteriors_lists_builtins(cache_dir):
    proc = run_cli(cache_dir, "posteriors")
    assert proc.returncode == 0, proc.stderr
    names = {line.split()[0] for line in proc.stdout.splitlines() if line.strip()}
    assert {"gauss-2d-corr", "logistic-german"} <= names
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("gauss-2d-corr "))
    assert "Gaussian" in line  # a description follows the name


def test_sample_writes_run_directory(run_dir):
    out, proc = run_dir
    for name in ("idata.nc", "run.json", "config.json"):
        assert (out / name).is_file(), name
    # issue 31: plots are opt-in (they took 4.2 s of a 13.7 s small run): none unless asked
    assert not list(out.glob("*.png"))
    # the total wall time, not only the sampler's wall=
    last = proc.stdout.splitlines()[-1]
    assert last.startswith("total wall time: the run ") and "this command" in last, last
    assert len(list((out / "chunks").glob("*.npz"))) == 4
    # the summary table went to stdout
    assert proc.stdout.splitlines()[0].split()[:2] == ["variable", "mean"]
    assert "x[0]" in proc.stdout and "x[1]" in proc.stdout
    # only the knobs given were passed, under the sampler's keyword names
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["knobs"] == {"step_size": 0.2, "steps": 5, "random_steps": True}
    assert (cfg["posterior"], cfg["sampler"], cfg["chains"], cfg["draws"], cfg["warmup"],
            cfg["seed"], cfg["chunk_size"]) == ("gauss-2d-corr", "hmc", 2, 50, 20, 3, 20)


def test_exit_now_flushes_runs_exit_handlers_and_keeps_the_status():
    """The command's process skips the interpreter's teardown (`cli.main.exit_now`), and
    still flushes its output, joins its threads, runs its exit handlers and exits with the
    command's status."""
    code = ("import atexit, sys, threading, time\n"
            "from bomcmc.cli.main import exit_now\n"
            "atexit.register(lambda: print('handler', file=sys.stderr))\n"
            "atexit.register(lambda: print('bye', end=''))\n"
            "threading.Thread(target=lambda: (time.sleep(0.2), print('thread'))).start()\n"
            "print('out', end='')\n"
            "exit_now(3)\n")
    proc = _python(code)
    assert (proc.returncode, proc.stdout, proc.stderr) == (3, "outthread\nbye", "handler\n")


def test_exit_now_exits_as_python_does_under_a_profiler():
    """cProfile writes its report after the command returns: under a profiler (or a tracer:
    coverage, a debugger) `exit_now` leaves by Python's own exit."""
    code = ("import sys\n"
            "from bomcmc.cli.main import exit_now\n"
            "sys.setprofile(lambda *a: None)\n"
            "try:\n    exit_now(3)\n"
            "except SystemExit as e:\n    sys.setprofile(None)\n    print('exit', e.code)\n")
    proc = _python(code)
    assert (proc.returncode, proc.stdout) == (0, "exit 3\n"), proc.stderr


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=str(SRC)),
                          capture_output=True, text=True, timeout=60)


def test_summary_json(run_dir, cache_dir):
    out, _ = run_dir
    proc = run_cli(cache_dir, "summary", out, "--json")
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)
    assert set(s) == {"variables", "run", "warnings"}
    x = s["variables"]["x"]
    assert {"mean", "sd", "mcse_mean", "ess_bulk", "ess_tail", "r_hat"} <= set(x)
    assert len(x["mean"]) == 2
    run = s["run"]
    assert {"n_grad", "wall_s", "ess_per_grad", "ess_per_s", "divergences",
            "accept_mean"} <= set(run)
    for k in ("ess_per_grad", "ess_per_s"):
        assert set(run[k]) == {"min", "median", "max"}
    assert run["n_grad"] > 0 and run["chains"] == 2 and run["draws"] == 50
    assert run["tuner"] == "fixed"  # no host tuner: the table prints no tuner line
    # summary writes no plot unless asked
    assert not (out / "trace.png").exists() and not (out / "autocorr.png").exists()
    # in-process: a second subprocess would pay JAX's, ArviZ's and matplotlib's imports again
    assert cli.main(["summary", str(out), "--plots"]) == 0
    for name in ("trace.png", "autocorr.png", "rank.png", "energy.png"):  # hmc: energy
        assert (out / name).is_file(), name


def test_summary_without_plots_writes_no_file(run_dir):
    out, _ = run_dir
    before = sorted(p.name for p in out.rglob("*"))
    stamp = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    assert cli.main(["summary", str(out), "--no-plots"]) == 0
    assert sorted(p.name for p in out.rglob("*")) == before
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} == stamp


def test_summary_of_one_variable_and_an_unwritable_plot(run_dir, tmp_path, capsys):
    """--var restricts the table; a plot path that is a directory is a warning, exit 0."""
    import shutil

    out, _ = run_dir
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    (copy / "trace.png").unlink(missing_ok=True)
    (copy / "trace.png").mkdir()
    assert cli.main(["summary", str(copy), "--var", "x", "--plots", "--json"]) == 0
    captured = capsys.readouterr()
    assert list(json.loads(captured.out)["variables"]) == ["x"]
    assert "trace.png: not written" in captured.err
    assert cli.main(["summary", str(copy), "--var", "nope"]) == 2
    assert "no variable 'nope'" in capsys.readouterr().err


def test_sample_into_nonempty_run_dir_needs_overwrite(run_dir, cache_dir):
    out, _ = run_dir
    before = sorted(p.name for p in out.rglob("*"))
    proc = run_cli(cache_dir, "sample", *TINY, "--out", out)
    line = assert_one_line_error(proc)
    assert "not empty" in line and "--overwrite" in line
    assert sorted(p.name for p in out.rglob("*")) == before  # untouched


def _malformed_config(tmp_path: Path, run: Path) -> Path:
    d = tmp_path / "malformed"
    shutil.copytree(run, d)  # a complete run except for its configuration
    (d / "config.json").write_text('{"posterior": "gauss-2d-corr", ')
    return d


def _not_a_run(tmp_path: Path, run: Path) -> Path:
    d = tmp_path / "not-a-run"
    d.mkdir()
    (d / "notes.txt").write_text("hello\n")
    return d


ERROR_CASES = {
    "unknown-posterior": (lambda t, r: ["sample", "--posterior", "no-such-posterior",
                                        "--no-progress", "--out", t / "o"], "no-such-posterior"),
    "negative-draws": (lambda t, r: ["sample", *TINY, "--draws", "-5", "--out", t / "o"],
                       "--draws"),
    "zero-step-size": (lambda t, r: ["sample", *TINY, "--step-size", "0", "--out", t / "o"],
                       "--step-size"),
    "summary-missing-dir": (lambda t, r: ["summary", t / "does-not-exist"], "does-not-exist"),
    "summary-malformed-config": (lambda t, r: ["summary", _malformed_config(t, r)],
                                 "config.json"),
    "resume-not-a-run": (lambda t, r: ["resume", _not_a_run(t, r)], "not-a-run"),
}


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_bad_input_is_one_line(case, tmp_path, run_dir, cache_dir):
    make_args, needle = ERROR_CASES[case]
    proc = run_cli(cache_dir, *make_args(tmp_path, run_dir[0]))
    line = assert_one_line_error(proc)
    assert needle in line
    assert not (tmp_path / "o").exists()  # a failed `sample` left no run behind


# ---------------------------------------------------------------------------------------
# In-process: the parser, the error paths, resume, the plots
# ---------------------------------------------------------------------------------------
def test_sample_kwargs_pass_only_given_knobs():
    p = cli.build_parser()
    kw = cli.commands.sample_kwargs(p.parse_args(["sample", "--posterior", "gauss-2d-corr",
                                                  "--out", "d"]))
    assert not {"step_size", "steps", "random_steps"} & set(kw)
    assert (kw["sampler"], kw["chains"], kw["draws"], kw["warmup"], kw["seed"]) == \
        (bomcmc.registry.DEFAULT, 4, 1000, "auto", 0)  # the CLI's default is the API's
    # progress None: a bar on a terminal only
    assert kw["progress"] is None and kw["overwrite"] is False and kw["float64"] is False
    kw = cli.commands.sample_kwargs(p.parse_args(
        ["sample", "--posterior", "p", "--out", "d", "--step-size", "0.05", "--steps", "7",
         "--random-steps", "--thin", "2", "--chunk-size", "10", "--float64", "--overwrite",
         "--no-progress", "--init-jitter", "0.5"]))
    assert (kw["step_size"], kw["steps"], kw["random_steps"]) == (0.05, 7, True)
    assert (kw["thin"], kw["chunk_size"], kw["float64"], kw["overwrite"], kw["progress"],
            kw["init_jitter"]) == (2, 10, True, True, False, 0.5)


@pytest.mark.parametrize("argv, needle", [
    ([], "COMMAND"),
    (["frobnicate"], "frobnicate"),
    (["sample", "--posterior", "gauss-2d-corr"], "--out"),
    (["sample", "--posterior", "p", "--out", "d", "--steps", "2.5"], "--steps"),
    (["sample", "--posterior", "p", "--out", "d", "--step-size", "nan"], "--step-size"),
    (["sample", "--posterior", "p", "--out", "d", "--warmup", "-1"], "--warmup"),
    (["sample", "--posterior", "p", "--out", "d", "--init-jitter", "-1"], "--init-jitter"),
    (["summary", "a", "b"], "unrecognized"),
])
def test_usage_errors_in_process(argv, needle, capsys):
    assert cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("bomcmc: error: ") and needle in err


def test_help_exits_zero(capsys):
    assert cli.main(["sample", "--help"]) == 0
    assert "--step-size" in capsys.readouterr().out


def test_internal_error_and_interrupt(monkeypatch, capsys):
    def boom(args):
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setitem(cli.COMMANDS, "posteriors", boom)
    monkeypatch.delenv("BOMCMC_DEBUG", raising=False)
    assert cli.main(["posteriors"]) == 1
    err = capsys.readouterr().err
    assert err == ("bomcmc: internal error: RuntimeError: boom second line "
                   "(set BOMCMC_DEBUG=1 for the traceback)\n")
    monkeypatch.setenv("BOMCMC_DEBUG", "1")
    with pytest.raises(RuntimeError, match="boom"):
        cli.main(["posteriors"])

    def interrupt(args):
        raise KeyboardInterrupt

    monkeypatch.setitem(cli.COMMANDS, "posteriors", interrupt)
    assert cli.main(["posteriors"]) == 130
    assert capsys.readouterr().err == "bomcmc: error: interrupted\n"


def test_resume_continues_bit_for_bit(run_dir, tmp_path, monkeypatch, capsys):
    import arviz as az
    import jax

    out, _ = run_dir
    d = tmp_path / "cut"
    shutil.copytree(out, d)
    for name in ("idata.nc", "run.json"):
        (d / name).unlink()
    for name in ("000002.npz", "000003.npz"):  # keep warm-up and the first sampling chunk
        (d / "chunks" / name).unlink()
    monkeypatch.setenv("BOMCMC_NO_CACHE", "1")  # leave this process's JAX config alone
    assert cli.main(["resume", str(d), "--no-progress", "--json", "--plots"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["run"]["draws"] == 50
    for name in ("idata.nc", "run.json", "trace.png", "autocorr.png"):
        assert (d / name).is_file(), name
    a = az.from_netcdf(out / "idata.nc").posterior["x"].values
    b = az.from_netcdf(d / "idata.nc").posterior["x"].values
    if jax.config.read("jax_enable_x64"):  # another test switched this process to float64
        assert a.shape == b.shape
    else:
        np.testing.assert_array_equal(a, b)


def _fake_idata(chains=3, draws=120):
    import arviz as az

    rng = np.random.default_rng(0)
    post = {
        "mu": rng.normal(size=(chains, draws)),
        "beta": np.cumsum(rng.normal(size=(chains, draws, 10)), axis=1) * 0.1,
        "L": rng.normal(size=(chains, draws, 2, 2)),
    }
    post["mu"][0, 5] = np.nan  # a non-finite draw must not break the histogram
    idata = az.from_dict(posterior=post)
    idata.posterior.attrs.update({"posterior": "fake", "sampler": "hmc"})
    return idata


def test_plot_labels_and_files(tmp_path):
    from bomcmc.diagnostics import plots

    idata = _fake_idata()
    labels = [label for label, _ in plots.coordinates(idata)]
    assert labels[:3] == ["mu", "beta[0]", "beta[1]"] and labels[-1] == "L[1, 1]"
    assert len(labels) == 1 + 10 + 4
    assert [label for label, _ in plots.coordinates(idata, 4)] == labels[:4]
    p = plots.plot_trace(idata, tmp_path / "t.png", max_coords=5)
    assert p == tmp_path / "t.png" and p.read_bytes()[:8] == PNG_MAGIC
    q = plots.plot_autocorr(idata, tmp_path / "a.png", max_coords=20, max_lag=500)
    assert q.read_bytes()[:8] == PNG_MAGIC
    with pytest.raises(ValueError, match="max_coords"):
        plots.plot_trace(idata, tmp_path / "x.png", max_coords=0)
    assert plots.plot_rank(idata, tmp_path / "r.png").read_bytes()[:8] == PNG_MAGIC
    assert not plots.has_energy(idata)
    with pytest.raises(ValueError, match="energy"):
        plots.plot_energy(idata, tmp_path / "e.png")
    import matplotlib.pyplot as plt

    assert plt.get_fignums() == []  # figures are closed


def test_the_console_script_entry_point_resolves():
    """pyproject's `bomcmc = "module:function"` names a callable that runs the command line
    (a refactor once left it pointing at a package). It ends its process (`exit_now`), so it
    runs in one, as the installed script calls it."""
    import importlib
    import tomllib
    from pathlib import Path

    meta = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    module, _, attr = meta["project"]["scripts"]["bomcmc"].partition(":")
    assert callable(getattr(importlib.import_module(module), attr))
    env = dict(os.environ, PYTHONPATH=str(SRC))
    proc = subprocess.run([sys.executable, "-c", f"import sys; from {module} import {attr}; "
                           f"sys.exit({attr}())", "--version"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("bomcmc "), proc


def test_arviz_plots_mark_divergences_and_draw_the_energy(tmp_path):
    """The trace plot marks each divergent transition (ArviZ draws them as ticks below the
    trace); the energy plot gets each chain's E-BFMI; titles name a user's own posterior."""
    import arviz as az
    import matplotlib.pyplot as plt

    from bomcmc.diagnostics import plots

    idata = _fake_idata(chains=2, draws=100)
    rng = np.random.default_rng(1)
    diverging = np.zeros((2, 100), bool)
    diverging[0, [10, 50]] = diverging[1, 70] = True
    idata.add_groups(sample_stats={"diverging": diverging,
                                   "energy": rng.normal(size=(2, 100))})
    idata.posterior.attrs.update({"posterior": "custom", "posterior_name": "my-model"})
    seen = {}
    real_close = plt.close

    def keep(fig=None):
        seen["fig"] = fig
        return real_close(fig)

    plt.close = keep
    try:
        plots.plot_trace(idata, tmp_path / "t.png", max_coords=2)
        fig = seen["fig"]
        assert fig._suptitle.get_text().startswith("trace | my-model | hmc")
        marks = [ln for ax in fig.axes for ln in ax.get_lines()
                 if len(ln.get_xdata()) and set(np.round(ln.get_xdata(), 6)) <= {10, 50, 70}]
        assert {x for ln in marks for x in ln.get_xdata()} == {10, 50, 70}
        plots.plot_energy(idata, tmp_path / "e.png")
        legend = seen["fig"].axes[0].get_legend()
        assert sum("BFMI" in t.get_text() for t in legend.get_texts()) == 2
        assert seen["fig"]._suptitle.get_text() == "energy | my-model | hmc"
    finally:
        plt.close = real_close
    assert az.bfmi(idata).shape == (2,)
    assert plots.has_energy(idata)
    idata.posterior.attrs["sampler"] = "neal_gibbs"  # a Gibbs-within-HMC energy: no plot
    assert not plots.has_energy(idata)


def test_spin_samplers_from_the_command_line(tmp_path, capsys):
    """`--sampler im --k 1 3 --gamma 0.2` runs a policy of two settings on a built-in spin
    posterior; a spin sampler on a continuous posterior is a one-line error."""
    out = tmp_path / "im"
    argv = ["sample", "--posterior", "ising-4x4", "--sampler", "im", "--k", "1", "3",
            "--gamma", "0.2", "--chains", "2", "--draws", "200", "--warmup", "0", "--seed",
            "1", "--no-progress", "--json", "--out", str(out)]
    assert cli.main(argv) == 0
    capsys.readouterr()
    res = bomcmc.load(out)
    assert json.loads((out / "config.json").read_text())["knobs"] == {"k": [1, 3],
                                                                      "gamma": [0.2]}
    assert set(np.unique(res.idata.sample_stats.n_steps // 2).tolist()) == {1, 3}
    bad = ["sample", "--posterior", "gauss-2d-corr", "--sampler", "im", "--out",
           str(tmp_path / "bad"), "--no-progress"]
    assert cli.main(bad) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "samples spin models" in err
    assert not (tmp_path / "bad" / "idata.nc").exists()


def test_arviz_is_imported_beside_the_run_only_after_the_commands_own_imports(tmp_path):
    """Two threads importing one package at once can see a module half initialised: the
    command starts ArviZ's import thread (`commands.preload_arviz`) only once `bomcmc.sample`
    and SciPy are imported (a thread started before them failed in a fresh environment)."""
    code = ("import sys\n"
            "from bomcmc.cli import commands, main\n"
            "def preload():\n"
            "    print(all(m in sys.modules for m in ('bomcmc.public', 'scipy.stats',\n"
            "          'scipy.spatial.distance', 'scipy.optimize')), 'arviz' in sys.modules)\n"
            "    raise SystemExit(0)\n"
            "commands.preload_arviz = preload\n"
            f"main.main(['sample', '--posterior', 'gauss-2d-corr', '--out', {str(tmp_path / 'r')!r}])\n")
    proc = _python(code)
    assert (proc.returncode, proc.stdout) == (0, "True False\n"), proc.stderr


def test_import_in_thread_hides_a_module_until_done(tmp_path, monkeypatch):
    """The command imports ArviZ in a thread with Numba hidden (`commands.preload_arviz`):
    the module imported sees the hidden one as absent, which is importable again after."""
    from bomcmc.driver import api

    (tmp_path / "bomcmc_probe_hidden.py").write_text("")
    (tmp_path / "bomcmc_probe.py").write_text(
        "try:\n    import bomcmc_probe_hidden\n    FOUND = True\n"
        "except ImportError:\n    FOUND = False\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("bomcmc_probe", "bomcmc_probe_hidden"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    api.import_in_thread("bomcmc_probe", hide="bomcmc_probe_hidden").join()
    assert sys.modules["bomcmc_probe"].FOUND is False
    assert "bomcmc_probe_hidden" not in sys.modules
    import bomcmc_probe_hidden  # noqa: F401
    assert api.import_in_thread("bomcmc_probe", hide="bomcmc_probe_hidden") is None
