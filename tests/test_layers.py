"""Imports run one way, floor by floor (the architecture page of the docs site).

From the bottom: ``core/``; a protocol's logic (``protocols/<name>/``: steps,
driver, interfaces -- it knows nothing of Ray, the parties or the engine); the
party machinery (``parties/``) and each protocol's party classes
(``protocols/<name>/parties/``); the engine (``simulations/``); each protocol's
plugin (``protocols/<name>/plugin/``: its registration, attacks, ground truth,
audit, deviations and estimator, built on the engine, which finds it through the
registry and never imports it).

Every ``.py`` file under ``core/``, ``parties/``, ``protocols/`` and
``simulations/`` is parsed (never imported) and every import in it --
module level or inside a function, ``import x`` or ``from x import y``,
relative ones resolved against the file's package -- is checked:

* a floor imports nothing from a floor above it;
* only ``core/runtime/`` imports ``ray``.

The library (the layers and the ``ppknn/`` facade) never imports the paper
reproductions (``ppknn_reproductions``, the ``reproductions/`` folder): they are
built on the library and found through an entry point.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

LAYERS = ("core", "protocols", "parties", "simulations")
"""The layer folders."""
FLOORS = ("core", "protocols", "parties", "simulations", "protocols/plugin")
"""Bottom to top: a floor may import its own and the floors before it, never those after it.

``protocols`` is a protocol's logic; ``protocols/<name>/parties/`` shares the ``parties``
floor; ``protocols/<name>/plugin/`` is the top floor."""
RANK = {name: i for i, name in enumerate(FLOORS)}
SUBFLOOR = {"parties": "parties", "plugin": "protocols/plugin"}
"""A protocol package's subpackages that sit on another floor than its logic."""


def floor_of(parts: list[str]) -> str:
    """The floor of a module or file given as path parts (``protocols``, ``x``, ``plugin``, ...)."""
    if parts[0] == "protocols" and len(parts) > 2 and parts[2] in SUBFLOOR:
        return SUBFLOOR[parts[2]]
    return parts[0]
NAMESPACE = "ppknn"
"""The one installed package the layers live under (``ppknn.core``, ``ppknn.parties``, ...)."""
FACADE = "<ppknn facade>"
"""``import ppknn`` / ``from ppknn import run``: the public facade sits above every layer."""
RAY_HOME = ("core", "runtime")
"""The only package allowed to import Ray."""

LIBRARY = ("ppknn", *LAYERS)
"""The folders of the library: the facade and the layers."""
OUTSIDE = ("ppknn_reproductions", "reproductions")
"""Packages built on the library that the library never imports (installed name, folder)."""

ALLOWED_TODO: set[tuple[str, str]] = set()
"""Known violations, as (file, imported module or package), to be removed."""


@dataclass(frozen=True, order=True)
class Violation:
    """One import against the layer order."""

    path: str  # relative to the root, with "/"
    line: int
    module: str  # the imported module, relative imports resolved
    rule: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: imports {self.module} ({self.rule})"


def _package_of(rel: Path) -> list[str]:
    """The package relative imports start from: ``a.b`` for ``a/b/c.py`` and ``a/b/__init__.py``."""
    return list(rel.parent.parts)


