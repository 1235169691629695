"""The "Writing a protocol" tutorial runs: its page is the example package, and the package works.

``docs/manual/writing-a-protocol.md`` builds ``examples/dp_count`` (an ε-DP protocol outside
ppknn) file by file; the page's blocks must be the package's files, verbatim. The package
then runs through the contract battery, the Python API, ``run``, ``show``, ``sweep``,
``leakage``, ``audit``, ``compare``, ``chaos`` and its estimator with the plugin registered
in this process (:func:`ppknn.testing.registered`; nothing of ppknn is edited, and the
registry is as before afterwards), and through ppknn's entry-point discovery in a fresh
interpreter that sees the package as ``pip install`` would leave it (its ``.dist-info``
with the entry point, its sources on the path).
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import ppknn
from ppknn.cli import app
from ppknn.simulations import registry
from ppknn.simulations.scenario import tomllib
from ppknn.testing import check_audit, check_plugin, registered, scenario_data

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "manual" / "writing-a-protocol.md"
PACKAGE = ROOT / "examples" / "dp_count"
SRC = PACKAGE / "src"
SCENARIO = PACKAGE / "scenarios" / "dp-count.toml"
NAME = "dp-count"
INSTALLED = any(ep.name == NAME for ep in entry_points(group=registry.ENTRY_POINT_GROUP))
"""Whether the package is installed (CI runs the suite again with it installed)."""


def page_files() -> dict[str, str]:
    """Path -> text of every block of the page whose first line names a package file."""
    blocks = re.findall(r"^```(?:py|toml)\n(# (examples/dp_count/\S+)\n.*?)^```", PAGE.read_text(),
                        re.S | re.M)
    return {path: text for text, path in blocks}


def package_files() -> dict[str, str]:
    """Path -> text of every file of the example package (caches and builds left out)."""
    skip = ("__pycache__", ".egg-info", "build", ".pytest_cache")
    return {str(p.relative_to(ROOT)): p.read_text() for p in sorted(PACKAGE.rglob("*"))
            if p.is_file() and not any(s in part for part in p.parts for s in skip)}


def test_the_page_holds_every_file_of_the_package_verbatim():
    shown, files = page_files(), package_files()
    assert len(files) >= 8
    assert sorted(shown) == sorted(files)
    for path, text in files.items():
        assert shown[path] == text, path


def test_the_check_sees_a_block_that_differs_from_its_file():
    text = PAGE.read_text().replace("radius = 0.2                   # public",
                                    "radius = 0.3                   # public")
    assert text != PAGE.read_text()
    blocks = re.findall(r"^```toml\n(# (examples/dp_count/scenarios/\S+)\n.*?)^```", text,
                        re.S | re.M)
    assert blocks and blocks[0][0] != package_files()[blocks[0][1]]


@pytest.fixture
def dp_count(monkeypatch):
    """The tutorial's plugin, registered for the test (its sources on ``sys.path``)."""
    monkeypatch.syspath_prepend(str(SRC))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(SRC), os.environ.get("PYTHONPATH", "")) if p))
    from dp_count.plugin import DPCount

    with registered(DPCount) as plugin:
        yield plugin


def test_it_passes_the_contract_battery(dp_count, tmp_path):
    check_plugin(dp_count, SCENARIO, tmp_path)


@pytest.mark.parametrize("key, value, why", [
    ("epsilon", 0, "protocol.epsilon = 0: Input should be greater than 0"),
    ("epsilon", "1", "protocol.epsilon = '1': Input should be a valid number"),
    ("radius", -1.0, "protocol.radius = -1.0: Input should be greater than 0"),
    ("k", 5, "unknown key 'protocol.k'")])
def test_its_table_refuses_bad_values_naming_the_key(dp_count, key, value, why):
    from ppknn.simulations.scenario import parse_scenario

    data = scenario_data(SCENARIO)
    data["protocol"][key] = value
    with pytest.raises(ppknn.ConfigError) as err:
        parse_scenario(data)
    assert why in str(err.value)


def test_the_python_api_runs_sweeps_and_scores_it(dp_count, tmp_path):
    result = ppknn.run(SCENARIO, output=tmp_path / "run")
    privacy = result.summary["results"][NAME]["privacy"]
    assert privacy["epsilon"] == 30.0  # 30 queries at ε 1 each, from the owner's ledger
    assert privacy["per_party"]["analyst-0"]["epsilon"] == 15.0
    rows = ppknn.leakage_table(tmp_path / "run").to_pylist()
    assert {(r["observer"], r["attack"]) for r in rows} == {
        ("analyst-0", "count-rounding"), ("analyst-1", "count-rounding")}
    assert all(r["verdict"] == "within bound" and r["trials"] == 45 for r in rows)
    base = {k: v for k, v in scenario_data(SCENARIO).items() if k != "run"}
    table = ppknn.sweep({"sweep": {"name": "eps", "seeds": [0, 1]}, "base": base,
                         "grid": {"protocol.epsilon": [0.5, 4.0]}}, parallel="sequential")
    assert table.num_rows == 4
    assert sorted(set(table.column("protocol.epsilon").to_pylist())) == [0.5, 4.0]


def test_a_leaky_owner_is_caught_by_the_attack_and_the_audit(dp_count):
    leaky = scenario_data(SCENARIO)
    leaky["deviation"] = [{"party": "owner", "kind": "weak-noise-count",
                           "params": {"scale": 0.01}}]
    rows = ppknn.run(leaky).leakage_table.to_pylist()
    assert [r["verdict"] for r in rows if r["attack"] == "count-rounding"] == \
        ["above bound", "above bound"]
    with pytest.raises(AssertionError, match="above bound"):
        check_audit(NAME, leaky)


