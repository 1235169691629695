"""Run the docstring examples of every ``core.dp`` module as part of ``tests/dp``.

``pytest`` collects doctests only under its test paths, so the examples in
``core/dp`` would otherwise run only when ``core/dp`` is named explicitly.
"""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "ppknn.core.dp",
    "ppknn.core.dp.accountant",
    "ppknn.core.dp.accounting",
    "ppknn.core.dp.audit",
    "ppknn.core.dp.calibration",
    "ppknn.core.dp.exact",
    "ppknn.core.dp.ledger",
    "ppknn.core.dp.pld",
    "ppknn.core.dp.mechanisms",
    "ppknn.core.dp.planar",
    "ppknn.core.dp.samplers",
    "ppknn.core.dp.selection",
    "ppknn.core.dp.smooth",
    "ppknn.core.dp.validation",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0
