"""``dptt`` through the registry: runner, results, Ray, accounting, bad inputs, no-privacy limit."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from ppknn.core.errors import PrivacyLeakWarning
from ppknn.protocols.dptt.tree import ModifiedKDTree
from ppknn.simulations.knn import union_topk_and_ties
from ppknn.simulations.pipeline import write_results
from ppknn.simulations.runner import execute, prepare
from ppknn.simulations.scenario import load_scenario, parse_scenario, tomllib
from tests.plugins.equivalence import assert_ray_equals_inprocess, assert_refused

NAME = "dptt"
SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / f"{NAME}.toml"
COMMON_FILES = ("scenario.json", "public.json", "predictions.csv", "parties.csv",
                "summary.json", "summary.svg", "transcript/totals.json")
DROP = object()
"""A protocol key to remove from the example scenario."""


def raw(data: dict | None = None, **protocol) -> dict:
    """The example scenario as a mapping, in-process, with protocol keys replaced or dropped."""
    out = tomllib.loads(SCENARIO.read_text())
    out["runtime"]["kind"] = "inprocess"
    for section, values in (data or {}).items():
        out[section].update(values)
    for key, value in protocol.items():
        if value is DROP:
            out["protocol"].pop(key, None)
        else:
            out["protocol"][key] = value
    return out


def scenario(data: dict | None = None, **protocol):
    return parse_scenario(raw(data, **protocol), source="test")


def br_by_hand(c: int, eps: float, delta: float) -> float:
    """min{c ε, c KL(ε) + sqrt(c ε² ln(1/δ) / 2)} (Dong, Durfee & Rogers), written out."""
    y = eps / (1 - math.exp(-eps))
    kl = y - 1 - math.log(y)
    return min(c * eps, c * kl + math.sqrt(0.5 * c * eps**2 * math.log(1 / delta)))


def test_example_scenario_runs_and_writes_the_common_shape(tmp_path):
    sc = load_scenario(SCENARIO)
    assert sc.runtime.kind == "ray" and sc.data.scale == "minmax"
    result = execute(sc.with_overrides(runtime={"kind": "inprocess"}),
                     transcript_dir=tmp_path / "run" / "transcript")
    folder = write_results(result, tmp_path / "run")
    for f in COMMON_FILES:
        assert (folder / f).is_file(), f
    summary = json.loads((folder / "summary.json").read_text())
    r = summary["results"][NAME]
    assert summary["queries"] == 200 and summary["parties"] == 2
    assert r["accuracy"] == pytest.approx(127 / 200)  # 143 / 200 on the first 200 sorted test rows
    assert r["baseline"]["accuracy"] == pytest.approx(170 / 200)
    assert r["baseline"]["name"] == "1-NN (union, non-private)"
    assert r["privacy"] == {
        "guarantee": "local (ε, δ)-DP per query (bounded-range composition over the worst-case "
                     "tree height); DIS: only within radius, ε·d/radius per decision at distance d",
        "epsilon": 10.0, "delta": 0.0, "per_party": {"client": {"epsilon": 10.0, "delta": 0.0}}}
    # 13,333 training rows: height ceil(log2 13333) = 14; E8 decides 14 - 8 = 6 times
    assert (r["tree_height"], r["compositions"], r["rounds"]) == (14, 6, 6)
    assert r["hops"] == 14 and summary["communication"]["messages"] == 14
    assert r["decisions"] == 6 * 200
    assert r["nn_accuracy"] == pytest.approx(17 / 200) and r["top5_accuracy"] == 0.105
    assert r["released_mean"] == pytest.approx(208.37) and r["released_max"] == 209
    assert 0 < r["seen_fraction"] < 0.02
    parties = (folder / "parties.csv").read_text().splitlines()
    assert parties[0].startswith("party,roles") and len(parties) == 3
    client = dict(zip(parties[0].split(","), parties[1].split(",")))
    assert client["party"] == "client" and float(client["budget_remaining_epsilon"]) == 0.0
    assert (folder / "predictions.csv").read_text().splitlines()[0].startswith(
        f"query,label,{NAME},{NAME}:baseline,{NAME}:released")
    public = json.loads((folder / "public.json").read_text())["protocols"][NAME]
    assert public["tree_height"] == 14 and public["training_rows"] == 13333


@pytest.mark.ray
@pytest.mark.parametrize("layout", ["actor-per-party", "hosted"])
def test_ray_equals_inprocess(ray_local, tmp_path, layout):
    sc = load_scenario(SCENARIO).with_overrides(data={"max_queries": 60})
    _, _, rows = assert_ray_equals_inprocess(sc, tmp_path, layout=layout)
    assert len(rows) == 14


@pytest.mark.parametrize(("keys", "c", "br_wins"), [
    ({"variant": "E8", "final_epsilon": 10.0}, 6, False),     # summation wins: pure ε-DP
    ({"variant": "GS", "final_epsilon": 10.0}, 14 * 15 // 2, True),
    ({"variant": "basic", "epsilon": 1.0, "final_epsilon": DROP}, 14, True),
    ({"variant": "P2", "epsilon": 0.5, "final_epsilon": DROP, "delta": 0.0}, 12 * 4, False),
    ({"variant": "N20", "utility": "dis", "radius": 0.1, "final_epsilon": 5.0}, 14, True),
])
def test_privacy_is_the_accounting_by_hand(keys, c, br_wins):
    """Final ε per query = the bounded-range composition over the worst-case height."""
    budget = 100.0
    r = execute(scenario(client_budget=budget, **keys)).outcome.summary()
    eps, delta = r["per_decision_epsilon"], keys.get("delta", 1e-7)
    assert r["compositions"] == c and r["tree_height"] == 14
    assert (r["utility"], r["radius"]) == (keys.get("utility", "cmp"), keys.get("radius"))
    if "epsilon" in keys:
        assert eps == keys["epsilon"]
    hand_br = br_by_hand(c, eps, delta) if delta > 0 else c * eps
    assert r["final_epsilon_br"] == pytest.approx(hand_br, rel=1e-12)
    assert r["final_epsilon_sum"] == pytest.approx(c * eps, rel=1e-15)
    assert (r["final_epsilon_br"] < r["final_epsilon_sum"]) == br_wins
    if keys.get("final_epsilon", DROP) is not DROP:  # the solved per-decision ε meets the target
        assert r["final_epsilon_br"] == pytest.approx(keys["final_epsilon"], rel=1e-12)
        assert r["final_epsilon_br"] <= keys["final_epsilon"]
    spent = (r["final_epsilon_br"], delta if br_wins else 0.0)
    p = r["privacy"]
    assert (p["epsilon"], p["delta"]) == spent
    assert (p["per_party"]["client"]["epsilon"], p["per_party"]["client"]["delta"]) == spent
    assert r["delta_spent"] == spent[1]


def test_client_ledger_holds_the_charge():
    result = execute(scenario(variant="GS", client_budget=25.0))
    o = result.outcome
    client = o.result.per_party["client"]
    assert client["budget_epsilon"] == 25.0
    assert client["budget_spent_epsilon"] == o.result.privacy.epsilon
    assert client["budget_remaining_epsilon"] == pytest.approx(25.0 - o.result.privacy.epsilon)


def tiny(**protocol) -> dict:
    """iris: 100 training rows, tree height 7."""
    data = raw(**protocol)
    data["data"].update({"dataset": "sklearn:iris", "max_queries": 20, "bounds": "data"})
    return data


BAD = [
    # (scenario mapping, where the error must be raised, text the message must hold)
    (raw(epsilon=0, final_epsilon=DROP), "parse", r"protocol\.epsilon = 0: .*greater than 0"),
    (raw(epsilon=-1.0, final_epsilon=DROP), "parse",
     r"protocol\.epsilon = -1\.0: .*greater than 0"),
    (raw(epsilon=float("nan"), final_epsilon=DROP), "parse",
     r"protocol\.epsilon = nan: .*finite number"),
    (raw(epsilon=float("inf"), final_epsilon=DROP), "parse",
     r"protocol\.epsilon = inf: .*finite number"),
    (raw(final_epsilon=0.0), "parse", r"protocol\.final_epsilon = 0\.0: .*greater than 0"),
    (raw(final_epsilon=float("nan")), "parse", r"protocol\.final_epsilon = nan: .*finite"),
    (raw(final_epsilon=float("inf")), "parse", r"protocol\.final_epsilon = inf: .*finite"),
    (raw(delta=1.0), "parse", r"protocol\.delta = 1\.0: .*less than 1"),
    (raw(delta=-1e-9), "parse", r"protocol\.delta = -1e-09: .*greater than or equal to 0"),
    (raw(delta=float("nan")), "parse", r"protocol\.delta = nan: .*finite"),
    (raw(variant="X9"), "parse",
     r"protocol\.variant = 'X9': .*unknown DP-TT variant 'X9'; allowed: 'basic', 'P<s>', "
     r"'E<s>', 'GS', 'N<B>', 'GS-N<B>'"),
    (raw(variant="E"), "parse", r"protocol\.variant = 'E': .*needs a number"),
    (raw(variant="GS3"), "parse", r"protocol\.variant = 'GS3': .*'GS' takes no number"),
    (raw(variant="N0"), "parse", r"protocol\.variant = 'N0': .*B must be >= 1"),
    (raw(variant="E15"), "prepare",
     r"protocol\.variant = 'E15': .*s=15 is beyond the tree height 14.*13333 training rows"),
    (tiny(variant="P8"), "prepare",
     r"protocol\.variant = 'P8': .*s=8 is beyond the tree height 7 .*100 training rows"),
    (raw(variant="E14"), "prepare",
     r"protocol\.final_epsilon = 10\.0: variant E14 makes no private decision .*height 14"),
    (raw(utility="dis"), "parse", r"protocol\.radius = None: utility = \"dis\" needs"),
    (raw(utility="dis", radius=0.0), "parse", r"protocol\.radius = 0\.0: .*greater than 0"),
    (raw(utility="dis", radius=float("nan")), "parse", r"protocol\.radius = nan: .*finite"),
    (raw(utility="euclid"), "parse", r"protocol\.utility = 'euclid': .*'cmp' or 'dis'"),
    (raw(epsilon=1.0), "parse",
     r"protocol\.final_epsilon = 10\.0: give exactly one of protocol\.epsilon .*1\.0"),
    (raw(final_epsilon=DROP), "parse",
     r"protocol\.epsilon = None: give exactly one of protocol\.epsilon"),
    (raw(client_budget=9.99), "prepare",
     r"protocol\.client_budget = 9\.99: below the cost of one query batch.*ε = 10 "),
    (raw(variant="GS", client_budget=9.0), "prepare",
     r"protocol\.client_budget = 9\.0: below the cost .*δ = 1e-07"),
    (raw(client_budget=0.0), "parse", r"protocol\.client_budget = 0\.0: .*greater than 0"),
    (raw(final_epsilon="10"), "parse", r"protocol\.final_epsilon = '10': .*valid number"),
    (raw(variant=8), "parse", r"protocol\.variant = 8: .*valid string"),
    (raw(predict="vote"), "parse", r"protocol\.predict = 'vote': .*'nearest' or 'majority'"),
    (raw(k=1), "parse", r"unknown key 'protocol\.k'; allowed keys here: .*'variant'"),
    (raw(geo_epsilon=1.0), "parse",
     r"protocol\.geo_epsilon = 1\.0: the GEO baseline runs only with protocol\.geo_radius"),
    (raw(geo_radius=0.0), "parse", r"protocol\.geo_radius = 0\.0: .*greater than 0"),
    (raw(geo_radius=float("nan")), "parse", r"protocol\.geo_radius = nan: .*finite"),
    (tiny(geo_radius=1.0), "prepare",
     r"protocol\.geo_radius = 1\.0: the GEO baseline perturbs 1-D .*the data has 4 features"),
    (raw(calibration="loose"), "parse",
     r"protocol\.calibration = 'loose': .*'proven' or 'thesis-reading'"),
]


@pytest.mark.parametrize(("data", "where", "message"), BAD,
                         ids=[f"{i}-{m[:30]}" for i, (_, _, m) in enumerate(BAD)])
def test_bad_inputs_refused_before_any_party_starts(data, where, message):
    assert_refused(data, where, message)


def test_no_privacy_limit_is_the_plain_descent_and_full_release_is_the_baseline():
    """ε huge: CMP always takes the correct side; E14 (s = H) releases every point."""
    big = {"epsilon": 1e3, "final_epsilon": DROP, "client_budget": DROP}
    result = execute(scenario(variant="basic", **big))
    data = result.prepared.data
    leaf = ModifiedKDTree.build(data.train_X).descend(data.queries, rule="cmp")
    np.testing.assert_array_equal(result.predictions, data.train_y[leaf])
    # the descent is approximate (no backtracking); releasing everything is exact 1-NN
    result = execute(scenario({"data": {"max_queries": 60}}, variant="E14", **big))
    o, data = result.outcome, result.prepared.data
    assert o.summary()["compositions"] == 0 and o.result.privacy.epsilon == 0.0
    assert o.summary()["released_mean"] == len(data.train_y)
    _, ties = union_topk_and_ties(data.queries, data.train_X, 1)
    assert (~ties).sum() >= 55
    np.testing.assert_array_equal(o.predictions[~ties], o.baseline.predictions[~ties])
    assert o.summary()["nn_accuracy"] == 1.0


def test_majority_votes_over_the_release_against_knn_of_the_release_size():
    o = execute(scenario(predict="majority", variant="N20")).outcome
    assert o.baseline.name == "20-NN (union, non-private)"
    r = o.summary()
    assert r["released_max"] == 20 and r["predict"] == "majority"


def test_a_million_points_gs_n20_parses_and_plans():
    """DP-TT GS-N20 at final ε 10, 10^6 server points, 10,000 client queries (not run)."""
    rows, queries = 1_010_000, 10_000
    data = raw({"data": {"dataset": f"synthetic:classification?rows={rows}&features=2&classes=2",
                         "test_fraction": queries / rows, "max_queries": queries}},
               variant="GS-N20", final_epsilon=10.0, client_budget=10.0)
    planned = prepare(parse_scenario(data, source="test")).protocols[0]
    public = planned.plan.public
    assert public["training_rows"] == 1_000_000 and public["n_queries"] == queries
    assert public["tree_height"] == 20 and public["compositions"] == 20 * 21 // 2
    assert public["final_epsilon_br"] == pytest.approx(10.0, rel=1e-12)
    assert public["per_decision_epsilon"] == pytest.approx(0.213903, rel=1e-5)
    assert len(planned.plan.specs) == 2 and planned.plan.queries.shape == (queries, 2)


def _csv_dataset(folder: Path, name: str, X: np.ndarray, y: np.ndarray) -> None:
    """Write ``name`` as a CSV dataset with a manifest in ``folder`` (rows in file order)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    folder.mkdir(parents=True, exist_ok=True)
    cols = {f"x{i}": X[:, i] for i in range(X.shape[1])}
    cols["label"] = y
    pcsv.write_csv(pa.table(cols), folder / f"{name}.csv")
    manifest = folder / "manifest.json"
    entries = json.loads(manifest.read_text()) if manifest.is_file() else {}
    entries[name] = {"file": f"{name}.csv", "label": "label"}
    manifest.write_text(json.dumps(entries))


