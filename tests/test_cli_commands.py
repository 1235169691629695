"""CLI conventions: --version, --set on run/sweep, show, protocols, datasets, help texts."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from ppknn.cli import app

runner = CliRunner()


def test_version():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.startswith("ppknn ")


def test_run_set_is_typed_and_show_prints_the_summary(tmp_path):
    out = tmp_path / "r"
    result = runner.invoke(app, ["run", "--runtime", "inprocess", "--output", str(out),
                                 "--set", "protocol.k=3", "--set", "data.max_queries=25",
                                 "--set", "protocol.weighting=distance"])
    assert result.exit_code == 0, result.output
    scenario = json.loads((out / "scenario.json").read_text())
    assert scenario["protocol"]["k"] == 3 and scenario["protocol"]["weighting"] == "distance"
    shown = runner.invoke(app, ["show", str(out)])
    assert shown.exit_code == 0 and "ppknn-ring" in shown.output and "accuracy" in shown.output


def test_bad_set_exits_2_naming_the_key():
    for item, message in (("protocol.k", "KEY=VALUE"), ("protocol.kk=3", "protocol.kk"),
                          ("protocol.k=0", "protocol.k = 0"), ("nosection=1", "section.key")):
        result = runner.invoke(app, ["run", "--runtime", "inprocess", "--set", item])
        assert result.exit_code == 2, (item, result.output)
        assert message in result.output, (item, result.output)
        assert "Traceback" not in result.output


def test_sweep_prints_a_summary_table_and_show_reads_it(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(f"""
[sweep]
name = "tiny"
output = "{tmp_path / 'sw'}"
seeds = [0, 1]
parallel = "sequential"

[base.data]
dataset = "glass"
max_queries = 20

[grid]
"protocol.k" = [1, 3]
""")
    result = runner.invoke(app, ["sweep", str(spec), "--set", "parties.n=3"])
    assert result.exit_code == 0, result.output
    assert "sweep tiny: 4 runs, mean over seeds" in result.output
    rows = (tmp_path / "sw" / "sweep.csv").read_text().splitlines()
    assert len(rows) == 5 and ",3," in rows[1]  # parties = 3 from --set
    shown = runner.invoke(app, ["show", str(tmp_path / "sw")])
    assert shown.exit_code == 0 and "protocol.k" in shown.output


def test_protocols_and_datasets_list_everything():
    protocols = runner.invoke(app, ["protocols"])
    assert protocols.exit_code == 0 and "ppknn-ring" in protocols.output
    datasets = runner.invoke(app, ["datasets"])
    assert "synthetic:classification" in datasets.output and "sklearn:iris" in datasets.output


def test_reproduce_help_lists_the_papers():
    result = runner.invoke(app, ["reproduce", "--help"])
    for name in ("gursoy", "lepert", "mukherjee", "xiong", "zafarani"):
        assert name in result.output


def test_several_protocols_take_overrides_by_index(tmp_path):
    from pathlib import Path

    from ppknn.simulations.scenario import load_scenario

    mixed = load_scenario(Path(__file__).resolve().parents[1] / "scenarios" / "mixed.toml")
    assert len(mixed.protocols) > 1
    changed = mixed.set_key("protocol[0].k", 3).with_overrides(runtime={"kind": "inprocess"})
    assert changed.protocols[0].k == 3 and changed.protocols[1:] == mixed.protocols[1:]
    result = runner.invoke(app, ["run", "scenarios/mixed.toml", "--set", "protocol.k=3"])
    assert result.exit_code == 2 and "protocol[i].k" in result.output


def test_quickstart_prints_no_warning_of_its_own(tmp_path):
    result = runner.invoke(app, ["run", "--runtime", "inprocess", "--output", str(tmp_path / "q"),
                                 "--set", "data.max_queries=30"])
    assert result.exit_code == 0, result.output
    assert "warning" not in result.output.lower()


def test_runtime_flag_is_one_choice_on_run_sweep_and_reproduce():
    for command in ("run", "sweep", "reproduce"):
        shown = runner.invoke(app, [command, "--help"])
        assert "--runtime <inprocess|ray>" in shown.output, command
    bad = runner.invoke(app, ["run", "--runtime", "spark"])
    assert bad.exit_code == 2 and "'spark' is not one of 'inprocess', 'ray'" in bad.output
    run_help = runner.invoke(app, ["run", "--help"]).output
    assert "[runtime].kind" in run_help  # help text is not eaten as markup


@pytest.mark.ray
@pytest.mark.slow
def test_quickstart_on_ray_says_it_is_starting_ray_and_warns_nothing(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_MODE")}
    env["HOME"] = str(tmp_path)  # a fresh ~/.ray: the auth token is generated there
    done = subprocess.run([sys.executable, "-m", "ppknn", "run", "--output", str(tmp_path / "q"),
                           "--set", "data.max_queries=20", "--set", 'runtime.layout="hosted"',
                           "--set", "runtime.hosts=1"], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "starting Ray" in done.stderr
    assert "warning" not in done.stderr.lower(), done.stderr
    assert (tmp_path / "q" / "summary.json").is_file()
