"""``ring-nb`` through the registry: runner, results, Ray, exact accounting, bad inputs."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppknn.core.dp import Laplace
from ppknn.core.errors import ConfigError
from ppknn.core.rng import SeedPolicy
from ppknn.core.runtime import make_runtime
from ppknn.core.transcript import Transcript
from ppknn.protocols.ppknn_ring.secure_sum import add
from ppknn.protocols.ring_nb import GUARANTEE, RingNBConfig
from ppknn.protocols.ring_nb import steps as nb
from ppknn.simulations.pipeline import write_results
from ppknn.simulations.runner import execute, prepare
from ppknn.simulations.scenario import load_scenario, parse_scenario, tomllib
from tests.plugins.equivalence import assert_ray_equals_inprocess, assert_refused

NAME = "ring-nb"
SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / f"{NAME}.toml"
COMMON_FILES = ("scenario.json", "public.json", "predictions.csv", "parties.csv",
                "summary.json", "summary.svg", "transcript/totals.json")


def raw(**protocol) -> dict:
    """The example scenario as a mapping, in-process, with protocol keys replaced."""
    data = tomllib.loads(SCENARIO.read_text())
    data["runtime"]["kind"] = "inprocess"
    data["protocol"].update(protocol)
    return data


def scenario(**protocol):
    return parse_scenario(raw(**protocol), source="test")


def test_example_scenario_runs_and_writes_the_common_shape(tmp_path):
    sc = load_scenario(SCENARIO)
    assert sc.runtime.kind == "ray" and sc.data.bounds != "data" and sc.parties.n == 5
    result = execute(sc.with_overrides(runtime={"kind": "inprocess"}),
                     transcript_dir=tmp_path / "run" / "transcript")
    folder = write_results(result, tmp_path / "run")
    for f in COMMON_FILES:
        assert (folder / f).is_file(), f
    summary = json.loads((folder / "summary.json").read_text())
    r = summary["results"][NAME]
    start = result.outcome.plan.roles["start"][0]
    assert r["accuracy"] == pytest.approx(0.84)  # 0.825 on the first 200 sorted test rows
    assert r["baseline"]["accuracy"] == pytest.approx(0.835)
    assert r["baseline"]["name"] == "GaussianNB (union, non-private)"
    assert r["privacy"] == {"guarantee": GUARANTEE, "epsilon": 1.0, "delta": 0.0,
                            "per_party": {start: {"epsilon": 1.0, "delta": 0.0}}}
    # the ring sum (5 hops back to the start node) and the model's broadcast (4 messages)
    assert r["hops"] == 6 and summary["communication"]["messages"] == 5 + 4
    assert r["answered_fraction"] == 1.0 and r["secure_sum"] == "ring"
    assert r["laplace_scales"] == pytest.approx([3.0, 12.0, 12.0])
    parties = (folder / "parties.csv").read_text().splitlines()
    assert parties[0].startswith("party,roles") and len(parties) == 6
    assert any(line.startswith(f"{start},ring-nb:owner;ring-nb:start") for line in parties)
    assert (folder / "predictions.csv").read_text().splitlines()[0] == \
        f"query,label,{NAME},{NAME}:baseline"
    public = json.loads((folder / "public.json").read_text())["protocols"][NAME]
    assert public["start"] == start and public["sensitivities"] == [1.0, 4.0, 4.0]


@pytest.mark.ray
@pytest.mark.parametrize(("layout", "n", "secure_sum"), [("actor-per-party", 3, "ring"),
                                                         ("hosted", 5, "shared")])
def test_ray_equals_inprocess(ray_local, tmp_path, layout, n, secure_sum):
    """Both layouts (an actor per party is slow to start: three owners there)."""
    sc = load_scenario(SCENARIO).set_key("protocol.secure_sum", secure_sum)
    sc = sc.set_key("parties.n", n)
    _, _, rows = assert_ray_equals_inprocess(sc, tmp_path, layout=layout, hosts=2)
    assert len(rows) == (n + n - 1 if secure_sum == "ring" else n * (n - 1) + 2 * (n - 1))


def _run_keeping_state(sc):
    rt = make_runtime("inprocess")
    try:
        result = execute(sc, runtime=rt)
        start = result.outcome.plan.roles["start"][0]
        return result, rt.state(start, "nb_ledgers")[NAME], start
    finally:
        rt.shutdown()


def _by_hand(result, start, epsilon, split=(1.0, 1.0, 1.0), var_floor=1e-3):
    """The release recomputed from the union: plain sums, the start node's noise stream."""
    data = result.prepared.data
    lower, upper = data.bounds.lower, data.bounds.upper
    exact = nb.local_statistics(data.union_X, data.union_y, data.n_classes, lower, upper)
    index = data.owner_names.index(start)
    rng = SeedPolicy(root=data.scenario.run.seed).generator("party", index, NAME, "noise")
    c, d = data.n_classes, data.train_X.shape[1]
    # the secure sum adds the owners' fixed-point encodings: decode their exact total
    owners = [nb.encode_signed(nb.local_statistics(data.owner_X(i), data.owner_y(i), c, lower,
                                                   upper)) for i in range(len(data.owner_rows))]
    total = owners[0]
    for v in owners[1:]:
        total = add(total, v)
    summed = nb.decode_signed(total)
    np.testing.assert_allclose(summed, exact, atol=len(owners) * 2.0**-32)
    eps = RingNBConfig(epsilon=epsilon, split=split).group_epsilons()
    noisy = nb.add_noise(summed, n_classes=c, n_features=d, epsilons=eps, mode="reproducible",
                         rng=rng)
    model = nb.fit(noisy.vector, n_classes=c, n_features=d, var_floor=var_floor,
                   var_smoothing=1e-9)
    return model, nb.predict(model, nb.normalise(data.queries, lower, upper)), noisy


