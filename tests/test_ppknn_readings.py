"""The two flagged readings of PP-TopK (schedule, start step) and the public initial value."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from ppknn.core.errors import ConfigError
from ppknn.core.messages import PUBLIC
from ppknn.core.runtime import InProcessRuntime, RunContext
from ppknn.core.transcript import Transcript, View
from ppknn.protocols.ppknn_ring import PPKNNConfig, random_ring, run_ppknn
from ppknn.protocols.ppknn_ring.pp_topk import TopKParams, euclidean_distances, public_max_distance
from ppknn.protocols.ppknn_ring.pp_topk_attacks import successor_attribution
from tests.helpers import owner_specs


def _data(seed=0, n_points=200, n_queries=80, n=5):
    rng = np.random.default_rng(seed)
    X = rng.random((n_points, 3))
    y = rng.integers(0, 3, n_points)
    parts = np.array_split(rng.permutation(n_points), n)
    return [X[p] for p in parts], [y[p] for p in parts], rng.random((n_queries, 3))


def _run(start_step, *, p0=0.0, rounds=2, k=4, seed=3):
    parts_X, parts_y, Q = _data()
    names, specs = owner_specs(parts_X, parts_y, 3, seed=seed)
    rt = InProcessRuntime()
    rt.start(specs, RunContext(run_id="test", record=True))
    ring, start = random_ring(names, np.random.default_rng(seed))
    params = TopKParams(k=k, p0=p0, d=0.5, rounds=rounds, max_distance=np.sqrt(3),
                        start_step=start_step)
    try:
        res = run_ppknn(rt, Q, PPKNNConfig(params=params), ring=ring, start=start)
        rt.close_transcript()
        transcript = Transcript(rt.transcript_table())
    finally:
        rt.shutdown()
    truth = np.sort(euclidean_distances(Q, np.concatenate(parts_X)), axis=1)[:, :k]
    return res, transcript, ring, start, truth


def test_schedules_and_their_bounds():
    r1 = TopKParams(k=1, p0=0.8, d=0.5, rounds=3, max_distance=1.0)
    r0 = TopKParams(k=1, p0=0.8, d=0.5, rounds=3, max_distance=1.0, schedule="r")
    assert [r1.randomisation_probability(r) for r in (1, 2, 3)] == [0.8, 0.4, 0.2]
    assert [r0.randomisation_probability(r) for r in (1, 2, 3)] == [0.4, 0.2, 0.1]
    assert r1.correctness_bound() == pytest.approx(1 - 0.8**3 * 0.5**3)
    assert r0.correctness_bound() == pytest.approx(1 - 0.8**3 * 0.5**6)


@pytest.mark.parametrize("key,value", [("schedule", "r+1"), ("start_step", "middle")])
def test_unknown_reading_is_refused(key, value):
    with pytest.raises(ConfigError, match=f"{key} must be one of"):
        TopKParams(k=1, max_distance=1.0, **{key: value})


def test_start_last_is_exact_at_p0_zero_and_sends_as_many_messages():
    first, t_first, *_ = _run("first")
    last, t_last, _, start, truth = _run("last")
    np.testing.assert_array_equal(last.final_vector, truth)
    np.testing.assert_array_equal(last.predictions, first.predictions)
    m_first, m_last = (t.messages(protocol="pp-topk", with_provenance=True)
                       for t in (t_first, t_last))
    assert len(m_first) == len(m_last) == 5 * 2 + 4
    # the start node's first message is the public initial vector, untouched
    opening = [m for m in m_last if m.sender == start and m.round == 1]
    assert len(opening) == 1
    assert (opening[0].payload["g"] == np.sqrt(3)).all()
    assert (opening[0].provenance["g"] == PUBLIC).all()


def test_start_last_hides_the_start_node_from_its_successor_in_round_one():
    """Under "first" the start's successor sees the start's values in round 1; not under "last"."""
    for step, expect_claims in (("first", True), ("last", False)):
        _, transcript, ring, start, _ = _run(step, p0=0.0, rounds=1)
        successor = ring[(ring.index(start) + 1) % len(ring)]
        msgs = transcript.messages(protocol="pp-topk")
        view = View.of(msgs, successor)
        claims = successor_attribution(view, max_distance=np.sqrt(3))
        on_start = [c for c in claims.items if c.target == start]
        assert bool(on_start) is expect_claims, step


def _dataset_dir(tmp_path, test_rows):
    """A 2-feature dataset: 40 training rows in [0, 1]^2, then the given test rows."""
    rng = np.random.default_rng(0)
    train = rng.random((40, 2))
    rows = np.concatenate([test_rows, train])  # fold 0 of 2 unshuffled = the first half
    labels = np.concatenate([np.arange(len(test_rows)) % 2, rng.integers(0, 2, 40)])
    lines = ["a,b,label"] + [f"{x:.6f},{y:.6f},{c}" for (x, y), c in zip(rows, labels)]
    (tmp_path / "toy.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "manifest.json").write_text(json.dumps(
        {"toy": {"file": "toy.csv", "label": "label"}}))
    return tmp_path


@pytest.mark.parametrize("where", ["inside", "outside"])
def test_test_rows_outside_the_training_range_do_not_move_the_bounds(tmp_path, where):
    from ppknn.simulations import registry
    from ppknn.simulations.prepare import prepare_data
    from ppknn.simulations.scenario import parse_scenario
    from ppknn.simulations.sweep import run_one

    rng = np.random.default_rng(1)
    test = rng.random((40, 2)) * 0.8 + 0.1
    if where == "outside":
        test = test * 6.0 + 3.0  # every test row far outside [0, 1]^2
    folder = _dataset_dir(tmp_path, test)
    scenario = parse_scenario({
        "data": {"dataset": "toy", "data_dir": str(folder), "folds": 2, "fold": 0,
                 "shuffle": False, "bounds": "data"},
        "parties": {"n": 3},
        "protocol": {"name": "ppknn-ring", "k": 3, "p0": 0.0, "rounds": 1},
        "runtime": {"kind": "inprocess"}}, source="test")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = prepare_data(scenario)
        plugin = registry.get("ppknn-ring")
        plan = plugin.plan(scenario.protocols[0], data)
        row = run_one(({}, scenario.model_dump()))
    # bounds come from the 40 training rows only, whatever the test rows are
    np.testing.assert_allclose(data.bounds.lower, data.train_X.min(axis=0))
    np.testing.assert_allclose(data.bounds.upper, data.train_X.max(axis=0))
    assert (data.train_X <= 1.0).all() and len(data.train_X) == 40
    # the initial value covers every query-to-point distance, so the run stays exact
    params = plan.config.params
    far = np.linalg.norm(np.maximum(np.abs(data.queries - data.bounds.lower),
                                    np.abs(data.queries - data.bounds.upper)), axis=1).max()
    assert params.max_distance == pytest.approx(max(data.bounds.diameter, far))
    assert params.max_distance >= euclidean_distances(data.queries, data.train_X).max()
    assert row["topk_exact_fraction"] == 1.0
    assert row["agreement_with_knn"] == 1.0 or row["queries_with_tie_at_kth"] > 0


def test_public_max_distance_reads_bounds_and_queries_only():
    lower, upper = np.zeros(2), np.ones(2)
    inside = np.array([[0.2, 0.9]])
    assert public_max_distance(lower, upper, inside) == pytest.approx(np.sqrt(2))
    assert public_max_distance(lower, upper, np.empty((0, 2))) == pytest.approx(np.sqrt(2))
    assert public_max_distance(lower, upper, np.array([[-3.0, 0.0]])) == pytest.approx(
        np.hypot(4.0, 1.0))
