"""The contract every registered protocol passes (one battery, parametrised by name).

A protocol is done when it passes this: its example scenario parses, runs
through the one runner in-process and on Ray with identical transcripts and
results, writes the common results shape, and its ``[protocol]`` table is
strict (unknown keys and names refused before any party starts).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ppknn.core.errors import ConfigError
from ppknn.core.transcript import Transcript
from ppknn.simulations import registry
from ppknn.simulations.results import write_results
from ppknn.simulations.runner import execute
from ppknn.simulations.scenario import load_scenario, parse_scenario, tomllib

ROOT = Path(__file__).resolve().parents[1]
NAMES = registry.names()
COMMON_FILES = ("scenario.json", "public.json", "predictions.csv", "parties.csv",
                "summary.json", "summary.png", "transcript/totals.json")


def example(name: str, **runtime):
    """The protocol's example scenario, small, on the runtime asked for."""
    sc = load_scenario(ROOT / "scenarios" / f"{name}.toml")
    queries = min(sc.data.max_queries or 60, 60)
    return sc.with_overrides(data={"max_queries": queries},
                             runtime={"kind": "inprocess", **runtime})


def test_every_builtin_protocol_is_registered():
    assert {"ppknn-ring", "dptt", "pca-perturbation"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_example_scenario_exists_and_names_its_protocol(name):
    sc = load_scenario(ROOT / "scenarios" / f"{name}.toml")
    assert [c.name for c in sc.protocols] == [name]
    plugin = registry.get(name)
    assert plugin.title and plugin.roles and plugin.guarantee


@pytest.mark.parametrize("name", NAMES)
def test_strict_protocol_table(name):
    data = tomllib.loads((ROOT / "scenarios" / f"{name}.toml").read_text())
    data["protocol"]["no_such_key"] = 1
    with pytest.raises(ConfigError, match=r"unknown key 'protocol.no_such_key'"):
        parse_scenario(data)
    data["protocol"].pop("no_such_key")
    data["protocol"]["name"] = name + "-typo"
    with pytest.raises(ConfigError, match=r"protocol.name = .*unknown protocol.*registered"):
        parse_scenario(data)


@pytest.mark.parametrize("name", NAMES)
def test_runs_and_writes_the_common_results_shape(name, tmp_path):
    result = execute(example(name), transcript_dir=tmp_path / "run" / "transcript")
    folder = write_results(result, tmp_path / "run")
    for f in COMMON_FILES:
        assert (folder / f).is_file(), f
    summary = json.loads((folder / "summary.json").read_text())
    r = summary["results"][name]
    assert 0.0 <= r["accuracy"] <= 1.0 and 0.0 <= r["baseline"]["accuracy"] <= 1.0
    assert set(r["privacy"]) == {"guarantee", "epsilon", "delta", "per_party"}
    assert r["hops"] >= 1
    assert summary["communication"]["messages"] > 0
    for key in registry.get(name).metrics:
        assert key in r, key
    rows = (folder / "predictions.csv").read_text().splitlines()
    assert len(rows) == 1 + summary["queries"]
    assert rows[0].startswith(f"query,label,{name},{name}:baseline")


def _strip(summary: dict) -> dict:
    summary = dict(summary)
    summary.pop("timings_s")
    summary.pop("runtime")
    return summary


@pytest.mark.ray
@pytest.mark.parametrize("name", NAMES)
def test_ray_and_inprocess_give_identical_runs(ray_local, tmp_path, name):
    from ppknn.simulations.results import summary_of

    layout = "hosted" if any("n" in r.count for r in registry.get(name).roles) else \
        "actor-per-party"
    local = execute(example(name), transcript_dir=tmp_path / "local")
    on_ray = execute(example(name, kind="ray", layout=layout), transcript_dir=tmp_path / "ray")
    np.testing.assert_array_equal(local.predictions, on_ray.predictions)
    assert _strip(summary_of(local)) == _strip(summary_of(on_ray))
    rows_local = Transcript(tmp_path / "local").canonical_rows()
    assert rows_local == Transcript(tmp_path / "ray").canonical_rows()
    assert len(rows_local) > 0


@pytest.mark.ray
@pytest.mark.parametrize("name", NAMES)
def test_sweep_fanned_out_equals_sequential(ray_local, tmp_path, name):
    from ppknn.simulations.sweep import Sweep, run_sweep

    base = tomllib.loads((ROOT / "scenarios" / f"{name}.toml").read_text())
    base.pop("run", None)
    spec = Sweep.model_validate({"sweep": {"name": f"contract-{name}", "seeds": [0, 1]},
                                 "base": base, "grid": {"data.max_queries": [20, 30]}})
    fanned = run_sweep(spec, parallel="ray", output=tmp_path / "ray")
    sequential = run_sweep(spec, parallel="sequential", output=tmp_path / "seq")

    def strip(rows):  # timings dropped; NaN (a metric the run has no value for) as text
        return [{k: ("nan" if isinstance(v, float) and v != v else v)
                 for k, v in r.items() if k != "protocol_s"} for r in rows]

    assert strip(fanned) == strip(sequential)
    assert len({r["run_id"] for r in fanned}) == 4  # unique run ids
    assert {r.get("protocol") or r.get(f"{name}:protocol") for r in fanned} == {name}
    assert (tmp_path / "ray" / "sweep.png").is_file()
