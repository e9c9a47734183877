"""The package's layers import one way only, and no subpackages import each other in a cycle.

Every module of src/bomcmc is read with `ast` (nothing is imported). A module belongs to a
unit: its subpackage (`kernels`, `driver`, ...) or, at the top level, its own name. A unit may
import only units of a lower layer (docs/architecture.md draws the same table).
"""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "bomcmc"

LAYERS = [
    {"errors", "_version"},
    {"config"},
    {"validation", "options", "distributed", "data"},
    {"posterior", "datasets", "store", "schemas", "knob_box"},
    {"kernels", "models"},  # kernels never import models, nor models kernels
    {"adaptation"},  # in-jit warm-up
    {"tuning"},  # host-side tuning
    {"registry", "diagnostics"},
    {"driver"},
    {"bnn"},  # the network application: nothing in the core imports it
    {"__init__", "public"},  # the public API (public: sample and resume over the driver)
    {"cli"},  # the command line, which calls the public API
    {"__main__"},
]
RANK = {unit: i for i, layer in enumerate(LAYERS) for unit in layer}


def unit_of(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def module_name(path: Path) -> list[str]:
    rel = path.relative_to(SRC).with_suffix("")
    parts = ["bomcmc", *rel.parts]
    return parts[:-1] if parts[-1] == "__init__" else parts


def imported_units(path: Path) -> set[tuple[str, int]]:
    """(unit, line) of every bomcmc module `path` imports, relative imports resolved."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module_name(path) if path.name == "__init__.py" else module_name(path)[:-1]
    found = set()
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Import):  # `import bomcmc` is the package's __init__
            targets = [alias.name.split(".") + (["__init__"] if alias.name == "bomcmc" else [])
                       for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                mod = base + (node.module.split(".") if node.module else [])
            else:
                mod = node.module.split(".") if node.module else []
            if mod == ["bomcmc"]:  # from bomcmc import x: x is a unit, or a name of __init__
                targets = [["bomcmc", alias.name if _is_unit(alias.name) else "__init__"]
                           for alias in node.names]
            else:
                targets = [mod]
        for t in targets:
            if len(t) >= 2 and t[0] == "bomcmc":
                found.add((t[1], node.lineno))
    return found


def _is_unit(name: str) -> bool:
    return (SRC / name).is_dir() or (SRC / f"{name}.py").is_file()


def edges() -> list[tuple[str, str, str]]:
    """(source unit, target unit, where) for every import between different units."""
    out = []
    for path in sorted(SRC.rglob("*.py")):
        src = unit_of(path)
        for target, line in imported_units(path):
            if target != src:
                out.append((src, target, f"{path.relative_to(SRC)}:{line}"))
    return out


def test_every_unit_has_a_layer():
    units = {unit_of(p) for p in SRC.rglob("*.py")}
    assert units <= set(RANK), f"units without a layer: {sorted(units - set(RANK))}"


def test_imports_run_down_the_layers():
    wrong = [f"{where}: {src} imports {dst}" for src, dst, where in edges()
             if RANK.get(dst, -1) >= RANK[src]]
    assert not wrong, "imports against the layer order:\n" + "\n".join(wrong)


# Edges the layers allow but the design does not: (importer, imported) -> why not
FORBIDDEN = {
    ("driver", "models"): "the faces (bomcmc.public, the CLI) resolve posterior names and "
                          "load model files; the driver takes a Posterior",
    ("registry", "models"): "spin models and metrics reach their samplers as the "
                            "Posterior's fields",
    ("diagnostics", "tuning"): "plots read what the run recorded (its tuning group), they do "
                               "not rebuild tuners",
}


def forbidden_edges() -> list[str]:
    return [f"{where}: {src} imports {dst} ({FORBIDDEN[src, dst]})"
            for src, dst, where in edges() if (src, dst) in FORBIDDEN]


def test_no_forbidden_edge():
    wrong = forbidden_edges()
    assert not wrong, "forbidden imports:\n" + "\n".join(wrong)


def test_no_cycle_between_units():
    graph: dict[str, set[str]] = {}
    for src, dst, _ in edges():
        graph.setdefault(src, set()).add(dst)
    state: dict[str, int] = {}

    def visit(u, stack):
        state[u] = 1
        for v in graph.get(u, ()):
            if state.get(v) == 1:
                pytest.fail("import cycle: " + " -> ".join(stack + [u, v]))
            if v not in state:
                visit(v, stack + [u])
        state[u] = 2

    for u in list(graph):
        if u not in state:
            visit(u, [])


def test_the_check_catches_a_wrong_import(tmp_path, monkeypatch):
    """A kernel that imports the tuning layer, and a cycle, are both reported."""
    fake = tmp_path / "bomcmc"
    (fake / "kernels").mkdir(parents=True)
    (fake / "tuning").mkdir()
    (fake / "kernels" / "bad.py").write_text("from ..tuning import gp\n")
    (fake / "tuning" / "gp.py").write_text("from ..kernels import bad\n")
    monkeypatch.setattr(__import__(__name__), "SRC", fake)
    found = edges()
    assert ("kernels", "tuning", "kernels/bad.py:1") in found
    with pytest.raises(AssertionError, match="kernels imports tuning"):
        test_imports_run_down_the_layers()
    with pytest.raises(pytest.fail.Exception, match="import cycle"):
        test_no_cycle_between_units()


def test_no_module_is_too_long():
    """One room, one job: no module over 420 lines (the data files aside)."""
    long = [f"{p.relative_to(SRC)} ({n} lines)" for p in SRC.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 420]
    assert not long, long


def test_every_package_has_an_init():
    """setuptools' find_packages ships only folders with an __init__.py: a folder of modules
    without one works in an editable install and is missing from a wheel."""
    missing = sorted(str(d.relative_to(SRC)) for d in SRC.rglob("*")
                     if d.is_dir() and any(d.glob("*.py")) and not (d / "__init__.py").exists())
    assert not missing, missing


def discovery_calls(root: Path) -> list[str]:
    """Every `hasattr(...)` and `getattr(...)` call in the modules under `root`: the driver
    reaches its collaborators through their protocols (Kernel, Tuner, Adapter, Posterior
    fields), never by probing for attributes."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("hasattr", "getattr")):
                found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.func.id}")
    return found


