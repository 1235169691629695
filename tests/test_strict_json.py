"""Every JSON file the commands write parses with a strict parser (no bare NaN / Infinity)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from ppknn.cli import app

runner = CliRunner()

SCENARIO = """
[run]
name = "strict-json"
seed = 0

[data]
dataset = "synthetic:classification?rows=400&features=2&classes=2"
max_queries = 20
test_fraction = 0.2
scale = "minmax"

[data.bounds]
lower = [-6.0, -6.0]
upper = [6.0, 6.0]

[parties]
n = 1
analysts = 1

[protocol]
name = "dp-knn"
task = "knn"
algorithm = "baseline"
epsilon = 3.0
budget = 3.0

[runtime]
kind = "inprocess"
channels = false
"""


def _refuse(constant: str) -> float:
    raise ValueError(f"non-standard JSON constant {constant!r}")


def _strict(folder: Path) -> list[str]:
    """Parse every ``*.json`` under ``folder`` strictly; return their names."""
    names = []
    for path in sorted(folder.rglob("*.json")):
        json.loads(path.read_text(), parse_constant=_refuse)
        names.append(path.name)
    return names


def test_the_strict_parser_refuses_nan() -> None:
    """The check can fail: Python's default output is refused."""
    import pytest

    with pytest.raises(ValueError, match="NaN"):
        json.loads(json.dumps({"x": float("nan")}), parse_constant=_refuse)


def test_run_show_and_audit_write_strict_json(tmp_path: Path) -> None:
    scen = tmp_path / "s.toml"
    scen.write_text(SCENARIO)
    ran = runner.invoke(app, ["run", str(scen), "--output", str(tmp_path / "run")])
    assert ran.exit_code == 0, ran.output
    assert "summary.json" in _strict(tmp_path / "run")
    shown = runner.invoke(app, ["show", str(tmp_path / "run")])
    assert shown.exit_code == 0, shown.output
    audited = runner.invoke(app, ["audit", str(scen), "--trials", "100", "--runtime",
                                  "inprocess", "--output", str(tmp_path / "audit")])
    assert audited.exit_code == 0, audited.output
    assert "audit.json" in _strict(tmp_path / "audit")
    assert "nan" not in audited.output.lower()
    assert "certifiable" in audited.output


def test_chaos_and_sweep_write_strict_json(tmp_path: Path) -> None:
    """chaos.json (with its failed runs' failure.json) and a sweep's files."""
    scen = tmp_path / "s.toml"
    scen.write_text(SCENARIO.replace("n = 1\nanalysts = 1", "n = 1\nanalysts = 2"))
    chaos = runner.invoke(app, ["chaos", str(scen), "--kind", "raise", "--kind", "kill",
                                "--runtime", "inprocess", "--output", str(tmp_path / "chaos")])
    assert chaos.exit_code == 0, chaos.output
    assert {"chaos.json", "failure.json"} <= set(_strict(tmp_path / "chaos"))
    sweep = tmp_path / "sweep.toml"
    base = SCENARIO.replace("[run]", "[base.run]").replace("[data]", "[base.data]").replace(
        "[data.bounds]", "[base.data.bounds]").replace("[parties]", "[base.parties]").replace(
        "[protocol]", "[base.protocol]").replace("[runtime]", "[base.runtime]")
    sweep.write_text(base + '\n[sweep]\nname = "strict"\nseeds = [0, 1]\n'
                     f'output = "{(tmp_path / "sweep").as_posix()}"\n'
                     '[grid]\n"protocol.epsilon" = [1.0, 3.0]\n')
    swept = runner.invoke(app, ["sweep", str(sweep), "--runtime", "inprocess"])
    assert swept.exit_code == 0, swept.output
    _strict(tmp_path / "sweep")
