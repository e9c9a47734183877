"""experiments/im_sampler.py end to end on a small budget: every method's trials run, the
results JSON is marked complete only at the end, the table prints, and the plots (ACF,
energy traces, IMBayesOpt's GP mean) are written. The figures are not checked here."""

import importlib.util
import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.usefixtures("compilation_cache")  # fixture in conftest.py

SCRIPT = Path(__file__).resolve().parents[1] / "experiments" / "im_sampler.py"


@pytest.mark.slow  # the experiment script end to end: -m slow (CI time)
def test_im_experiment_runs_end_to_end(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("im_sampler", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = tmp_path / "im.json"
    assert mod.main(["--model", "spinglass-9x9x9", "--methods", "IMExpert,Kawasaki,IMBayesOpt",
                     "--trials", "2", "--warmup", "200", "--draws", "300", "--out", str(out),
                     "--plots", str(tmp_path / "fig")]) == 0
    result = json.loads(out.read_text())
    assert result["complete"] and list(result["methods"]) == ["IMExpert", "Kawasaki",
                                                              "IMBayesOpt"]
    for r in result["methods"].values():
        assert len(r["trials"]) == 2 and 0 <= r["summary"]["h"]["mean"] <= 1
    assert result["methods"]["Kawasaki"]["summary"]["mean_k"]["mean"] == 1.0
    assert "| IMBayesOpt |" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "fig").iterdir()) == [
        "spinglass-9x9x9-acf.png", "spinglass-9x9x9-energy.png", "spinglass-9x9x9-gp-mean.png"]