def imports_of(path: Path, rel: Path) -> list[tuple[int, str]]:
    """``(line, module)`` of every import in one file; ``from m import n`` gives ``m.n``.

    ``m.n`` may name an attribute rather than a module; only its leading
    package matters here.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = _package_of(rel)
                keep = len(package) - (node.level - 1)
                if keep < 1:  # beyond the top-level package: not importable, report as written
                    base = "." * node.level + (node.module or "")
                    found.append((node.lineno, base))
                    continue
                base = ".".join(package[:keep] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found += [(node.lineno, f"{base}.{alias.name}" if alias.name != "*" else base)
                      for alias in node.names]
    return found


def find_violations(root: Path, *, strict: bool = True) -> list[Violation]:
    """Every import against the layer order in the layer packages under ``root``.

    The layers are installed as ``ppknn.core``, ``ppknn.protocols``, ...; with
    ``strict`` an import that names a layer without the namespace
    (``import core.rng``) is a violation too.
    """
    out: list[Violation] = []
    for layer in LAYERS:
        base = root / layer
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(root)
            name = rel.as_posix()
            here = floor_of(list(rel.with_suffix("").parts))
            for line, module in imports_of(path, rel):
                parts = module.split(".")
                if parts[0] == NAMESPACE:  # ppknn.core.x -> core.x; bare ppknn -> the facade
                    parts = parts[1:] or [FACADE]
                top = parts[0]
                there = floor_of(parts) if top in LAYERS else top
                if top == FACADE or (there in RANK and RANK[there] > RANK[here]):
                    out.append(Violation(name, line, module,
                                         f"{here}/ must not import {there}/"))
                elif top in RANK and module.split(".")[0] != NAMESPACE and strict:
                    out.append(Violation(name, line, module,
                                         f"import {top}/ as {NAMESPACE}.{top}"))
                if top == "ray" and rel.parts[: len(RAY_HOME)] != RAY_HOME:
                    out.append(Violation(name, line, module,
                                         "only core/runtime/ imports ray"))
    return sorted(out)


def outside_imports(root: Path) -> list[Violation]:
    """Every import of a package of :data:`OUTSIDE` in the library's folders under ``root``."""
    out: list[Violation] = []
    for folder in LIBRARY:
        for path in sorted((root / folder).rglob("*.py")) if (root / folder).is_dir() else ():
            rel = path.relative_to(root)
            for line, module in imports_of(path, rel):
                parts = module.split(".")
                top = parts[1] if parts[0] == NAMESPACE and len(parts) > 1 else parts[0]
                if top in OUTSIDE:
                    out.append(Violation(rel.as_posix(), line, module,
                                         "the library never imports ppknn_reproductions"))
    return sorted(out)


def _report(violations: list[Violation]) -> str:
    return "imports against the floors " + " <- ".join(FLOORS) + ":\n" + "\n".join(
        f"  {v}" for v in violations)


def _allows(entry: tuple[str, str], v: Violation) -> bool:
    path, module = entry
    return v.path == path and (v.module == module or v.module.startswith(module + "."))


def test_imports_follow_the_layer_order():
    violations = [v for v in find_violations(ROOT)
                  if not any(_allows(entry, v) for entry in ALLOWED_TODO)]
    assert not violations, _report(violations)


def test_the_library_never_imports_the_reproductions():
    violations = outside_imports(ROOT)
    assert not violations, "\n".join(str(v) for v in violations)


def test_allowed_todo_entries_are_still_needed():
    found = find_violations(ROOT)
    stale = sorted(e for e in ALLOWED_TODO if not any(_allows(e, v) for v in found))
    assert not stale, f"remove from ALLOWED_TODO in tests/test_layers.py (fixed): {stale}"


# --------------------------------------------------------------------------- the checker itself
def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


LEGAL = {
    "core/__init__.py": "",
    "core/rng.py": "import numpy as np\n",
    "core/runtime/__init__.py": "",
    "core/runtime/ray_runtime.py": "def start():\n    import ray\n    return ray\n",
    "protocols/__init__.py": "",
    "protocols/p/__init__.py": "from . import steps\nfrom .steps import step\n",
    "protocols/p/steps.py": "from core.rng import np\nfrom ..q import other\n\ndef step(): pass\n",
    "protocols/q.py": "import core.rng\n",
    "parties/__init__.py": "",
    "parties/owner.py": "from protocols.p import step\nfrom core import rng\n",
    "protocols/p/parties/__init__.py": ("from parties.owner import step\n"
                                        "from protocols.p import steps\n"),
    "simulations/__init__.py": "",
    "simulations/run.py": "import parties.owner\nfrom protocols.p.steps import step\n",
    "protocols/p/plugin/__init__.py": ("import simulations.run\n"
                                       "from protocols.p.parties import step\n"),
    "notalayer/x.py": "import simulations.run\nimport ray\n",
}


