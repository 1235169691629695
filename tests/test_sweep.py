"""Scenario sweeps: grid expansion, and Ray fan-out equal to sequential runs."""

from __future__ import annotations

import csv

import pytest

from ppknn.core.errors import ConfigError
from ppknn.simulations.sweep import Sweep, load_sweep, run_sweep

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
    assert runs[-1][1].protocols[0].k == 5 and runs[-1][1].parties.n == 4


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


@pytest.mark.ray
def test_knn_baseline_equal_in_a_ray_worker_and_here(ray_local):
    """A run whose scikit-learn baseline flips a near-tie with the BLAS thread count
    (abalone, n = 4, k = 9, seed 9): a Ray worker (one thread) and this process agree."""
    from ppknn.core.runtime.pool import fan_out
    from ppknn.simulations.sweep import run_one

    spec = Sweep.model_validate({
        "sweep": {"seeds": [9]},
        "base": {"data": {"dataset": "abalone"}, "runtime": {"channels": False}},
        "grid": {"protocol.k": [9], "parties.n": [4]},
    })
    jobs = [(point, scenario.model_dump()) for point, scenario in spec.runs()]
    here = run_one(jobs[0])
    (there,) = fan_out(run_one, jobs, use_ray=True)
    for key in ("accuracy_knn", "agreement_with_knn", "accuracy_ppknn"):
        assert here[key] == there[key], key


def test_cli_sweep_sequential_and_bad_chunk_size(tmp_path):
    from typer.testing import CliRunner

    from ppknn.cli import app

    f = tmp_path / "s.toml"
    f.write_text('[sweep]\nseeds = [0]\nparallel = "sequential"\n'
                 '[base.data]\ndataset = "glass"\n[base.runtime]\nchannels = false\n'
                 '[grid]\n"protocol.k" = [1, 3]\n')
    runner = CliRunner()
    res = runner.invoke(app, ["sweep", str(f), "--sequential", "--output", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    with (tmp_path / "o" / "sweep.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert [r["protocol.k"] for r in rows] == ["1", "3"]
    bad = runner.invoke(app, ["sweep", str(f), "--chunk-size", "0"])
    assert bad.exit_code == 2
    assert "greater than or equal to 1" in bad.output


def test_cli_sweep_never_replaces_a_table_unless_asked(tmp_path, monkeypatch):
    """A second sweep into the same folder is refused before any run (exit 2, the table
    untouched); ``--overwrite`` replaces it once the new table is complete."""
    from typer.testing import CliRunner

    from ppknn.cli import app
    from ppknn.simulations import sweep as sweep_module

    f = tmp_path / "s.toml"
    f.write_text('[sweep]\nseeds = [0]\nparallel = "sequential"\n'
                 '[base.data]\ndataset = "glass"\nmax_queries = 20\n[base.runtime]\n'
                 'channels = false\n[grid]\n"protocol.k" = [1, 3]\n')
    runner = CliRunner()
    out = tmp_path / "o"
    assert runner.invoke(app, ["sweep", str(f), "--output", str(out)]).exit_code == 0
    before = (out / "sweep.csv").read_bytes()
    ran = []
    monkeypatch.setattr(sweep_module, "run_one", lambda job: ran.append(job) or {})
    again = runner.invoke(app, ["sweep", str(f), "--output", str(out)])
    assert again.exit_code == 2, again.output
    assert "already holds results" in " ".join(again.output.split())
    assert ran == [] and (out / "sweep.csv").read_bytes() == before
    monkeypatch.undo()
    f.write_text(f.read_text().replace("[1, 3]", "[5]"))
    replaced = runner.invoke(app, ["sweep", str(f), "--output", str(out), "--overwrite"])
    assert replaced.exit_code == 0, replaced.output
    with (out / "sweep.csv").open() as fh:
        assert [r["protocol.k"] for r in csv.DictReader(fh)] == ["5"]


def test_a_sweep_runs_the_deviation_of_its_base_scenario():
    """``[[deviation]]`` in the base scenario is run in every point, not dropped: each row
    says whether it was detected (a party dropping out of the ring is)."""
    spec = Sweep.model_validate({
        "sweep": {"name": "dev", "seeds": [0], "parallel": "sequential"},
        "base": {"data": {"dataset": "glass", "max_queries": 20},
                 "runtime": {"channels": True, "party_timeout_s": 2.0},
                 "deviation": [{"party": "owner-01", "kind": "drop-out"}]},
        "grid": {"protocol.k": [1, 3]}})
    rows = run_sweep(spec)
    assert [r["deviation_detected"] for r in rows] == [True, True]
    assert all(r["deviation_detected_by"] for r in rows)


def test_a_bad_sweep_names_each_key_without_pydantic_internals():
    from ppknn.simulations.sweep import parse_sweep

    with pytest.raises(ConfigError) as err:
        parse_sweep({"sweep": {"nme": "k", "seeds": []}, "grid": {"protocol.k": 5}})
    message = str(err.value)
    assert "unknown key 'sweep.nme'" in message and "sweep.seeds = []" in message
    assert "grid.protocol.k = 5" in message
    assert "pydantic" not in message and "type=" not in message


def test_cli_sweep_refuses_a_set_key_the_grid_sets(tmp_path):
    """The grid would replace it in every point: refused (exit 2), not silently dropped;
    another key is applied and validated."""
    from typer.testing import CliRunner

    from ppknn.cli import app

    f = tmp_path / "s.toml"
    f.write_text('[sweep]\nseeds = [0]\nparallel = "sequential"\n'
                 '[base.data]\ndataset = "glass"\nmax_queries = 10\n[base.runtime]\n'
                 'channels = false\n[grid]\n"protocol.k" = [1, 3]\n')
    runner = CliRunner()
    for value in ("3", "abc"):
        res = runner.invoke(app, ["sweep", str(f), "--output", str(tmp_path / "o"),
                                  "--set", f"protocol.k={value}"])
        assert res.exit_code == 2, res.output
        assert "the grid sets protocol.k" in " ".join(res.output.split())
    assert not (tmp_path / "o").exists()
    bad = runner.invoke(app, ["sweep", str(f), "--output", str(tmp_path / "o"),
                              "--set", "protocol.rounds=0"])
    assert bad.exit_code == 2 and "protocol.rounds = 0" in bad.output
    ok = runner.invoke(app, ["sweep", str(f), "--output", str(tmp_path / "o"),
                             "--set", "protocol.rounds=1"])
    assert ok.exit_code == 0, ok.output
