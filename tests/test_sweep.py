"""Scenario sweeps: grid expansion, and Ray fan-out equal to sequential runs."""

from __future__ import annotations

import csv

import pytest

from core.errors import ConfigError
from simulations.sweep import Sweep, load_sweep, run_sweep

SPEC = {
    "sweep": {"name": "t", "seeds": [0, 1]},
    "base": {"data": {"dataset": "glass"}, "runtime": {"channels": False}},
    "grid": {"protocol.k": [1, 3, 5], "parties.n": [3, 4]},
}


def test_grid_expands_in_order():
    runs = Sweep.model_validate(SPEC).runs()
    assert len(runs) == 12
    points = [p for p, _ in runs]
    assert points[0] == {"parties.n": 3, "protocol.k": 1, "seed": 0}
    assert points[1] == {"parties.n": 3, "protocol.k": 1, "seed": 1}
    assert all(s.runtime.kind == "inprocess" for _, s in runs)
    assert runs[-1][1].protocol.k == 5 and runs[-1][1].parties.n == 4


@pytest.mark.parametrize("grid, message", [
    ({"k": [1]}, "must be 'section.key'"),
    ({"protocol.k": []}, "has no values"),
    ({"protocol.k": [0]}, "protocol.k = 0"),
])
def test_bad_grids(grid, message):
    with pytest.raises(ConfigError, match=message):
        Sweep.model_validate({**SPEC, "grid": grid}).runs()


def test_bad_sweep_file(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text("[sweep]\nparallel = 'threads'\n")
    with pytest.raises(ConfigError, match="invalid sweep file"):
        load_sweep(f)


@pytest.mark.ray
def test_ray_fan_out_equals_sequential(ray_local, tmp_path):
    spec = Sweep.model_validate(SPEC)
    parallel = run_sweep(spec, parallel="ray", output=tmp_path / "ray")
    sequential = run_sweep(spec, parallel="sequential", output=tmp_path / "seq")

    def strip(rows):
        return [{k: v for k, v in r.items() if k != "protocol_s"} for r in rows]

    assert strip(parallel) == strip(sequential)
    assert len(parallel) == 12
    with (tmp_path / "ray" / "sweep.csv").open() as fh:
        assert len(list(csv.DictReader(fh))) == 12
    assert (tmp_path / "ray" / "sweep.png").is_file()
    assert (tmp_path / "ray" / "sweep.parquet").is_file()
