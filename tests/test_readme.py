"""The README's Python examples run as doctests, and every annotated scenario in it parses."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

from ppknn.simulations.scenario import parse_scenario, tomllib

README = Path(__file__).resolve().parents[1] / "README.md"


def test_python_examples_run():
    result = doctest.testfile(str(README), module_relative=False,
                              optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.attempted > 10
    assert result.failed == 0


def test_every_toml_block_parses():
    blocks = re.findall(r"```toml\n(.*?)```", README.read_text(), re.S)
    assert blocks
    for i, block in enumerate(blocks):
        data = tomllib.loads(block)
        if "sweep" in data:
            continue
        parse_scenario(data, source=f"README block {i}")
