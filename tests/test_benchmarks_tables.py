"""The generated parts of docs/benchmarks.md and docs/logistic_ess.md are what the table
writers (benchmarks/harness/tables.py, experiments/logistic/tables.py) make of the committed
results: the runs named in the document (benchmarks/results/<tag>.json) and
docs/logistic_ess.json. No sampling: this checks the writers, the NUTS comparison, the
pooling of repeats and the medians over them, in well under a second."""

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # benchmarks/ and experiments/logistic/, as the scripts do

from benchmarks.harness import tables as bench_tables  # noqa: E402
from experiments.logistic import tables as ess_tables  # noqa: E402


def _block(text: str, begin: str, end: str) -> str:
    return begin + text.split(begin, 1)[1].split(end, 1)[0] + end


def test_benchmarks_doc_is_regenerated_from_its_results(tmp_path):
    doc = (ROOT / "docs" / "benchmarks.md").read_text()
    block = _block(doc, bench_tables.BEGIN, bench_tables.END)
    tags = re.findall(r"^### Run `([\w.\-]+)`", block, flags=re.M)
    assert tags
    results = [json.loads((ROOT / "benchmarks" / "results" / f"{t}.json").read_text())
               for t in tags]
    out = tmp_path / "benchmarks.md"
    bench_tables.write_doc(results, out)
    assert _block(out.read_text(), bench_tables.BEGIN, bench_tables.END) == block


def test_logistic_ess_doc_is_regenerated_from_its_results(tmp_path):
    doc = (ROOT / "docs" / "logistic_ess.md").read_text()
    result = json.loads((ROOT / "docs" / "logistic_ess.json").read_text())
    path = ess_tables.write_doc(result, tmp_path, tmp_path / "logistic_ess.png",
                                tmp_path / "logistic_ess.json")
    assert (_block(path.read_text(), ess_tables.BEGIN, ess_tables.END)
            == _block(doc, ess_tables.BEGIN, ess_tables.END))
