"""The generic modules name no protocol: each protocol's pieces register through its plugin.

The leakage, audit, deviation, comparison and result machinery reaches a
protocol's attacks, ground truth, audit set-up, deviating parties and
comparison defaults through the plugin hooks of :mod:`simulations.registry`;
none of it holds a registered protocol's name as a string literal (a
docstring may name one as an example). The check parses the files (it
never imports them) and is shown to fail on a planted name.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from ppknn.simulations import registry

ROOT = Path(__file__).resolve().parent.parent

GENERIC = tuple(sorted(path for layer in ("core", "parties", "simulations")
                       for path in (ROOT / layer).rglob("*.py")))
"""The machinery that must not name a protocol: every module of core/, parties/ and simulations/."""

DEFAULT = {"simulations/scenario.py": [(369, "ppknn-ring")]}
"""The one literal allowed: the scenario format's default protocol (``DEFAULT_PROTOCOL``), for
files that name none (written before the ``[protocol]`` table existed)."""


def _docstrings(tree: ast.AST) -> set[int]:
    """``id`` of every docstring constant (module, class, function) in ``tree``."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                out.add(id(body[0].value))
        if isinstance(node, (ast.Module, ast.ClassDef)):  # attribute docstrings
            for prev, stmt in zip(node.body, node.body[1:], strict=False):
                if isinstance(prev, (ast.Assign, ast.AnnAssign)) and isinstance(stmt, ast.Expr) \
                        and isinstance(stmt.value, ast.Constant):
                    out.add(id(stmt.value))
    return out


def protocol_literals(source: str, names: list[str], *, filename: str = "<source>"
                      ) -> list[tuple[int, str]]:
    """``(line, name)`` of every registered protocol name inside a non-docstring literal."""
    tree = ast.parse(source, filename=filename)
    skip = _docstrings(tree)
    pattern = re.compile(r"(?<![\w-])(" + "|".join(re.escape(n) for n in names) + r")(?![\w-])")
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            found += [(node.lineno, m.group(1)) for m in pattern.finditer(node.value)]
    return sorted(found)


def test_the_generic_modules_name_no_registered_protocol():
    names = registry.names()
    assert len(names) >= 6
    bad = {str(p.relative_to(ROOT)): hits for p in GENERIC
           if (hits := protocol_literals(p.read_text(encoding="utf-8"), names, filename=str(p)))}
    assert {path: [name for _, name in hits] for path, hits in bad.items()} == \
        {path: [name for _, name in hits] for path, hits in DEFAULT.items()}


def test_the_check_finds_a_planted_name_and_spares_docstrings():
    names = registry.names()
    planted = ('"""Module: ``dp-knn`` as an example is fine."""\n'
               'X = 1\n"""``dptt`` in an attribute docstring too."""\n'
               'def f(p):\n    """``ring-nb`` here too."""\n'
               '    return p.name == "dp-nb" or f"{p} ppknn-ring run" or "weak-noise-dpknn"\n')
    assert protocol_literals(planted, names) == [(6, "dp-nb"), (6, "ppknn-ring")]
    source = (ROOT / "simulations" / "leakage" / "audit.py").read_text(encoding="utf-8")
    assert protocol_literals(source + '\nAUDITED = ("dp-knn",)\n', names)[-1][1] == "dp-knn"
