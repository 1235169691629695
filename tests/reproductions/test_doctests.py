"""Run the docstring examples of every module of ``ppknn_reproductions`` (as installed).

The library's own examples run in ``tests/test_doctests.py``; the reproductions are a
package of their own, walked here with the same flags.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest
from _pytest.doctest import _get_checker

import ppknn_reproductions
from tests.test_doctests import _flags


def _modules() -> list[str]:
    package = ppknn_reproductions.__name__
    return sorted([package] + [m.name for m in pkgutil.walk_packages(
        ppknn_reproductions.__path__, prefix=package + ".")])


MODULES = _modules()


def test_every_reproduction_module_is_walked():
    assert {"ppknn_reproductions.lepert_claims", "ppknn_reproductions.experiments.dptt_session",
            "ppknn_reproductions.experiments.pca_timing"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(checker=_get_checker(), optionflags=_flags(), verbose=False)
    failures: list[str] = []
    for test in finder.find(module, name):
        runner.run(test, out=failures.append)
    assert runner.failures == 0, "".join(failures)
