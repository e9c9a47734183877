"""The command line's help (issue 31, item 6): every option of every subcommand says what it
does, the samplers listed are the registry's, and every default the help states is what a run
records. The parser is built without JAX (tests/test_options.py); the two runs here are a
tiny one and the cheapest run with every default."""

from __future__ import annotations

import argparse
import inspect
import json
import re

import pytest

import bomcmc
from bomcmc.cli import main as cli


def _parsers(parser: argparse.ArgumentParser, path=("bomcmc",)):
    """(the command path, its parser) for the main parser and every subparser, depth first."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, path + (name,))


def _options(parser: argparse.ArgumentParser):
    return [a for a in parser._actions if not isinstance(a, argparse._SubParsersAction)]


def test_every_option_of_every_subcommand_has_help():
    """The defect: `bnn fit` had no help for --folds, --chains, --activation, --pretrain-steps,
    --seed, --overwrite, --no-progress or DATA.csv, `bnn predict` none for DIR or NEW.csv."""
    missing, walked = [], 0
    for path, parser in _parsers(cli.build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helped = {a.dest for a in action._choices_actions if a.help}
                missing += [" ".join(path + (c,)) for c in action.choices if c not in helped]
                continue
            walked += 1
            if not action.help or action.help == argparse.SUPPRESS:
                name = action.option_strings[-1] if action.option_strings else action.metavar
                missing.append(f"{' '.join(path)} {name}")
    assert walked > 100  # sample's sampler flags included
    assert not missing, missing


def test_top_level_help_names_the_model_option_and_sample_lists_every_sampler(capsys):
    """The defect: `bomcmc --help` said "sample a built-in posterior" (no word of --model);
    --sampler's help left out amams, mams, rwm, the im* samplers and kawasaki."""
    assert cli.main(["--help"]) == 0
    assert "--model FILE.py:NAME" in " ".join(capsys.readouterr().out.split())
    assert cli.main(["sample", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    options = text[text.index("options:"):]
    sampler_help = options[options.index("--sampler NAME"):options.index("--out DIR")]
    for name in bomcmc.registry.names():
        assert re.search(rf"\b{name}\b", sampler_help), name
    assert cli.INIT_STRATEGIES == bomcmc.posterior.INIT_STRATEGIES


def _stated_defaults(parser: argparse.ArgumentParser) -> dict:
    """dest -> the text after "default: " in its help, for every option that states one."""
    found = {}
    formatter = parser._get_formatter()
    for a in _options(parser):
        text = formatter._expand_help(a) if a.help else ""  # %(default)s filled in
        m = re.search(r"[(;] ?default: ", " ".join(text.split()))
        if m:
            found[a.dest] = _up_to_close(" ".join(text.split())[m.end():])
    return found


def _up_to_close(text: str) -> str:
    """The text up to the ';' or ')' that ends a parenthesis it is in: "1 s, max(a, b))" ->
    "1 s, max(a, b)"."""
    depth = 0
    for i, c in enumerate(text):
        depth += {"(": 1, ")": -1}.get(c, 0)
        if depth < 0 or (c == ";" and depth == 0):
            return text[:i].strip()
    return text.strip()


def _sample_parser() -> argparse.ArgumentParser:
    return next(p for path, p in _parsers(cli.build_parser()) if path == ("bomcmc", "sample"))


def test_every_stated_default_of_sample_is_what_a_run_records(monkeypatch):
    """The defect: --chunk-size claimed "default: min(100, draws)" and the run recorded 300
    for --draws 300. Here every default `sample --help` states is the parser's, and a run
    given nothing but a posterior records those numbers: the RunSpec that `sample` writes
    to config.json, caught when the run validates it (before any compilation; a whole run
    with the defaults, 4 x 2000 ahmc transitions, took 19 s)."""
    from bomcmc.driver import api

    parser = _sample_parser()
    stated = _stated_defaults(parser)
    keys = {"sampler", "chains", "draws", "warmup", "seed", "thin", "init_jitter",
            "init_strategy", "chunk_size"}
    assert keys <= set(stated), stated
    recorded = {}

    class Recorded(Exception):
        pass

    def record(spec):
        recorded.update(spec.to_json())
        raise Recorded

    monkeypatch.setattr(api.RunSpec, "validate", record)
    args = parser.parse_args(["--posterior", "gauss-2d-corr", "--out", "d"])
    with pytest.raises(Recorded):
        cli.commands.cmd_sample(args)
    for key in keys - {"chunk_size", "init_strategy", "warmup"}:
        default = parser.get_default(key)
        assert type(default)(stated[key]) == default, key  # "0" for 0.0
        assert recorded[key] == default, key
    # --warmup auto: config.json records the cap and that the sampler may stop before it
    assert stated["warmup"] == parser.get_default("warmup") == "auto"
    assert (recorded["warmup"], recorded["warmup_auto"]) == (1000, True)
    assert stated["init_strategy"].startswith("uniform")
    assert recorded["init_strategy"] == "uniform"
    # without --chunk-size: chunks of about a second, within a buffer of max(draws, warmup)
    # draws (up to 2000) rounded up to 1, 2 or 5 times a power of ten, which config.json
    # records
    assert "max(draws, warmup) draws, up to 2000" in stated["chunk_size"]
    assert "rounded up to 1, 2 or 5 times a power of ten" in stated["chunk_size"]
    assert recorded["chunk_seconds"] == 1.0
    assert recorded["chunk_size"] == 1000  # max(1000, 1000)
    # max(300, 1000) is the case the issue reported
    for draws, warmup, buffer in (("300", "auto", 1000), ("300", "150", 500),
                                  ("1200", "150", 2000), ("2500", "150", 2000)):
        args = parser.parse_args(["--posterior", "gauss-2d-corr", "--out", "d", "--draws", draws,
                                  "--warmup", warmup])
        with pytest.raises(Recorded):
            cli.commands.cmd_sample(args)
        assert recorded["chunk_size"] == buffer, (draws, warmup)


def test_bnn_fit_states_the_estimators_defaults():
    """Every default `bnn fit --help` states is the parser's and BayesianMLPRegressor's."""
    from bomcmc.bnn.regressor import BayesianMLPRegressor

    fit = next(p for path, p in _parsers(cli.build_parser()) if path[1:] == ("bnn", "fit"))
    signature = inspect.signature(BayesianMLPRegressor).parameters
    stated = _stated_defaults(fit)
    assert {"folds", "chains", "activation", "pretrain_steps", "seed", "burn_in"} <= set(stated)
    for dest, text in stated.items():
        default = fit.get_default(dest)
        if dest == "inputs":
            continue  # "every other column": None
        want = signature[dest].default
        if isinstance(want, (tuple, list)):
            assert tuple(default) == tuple(want), dest
            assert text.strip("'") == " ".join(map(str, want)), dest
        else:
            assert default == want and text.strip("'") == str(want), dest


def test_init_strategy_init_starts_every_chain_at_the_initial_point(tmp_path, monkeypatch):
    """--init-strategy (the API's init_strategy; Girolami & Calderhead's RMHMC protocol
    starts at the model's initial point): recorded in config.json, and the chains start at
    one point, so their first warm-up draws lie close together."""
    import arviz as az
    import numpy as np

    monkeypatch.setenv("BOMCMC_NO_CACHE", "1")
    out = tmp_path / "run"
    assert cli.main(["sample", "--posterior", "gauss-2d-corr", "--sampler", "hmc",
                     "--step-size", "0.01", "--steps", "1", "--chains", "2", "--draws", "5",
                     "--warmup", "3", "--save-warmup", "--init-strategy", "init",
                     "--no-progress", "--json", "--out", str(out)]) == 0
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["init_strategy"] == "init"
    first = az.from_netcdf(out / "idata.nc").warmup_posterior["x"].values[:, 0]
    assert np.ptp(first, axis=0).max() < 0.1  # one leapfrog step of 0.01 from one start
    assert cli.main(["sample", "--posterior", "gauss-2d-corr", "--init-strategy", "nope",
                     "--out", str(tmp_path / "bad")]) == 2
    # a jitter that uniform starts would ignore is an error, not silently dropped
    assert cli.main(["sample", "--posterior", "gauss-2d-corr", "--init-strategy", "uniform",
                     "--init-jitter", "0.5", "--out", str(tmp_path / "bad")]) == 2
    assert not (tmp_path / "bad").exists()


@pytest.mark.parametrize("argv", [["sample", "--posterior", "p", "--out", "d"],
                                  ["resume", "d"], ["summary", "d"]])
def test_plots_are_opt_in_and_no_plots_is_still_accepted(argv):
    """Plots cost more than a small run (README, "Plots"): opt-in with --plots on every
    command; --no-plots, the old way to turn them off, still parses."""
    p = cli.build_parser()
    assert p.parse_args(argv).plots is False
    assert p.parse_args(argv + ["--plots"]).plots is True
    assert p.parse_args(argv + ["--no-plots"]).plots is False
