"""No class in tuning/ reads an attribute that neither it nor one of its bases defines.

A mixin that reads `self.gp` where only its sibling sets it works only in the one class that
combines them, and reads as magic everywhere else (issue 29: `AHMCTuner` read 25 attributes
it did not define). The check is static (`ast`): for every class in src/bomcmc/tuning/*.py it
collects the `self.X` it reads and allows those that the class or an ancestor (resolved
within tuning/, the protocol `tuning.base.Tuner` included) defines: a method or property, a
class attribute, or an attribute assigned to `self` in one of their methods.
"""

from __future__ import annotations

import ast
from pathlib import Path

TUNING = Path(__file__).resolve().parents[1] / "src" / "bomcmc" / "tuning"
# bases outside tuning/ that a tuning class may have, with what they define
EXTERNAL_BASES = {
    "object": set(),
    "NamedTuple": {"_replace", "_asdict", "_fields", "_make", "_field_defaults", "count",
                   "index"},
}


def _classes(paths) -> dict[str, tuple[ast.ClassDef, str]]:
    """Every top-level class of the modules at `paths`, by name: (node, file)."""
    found = {}
    for path in paths:
        tree = ast.parse(Path(path).read_text(), filename=str(path))
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                found[node.name] = (node, Path(path).name)
    return found


def _base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):  # module.Class
        return node.attr
    if isinstance(node, ast.Subscript):  # Generic[T]
        return _base_name(node.value)
    return ast.unparse(node)


def _self_attrs(node: ast.AST, ctx) -> set[str]:
    """Names X of every `self.X` under `node` in the given context (Load or Store/Del)."""
    return {n.attr for n in ast.walk(node)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
            and n.value.id == "self" and isinstance(n.ctx, ctx)}


def _own_definitions(cls: ast.ClassDef) -> set[str]:
    """What the class itself defines: methods and properties, class attributes, and the
    attributes its methods assign to self."""
    names = set()
    for item in cls.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(item.name)
            names |= _self_attrs(item, (ast.Store, ast.Del))
        elif isinstance(item, ast.Assign):
            for target in item.targets:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            names.add(item.target.id)
    return names


def _reads(cls: ast.ClassDef) -> dict[str, int]:
    """`self.X` read in the class's methods: X -> first line."""
    reads: dict[str, int] = {}
    for item in cls.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for n in ast.walk(item):
                if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) \
                        and n.value.id == "self" and isinstance(n.ctx, ast.Load):
                    reads.setdefault(n.attr, n.lineno)
    return reads


def undefined_reads(paths) -> list[str]:
    """'file:line Class reads self.X' for every read no class in the ancestry defines, and
    'Class: base B not found' for a base outside tuning/ and EXTERNAL_BASES."""
    classes = _classes(paths)
    problems = []

    def defined(name: str, seen: frozenset = frozenset()) -> set[str] | None:
        if name in EXTERNAL_BASES:
            return EXTERNAL_BASES[name]
        if name not in classes or name in seen:
            return None
        node, _ = classes[name]
        out = _own_definitions(node)
        for base in node.bases:
            got = defined(_base_name(base), seen | {name})
            if got is None:
                problems.append(f"{name}: base {_base_name(base)} not found in tuning/")
                continue
            out |= got
        return out

    for name, (node, file) in classes.items():
        allowed = defined(name) or set()
        for attr, line in _reads(node).items():
            if attr not in allowed:
                problems.append(f"{file}:{line} {name} reads self.{attr}, which neither it "
                                "nor a base defines")
    return sorted(set(problems))


def test_tuning_classes_read_only_what_they_or_their_bases_define():
    assert undefined_reads(sorted(TUNING.glob("*.py"))) == []


def test_the_check_catches_a_mixin_that_reads_its_siblings_attributes(tmp_path):
    bad = tmp_path / "bad_tuner.py"
    bad.write_text(
        "from .base import Tuner\n\n\n"
        "class Mixin:\n"
        "    def grow(self):\n"
        "        return self.gp.n_obs + self.limit\n\n\n"
        "class Good(Tuner):\n"
        "    limit = 3\n\n"
        "    def __init__(self):\n"
        "        self.gp = None\n\n"
        "    def after_chunk(self, knobs, chunk):\n"
        "        return self.initial_knobs(knobs) if self.gp is None else knobs\n\n\n"
        "class Both(Mixin, Good):\n"
        "    def chunk_draws(self, knobs, chunk_size):\n"
        "        return self.grow() + self.budget\n")
    problems = undefined_reads([TUNING / "base.py", bad])
    assert problems == [
        "bad_tuner.py:21 Both reads self.budget, which neither it nor a base defines",
        "bad_tuner.py:6 Mixin reads self.gp, which neither it nor a base defines",
        "bad_tuner.py:6 Mixin reads self.limit, which neither it nor a base defines",
    ]
    # a base outside tuning/ is not taken on trust
    other = tmp_path / "other.py"
    other.write_text("import threading\n\n\nclass T(threading.Thread):\n"
                     "    def f(self):\n        return self.name\n")
    assert "T: base Thread not found in tuning/" in undefined_reads([other])