@pytest.mark.parametrize(("epsilon", "split"), [(1.0, (1.0, 1.0, 1.0)), (0.3, (1.0, 2.0, 3.0))])
def test_exact_accounting_and_the_release_by_hand(epsilon, split):
    sc = scenario(epsilon=epsilon, split=list(split))
    result, ledger, start = _run_keeping_state(sc)
    r = result.outcome.summary()
    assert r["privacy"]["epsilon"] == epsilon and r["epsilon_spent"] == epsilon
    assert r["privacy"]["per_party"] == {start: {"epsilon": epsilon, "delta": 0.0}}
    assert ledger.spent_exact() == (Fraction(repr(epsilon)), Fraction(0))
    assert len(ledger.entries) == 1 and ledger.remaining().epsilon == 0.0
    total = sum(split)
    assert [r["epsilon_class_counts"], r["epsilon_sums"], r["epsilon_sums_of_squares"]] == \
        pytest.approx([epsilon * w / total for w in split], rel=1e-15)
    d = result.prepared.data.train_X.shape[1]
    assert r["laplace_scales"] == pytest.approx([total / (epsilon * split[0]),
                                                 d * total / (epsilon * split[1]),
                                                 d * total / (epsilon * split[2])])
    model, predictions, _ = _by_hand(result, start, epsilon, split)
    detail = result.outcome.result.detail
    np.testing.assert_array_equal(detail.model.theta, model.theta)
    np.testing.assert_array_equal(detail.model.var, model.var)
    np.testing.assert_array_equal(result.predictions, predictions)


def test_ring_and_shared_sums_release_the_same_model():
    """Both sums are exact modulo 2^64 and the noise stream is the start node's: same model."""
    ring = execute(scenario(secure_sum="ring")).outcome
    shared = execute(scenario(secure_sum="shared")).outcome
    np.testing.assert_array_equal(ring.predictions, shared.predictions)
    np.testing.assert_array_equal(ring.result.detail.model.var, shared.result.detail.model.var)
    assert shared.result.hops == 3


def test_owners_other_than_the_start_see_only_masked_sums_and_the_model(tmp_path):
    result = execute(scenario(secure_sum="ring"), transcript_dir=tmp_path / "t")
    start = result.outcome.plan.roles["start"][0]
    table = Transcript(tmp_path / "t").table().to_pylist()
    kinds = {(r["receiver"] == start, r["kind"]) for r in table}
    assert kinds == {(False, "partial-sum"), (True, "partial-sum"), (False, "nb-model")}
    assert {r["protocol"] for r in table} == {NAME}


