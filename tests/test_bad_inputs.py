"""Every rejected input gets a clear error naming the value and what is allowed."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from ppknn.core.data import DomainBounds, load_dataset, partition
from ppknn.core.errors import ConfigError, DataError, PpknnError
from ppknn.core.rng import SeedPolicy
from ppknn.core.runtime import FaultPlan, InProcessRuntime, PartySpec, RunContext, make_runtime
from ppknn.protocols.ppknn_ring import PPKNNConfig, run_ppknn
from ppknn.protocols.ppknn_ring.parties.ring_owner import RingDataOwner
from ppknn.protocols.ppknn_ring.pp_topk import TopKParams
from ppknn.simulations.runner import prepare
from ppknn.simulations.scenario import load_scenario, parse_scenario, set_dotted

ROOT = Path(__file__).resolve().parents[1]

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


# -- the bad-input table: every protocol's scenario section and the shared ones ----------
# Each row: (protocol whose example scenario is the base, dotted key, bad value). The value
# must be refused with a PpknnError (ConfigError / DataError) naming it, before any party
# starts (only ``prepare`` runs: the scenario is validated, the data loaded and planned).

nan, inf = math.nan, math.inf
TABLE = {
    "ppknn-ring": [
        ("protocol.k", 0), ("protocol.k", -3), ("protocol.k", 2.5), ("protocol.k", "five"),
        ("protocol.p0", -0.1), ("protocol.p0", 1.5), ("protocol.p0", nan), ("protocol.d", 0.0),
        ("protocol.d", 2.0), ("protocol.d", inf), ("protocol.rounds", 0), ("protocol.delta", -1.0),
        ("protocol.delta", nan), ("protocol.weighting", "cosine"),
        ("protocol.secure_sum", "paillier"), ("protocol.vote", "plurality"),
        ("protocol.schedule", "r+1"), ("protocol.start_step", "middle"), ("protocol.kk", 3),
        ("parties.n", 2), ("parties.n", 0), ("protocol.k", 100000),
    ],
    "ring-nb": [
        ("protocol.epsilon", 0.0), ("protocol.epsilon", -1.0), ("protocol.epsilon", inf),
        ("protocol.epsilon", nan), ("protocol.split", [1.0, 1.0]),
        ("protocol.split", [1.0, -1.0, 1.0]), ("protocol.split", [0.0, 0.0, 0.0]),
        ("protocol.secure_sum", "plain"), ("protocol.var_floor", -0.1),
        ("protocol.var_smoothing", -1.0), ("protocol.budget", 0.5), ("protocol.budget", -1.0),
        ("parties.n", 2), ("data.bounds", "data"),
    ],
    "dp-knn": [
        ("protocol.task", "kmeans"), ("protocol.algorithm", "magic"), ("protocol.epsilon", 0.0),
        ("protocol.epsilon", -0.5), ("protocol.epsilon", inf), ("protocol.epsilon", nan),
        ("protocol.budget", 0.1), ("protocol.budget", -4.0), ("protocol.analyst_budget", -1.0),
        ("protocol.delta", -0.1), ("protocol.delta", 1.5), ("protocol.radius", -0.1),
        ("protocol.radius", 0.0), ("protocol.radius", "huge"), ("protocol.radius_target", -1.0),
        ("protocol.radius_epsilon", 0.0), ("protocol.k", 0), ("protocol.batches", 0),
        ("protocol.weight", 0.0), ("protocol.weight", 1.0), ("protocol.weight", 1.5),
        ("protocol.candidates", 0), ("protocol.clique_time_limit_s", 0.0),
        ("protocol.clique_work_limit", 0), ("protocol.clique_work_limit", -1),
        ("protocol.clique_work_limit", 1.5),
        ("protocol.clique_work_limit", "x"), ("protocol.clique_work_limit", True),
        ("protocol.request_time_limit_s", 0.0), ("protocol.request_time_limit_s", -1.0),
        ("protocol.request_time_limit_s", inf), ("protocol.request_time_limit_s", "soon"),
        ("protocol.request_memory_limit_bytes", 0), ("protocol.request_memory_limit_bytes", 1.5),
        ("protocol.request_memory_limit_bytes", "lots"),
        ("protocol.count_share", 1.5), ("protocol.gamma", -1.0), ("parties.analysts", 0),
    ],
    "dp-nb": [
        ("protocol.method", "magic"), ("protocol.epsilon", 0.0), ("protocol.epsilon", -1.0),
        ("protocol.epsilon", inf), ("protocol.delta", -0.1), ("protocol.delta", 1.0),
        ("protocol.noise", "uniform"), ("protocol.gamma", 1.0), ("protocol.gamma", 0.5),
        ("protocol.trim", 0.5), ("protocol.trim", -1), ("protocol.trim", "most"),
        ("protocol.neighbours", "swap"), ("protocol.density", "uniform"),
        ("protocol.sensitivity", "approx"), ("protocol.budget", 0.5), ("protocol.budget", -1.0),
        ("protocol.budget_delta", -0.1), ("protocol.analyst_budget", -1.0),
        ("protocol.analyst_budget", 0.5), ("protocol.delta_from_n", "1/m"),
    ],
    "dptt": [
        ("protocol.variant", "X9"), ("protocol.variant", "E-1"), ("protocol.variant", "N0"),
        ("protocol.variant", "GS-N"), ("protocol.utility", "euclid"), ("protocol.radius", -1.0),
        ("protocol.final_epsilon", 0.0), ("protocol.final_epsilon", -10.0),
        ("protocol.final_epsilon", inf), ("protocol.epsilon", 1.0), ("protocol.delta", -1e-7),
        ("protocol.delta", 1.0), ("protocol.client_budget", 1.0), ("protocol.client_budget", -1.0),
        ("protocol.predict", "vote"), ("protocol.geo_radius", -1.0), ("protocol.geo_epsilon", 0.0),
        ("protocol.calibration", "guess"), ("protocol.variant", "E1000"),
    ],
    "pca-perturbation": [
        ("protocol.scheme", "pca-gauss"), ("protocol.components", 0), ("protocol.components", 14),
        ("protocol.b", -0.2), ("protocol.b", nan), ("protocol.sd", -0.1), ("protocol.n_sd", -1.0),
        ("protocol.method", "nearest"), ("protocol.compare", ["radius", "magic"]),
        ("protocol.k", 0), ("protocol.fallback_k", 0), ("protocol.ks", [0, 1]),
        ("protocol.folds", 1), ("protocol.max_validation", 0), ("protocol.rho1", 0.0),
        ("protocol.rho1", 1.5), ("protocol.attacks", "maybe"), ("data.bounds.lower", [0.0]),
    ],
    "shared": [
        ("run.seed", -1), ("run.mode", "chaotic"), ("run.name", 3), ("data.test_fraction", 0.0),
        ("data.test_fraction", 1.0), ("data.max_queries", 0), ("data.scale", "zscore"),
        ("data.dataset", "nope"), ("data.dataset", "synthetic:blobs"),
        ("data.dataset", "synthetic:classification?rows=1"), ("parties.partition", "zipf"),
        ("parties.alpha", 0.0), ("parties.size_skew", -1.0), ("runtime.kind", "spark"),
        ("runtime.layout", "ring"), ("runtime.hosts", 0), ("runtime.num_cpus", 0),
        ("runtime.party_timeout_s", 0.0), ("runtime.party_timeout_s", inf),
        ("runtime.party_timeout_s", nan), ("runtime.party_timeout_s", -5.0),
        ("runtime.record_batch", 0), ("runtime.flush_every", 0), ("runtime.record_batch_bytes", 0),
        ("runtime.flush_bytes", 0), ("runtime.channels", "maybe"), ("faults.kind", "explode"),
        ("faults.occurrence", 0), ("faults.delay_s", -1.0), ("faults.party", ""),
    ],
}

# numeric extremes, booleans for numbers, sizes guarded before allocating, names and paths
EXTREMES = {
    "ppknn-ring": [
        ("protocol.k", True), ("protocol.rounds", True), ("protocol.p0", True),
        ("protocol.d", False), ("protocol.delta", inf), ("protocol.rounds", 10**9),
        ("protocol.k", 1e308),
    ],
    "ring-nb": [
        ("protocol.epsilon", 5e-324), ("protocol.epsilon", 1e-300), ("protocol.epsilon", True),
        ("protocol.split", [1.0, True, 1.0]), ("protocol.budget", inf),
    ],
    "dp-knn": [
        ("protocol.epsilon", 5e-324), ("protocol.radius_epsilon", 5e-324),
        ("protocol.gamma", 1e308), ("protocol.gamma", inf), ("protocol.k", True),
        ("protocol.epsilon", True), ("protocol.batches", 1e9), ("parties.analysts", 1e9),
        ("parties.analysts", 10**9), ("parties.analysts", True),
    ],
    "dp-nb": [
        ("protocol.epsilon", 5e-324), ("protocol.gamma", 1e308), ("protocol.gamma", 101.0),
        ("protocol.epsilon", True), ("protocol.budget", True), ("parties.analysts", 10**9),
    ],
    "dptt": [
        ("protocol.final_epsilon", 5e-324), ("protocol.geo_epsilon", 5e-324),
        ("protocol.final_epsilon", True), ("protocol.client_budget", True),
        ("protocol.radius", inf), ("protocol.delta", True),
    ],
    "pca-perturbation": [
        ("protocol.components", True), ("protocol.b", inf), ("protocol.k", True),
        ("protocol.folds", 1e9 + 0.5),
    ],
    "shared": [
        ("run.seed", True), ("run.seed", False), ("run.seed", 2**64), ("run.seed", 1.5),
        ("run.name", "a\0b"), ("run.name", "x" * 300), ("run.name", "a/b"), ("run.name", ""),
        ("run.name", ".."), ("run.output", "x" * 300), ("run.output", "out\0put"),
        ("run.mode", True), ("parties.n", True), ("parties.n", 10**9), ("parties.n", 1e9),
        ("parties.alpha", inf), ("parties.alpha", 1e308), ("parties.alpha", nan),
        ("parties.size_skew", inf), ("parties.size_skew", 1e308),
        ("runtime.party_timeout_s", 1e300), ("runtime.party_timeout_s", True),
        ("runtime.record_batch", True), ("runtime.hosts", True), ("runtime.num_cpus", 1e9 + 0.5),
        ("faults.delay_s", 1e300), ("faults.delay_s", inf), ("faults.occurrence", True),
        ("audit.trials", 10**12), ("audit.trials", True), ("audit.confidence", 1.0),
        ("data.max_queries", True), ("data.subsample", True), ("data.test_fraction", True),
        ("data.dataset", "synthetic:classification?rows=100000000000"),
        ("data.dataset", "synthetic:classification?rows=10^11"),
        ("data.dataset", "synthetic:classification?rows=1000&features=1000000"),
        ("data.dataset", "synthetic:classification?classes=100&features=4"),
        ("data.dataset", "synthetic:classification?seed=-1"),
        ("data.dataset", "synthetic:classification?colour=red"),
        ("data.dataset", ""), ("data.dataset", True),
        ("data.bounds.lower", [0, 0]), ("data.bounds.lower", [0, 0, 0, 0, 0, 0, 0, inf]),
        ("data.bounds.upper", [True] * 8),
    ],
}
for _protocol, _cases in EXTREMES.items():
    TABLE[_protocol] = TABLE[_protocol] + _cases

# where the message shows the value in its own words
SHOWN = {("run.name", "x" * 300): "is 300 bytes long",
         ("run.output", "x" * 300): "has 300 bytes",
         ("data.dataset", "synthetic:classification?rows=100000000000"): "rows=100000000000",
         ("data.dataset", "synthetic:classification?rows=1000&features=1000000"):
             "features=1000000",
         ("data.dataset", "synthetic:classification?classes=100&features=4"): "classes=100",
         ("data.dataset", "synthetic:classification?seed=-1"): "seed = -1",
         ("data.dataset", "synthetic:classification?rows=10^11"): "'10^11'",
         ("data.dataset", "synthetic:classification?colour=red"): "'colour'",
         ("data.bounds.lower", (0, 0)): "lower has 2 values, upper 8",
         ("data.bounds.lower", (0, 0, 0, 0, 0, 0, 0, inf)): "got [inf, 81.0]",
         ("protocol.split", (1.0, True, 1.0)): "protocol.split.1 = True",
         ("data.bounds.upper", (True,) * 8): "data.bounds.upper.0 = True",
         ("run.name", ""): "name = ''",
         ("protocol.kk", 3): "unknown key 'protocol.kk'",
         ("protocol.compare", ("radius", "magic")): "protocol.compare.1 = 'magic'",
         ("protocol.ks", (0, 1)): "protocol.ks.0 = 0",
         ("data.dataset", "synthetic:blobs"): "'blobs'",
         ("data.dataset", "synthetic:classification?rows=1"): "'rows': 1"}
ROWS = [(protocol, key, value) for protocol, cases in TABLE.items() for key, value in cases]


def _bad_scenario(protocol, key, value):
    base = "ppknn-ring" if protocol == "shared" else protocol
    data = load_scenario(ROOT / "scenarios" / f"{base}.toml").model_dump()
    if key.startswith("faults."):
        data["faults"] = {"party": "owner-01"}
    return set_dotted(data, key, value)


def _shown(key, value):
    frozen = tuple(value) if isinstance(value, list) else value
    return SHOWN.get((key, frozen), repr(value) if not isinstance(value, float)
                     or math.isfinite(value) else str(value))


def test_the_table_covers_every_built_in_protocol_with_at_least_150_cases():
    from ppknn.simulations import registry

    built_in = {name for name in registry.names()
                if type(registry.get(name)).__module__.startswith(registry.BUILTIN + ".")}
    assert built_in == {"ppknn-ring", "ring-nb", "dp-knn", "dp-nb", "dptt", "pca-perturbation"}
    assert built_in <= set(TABLE)  # a third-party protocol installed beside them is not ours
    assert len(ROWS) + len(DATA_CASES) >= 150
    assert all(len(TABLE[name]) >= 10 for name in built_in)


@pytest.mark.parametrize("protocol, key, value", ROWS,
                         ids=[f"{p}-{k}={v!r}" for p, k, v in ROWS])
def test_bad_input_table(protocol, key, value):
    with pytest.raises(PpknnError) as err:
        prepare(parse_scenario(_bad_scenario(protocol, key, value), source="test"))
    message = str(err.value)
    shown = _shown(key, value)
    assert shown in message or shown.replace("'", "") in message, message
    if "=" in message and key.split(".")[0] in ("protocol", "runtime", "run", "parties",
                                                "faults"):
        assert key.split(".")[-1] in message  # the key is named too


CLI_SUBSET = [ROWS[i] for i in range(0, len(ROWS), 10)]


@pytest.mark.parametrize("protocol, key, value", CLI_SUBSET,
                         ids=[f"{p}-{k}" for p, k, _ in CLI_SUBSET])
def test_bad_input_on_the_cli_exits_2_in_one_line_writing_nothing(tmp_path, protocol, key,
                                                                    value):
    from typer.testing import CliRunner

    from ppknn.cli import app

    base = "ppknn-ring" if protocol == "shared" else protocol
    path = ROOT / "scenarios" / f"{base}.toml"
    literal = (json.dumps(value) if not isinstance(value, float) or math.isfinite(value)
               else str(value))
    extra = ["--set", "faults.party=\"owner-01\""] if key.startswith("faults.") else []
    result = CliRunner().invoke(app, ["run", str(path), "--output", str(tmp_path / "out"),
                                      "--runtime", "inprocess", *extra,
                                      "--set", f"{key}={literal}"])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error:") and "Traceback" not in result.output
    assert not (tmp_path / "out").exists()
    assert list(tmp_path.iterdir()) == []


PY_CASES = [
    (lambda: RunContext(run_id="r", party_timeout_s=math.inf), "party_timeout_s must be a finite"),
    (lambda: RunContext(run_id="r", party_timeout_s=0), "got 0"),
    (lambda: RunContext(run_id="r", startup_timeout_s=math.nan), "got nan"),
    (lambda: RunContext(run_id=""), "run_id must be a non-empty"),
    (lambda: RunContext(run_id="r", record_batch=0), "record_batch must be >= 1, got 0"),
    (lambda: FaultPlan("p", kind="explode"), "fault kind 'explode'"),
    (lambda: FaultPlan("p", occurrence=0), "occurrence must be an integer >= 1, got 0"),
    (lambda: FaultPlan("p", kind="hang", delay_s=-1.0), "delay_s must be a finite number >= 0"),
    (lambda: FaultPlan("", kind="kill"), "fault party must be a non-empty"),
    (lambda: PartySpec("p", dict, max_concurrency=0), "max_concurrency of party 'p'"),
    (lambda: make_runtime("spark"), "unknown runtime 'spark'"),
    (lambda: SeedPolicy(root=-1), "seed must be a non-negative integer, got -1"),
    (lambda: SeedPolicy(mode="chaotic"), "'chaotic'"),
]


@pytest.mark.parametrize("build, fragment", PY_CASES)
def test_python_entry_points_refuse_bad_values(build, fragment):
    with pytest.raises(ConfigError, match=re.escape(fragment)):
        build()


def test_ray_address_nobody_listens_on_fails_fast_in_one_line():
    import socket
    import time

    from ppknn.core.runtime.ray_runtime import check_cluster_answers

    with socket.socket() as s:  # a free port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    with pytest.raises(ConfigError) as err:
        check_cluster_answers(f"127.0.0.1:{port}")
    assert time.monotonic() - t0 < 10
    message = str(err.value)
    assert f"no Ray cluster answers at 127.0.0.1:{port}" in message and "ray start" in message
    assert "\n" not in message


def test_union_errors_name_the_key_the_user_wrote_not_pydantics_tags():
    """``bounds = 5`` fails both alternatives (``"data"``, a table): one line, on the key."""
    with pytest.raises(PpknnError) as err:
        parse_scenario({"data": {"bounds": 5}}, source="test")
    message = str(err.value)
    assert "data.bounds = 5: Input should be 'data'; or: Input should be a valid dictionary" \
        in message
    assert "literal[" not in message and "function-after" not in message
    with pytest.raises(PpknnError) as err:
        parse_scenario({"data": {"bounds": {"lower": [1.0], "upper": "x"}}}, source="test")
    assert str(err.value).splitlines()[1:] == ["  data.bounds.upper = 'x': Input should be a "
                                               "valid list"]


# -- the data layer: files and manifests in a data directory of the user's ----------------
GOOD_CSV = "a,b,label\n1,2,x\n3,4,y\n5,6,x\n7,8,y\n9,1,x\n2,3,y\n"
GOOD_ENTRY = {"file": "d.csv", "label": "label"}

DATA_CASES = [  # (id, files besides the manifest, manifest text, dataset name, fragment)
    ("header-only-csv", {"d.csv": "a,b,label\n"}, {"d": GOOD_ENTRY}, "d",
     "holds a header but no rows"),
    ("empty-file", {"d.csv": ""}, {"d": GOOD_ENTRY}, "d", "cannot read"),
    ("duplicate-columns", {"d.csv": "a,a,label\n1,2,x\n3,4,y\n"}, {"d": GOOD_ENTRY}, "d",
     "repeats the column name(s) ['a']"),
    ("malformed-manifest", {"d.csv": GOOD_CSV}, "{not json", "d",
     "is not a readable JSON manifest"),
    ("manifest-a-list", {"d.csv": GOOD_CSV}, "[1, 2]", "d", "manifest"),
    ("manifest-entry-a-string", {"d.csv": GOOD_CSV}, {"d": "d.csv"}, "d", "manifest"),
    ("entry-without-label", {"d.csv": GOOD_CSV}, {"d": {"file": "d.csv"}}, "d",
     "needs 'file' and 'label' strings"),
    ("label-not-a-column", {"d.csv": GOOD_CSV}, {"d": {"file": "d.csv", "label": "y"}}, "d",
     "label column 'y' not in"),
    ("file-missing", {}, {"d": GOOD_ENTRY}, "d", "is missing"),
    ("categorical-a-string", {"d.csv": GOOD_CSV}, {"d": {**GOOD_ENTRY, "categorical": "a"}},
     "d", "manifest 'categorical' must be a list of column names, got 'a'"),
    ("categorical-unknown", {"d.csv": GOOD_CSV}, {"d": {**GOOD_ENTRY, "categorical": ["z"]}},
     "d", "declares categorical columns ['z']"),
    ("drop-unknown", {"d.csv": GOOD_CSV}, {"d": {**GOOD_ENTRY, "drop": ["z"]}}, "d",
     "manifest 'drop' lists ['z']"),
    ("drop-the-label", {"d.csv": GOOD_CSV}, {"d": {**GOOD_ENTRY, "drop": ["label"]}}, "d",
     "manifest 'drop' lists ['label'], the label"),
    ("text-feature", {"d.csv": GOOD_CSV.replace("1,2,x", "one,2,x")}, {"d": GOOD_ENTRY}, "d",
     "feature column 'a' is not numeric ('one' at row 0)"),
    ("one-class", {"d.csv": GOOD_CSV.replace("y\n", "x\n")}, {"d": GOOD_ENTRY}, "d",
     "has 1 class(es) ['x']"),
    ("missing-value", {"d.csv": GOOD_CSV.replace("1,2,x", "?,2,x")}, {"d": GOOD_ENTRY}, "d",
     "missing"),
    ("infinite-value", {"d.csv": GOOD_CSV.replace("1,2,x", "inf,2,x")}, {"d": GOOD_ENTRY}, "d",
     "must be finite"),
    ("unknown-name", {"d.csv": GOOD_CSV}, {"d": GOOD_ENTRY}, "e", "unknown dataset 'e'"),
    ("binary-garbage", {"d.csv": "\x00\x01\x02\xff" * 50}, {"d": GOOD_ENTRY}, "d", "dataset 'd'"),
]


def _data_dir(tmp_path: Path, files: dict[str, str], manifest: object) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    text = manifest if isinstance(manifest, str) else json.dumps(manifest)
    (folder / "manifest.json").write_text(text)
    return folder


@pytest.mark.parametrize("files, manifest, name, fragment",
                         [c[1:] for c in DATA_CASES], ids=[c[0] for c in DATA_CASES])
def test_bad_data_files_and_manifests(tmp_path, files, manifest, name, fragment):
    folder = _data_dir(tmp_path, files, manifest)
    sc = parse_scenario({"data": {"dataset": name, "data_dir": str(folder), "bounds": "data"},
                         "runtime": {"kind": "inprocess"}}, source="test")
    with pytest.raises(PpknnError) as err:
        prepare(sc)
    assert fragment in str(err.value), str(err.value)
    assert name in str(err.value) or "manifest" in str(err.value)


def test_a_feature_named_split_is_a_feature_not_dropped_without_a_word(tmp_path):
    folder = _data_dir(tmp_path, {"d.csv": "a,split,label\n1,2,x\n3,4,y\n"}, {"d": GOOD_ENTRY})
    ds = load_dataset("d", directory=folder)
    assert ds.feature_names == ("a", "split") and ds.X[:, 1].tolist() == [2.0, 4.0]
    (tmp_path / "x").mkdir()
    dropped = _data_dir(tmp_path / "x", {"d.csv": "a,split,label\n1,2,x\n3,4,y\n"},
                        {"d": {**GOOD_ENTRY, "drop": ["split"]}})
    assert load_dataset("d", directory=dropped).feature_names == ("a",)
    assert "split" not in load_dataset("adult").feature_names  # its train/test marker


# -- misleading messages ------------------------------------------------------------------
@pytest.mark.parametrize("data, allowed", [
    ({"data": {"bounds": {"lower": [0.0], "upper": [1.0], "middle": 1}}}, "['lower', 'upper']"),
    ({"network": {"speed": 1}}, "'profiles'"),
    ({"faults": {"party": "owner-01", "when": 1}}, "'occurrence'"),
])
def test_unknown_keys_of_optional_and_union_tables_list_what_is_allowed(data, allowed):
    with pytest.raises(ConfigError) as err:
        parse_scenario(data, source="test")
    message = str(err.value)
    assert "allowed keys here: []" not in message
    assert allowed in message, message


def test_a_bounds_table_of_wrong_length_is_not_told_to_be_data():
    with pytest.raises(ConfigError) as err:
        parse_scenario({"data": {"bounds": {"lower": [0, 0], "upper": [1, 1, 1]}}},
                       source="test")
    assert "lower has 2 values, upper 3" in str(err.value)
    assert "should be 'data'" not in str(err.value)


# -- the new classes on the CLI: exit 2, one clear line, nothing written -------------------
CLI_EXTRA = [
    ("ppknn-ring", ["--set", "data.bounds.lower=[0,0]"], "lower has 2 values, upper 8"),
    ("ppknn-ring", ["--set", "run.seed=true"], "run.seed = True"),
    ("ppknn-ring", ["--set", 'run.name="a\\u0000b"'], "name = 'a\\x00b'"),
    ("ppknn-ring", ["--set", f'run.name="{"n" * 300}"'], "300 bytes"),
    ("ppknn-ring", ["--set", "parties.alpha=inf", "--set", 'parties.partition="dirichlet"'],
     "parties.alpha = inf"),
    ("ppknn-ring", ["--set", "runtime.party_timeout_s=1e300"], "party_timeout_s = 1e+300"),
    ("ppknn-ring", ["--set", 'data.dataset="synthetic:classification?rows=100000000000"'],
     "rows=100000000000"),
    ("dp-knn", ["--set", "parties.analysts=1e9"], "parties.analysts = 1000000000"),
    ("dp-nb", ["--set", "protocol.gamma=1e308"], "protocol.gamma = 1e+308"),
    ("dp-nb", ["--set", "protocol.epsilon=5e-324"], "protocol.epsilon = 5e-324"),
    ("dptt", ["--set", "protocol.final_epsilon=5e-324"], "protocol.final_epsilon = 5e-324"),
    ("ppknn-ring", ["--set", "audit.trials=1000000000000"], "audit.trials = 1000000000000"),
]


def _run_cli(args: list[str]):
    from typer.testing import CliRunner

    from ppknn.cli import app

    return CliRunner().invoke(app, ["run", *args])


@pytest.mark.parametrize("protocol, extra, fragment", CLI_EXTRA,
                         ids=[f"{p}-{e[-1][:40]}" for p, e, _ in CLI_EXTRA])
def test_new_classes_on_the_cli_exit_2_in_one_line_writing_nothing(tmp_path, protocol, extra,
                                                                   fragment):
    result = _run_cli([str(ROOT / "scenarios" / f"{protocol}.toml"), "--output",
                       str(tmp_path / "out"), "--runtime", "inprocess", *extra])
    assert result.exit_code == 2, result.output
    assert result.output.strip().startswith("error:") and "Traceback" not in result.output
    assert fragment in result.output, result.output
    assert list(tmp_path.iterdir()) == []


def test_a_300_character_output_name_on_the_cli_is_refused_writing_nothing(tmp_path):
    result = _run_cli([str(ROOT / "scenarios" / "ppknn-ring.toml"), "--runtime", "inprocess",
                       "--output", str(tmp_path / ("o" * 300))])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "300 bytes" in result.output, result.output
    assert "allowed: at most 255 bytes" in result.output
    assert list(tmp_path.iterdir()) == []


def test_a_dangling_symlink_output_is_refused_writing_nothing(tmp_path):
    link = tmp_path / "out"
    link.symlink_to(tmp_path / "nowhere")
    result = _run_cli([str(ROOT / "scenarios" / "ppknn-ring.toml"), "--runtime", "inprocess",
                       "--output", str(link)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and str(link) in result.output, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert not (tmp_path / "nowhere").exists()


def test_a_bad_data_directory_on_the_cli_exits_2_writing_nothing(tmp_path):
    folder = _data_dir(tmp_path, {"d.csv": "a,b,label\n"}, {"d": GOOD_ENTRY})
    result = _run_cli([str(ROOT / "scenarios" / "quickstart.toml"), "--runtime", "inprocess",
                       "--output", str(tmp_path / "out"), "--set", 'data.dataset="d"',
                       "--set", f'data.data_dir="{folder}"'])
    assert result.exit_code == 2, result.output
    assert "holds a header but no rows" in result.output and "Traceback" not in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]


# -- observers, faults, crafted results folders, audit trials ------------------------------
try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

SMALL_RING = """\
[run]
name = "small-ring"
seed = 1
[data]
dataset = "sklearn:iris"
max_queries = 10
bounds = { lower = [4, 2, 1, 0], upper = [8, 4.5, 7, 2.6] }
[parties]
n = 4
[protocol]
name = "ppknn-ring"
k = 3
[runtime]
kind = "inprocess"
"""
NOT_A_PARTY = """
[[adversary]]
attack = "coalition-attribution"
observers = ["owner-01", "mallory"]
"""


def test_an_observer_that_is_not_a_party_is_refused_naming_it_and_the_parties():
    sc = parse_scenario(tomllib.loads(SMALL_RING + NOT_A_PARTY), source="test")
    with pytest.raises(ConfigError) as err:
        prepare(sc)
    message = str(err.value)
    assert "adversary[0].observers = ['mallory']" in message, message
    assert "['owner-00', 'owner-01', 'owner-02', 'owner-03']" in message, message


def test_an_observer_that_is_not_a_party_on_the_cli_exits_2_writing_nothing(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(SMALL_RING + NOT_A_PARTY)
    result = _run_cli([str(path), "--output", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert result.output.strip().startswith("error:") and "Traceback" not in result.output
    assert "'mallory'" in result.output and "'owner-03'" in result.output, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]


def _small_ring(**sections):
    data = tomllib.loads(SMALL_RING)
    data.update(sections)
    return parse_scenario(data, source="test")


def test_a_fault_that_never_fires_is_named_in_a_warning():
    import warnings

    from ppknn.simulations.runner import execute

    with pytest.warns(UserWarning, match=r"kind = 'kill' on party 'owner-01' \(method '\*', "
                      r"occurrence 1000\) never fired"):
        execute(_small_ring(faults={"party": "owner-01", "occurrence": 1000}))
    with warnings.catch_warnings():  # a fault that fires (and lets the run complete): silent
        warnings.filterwarnings("error", message=".*never fired")
        execute(_small_ring(faults={"party": "owner-01", "kind": "slow", "delay_s": 0.01}))
        execute(_small_ring())


def test_a_fault_that_never_fires_is_said_by_ppknn_run(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(SMALL_RING + '[faults]\nparty = "owner-02"\nkind = "raise"\n'
                    "occurrence = 500\n")
    result = _run_cli([str(path), "--output", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "warning: [faults] kind = 'raise' on party 'owner-02'" in result.output
    assert "never fired" in result.output


@pytest.fixture(scope="module")
def small_results(tmp_path_factory):
    """A complete results folder of a small in-process ring run."""
    folder = tmp_path_factory.mktemp("small") / "out"
    path = folder.parent / "s.toml"
    path.write_text(SMALL_RING)
    result = _run_cli([str(path), "--output", str(folder)])
    assert result.exit_code == 0, result.output
    return folder


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*"))}


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("command, name", [
    ("show", "summary.json"), ("show", "failure.json"), ("leakage", "public.json"),
    ("leakage", "scenario.json"), ("leakage", "summary.json"), ("leakage", "failure.json"),
    ("leakage", "transcript/totals.json"), ("leakage", "transcript/failure.json"),
])
def test_json_nested_100000_deep_in_a_results_folder_is_one_clear_line(
        tmp_path, small_results, command, name):
    import shutil

    from typer.testing import CliRunner

    from ppknn.cli import app

    folder = tmp_path / "run"
    shutil.copytree(small_results, folder)
    (folder / name).write_text(DEEP)
    before = _snapshot(folder)
    result = CliRunner().invoke(app, [command, str(folder)])
    lines = result.output.strip().splitlines()
    if command == "leakage" and name == "summary.json":  # leakage does not read it: scored
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code == 2, result.output
    assert lines[-1].startswith("error:") and str(folder / name) in lines[-1], result.output
    assert "Traceback" not in result.output and "RecursionError:" not in result.output
    assert _snapshot(folder) == before  # nothing written


@pytest.mark.parametrize("trials, exit_code, fragment", [
    ("1000001", 2, "1000001 is too large: it must be less than or equal to 1,000,000"),
    ("1000000000000", 2, "less than or equal to 1,000,000"),
    ("99", 2, "99 is too small"),
])
def test_audit_trials_on_the_cli_share_the_scenarios_upper_bound(tmp_path, trials, exit_code,
                                                                  fragment):
    from typer.testing import CliRunner

    from ppknn.cli import app

    path = tmp_path / "s.toml"
    path.write_text(SMALL_RING)
    result = CliRunner().invoke(app, ["audit", str(path), "--trials", trials,
                                      "--output", str(tmp_path / "audit")])
    assert result.exit_code == exit_code, result.output
    assert fragment in " ".join(result.output.split()), result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]


def test_the_cli_bound_on_audit_trials_is_the_scenarios():
    from ppknn import cli
    from ppknn.simulations.scenario import MAX_AUDIT_TRIALS

    assert MAX_AUDIT_TRIALS == 1_000_000
    parse = cli._at_least(100, cli._max_audit_trials)
    assert parse(str(MAX_AUDIT_TRIALS)) == MAX_AUDIT_TRIALS
    with pytest.raises(Exception, match="too large"):
        parse(str(MAX_AUDIT_TRIALS + 1))
