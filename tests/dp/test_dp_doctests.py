"""Run the docstring examples of every ``core.dp`` module as part of ``tests/dp``.

``pytest`` collects doctests only under its test paths, so the examples in
``core/dp`` would otherwise run only when ``core/dp`` is named explicitly.
"""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "core.dp",
    "core.dp.accounting",
    "core.dp.audit",
    "core.dp.calibration",
    "core.dp.exact",
    "core.dp.ledger",
    "core.dp.mechanisms",
    "core.dp.planar",
    "core.dp.samplers",
    "core.dp.selection",
    "core.dp.smooth",
    "core.dp.validation",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0