def test_secure_mode_runs_and_charges_the_same():
    sc = scenario().with_overrides(run={"mode": "secure"})
    result, ledger, _ = _run_keeping_state(sc)
    assert ledger.spent_exact() == (Fraction(1), Fraction(0))
    assert result.outcome.summary()["privacy"]["epsilon"] == 1.0
    # secure mode draws the noise from OS entropy: the accuracy at ε = 1 is random (it fell
    # to 0.29 in one run), so only the release itself is checked here
    predictions = result.outcome.predictions
    assert len(predictions) == len(result.outcome.labels) and (predictions >= 0).all()


def test_no_noise_limit_equals_gaussian_nb_on_non_tied_queries():
    """ε = 1e9 and no variance floor: the model is GaussianNB's up to its var_smoothing."""
    from sklearn.naive_bayes import GaussianNB

    result = execute(scenario(epsilon=1e9, var_floor=0.0))
    o = result.outcome
    data = result.prepared.data
    jll = GaussianNB().fit(data.union_X, data.union_y).predict_joint_log_proba(data.queries)
    top2 = np.sort(jll, axis=1)[:, -2:]
    non_tied = (top2[:, 1] - top2[:, 0]) > 1e-6
    assert non_tied.sum() >= len(non_tied) - 2
    np.testing.assert_array_equal(o.predictions[non_tied], o.baseline.predictions[non_tied])
    assert o.accuracy == pytest.approx(o.baseline_accuracy, abs=2 / len(non_tied))


def test_mixed_with_ppknn_shares_the_owners():
    data = raw()
    knn = {"name": "ppknn-ring", "k": 3}
    data["protocol"] = [knn, data["protocol"]]
    prepared = prepare(parse_scenario(data, source="test"))
    specs = prepared.specs()
    assert len(specs) == 5
    ppknn, ring_nb = prepared.protocols
    assert ppknn.plan.roles == ring_nb.plan.roles  # same ring, same start node


# -- steps --------------------------------------------------------------------------
def test_signed_encoding_round_trips_and_adds_modulo_2_64():
    v = np.array([-3.25, 0.0, 1.5, -1e6, 7e8])
    np.testing.assert_array_equal(nb.decode_signed(nb.encode_signed(v)), v)
    a, b = nb.encode_signed(np.array([-2.5])), nb.encode_signed(np.array([1.0]))
    assert nb.decode_signed(add(a, b)).tolist() == [-1.5]
    with pytest.raises(Exception, match="out of range"):
        nb.encode_signed(np.array([2.0**40]))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-50, 50), min_size=3, max_size=3),
       st.integers(0, 2), st.integers(0, 10_000))
def test_one_record_moves_each_group_by_at_most_its_sensitivity(record, label, seed):
    """Add/remove one record (clipped to the bounds): L1 change <= (1, D, D) per group."""
    rng = np.random.default_rng(seed)
    lower, upper = np.array([-1.0, 0.0, 5.0]), np.array([1.0, 10.0, 5.0])  # one zero width
    X = rng.uniform(lower, upper, size=(20, 3))
    y = rng.integers(0, 3, size=20)
    base = nb.local_statistics(X, y, 3, lower, upper)
    more = nb.local_statistics(np.vstack([X, record]), np.append(y, label), 3, lower, upper)
    diff = [np.abs(a - b).sum() for a, b in zip(nb.unpack(more, 3, 3), nb.unpack(base, 3, 3))]
    assert all(d <= s + 1e-12 for d, s in zip(diff, nb.sensitivities(3), strict=True))


def test_noise_uses_the_dp_cores_laplace_per_group():
    v = np.zeros(2 + 2 * 2 * 3)
    noisy = nb.add_noise(v, n_classes=2, n_features=3, epsilons=(0.5, 0.25, 0.25),
                         mode="reproducible", rng=np.random.default_rng(1))
    assert noisy.scales == (2.0, 12.0, 12.0)
    rng = np.random.default_rng(1)
    expected = np.concatenate([Laplace(epsilon=e, sensitivity=s).randomise(np.zeros(n), rng).value
                               for e, s, n in zip((0.5, 0.25, 0.25), (1.0, 3.0, 3.0),
                                                  (2, 6, 6))])
    np.testing.assert_array_equal(noisy.vector, expected)