def _cli(*args: str) -> str:
    done = CliRunner().invoke(app, list(args))
    assert done.exit_code == 0, (args, done.output, done.exception)
    return done.output


def test_every_command_runs_it(dp_count, tmp_path):
    run = tmp_path / "run"
    _cli("run", str(SCENARIO), "--output", str(run))
    assert NAME in _cli("show", str(run))
    before = (run / "leakage.csv").read_text()
    _cli("leakage", str(run))
    assert (run / "leakage.csv").read_text() == before
    _cli("audit", str(SCENARIO), "--output", str(tmp_path / "audit"))
    audit = list(csv.DictReader((tmp_path / "audit" / "audit.csv").open()))
    assert [(r["protocol"], r["verdict"]) for r in audit] == [(NAME, "within bound")]
    kinds = ("kill", "raise", "memory", "drop", "duplicate", "reorder", "tamper")
    _cli("chaos", str(SCENARIO), "--party", "owner", *(f"--kind={k}" for k in kinds),
         "--output", str(tmp_path / "chaos"))
    chaos = json.loads((tmp_path / "chaos" / "chaos.json").read_text())
    assert [(c["kind"], c["party"], c["fired"], c["names_party"], c["ok"]) for c in chaos] \
        == [(k, "owner", True, True, True) for k in kinds]
    assert {c["error"] for c in chaos} == {"PartyFailure", "IntegrityError"}


def test_sweep_and_compare_take_it(dp_count, tmp_path):
    from ppknn.simulations.compare import quick_spec

    entry = next(e for e in quick_spec()["protocol"] if e["name"] == NAME)
    assert entry == {"name": NAME, "privacy_key": "epsilon", "levels": [0.5, 4.0]}
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(f"""
[sweep]
name = "radius"
seeds = [0]
output = "{tmp_path / 'sweep'}"

[grid]
"protocol.radius" = [0.1, 0.3]

[base.protocol]
name = "dp-count"

[base.parties]
analysts = 2

[base.data]
dataset = "sklearn:iris"
max_queries = 30
scale = "minmax"
bounds = {{lower = [4.0, 2.0, 1.0, 0.0], upper = [8.0, 4.5, 7.0, 2.6]}}
""")
    _cli("sweep", str(sweep), "--runtime", "inprocess")
    rows = (tmp_path / "sweep" / "sweep.csv").read_text().splitlines()
    assert len(rows) == 3, rows
    spec = tmp_path / "compare.toml"
    spec.write_text(f"""
[compare]
name = "tutorial"
output = "{tmp_path / 'compare'}"
datasets = ["sklearn:iris"]
seeds = [0]
parallel = "sequential"

[base.data]
scale = "minmax"
max_queries = 30

[dataset_settings."sklearn:iris".data.bounds]
lower = [4.0, 2.0, 1.0, 0.0]
upper = [8.0, 4.5, 7.0, 2.6]

[[protocol]]
name = "dp-count"
privacy_key = "epsilon"
levels = [0.5, 4.0]
""")
    _cli("compare", str(spec), "--runtime", "inprocess")
    assert NAME in (tmp_path / "compare" / "compare.md").read_text()


def test_its_estimator_spends_epsilon_per_row_and_refuses_past_its_budget(dp_count):
    from dp_count.estimator import DPCountClassifier
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    clf = DPCountClassifier(radius=1.0, epsilon=0.5, budget=60.0, bounds=(0.0, 8.0),
                            random_state=0)
    clf.fit(X[::2], y[::2])
    assert clf.score(X[1::2], y[1::2]) > 0.8
    assert clf.privacy_.epsilon == 37.5  # 75 rows at ε 0.5
    with pytest.raises(ppknn.ConfigError, match="budget"):
        clf.predict(X[1::2])  # another 37.5 would pass 60
    assert clf.privacy_.epsilon == 37.5
    again = DPCountClassifier(radius=1.0, epsilon=0.5, bounds=(0.0, 8.0), random_state=0)
    np.testing.assert_array_equal(again.fit(X[::2], y[::2]).predict(X[1::2]),
                                  clf.fit(X[::2], y[::2]).predict(X[1::2]))


def entry_point_site(folder: Path) -> Path:
    """A folder holding the package's ``.dist-info`` (its entry points), as pip writes it."""
    project = tomllib.loads((PACKAGE / "pyproject.toml").read_text())["project"]
    info = folder / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\n"
                                   f"Version: {project['version']}\n")
    groups = project["entry-points"]
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items())
        for group, eps in groups.items()))
    return folder


def test_a_fresh_interpreter_finds_it_through_its_entry_point(tmp_path):
    site = entry_point_site(tmp_path / "site")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(SRC)])}
    listed = subprocess.run([sys.executable, "-m", "ppknn", "protocols"], env=env,
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert listed.returncode == 0, listed.stderr
    assert NAME in listed.stdout
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "ppknn", "run", str(SCENARIO), "--output",
                           str(out)], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["results"][NAME]["privacy"]["epsilon"] == 30.0
    if not INSTALLED:
        assert NAME not in registry.names()  # this process is untouched


def test_its_attack_is_calibrated_control_quiet_planted_leak_flagged(dp_count):
    from ppknn.simulations.leakage import calibrate_attacks as ca

    rates = {r.kind: r for r in ca.calibrate_protocol(NAME, seeds=4)}
    assert (rates[ca.CONTROL].flagged, rates[ca.PLANTED].flagged) == (0, 4)
    assert rates[ca.CONTROL].passed and rates[ca.PLANTED].passed
