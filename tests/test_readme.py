"""The README's and the manual's examples run: every Python example as a doctest, every
TOML block parsed with the real schema, and the annotated scenario checked key by key.

The manual is ``docs/manual/*.md`` (the mkdocs site, ``docs/mkdocs.yml``); a fenced
``python`` block there holds ``>>>`` examples, which ``doctest`` runs page by page.
"""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

from ppknn.simulations.scenario import parse_scenario, tomllib

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MANUAL = ROOT / "docs" / "manual"
PAGES = [README, *sorted(MANUAL.glob("*.md"))]
FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


def _blocks(page: Path, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", page.read_text(), re.S | re.M)


def test_the_manual_is_there():
    names = {p.name for p in PAGES}
    assert {"README.md", "protocols.md", "writing-a-protocol.md", "leakage.md"} <= names


@pytest.mark.parametrize("page", [p for p in PAGES if _blocks(p, "python")], ids=_name)
def test_python_examples_run(page):
    blocks = _blocks(page, "python")
    # every Python example is a doctest: a block without prompts would never run
    assert all(">>> " in block for block in blocks), _name(page)
    result = doctest.testfile(str(page), module_relative=False, optionflags=FLAGS)
    assert result.attempted >= len(blocks)
    assert result.failed == 0


def test_the_examples_that_must_run_are_counted():
    """The pages that held the README's doctests still hold as many examples."""
    attempted = {p.name: doctest.DocTestParser().get_examples(p.read_text())
                 for p in (README, MANUAL / "python-api.md", MANUAL / "estimators.md")}
    assert len(attempted["README.md"]) >= 3
    assert len(attempted["python-api.md"]) + len(attempted["estimators.md"]) > 25


@pytest.mark.parametrize("page", [p for p in PAGES if _blocks(p, "toml")], ids=_name)
def test_every_toml_block_parses(page):
    for i, block in enumerate(_blocks(page, "toml")):
        data = tomllib.loads(block)
        if "sweep" in data or "project" in data:  # a sweep file; a plugin's pyproject.toml
            continue
        if block.startswith("# examples/"):  # a file of an example package, which checks it
            continue
        parse_scenario(data, source=f"{_name(page)} block {i}")


def test_the_annotated_scenario_is_valid():
    """The manual's annotated scenario (the first TOML block of "Running scenarios")."""
    block = _blocks(MANUAL / "running.md", "toml")[0]
    scenario = parse_scenario(tomllib.loads(block), source="running.md")
    assert scenario.runtime.flush_bytes == 64 << 20
    assert scenario.runtime.layout == "actor-per-party"
    assert scenario.protocols[0].k == 5


def test_the_readme_fits_on_a_page():
    assert len(README.read_text().splitlines()) <= 200