def test_fit_floors_variances_and_clips_means():
    vec = np.array([-3.0, 10.0,  # noisy counts: the first below 1
                    5.0, 2.0,  # sums: class 0 mean would be 5 / 1 -> clipped to 1
                    -1.0, 0.0])  # sums of squares: negative after noise
    model = nb.fit(vec, n_classes=2, n_features=1, var_floor=0.01, var_smoothing=1e-9)
    assert model.counts.tolist() == [1.0, 10.0]
    assert model.theta.ravel().tolist() == [1.0, 0.2]
    assert model.var.ravel() == pytest.approx([0.01, 0.01])


# -- bad inputs ---------------------------------------------------------------------
BAD = [
    # (protocol keys, other sections, where, message)
    ({"epsilon": 0}, {}, "parse", r"protocol\.epsilon = 0: .*greater than 0"),
    ({"epsilon": -1.0}, {}, "parse", r"protocol\.epsilon = -1\.0: .*greater than 0"),
    ({"epsilon": float("nan")}, {}, "parse", r"protocol\.epsilon = nan: .*finite"),
    ({"epsilon": float("inf")}, {}, "parse", r"protocol\.epsilon = inf: .*finite"),
    ({"epsilon": "1.0"}, {}, "parse", r"protocol\.epsilon = '1\.0': .*valid number"),
    ({"epsilon": True}, {}, "parse", r"protocol\.epsilon = True: .*valid number"),
    ({"split": [1.0, 1.0]}, {}, "parse", r"protocol\.split = \[1\.0, 1\.0\]: .*3 items"),
    ({"split": [1.0, 0.0, 1.0]}, {}, "parse", r"protocol\.split\.1 = 0\.0: .*greater than 0"),
    ({"split": [1.0, float("nan"), 1.0]}, {}, "parse", r"protocol\.split\.1 = nan: .*finite"),
    ({"secure_sum": "plain"}, {}, "parse", r"protocol\.secure_sum = 'plain': .*'ring'.*'shared'"),
    ({"var_floor": 1.0}, {}, "parse", r"protocol\.var_floor = 1\.0: .*less than 1"),
    ({"var_floor": -0.1}, {}, "parse", r"protocol\.var_floor = -0\.1: .*greater than or equal"),
    ({"var_smoothing": 0.0}, {}, "parse", r"protocol\.var_smoothing = 0\.0: .*greater than 0"),
    ({"budget": 0.5}, {}, "parse", r"protocol\.budget = 0\.5: .*below the release's epsilon"),
    ({"budget": float("inf")}, {}, "parse", r"protocol\.budget = inf: .*finite"),
    ({"k": 5}, {}, "parse", r"unknown key 'protocol\.k'; allowed keys here: .*'epsilon'"),
    ({}, {"parties": {"n": 2}}, "parse", r"parties\.n = 2: .*greater than or equal to 3"),
    ({}, {"data": {"bounds": "data"}}, "parse",
     r"data\.bounds = 'data': ring-nb calibrates its noise to public bounds"),
]


@pytest.mark.parametrize(("keys", "sections", "where", "message"), BAD,
                         ids=[f"{i}-{'-'.join(map(str, {**k, **s}))}"
                              for i, (k, s, _, _) in enumerate(BAD)])
def test_bad_inputs_refused_before_any_party_starts(keys, sections, where, message):
    data = raw(**keys)
    for section, values in sections.items():
        data.setdefault(section, {}).update(values)
    assert where == "parse"
    assert_refused(data, where, message)


def test_driver_config_refuses_what_the_scenario_refuses():
    for bad in ({"epsilon": float("inf")}, {"epsilon": 0.0}, {"epsilon": 1.0, "split": (1, 2)},
                {"epsilon": 1.0, "secure_sum": "none"}, {"epsilon": 1.0, "budget": 0.1}):
        with pytest.raises(ConfigError, match="ring-nb: "):
            RingNBConfig(**bad)
