"""``dp-knn`` through the registry: runner, results, Ray, the ledger's accounting, bad inputs."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from ppknn.core.transcript import Transcript
from ppknn.simulations.knn import union_topk_and_ties
from ppknn.simulations.pipeline import write_results
from ppknn.simulations.runner import execute, prepare
from ppknn.simulations.scenario import load_scenario, parse_scenario, tomllib
from tests.plugins.equivalence import assert_ray_equals_inprocess, assert_refused

NAME = "dp-knn"
SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / f"{NAME}.toml"
COMMON_FILES = ("scenario.json", "public.json", "predictions.csv", "parties.csv",
                "summary.json", "summary.svg", "transcript/totals.json")
ANALYSTS = tuple(f"analyst-{i}" for i in range(8))


def raw(drop: tuple[str, ...] = (), parties: dict | None = None, **protocol) -> dict:
    """The example scenario as a mapping, in-process, with protocol keys replaced or dropped."""
    data = tomllib.loads(SCENARIO.read_text())
    data["runtime"]["kind"] = "inprocess"
    data["parties"].update(parties or {})
    for key in drop:
        data["protocol"].pop(key)
    data["protocol"].update(protocol)
    return data


def scenario(drop: tuple[str, ...] = (), parties: dict | None = None, **protocol):
    return parse_scenario(raw(drop, parties, **protocol), source="test")


def test_example_scenario_runs_and_writes_the_common_shape(tmp_path):
    sc = load_scenario(SCENARIO)
    assert sc.runtime.kind == "ray" and sc.data.scale == "minmax"
    assert sc.data.bounds != "data" and sc.parties.analysts == 8
    result = execute(sc.with_overrides(runtime={"kind": "inprocess"}),
                     transcript_dir=tmp_path / "run" / "transcript")
    folder = write_results(result, tmp_path / "run")
    for f in COMMON_FILES:
        assert (folder / f).is_file(), f
    summary = json.loads((folder / "summary.json").read_text())
    r = summary["results"][NAME]
    assert summary["queries"] == 400 and summary["parties"] == 9
    assert r["accuracy"] == pytest.approx(301 / 400)  # 321 / 400 on the first 400 sorted test rows
    assert r["baseline"]["accuracy"] == pytest.approx(338 / 400)
    assert r["privacy"]["epsilon"] == 4.0 and r["privacy"]["delta"] == 0.0
    assert r["privacy"]["guarantee"] == ("ε-DP, add/remove one training record (central "
                                         "owner's ledger)")
    assert (r["task"], r["algorithm"], r["epsilon_per_request"]) == ("rn", "proposed", 0.5)
    assert (r["requests"], r["refused_requests"], r["answered_fraction"]) == (8, 0, 1.0)
    assert r["hops"] == 2 and summary["communication"]["messages"] == 16
    assert r["clique_upper_bounds"] == 0 and r["mean_sensitivity"] > 1
    parties = (folder / "parties.csv").read_text().splitlines()
    assert parties[0].startswith("party,roles") and len(parties) == 10
    assert parties[1].startswith("dp-owner,dp-knn:owner,")
    assert (folder / "predictions.csv").read_text().splitlines()[0].startswith(
        f"query,label,{NAME},{NAME}:baseline,{NAME}:analyst,{NAME}:request,{NAME}:refused")
    public = json.loads((folder / "public.json").read_text())["protocols"][NAME]
    assert public["requests"][0] == ["analyst-0", 0, 0, 50]
    assert public["requests"][-1] == ["analyst-7", 0, 350, 400]


def test_the_owner_serves_every_analyst_concurrently():
    plan = prepare(scenario()).plan
    specs = {s.party_id: s for s in plan.specs}
    assert specs["dp-owner"].max_concurrency == 8
    assert all(specs[a].max_concurrency == 1 for a in ANALYSTS)
    assert specs["dp-owner"].kwargs["X"].shape == (3603, 5)  # the union of the training rows
    assert plan.roles == {"owner": ("dp-owner",), "analyst": ANALYSTS}


@pytest.mark.ray
@pytest.mark.parametrize("layout", ["actor-per-party", "hosted"])
def test_ray_equals_inprocess(ray_local, tmp_path, layout):
    """Same predictions, summary and transcript on Ray with a concurrent owner.

    The owner's messages are numbered from the driver's call order (its call
    tickets), not from the order its concurrent calls finish, so even the
    sequence numbers agree; only the order in which records reach the
    recorder differs, which ``canonical_rows`` (sorted) removes.
    """
    sc = load_scenario(SCENARIO)
    _, on_ray, rows = assert_ray_equals_inprocess(sc, tmp_path, layout=layout)
    assert len(rows) == 16
    assert 1 <= on_ray.outcome.result.detail.peak_concurrency <= 8


def _ledger(result):
    return result.outcome.result.detail.ledger


def test_cap_of_four_pays_every_request_exactly():
    """8 analysts x 1 batch x ε 0.5 = 4 = the cap: all answered, 4.0 spent."""
    result = execute(scenario(budget=4.0, epsilon=0.5))
    r = result.outcome.summary()
    assert r["epsilon_spent"] == 4.0 and r["privacy"]["epsilon"] == 4.0
    assert r["refused_requests"] == 0 and r["answered_requests"] == 8
    assert r["epsilon_remaining"] == 0.0 and r["answered_fraction"] == 1.0
    assert _ledger(result).spent_exact() == (Fraction(4), Fraction(0))
    assert r["privacy"]["per_party"] == {**{a: {"epsilon": 0.5, "delta": 0.0} for a in ANALYSTS},
                                         "dp-owner": {"epsilon": 4.0, "delta": 0.0}}


def test_cap_of_three_answers_six_requests_and_refuses_two(tmp_path):
    result = execute(scenario(budget=3.0, epsilon=0.5), transcript_dir=tmp_path / "t")
    o = result.outcome
    r = o.summary()
    assert (r["answered_requests"], r["refused_requests"]) == (6, 2)
    assert r["epsilon_spent"] == 3.0 and r["privacy"]["epsilon"] == 3.0
    assert _ledger(result).spent_exact() == (Fraction(3), Fraction(0))
    spent = {a: v["epsilon"] for a, v in r["privacy"]["per_party"].items()}
    # in-process the requests are served in the driver's order: analysts 6 and 7 come last
    assert spent == {**{a: 0.5 for a in ANALYSTS[:6]}, "analyst-6": 0.0, "analyst-7": 0.0,
                     "dp-owner": 3.0}
    assert r["answered_fraction"] == 0.75
    refused = np.asarray(o.result.per_query["refused"]).astype(bool)
    assert refused.sum() == 100 and np.all(o.predictions[refused] == -1)
    assert np.all(o.predictions[~refused] >= 0)
    assert len(r["refusals"]) == 2 and all("would exceed the owner's budget" in m
                                           for m in r["refusals"])
    msgs = Transcript(tmp_path / "t").messages()
    refusals = [m for m in msgs if m.kind == "refused"]
    assert sorted(m.receiver for m in refusals) == ["analyst-6", "analyst-7"]
    assert all(m.sender == "dp-owner" for m in refusals)


def test_analyst_cap_refuses_each_analysts_second_batch():
    result = execute(scenario(budget=100.0, analyst_budget=0.5, batches=2, epsilon=0.5))
    r = result.outcome.summary()
    assert (r["requests"], r["answered_requests"], r["refused_requests"]) == (16, 8, 8)
    assert r["epsilon_spent"] == 4.0
    assert all(r["privacy"]["per_party"][a]["epsilon"] == 0.5 for a in ANALYSTS)
    per = result.outcome.result.per_party
    assert all(per[a]["refused_requests"] == 1 and per[a]["requests"] == 2 for a in ANALYSTS)
    assert all("analyst" in m and "cap" in m for m in r["refusals"])


def test_default_budget_is_what_the_requests_cost():
    """No ``budget``: 8 analysts x 3 batches x ε 0.1 = 2.4, paid exactly, nothing refused."""
    result = execute(scenario(drop=("budget",), epsilon=0.1, batches=3))
    r = result.outcome.summary()
    assert r["epsilon_budget"] == 2.4 and r["epsilon_spent"] == 2.4
    assert r["refused_requests"] == 0 and r["requests"] == 24 and r["hops"] == 6
    assert _ledger(result).spent_exact()[0] == Fraction(12, 5)
    assert all(r["privacy"]["per_party"][a]["epsilon"] == pytest.approx(0.3, abs=1e-15)
               for a in ANALYSTS)


BAD = [
    # (protocol keys, [parties] keys, where the error must be raised, text the message must hold)
    ({"epsilon": 0}, {}, "parse", r"protocol\.epsilon = 0: .*greater than 0"),
    ({"epsilon": -0.5}, {}, "parse", r"protocol\.epsilon = -0\.5: .*greater than 0"),
    ({"epsilon": float("nan")}, {}, "parse", r"protocol\.epsilon = nan: .*finite"),
    ({"epsilon": float("inf")}, {}, "parse", r"protocol\.epsilon = inf: .*finite"),
    ({"epsilon": "0.5"}, {}, "parse", r"protocol\.epsilon = '0\.5': .*valid number"),
    ({"delta": 1.0}, {}, "parse", r"protocol\.delta = 1\.0: .*less than 1"),
    ({"delta": -0.1}, {}, "parse", r"protocol\.delta = -0\.1: .*greater than or equal to 0"),
    ({"delta": float("nan")}, {}, "parse", r"protocol\.delta = nan: .*finite"),
    ({"task": "kmeans"}, {}, "parse", r"protocol\.task = 'kmeans': .*'rn', 'knn' or 'convert'"),
    ({"algorithm": "nope"}, {}, "parse",
     r"protocol\.algorithm = 'nope': .*not a 'rn' algorithm; allowed: \['proposed', "
     r"'baseline-laplace', 'baseline-exponential'\]"),
    ({"task": "knn", "algorithm": "proposed"}, {}, "parse",
     r"protocol\.algorithm = 'proposed': .*not a 'knn' algorithm; allowed: \['baseline', "
     r"'interactive', 'noninteractive'\]"),
    ({"algorithm": 3}, {}, "parse", r"protocol\.algorithm = 3: .*valid string"),
    ({"budget": 0.3}, {}, "parse",
     r"protocol\.budget = 0\.3: .*below the cost of one request \(protocol\.epsilon = 0\.5\)"),
    ({"analyst_budget": 0.25}, {}, "parse",
     r"protocol\.analyst_budget = 0\.25: .*below the cost of one request "
     r"\(protocol\.epsilon = 0\.5\)"),
    ({"budget": float("nan")}, {}, "parse", r"protocol\.budget = nan: .*finite"),
    ({"budget": 0.0}, {}, "parse", r"protocol\.budget = 0\.0: .*greater than 0"),
    ({"radius": 0.0}, {}, "parse", r"protocol\.radius = 0\.0: .*greater than 0"),
    ({"radius": float("inf")}, {}, "parse", r"protocol\.radius = inf: .*finite"),
    ({"radius": "big"}, {}, "parse", r"protocol\.radius = 'big': .*\"auto\""),
    ({"radius": "auto", "radius_epsilon": 0.0}, {}, "parse",
     r"protocol\.radius_epsilon = 0\.0: .*greater than 0"),
    ({"radius": "auto", "radius_target": float("nan")}, {}, "parse",
     r"protocol\.radius_target = nan: .*finite"),
    ({"radius": "auto", "budget": 1.0}, {}, "parse",
     r"protocol\.budget = 1\.0: .*below the cost of one request \(protocol\.epsilon \+ "
     r"protocol\.radius_epsilon = 1\.5\)"),
    ({"task": "convert", "algorithm": "baseline"}, {}, "parse",
     r"protocol\.algorithm = 'baseline': .*not a 'convert' algorithm"),
    ({"task": "knn", "algorithm": "baseline", "k": 0}, {}, "parse",
     r"protocol\.k = 0: .*greater than or equal to 1"),
    ({"task": "knn", "algorithm": "baseline", "k": 5000}, {}, "prepare",
     r"protocol\.k = 5000: larger than the 3603 training rows"),
    ({"k": True}, {}, "parse", r"protocol\.k = True: .*valid integer"),
    ({"batches": 0}, {}, "parse", r"protocol\.batches = 0: .*greater than or equal to 1"),
    ({"batches": 1.5}, {}, "parse", r"protocol\.batches = 1\.5: .*valid integer"),
    ({"batches": 51, "budget": 1000.0}, {}, "prepare",
     r"protocol\.batches = 51: .*50 rows to the smallest block.*allowed: <= 50"),
    ({}, {"analysts": 401}, "prepare",
     r"parties\.analysts = 401: more analysts than the 400 query rows"),
    ({"weight": 1.0}, {}, "parse", r"protocol\.weight = 1\.0: .*less than 1"),
    ({"candidates": 0}, {}, "parse", r"protocol\.candidates = 0: .*greater than or equal to 1"),
    ({"gamma": -1.0}, {}, "parse", r"protocol\.gamma = -1\.0: .*greater than 0"),
    ({"clique_time_limit_s": 0.0}, {}, "parse",
     r"protocol\.clique_time_limit_s = 0\.0: .*greater than 0"),
    ({"clique_time_limit_s": -1.0}, {}, "parse",
     r"protocol\.clique_time_limit_s = -1\.0: .*greater than 0"),
    ({"clique_work_limit": 0}, {}, "parse",
     r"protocol\.clique_work_limit = 0: .*greater than or equal to 1"),
    ({"clique_work_limit": -1}, {}, "parse",
     r"protocol\.clique_work_limit = -1: .*greater than or equal to 1"),
    ({"clique_work_limit": 1.5}, {}, "parse",
     r"protocol\.clique_work_limit = 1\.5: .*valid integer"),
    ({"clique_work_limit": "x"}, {}, "parse",
     r"protocol\.clique_work_limit = 'x': .*valid integer"),
    ({"clique_work_limit": True}, {}, "parse",
     r"protocol\.clique_work_limit = True: .*valid integer"),
    ({"count_share": 1.0}, {}, "parse", r"protocol\.count_share = 1\.0: .*less than 1"),
    ({"eps": 0.5}, {}, "parse", r"unknown key 'protocol\.eps'; allowed keys here: .*'epsilon'"),
]


@pytest.mark.parametrize(("keys", "parties", "where", "message"), BAD,
                         ids=[f"{i}-{'-'.join(map(str, (*k, *p)))}"
                              for i, (k, p, _, _) in enumerate(BAD)])
def test_bad_inputs_refused_before_any_party_starts(keys, parties, where, message):
    assert_refused(raw(parties=parties, **keys), where, message)


def _rn_untied(result, radius):
    """Queries whose region is not empty and whose top label count is unique."""
    data = result.prepared.data
    from scipy.spatial import cKDTree

    tree = cKDTree(data.train_X)
    counts = np.zeros((len(data.queries), data.n_classes), dtype=int)
    for i, rows in enumerate(tree.query_ball_point(data.queries, radius)):
        counts[i] = np.bincount(data.train_y[rows], minlength=data.n_classes)
    top = np.sort(counts, axis=1)
    return (top[:, -1] > 0) & (top[:, -1] > top[:, -2])


@pytest.mark.parametrize("algorithm", ["proposed", "baseline-laplace", "baseline-exponential"])
def test_rn_without_noise_equals_the_baseline(algorithm):
    """ε = 1e9 per batch: the noise cannot flip a label, so r-N is scikit-learn's r-N."""
    result = execute(scenario(drop=("budget",), algorithm=algorithm, epsilon=1e9))
    o = result.outcome
    keep = _rn_untied(result, 0.1)
    assert keep.sum() >= 390
    np.testing.assert_array_equal(o.predictions[keep], o.baseline.predictions[keep])
    assert o.summary()["epsilon_spent"] == 8e9


