"""Every rejected input gets a clear error naming the value and what is allowed."""

from __future__ import annotations

import numpy as np
import pytest

from ppknn.core.data import DomainBounds, load_dataset, partition
from ppknn.core.errors import ConfigError, DataError
from ppknn.core.runtime import InProcessRuntime, PartySpec, RunContext
from ppknn.parties.ring_owner import RingDataOwner
from ppknn.protocols.ppknn import PPKNNConfig, run_ppknn
from ppknn.protocols.ppknn.pp_topk import TopKParams
from ppknn.simulations.runner import prepare
from ppknn.simulations.scenario import load_scenario, parse_scenario

SCENARIO_CASES = [
    ({"parties": {"n": 2}}, "parties.n = 2", "greater than or equal to 3"),
    ({"protocol": {"k": 0}}, "protocol.k = 0", "greater than or equal to 1"),
    ({"protocol": {"p0": -0.5}}, "protocol.p0 = -0.5", "greater than or equal to 0"),
    ({"protocol": {"p0": 1.01}}, "protocol.p0 = 1.01", "less than or equal to 1"),
    ({"protocol": {"d": 0.0}}, "protocol.d = 0.0", "greater than 0"),
    ({"protocol": {"d": 1.5}}, "protocol.d = 1.5", "less than or equal to 1"),
    ({"protocol": {"rounds": 0}}, "protocol.rounds = 0", "greater than or equal to 1"),
    ({"protocol": {"weighting": "cosine"}}, "protocol.weighting = 'cosine'", "'uniform'"),
    ({"runtime": {"kind": "spark"}}, "runtime.kind = 'spark'", "'ray'"),
    ({"protocol": {"kk": 3}}, "unknown key 'protocol.kk'", "'k'"),
    ({"colour": "blue"}, "unknown key 'colour'", "'protocol'"),
    ({"run": {"seed": -1}}, "run.seed = -1", "greater than or equal to 0"),
    ({"data": {"test_fraction": 1.0}}, "data.test_fraction = 1.0", "less than 1"),
]


@pytest.mark.parametrize("data, where, allowed", SCENARIO_CASES)
def test_scenario_rejections(data, where, allowed):
    with pytest.raises(ConfigError) as err:
        parse_scenario(data)
    assert where in str(err.value)
    assert allowed in str(err.value)


def test_k_larger_than_union():
    sc = parse_scenario({"data": {"dataset": "glass"}, "protocol": {"k": 500}})
    with pytest.raises(ConfigError, match=r"k = 500 is larger than the union .* \(143 training"):
        prepare(sc)


def test_unknown_dataset_lists_choices():
    with pytest.raises(DataError, match=r"unknown dataset 'glas'.*available: .*'glass'"):
        load_dataset("glas")
    sc = parse_scenario({"data": {"dataset": "nope"}})
    with pytest.raises(DataError, match="unknown dataset 'nope'"):
        prepare(sc)


def test_missing_scenario_file(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_scenario(tmp_path / "absent.toml")


def test_malformed_scenario_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[protocol\nk = 3\n")
    with pytest.raises(ConfigError, match="is not valid TOML"):
        load_scenario(bad)


def test_wrong_type_in_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[protocol]\nk = "five"\n')
    with pytest.raises(ConfigError, match=r"protocol.k = 'five'"):
        load_scenario(bad)


@pytest.mark.parametrize("value, shown", [(np.nan, "nan"), (np.inf, "inf"), (-np.inf, "-inf")])
def test_non_finite_features(value, shown):
    X = np.ones((4, 2))
    X[2, 1] = value
    with pytest.raises(DataError, match=rf"must be finite; found {shown} at row 2, column 1"):
        RingDataOwner(party_id="a", index=0, X=X, y=np.zeros(4, int), n_classes=1, run_id="r")


def test_parties_with_different_feature_dimensions():
    specs = [PartySpec(f"p{i}", RingDataOwner, {"party_id": f"p{i}", "index": i,
                                                "X": np.ones((3, 2 if i < 2 else 3)),
                                                "y": np.zeros(3, int), "n_classes": 1,
                                                "run_id": "r"}) for i in range(3)]
    rt = InProcessRuntime()
    rt.start(specs, RunContext(run_id="r"))
    cfg = PPKNNConfig(params=TopKParams(k=1, max_distance=10.0))
    with pytest.raises(ConfigError, match=r"p2: queries of shape \(2, 2\) do not match 3 features"):
        run_ppknn(rt, np.ones((2, 2)), cfg, ring=["p0", "p1", "p2"], start="p0")


def test_fewer_than_three_parties_in_driver():
    rt = InProcessRuntime()
    cfg = PPKNNConfig(params=TopKParams(k=1, max_distance=10.0))
    with pytest.raises(ConfigError, match="at least 3 parties, got 2"):
        run_ppknn(rt, np.ones((1, 1)), cfg, ring=["a", "b"], start="a")


def test_bad_labels_and_shapes():
    with pytest.raises(ConfigError, match=r"labels must be in \[0, 2\)"):
        RingDataOwner(party_id="a", index=0, X=np.ones((2, 1)), y=np.array([0, 5]), n_classes=2,
                      run_id="r")
    with pytest.raises(ConfigError, match="2 rows but 3 labels"):
        RingDataOwner(party_id="a", index=0, X=np.ones((2, 1)), y=np.zeros(3, int), n_classes=1,
                      run_id="r")


@pytest.mark.parametrize("kwargs, fragment", [
    ({"scheme": "zipf"}, "unknown partition scheme 'zipf'"),
    ({"scheme": "dirichlet", "alpha": 0.0}, "dirichlet alpha must be > 0"),
    ({"scheme": "size", "size_skew": -1.0}, "size_skew must be >= 0"),
])
def test_partition_rejections(kwargs, fragment):
    with pytest.raises(ConfigError, match=fragment):
        partition(np.zeros(20, int), 3, rng=np.random.default_rng(0), **kwargs)


def test_declared_bounds_must_hold(tmp_path):
    sc = parse_scenario({"data": {"dataset": "sklearn:iris",
                                  "bounds": {"lower": [0, 0, 0, 0], "upper": [1, 1, 1, 1]}}})
    with pytest.raises(ConfigError, match=r"data.bounds: .*outside the declared domain"):
        prepare(sc)
    with pytest.raises(ConfigError, match="upper bound 0.0 < lower bound 1.0"):
        DomainBounds(np.array([1.0]), np.array([0.0]))
