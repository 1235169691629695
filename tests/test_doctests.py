"""Run the docstring examples of every module of the installed ``ppknn`` namespace.

The layers live in ``core/``, ``parties/``, ``protocols/`` and ``simulations/`` but are
installed as ``ppknn.core``, ``ppknn.parties``, ...; the examples are run on the modules
as installed (``pytest --doctest-modules`` on the folders would import a second copy of
each module under its folder name). Flags as pytest's doctest runner:
``NORMALIZE_WHITESPACE``, ``ELLIPSIS`` and ``NUMBER`` (floats compared to the precision
written in the example).
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest
from _pytest.doctest import _get_checker, get_optionflags  # noqa: F401  (flags registered)

import ppknn

LAYERS = ("ppknn.core", "ppknn.parties", "ppknn.protocols", "ppknn.simulations")
SKIP: set[str] = set()
FACADE = ("ppknn.cli", "ppknn.estimators", "ppknn.terminal", "ppknn.testing")
"""The facade's modules with examples (the public faces: command line, estimators, kit)."""


def _modules() -> list[str]:
    names = ["ppknn", *FACADE]
    for layer in LAYERS:
        package = importlib.import_module(layer)
        names.append(layer)
        names += [m.name for m in pkgutil.walk_packages(package.__path__, prefix=layer + ".")
                  if m.name not in SKIP]
    return sorted(names)


MODULES = _modules()


def _flags() -> int:
    number = doctest.register_optionflag("NUMBER")
    return doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE | number


def test_every_layer_is_walked():
    assert ppknn.__name__ == "ppknn"
    assert {"ppknn.core.rng", "ppknn.simulations.registry", "ppknn.core.protocol",
            "ppknn.protocols.dp_knn.parties"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(checker=_get_checker(), optionflags=_flags(), verbose=False)
    failures = []
    for test in finder.find(module, name):
        result = runner.run(test, out=failures.append)
        del result
    assert runner.failures == 0, "".join(failures)