def test_knn_baseline_without_noise_equals_scikit_learn():
    result = execute(scenario(drop=("budget",), task="knn", algorithm="baseline", k=5,
                              epsilon=1e9))
    o = result.outcome
    data = result.prepared.data
    _, ties = union_topk_and_ties(data.queries, data.train_X, 5)
    keep = ~ties
    assert keep.sum() >= 390
    np.testing.assert_array_equal(o.predictions[keep], o.baseline.predictions[keep])


def test_auto_radius_is_released_by_the_owner_and_charged_exactly():
    """8 analysts x (ε 0.25 + ε_r 0.25): the ledger spends exactly 4, one radius per request."""
    result = execute(scenario(drop=("budget",), radius="auto", epsilon=0.25, radius_epsilon=0.25,
                              radius_target=10.0))
    o = result.outcome
    r = o.summary()
    assert r["epsilon_per_request"] == 0.5 and r["epsilon_budget"] == 4.0
    assert r["epsilon_spent"] == 4.0 and r["refused_requests"] == 0
    assert _ledger(result).spent_exact() == (Fraction(4), Fraction(0))
    assert all("radius ε_r 0.25 + classification ε 0.25" in e.label
               for e in _ledger(result).entries)
    radii = np.asarray(o.result.per_query["radius"])
    blocks = [radii[i * 50:(i + 1) * 50] for i in range(8)]
    assert all(len(set(b.tolist())) == 1 for b in blocks)  # one released radius per request
    assert r["radius"] == pytest.approx(float(np.mean(radii)))
    assert r["baseline_radius"] > 0 and r["radius_epsilon"] == 0.25
    assert o.plan.public["radius"] == "auto"