@pytest.mark.parametrize("scale", ["none", "minmax"])
def test_test_rows_outside_the_training_range_do_not_move_the_released_parameters(
        tmp_path, scale):
    """Bounds from data read the training rows only; queries outside them are still answered."""
    rng = np.random.default_rng(5)
    train = rng.uniform(0.0, 1.0, (400, 2))
    y = np.r_[(train[:, 0] > 0.5).astype(np.int64), np.zeros(40, np.int64)]
    inside = rng.uniform(0.2, 0.8, (40, 2))
    outside = inside * 50.0 + 100.0  # far beyond the training rows' range
    for name, test in (("inside", inside), ("outside", outside)):
        _csv_dataset(tmp_path, name, np.vstack([train, test]), y)
    results = {}
    for name in ("inside", "outside"):
        sc = parse_scenario({
            "data": {"dataset": name, "data_dir": str(tmp_path), "folds": 11, "fold": 10,
                     "shuffle": False, "bounds": "data", "scale": scale},
            "parties": {"n": 1}, "runtime": {"kind": "inprocess"},
            "protocol": {"name": "dptt", "variant": "E2", "utility": "dis", "radius": 0.1,
                         "final_epsilon": 5.0, "geo_radius": 0.1}}, source=name)
        with pytest.warns(PrivacyLeakWarning, match="training rows"):
            results[name] = execute(sc)
    a, b = (results[k] for k in ("inside", "outside"))
    np.testing.assert_array_equal(a.prepared.data.train_X, b.prepared.data.train_X)
    np.testing.assert_array_equal(a.prepared.data.bounds.lower, b.prepared.data.bounds.lower)
    np.testing.assert_array_equal(a.prepared.data.bounds.upper, b.prepared.data.bounds.upper)
    released = ("tree_height", "compositions", "rounds", "per_decision_epsilon",
                "final_epsilon_br", "final_epsilon_sum", "br_delta", "n_queries",
                "training_rows")
    pa, pb = a.outcome.plan.public, b.outcome.plan.public
    assert {k: pa[k] for k in released} == {k: pb[k] for k in released}
    assert pa["tree_height"] == 9 and pa["n_queries"] == 40
    # the queries outside are answered (their nearest training points are at the corner)
    sa, sb = a.outcome.summary(), b.outcome.summary()
    for s in (sa, sb):
        assert 0.0 <= s["nn_accuracy"] <= s["top5_accuracy"] <= 1.0
        assert 0.0 <= s["geo_nn_accuracy"] <= 1.0
    assert sa["privacy"] == sb["privacy"]