def test_checker_passes_a_legal_tree(tmp_path):
    _tree(tmp_path, LEGAL)
    assert find_violations(tmp_path, strict=False) == []


@pytest.mark.parametrize("rel, text, line, module, rule", [
    ("protocols/p/driver.py", "import numpy\n\n\nfrom parties.owner import Owner\n",
     4, "parties.owner.Owner", "protocols/ must not import parties/"),
    ("core/data.py", "def f():\n    from protocols.p import steps\n",
     2, "protocols.p.steps", "core/ must not import protocols/"),
    ("parties/sub/helper.py", "import simulations.run as r\n",
     1, "simulations.run", "parties/ must not import simulations/"),
    ("simulations/registry.py", "from protocols.p.plugin import P\n",
     1, "protocols.p.plugin.P", "simulations/ must not import protocols/plugin/"),
    ("protocols/p/parties/owner.py", "from simulations.run import f\n",
     1, "simulations.run.f", "parties/ must not import simulations/"),
    ("protocols/p/steps2.py", "from protocols.p.parties import owner\n",
     1, "protocols.p.parties.owner", "protocols/ must not import parties/"),
    ("protocols/p/ray_steps.py", "import os\nimport ray\n",
     2, "ray", "only core/runtime/ imports ray"),
    ("simulations/pool.py", "from ray.util import ActorPool\n",
     1, "ray.util.ActorPool", "only core/runtime/ imports ray"),
])
def test_checker_reports_exactly_the_bad_import(tmp_path, rel, text, line, module, rule):
    _tree(tmp_path, {**LEGAL, rel: text})
    assert find_violations(tmp_path, strict=False) == [Violation(rel, line, module, rule)]


def test_relative_imports_are_resolved(tmp_path):
    _tree(tmp_path, {**LEGAL, "protocols/p/sub/__init__.py": "",
                     "protocols/p/sub/m.py": "from .. import steps\nfrom ... import q\n"})
    rel = Path("protocols/p/sub/m.py")
    assert imports_of(tmp_path / rel, rel) == [(1, "protocols.p.steps"), (2, "protocols.q")]


def test_failure_message_names_file_line_and_import(tmp_path):
    _tree(tmp_path, {**LEGAL, "core/bad.py": "x = 1\nfrom simulations import run\n"})
    text = _report(find_violations(tmp_path, strict=False))
    assert "core/bad.py:2: imports simulations.run (core/ must not import simulations/)" in text


def test_namespaced_imports_are_checked_and_unprefixed_ones_refused(tmp_path):
    _tree(tmp_path, {**LEGAL,
                     "core/ok.py": "from ppknn.core.rng import np\n",
                     "protocols/up.py": "from ppknn.parties.owner import Owner\n",
                     "core/facade.py": "import ppknn\n",
                     "parties/old.py": "import core.rng\n"})
    found = {(v.path, v.rule) for v in find_violations(tmp_path)}
    assert ("protocols/up.py", "protocols/ must not import parties/") in found
    assert ("core/facade.py", "core/ must not import <ppknn facade>/") in found
    assert ("parties/old.py", "import core/ as ppknn.core") in found
    assert not any(path == "core/ok.py" for path, _ in found)


def test_checker_finds_the_library_importing_the_reproductions(tmp_path):
    _tree(tmp_path, {**LEGAL,
                     "reproductions/__init__.py": "import ppknn.simulations\n",
                     "ppknn/cli.py": "def f():\n    from ppknn_reproductions import xiong\n",
                     "ppknn/api.py": "import ppknn.reproductions.gursoy\n"})
    found = [(v.path, v.line, v.module) for v in outside_imports(tmp_path)]
    assert found == [("ppknn/api.py", 1, "ppknn.reproductions.gursoy"),
                     ("ppknn/cli.py", 2, "ppknn_reproductions.xiong")]