def test_driver_discovers_no_protocol():
    found = discovery_calls(SRC / "driver")
    assert not found, "attribute probing in driver/:\n" + "\n".join(found)


def test_the_checks_catch_a_forbidden_edge_and_probing(tmp_path, monkeypatch):
    """A driver that imports models, a plot that imports a tuner, and a getattr in the driver
    are each reported."""
    fake = tmp_path / "bomcmc"
    for unit in ("driver", "models", "diagnostics", "tuning"):
        (fake / unit).mkdir(parents=True)
    (fake / "driver" / "api.py").write_text(
        "from ..models import spins\n\ndef f(t):\n    return getattr(t, 'take_grads', None)\n")
    (fake / "models" / "spins.py").write_text("X = 1\n")
    (fake / "diagnostics" / "plots.py").write_text("from ..tuning import gp_bandit\n")
    (fake / "tuning" / "gp_bandit.py").write_text("Y = 2\n")
    monkeypatch.setattr(__import__(__name__), "SRC", fake)
    wrong = forbidden_edges()
    assert any(w.startswith("driver/api.py:1: driver imports models") for w in wrong)
    assert any(w.startswith("diagnostics/plots.py:1: diagnostics imports tuning")
               for w in wrong)
    assert discovery_calls(fake / "driver") == ["driver/api.py:4 getattr"]
    with pytest.raises(AssertionError, match="forbidden imports"):
        test_no_forbidden_edge()
    with pytest.raises(AssertionError, match="attribute probing"):
        test_driver_discovers_no_protocol()
