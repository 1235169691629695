"""The example files in ``scenarios/``: each declares public bounds, and each is refused
with the right command when given to a command that does not take it."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest
import tomllib
from typer.testing import CliRunner

from ppknn.cli import app
from ppknn.core.errors import PrivacyLeakWarning
from ppknn.simulations.compare import load_comparison
from ppknn.simulations.prepare import prepare_data
from ppknn.simulations.scenario import load_scenario, parse_scenario
from ppknn.simulations.sweep import load_sweep

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "scenarios").glob("*.toml"))
runner = CliRunner()


def _kind(path: Path) -> str:
    data = tomllib.loads(path.read_text())
    return "compare" if "compare" in data else "sweep" if "sweep" in data else "scenario"


def _scenarios(path: Path) -> list:
    """The scenarios a file runs: itself, a sweep's first run, a comparison's first run per
    dataset (the bounds are per dataset there)."""
    kind = _kind(path)
    if kind == "scenario":
        return [load_scenario(path)]
    if kind == "sweep":
        return [load_sweep(path).runs()[0][1]]
    firsts = {}
    for _, dataset, grid in load_comparison(path).grids():
        firsts.setdefault(dataset, grid.scenarios()[0][1])
    return list(firsts.values())


def _prepare_without_derived_bounds(scenario) -> None:
    with warnings.catch_warnings():
        warnings.filterwarnings("error", category=PrivacyLeakWarning,
                                message=".*bounds derived from")
        prepare_data(scenario)


def test_every_kind_of_example_is_covered():
    kinds = [_kind(p) for p in EXAMPLES]
    assert kinds.count("compare") == 1 and kinds.count("sweep") == 1
    assert kinds.count("scenario") >= 14


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_an_example_declares_public_bounds(path):
    """Every example's data is bounded by declared bounds that hold its rows: preparing it
    neither derives bounds (PrivacyLeakWarning raised as an error) nor refuses them."""
    for scenario in _scenarios(path):
        assert scenario.data.bounds != "data", (path.name, scenario.data.dataset)
        _prepare_without_derived_bounds(scenario)


def test_the_check_catches_an_example_without_bounds():
    """The same check on a pima example with its bounds taken out: the warning is raised."""
    data = tomllib.loads((ROOT / "scenarios" / "deviation_ring_drop_out.toml").read_text())
    del data["data"]["bounds"]
    scenario = parse_scenario(data, source="'no bounds'")
    with pytest.raises(PrivacyLeakWarning, match="bounds derived from the training rows"):
        _prepare_without_derived_bounds(scenario)


FILES = {"quickstart.toml": ("a scenario file", "ppknn run"),
         "sweep_k_by_n.toml": ("a sweep file", "ppknn sweep"),
         "compare.toml": ("a comparison spec", "ppknn compare")}
TAKES = {"run": "scenario file", "audit": "scenario file", "chaos": "scenario file",
         "sweep": "sweep file", "compare": "comparison spec"}


@pytest.mark.parametrize(("verb", "name"), [
    (verb, name) for verb in TAKES for name in FILES if not FILES[name][0].endswith(TAKES[verb])])
def test_a_command_given_another_kind_of_file_names_the_command_that_takes_it(
        tmp_path, monkeypatch, verb, name):
    """E.g. ``ppknn run scenarios/compare.toml``: exit 2, the message names ``ppknn compare``,
    nothing is written."""
    monkeypatch.chdir(tmp_path)
    path = ROOT / "scenarios" / name
    kind, command = FILES[name]
    result = runner.invoke(app, [verb, str(path), "--runtime", "inprocess"])
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())  # the console may wrap long paths
    expected = f"{path} is {kind}, not a {TAKES[verb]}: run it with `{command} {path}`"
    assert expected in text, text
    assert "Traceback" not in result.output and "allowed keys" not in result.output
    assert list(tmp_path.iterdir()) == []


def test_the_cross_kind_table_is_complete():
    pairs = [(verb, name) for verb in TAKES for name in FILES
             if not FILES[name][0].endswith(TAKES[verb])]
    assert len(pairs) == 3 * 2 + 2 + 2


def test_a_sweep_says_where_it_wrote(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "tiny_sweep.toml"
    spec.write_text('[sweep]\nname = "tiny"\noutput = "out/elsewhere"\nseeds = [0]\n'
                    'parallel = "sequential"\n\n[base.data]\ndataset = "glass"\n'
                    "max_queries = 10\n\n[base.parties]\nn = 3\n\n"
                    '[grid]\n"protocol.k" = [1, 3]\n')
    result = runner.invoke(app, ["sweep", str(spec)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "elsewhere" / "sweep.csv").is_file()
    text = " ".join(result.output.split())
    assert re.search(r"2 runs; results written to out/elsewhere \(sweep\.csv, sweep\.parquet, "
                     r"sweep\.png\)", text), text