def test_geo_baseline_rides_on_the_run_with_the_thesis_fairness_rule():
    base = {"final_epsilon": DROP, "client_budget": DROP, "epsilon": 2.0}
    r = execute(scenario(variant="E8", geo_radius=0.05, **base)).outcome.summary()
    assert r["geo_epsilon"] == r["final_epsilon_br"] and r["geo_radius"] == 0.05
    assert r["geo_per_unit"] == pytest.approx(r["final_epsilon_br"] / 0.05)
    # E: one GEO run per query releasing as many neighbours as DP-TT's subtree held
    assert r["geo_released_mean"] == pytest.approx(r["found_mean"])
    # with almost no noise GEO finds the nearest point of every query
    exact = execute(scenario(variant="basic", geo_radius=1e-9, geo_epsilon=1e3, **base))
    assert exact.outcome.summary()["geo_nn_accuracy"] == 1.0
    # GEO never touches the DP-TT release: the same run without GEO gives the same numbers
    plain = execute(scenario(variant="E8", **base)).outcome.summary()
    for key in ("nn_accuracy", "top5_accuracy", "released_mean", "final_epsilon_br"):
        assert plain[key] == r[key]
    assert math.isnan(plain["geo_nn_accuracy"])  # no GEO baseline: the column, empty


def test_thesis_reading_calibration_charges_what_it_spends():
    base = {"final_epsilon": DROP, "client_budget": DROP, "epsilon": 1.0}
    proven = execute(scenario(variant="E8", **base)).outcome.summary()
    read = execute(scenario(variant="E8", calibration="thesis-reading", **base)
                   ).outcome.summary()
    assert proven["stated_final_epsilon_br"] == proven["final_epsilon_br"] == 6.0
    # exp(εu/Δ) on CMP: ε-DP per decision (sum 6) but 2ε-bounded-range
    assert read["stated_final_epsilon_br"] == 6.0 and read["final_epsilon_sum"] == 6.0
    assert read["privacy"]["epsilon"] == 6.0
    assert read["calibration"] == "thesis-reading"
