"""Scenario grids (the unit reproductions are declared in) and the k-fold data split."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ppknn.core.errors import ConfigError, PrivacyLeakWarning
from ppknn.simulations.grids import Grid, run_grids, write_grid_rows
from ppknn.simulations.prepare import kfold, prepare_data
from ppknn.simulations.results import summary_of
from ppknn.simulations.runner import execute
from ppknn.simulations.scenario import parse_scenario
from ppknn.simulations.sweep import table_row

BASE = {"data": {"dataset": "sklearn:iris", "max_queries": 12},
        "protocol": {"name": "dp-knn", "task": "knn", "k": 3}}


def test_points_expand_zipped_axes_in_order_with_seeds_innermost():
    g = Grid("g", base=BASE, axes={("data.dataset", "protocol.k"): [("sklearn:iris", 3),
                                                                   ("sklearn:wine", 5)],
                                   "protocol.epsilon": [0.5, 2.0]}, seeds=(0, 1))
    pts = g.points()
    assert len(pts) == 8
    assert pts[0] == {"data.dataset": "sklearn:iris", "protocol.k": 3,
                      "protocol.epsilon": 0.5, "seed": 0}
    assert pts[1]["seed"] == 1 and pts[2]["protocol.epsilon"] == 2.0
    assert pts[4]["data.dataset"] == "sklearn:wine" and pts[4]["protocol.k"] == 5
    scenarios = g.scenarios()
    assert [s.run.name for _, s in scenarios][:2] == ["g-0000", "g-0001"]
    assert all(s.runtime.kind == "inprocess" for _, s in scenarios)
    assert scenarios[7][1].protocols[0].epsilon == 2.0 and scenarios[7][1].run.seed == 1


def test_keep_filters_points():
    g = Grid("g", base=BASE, axes={"protocol.k": [1, 2, 3]}, keep=lambda p: p["protocol.k"] != 2)
    assert [p["protocol.k"] for p in g.points()] == [1, 3]


@pytest.mark.parametrize("kwargs, message", [
    ({"axes": {"k": [1]}}, "must be 'section.key'"),
    ({"axes": {"protocol.k": []}}, "has no values"),
    ({"axes": {("protocol.k", "protocol.epsilon"): [(1,)]}}, "needs tuples of 2 values"),
    ({"seeds": ()}, "seeds is empty"),
])
def test_bad_grids_are_refused(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        Grid("bad", base=BASE, **kwargs)


def test_a_bad_value_names_the_grid_point():
    with pytest.raises(ConfigError, match=r"protocol\.epsilon = -1"):
        Grid("g", base=BASE, axes={"protocol.epsilon": [-1.0]}).scenarios()


def test_rows_equal_runs_one_by_one_and_are_written(tmp_path):
    g = Grid("eq", base=BASE, axes={"protocol.epsilon": [0.5, 4.0]}, seeds=(0, 3))
    rows = run_grids([g])["eq"]
    assert len(rows) == 4
    for (point, scenario), row in zip(g.scenarios(), rows):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            expected = table_row(summary_of(execute(scenario)))
        for key in ("run_id", "accuracy", "baseline_accuracy", "epsilon_spent", "messages"):
            assert row[key] == expected[key], key
        assert row["protocol.epsilon"] == point["protocol.epsilon"]
    # more privacy budget, no less accurate on average here (a real dependence on the axis)
    assert rows[0]["epsilon_spent"] < rows[2]["epsilon_spent"]
    paths = write_grid_rows({"eq": rows}, tmp_path)
    assert paths[0].name == "grid-eq.csv" and len(paths[0].read_text().splitlines()) == 5


def test_duplicate_grid_names_are_refused():
    g = Grid("same", base=BASE)
    with pytest.raises(ConfigError, match="unique"):
        run_grids([g, g])


@pytest.mark.ray
def test_ray_fan_out_equals_sequential(ray_local):
    g = Grid("ray", base=BASE, axes={"protocol.epsilon": [0.5, 4.0]}, seeds=(0, 1))
    seq = run_grids([g], parallel="sequential")["ray"]
    par = run_grids([g], parallel="ray")["ray"]
    drop = {"protocol_s"}
    assert [{k: v for k, v in r.items() if k not in drop} for r in seq] == \
        [{k: v for k, v in r.items() if k not in drop} for r in par]


# --------------------------------------------------------------------------- k-fold split
def test_kfold_partitions_the_rows_and_contiguous_folds_follow_file_order():
    n, k = 23, 5
    tests = [kfold(n, k, f, None)[1] for f in range(k)]
    assert sorted(np.concatenate(tests).tolist()) == list(range(n))
    assert tests[0].tolist() == [0, 1, 2, 3, 4]
    rng_tests = [kfold(n, k, f, np.random.default_rng(1))[1] for f in range(k)]
    assert sorted(np.concatenate(rng_tests).tolist()) == list(range(n))
    assert rng_tests[0].tolist() != tests[0].tolist()
    with pytest.raises(ConfigError, match="data.folds = 30"):
        kfold(n, 30, 0, None)


@pytest.mark.parametrize("data, message", [
    ({"folds": 5, "fold": 5}, "must be below folds = 5"),
    ({"fold": 2}, "needs folds"),
    ({"folds": 1}, "greater than or equal to 2"),
])
def test_bad_folds_are_refused(data, message):
    with pytest.raises(ConfigError, match=message):
        parse_scenario({"data": {"dataset": "sklearn:iris", **data}})


def _prepared(**data):
    sc = parse_scenario({"data": {"dataset": "sklearn:iris", **data},
                         "protocol": {"name": "dp-knn"}, "run": {"seed": data.pop("seed", 0)}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return prepare_data(sc)


def test_folds_cover_the_data_and_split_seed_keeps_the_split_across_seeds():
    folds = [_prepared(folds=5, fold=f, split_seed=3) for f in range(5)]
    assert sum(len(p.queries) for p in folds) == 150
    a = parse_scenario({"data": {"dataset": "sklearn:iris", "folds": 5, "split_seed": 3},
                        "protocol": {"name": "dp-knn"}, "run": {"seed": 1}})
    b = a.set_key("run.seed", 9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        pa, pb = prepare_data(a), prepare_data(b)
    assert np.array_equal(pa.queries, pb.queries)
    c = a.set_key("data.split_seed", None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        assert not np.array_equal(prepare_data(c).queries,
                                  prepare_data(c.set_key("run.seed", 9)).queries)


def test_data_bounds_come_from_training_rows_only():
    """A query far outside the training range does not move the (released) bounds."""
    sc = parse_scenario({"data": {"dataset": "sklearn:iris", "folds": 3, "fold": 0,
                                  "shuffle": False}, "protocol": {"name": "dp-knn"}})
    with pytest.warns(PrivacyLeakWarning, match="training rows"):
        p = prepare_data(sc)
    assert np.allclose(p.bounds.lower, p.train_X.min(axis=0))
    assert np.allclose(p.bounds.upper, p.train_X.max(axis=0))
    # contiguous iris folds: fold 0 is all setosa, whose petal lengths lie below the rest
    assert p.queries[:, 2].min() < p.bounds.lower[2]


def test_a_store_keeps_finished_runs_and_a_rerun_picks_up_where_it_stopped(tmp_path,
                                                                           monkeypatch):
    import json

    from ppknn.simulations import sweep

    g = Grid("st", base=BASE, axes={"protocol.epsilon": [0.5, 1.0, 4.0]}, seeds=(0, 3))
    plain = run_grids([g])["st"]
    store = tmp_path / "rows.jsonl"
    real = sweep.run_one
    calls: list[str] = []

    def failing(job):
        calls.append(job[1]["run"]["name"])
        if len(calls) == 4:
            raise RuntimeError("party lost")
        return real(job)

    monkeypatch.setattr(sweep, "run_one", failing)
    with pytest.raises(RuntimeError, match="party lost"):
        run_grids([g], store=store)
    kept = [json.loads(line) for line in store.read_text().splitlines()]
    assert len(kept) == 3  # the three finished before the failure are on disk
    calls.clear()
    monkeypatch.setattr(sweep, "run_one", lambda job: calls.append(job[1]["run"]["name"])
                        or real(job))
    resumed = run_grids([g], store=store)["st"]
    assert calls == ["st-0003", "st-0004", "st-0005"]  # only what was missing
    drop = {"protocol_s", "startup_s", "measure_s", "total_s"}
    assert [{k: v for k, v in r.items() if k not in drop} for r in resumed] == \
        [{k: v for k, v in r.items() if k not in drop} for r in plain]
    calls.clear()
    assert run_grids([g], store=store)["st"] == resumed and calls == []  # all reused
    # another scenario (here: another base) is not served from the store
    other = Grid("st", base={**BASE, "data": {**BASE["data"], "test_fraction": 0.4}},
                 axes={"protocol.epsilon": [0.5]})
    run_grids([other], store=store)
    assert calls == ["st-0000"]


def test_a_torn_last_line_of_a_store_is_run_again(tmp_path, monkeypatch):
    g = Grid("torn", base=BASE, axes={"protocol.epsilon": [0.5, 4.0]})
    store = tmp_path / "rows.jsonl"
    first = run_grids([g], store=store)["torn"]
    lines = store.read_text().splitlines()
    store.write_text(lines[0] + "\n" + lines[1][: len(lines[1]) // 2])  # killed mid-write
    again = run_grids([g], store=store)["torn"]
    assert again[0] == first[0] and again[1]["accuracy"] == first[1]["accuracy"]
    from ppknn.simulations import sweep

    calls = []
    real = sweep.run_one
    monkeypatch.setattr(sweep, "run_one", lambda job: calls.append(job) or real(job))
    assert run_grids([g], store=store)["torn"] == again and calls == []  # the re-run kept