def test_convert_task_releases_radii_and_measures_their_error():
    result = execute(scenario(drop=("budget",), task="convert", algorithm="noninteractive",
                              k=10, epsilon=1.0))
    r = result.outcome.summary()
    assert r["answered_fraction"] == 0.0 and r["epsilon_spent"] == 8.0
    assert 0 < r["avre"] < 100 and r["rmse_k"] > 0
    assert np.all(np.isfinite(np.asarray(result.outcome.result.per_query["radius"])))


def _outside(tmp_path, factor: float) -> dict:
    """Rows 0-59 (the test fold) lie ``factor`` times outside the training rows' range."""
    rng = np.random.default_rng(0)
    X = rng.random((180, 2))
    X[:60] = 1 + factor * X[:60]
    y = (X[:, 0] + rng.random(180) > 1).astype(int)
    folder = tmp_path / f"x{factor}"
    folder.mkdir()
    lines = ["a,b,class"] + [f"{a!r},{b!r},{c}" for (a, b), c in zip(X.tolist(), y)]
    (folder / "toy.csv").write_text("\n".join(lines) + "\n")
    (folder / "manifest.json").write_text(json.dumps({"toy": {"file": "toy.csv",
                                                               "label": "class"}}))
    data = raw(drop=("budget",), parties={"analysts": 2})
    data["data"] = {"dataset": "toy", "data_dir": str(folder), "folds": 3, "shuffle": False,
                    "scale": "none", "bounds": "data"}
    return data


@pytest.mark.parametrize("protocol", [
    {"task": "rn", "radius": "auto"}, {"task": "rn", "radius": 0.2},
    {"task": "knn", "algorithm": "noninteractive", "k": 5},
    {"task": "convert", "algorithm": "interactive", "k": 5}])
def test_test_rows_outside_the_training_range_move_no_released_parameter(tmp_path, protocol):
    """Bounds from the data are the training rows'; queries outside them are clipped."""
    released = []
    for factor in (1.0, 50.0):
        data = _outside(tmp_path, factor)
        data["protocol"].update(protocol)
        with pytest.warns(Warning, match="training rows"):
            result = execute(parse_scenario(data, source="test"))
        public = result.outcome.plan.public
        released.append((public["bounds"], public["epsilon_budget"], public["radius"]))
        assert result.outcome.summary()["refused_requests"] == 0
    assert released[0] == released[1]
    lower, upper = (np.asarray(v) for v in (released[0][0]["lower"], released[0][0]["upper"]))
    assert np.all(upper <= 1.0) and np.all(lower >= 0.0)  # the training rows' box, not the test's
