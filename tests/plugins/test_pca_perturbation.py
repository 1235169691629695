"""``pca-perturbation`` through the registry: runner, results, Ray, accounting, bad inputs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from ppknn.protocols.pca_perturbation.sanitize import fit_pca, normalise
from ppknn.simulations.knn import union_topk_and_ties
from ppknn.simulations.pipeline import write_results
from ppknn.simulations.runner import execute
from ppknn.simulations.scenario import load_scenario, parse_scenario, tomllib
from tests.plugins.equivalence import assert_ray_equals_inprocess, assert_refused

NAME = "pca-perturbation"
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
    assert sc.runtime.kind == "ray" and sc.data.scale == "minmax"
    result = execute(sc.with_overrides(runtime={"kind": "inprocess"}),
                     transcript_dir=tmp_path / "run" / "transcript")
    folder = write_results(result, tmp_path / "run")
    for f in COMMON_FILES:
        assert (folder / f).is_file(), f
    summary = json.loads((folder / "summary.json").read_text())
    r = summary["results"][NAME]
    assert r["accuracy"] == pytest.approx(54 / 59)
    assert r["baseline"]["accuracy"] == pytest.approx(56 / 59)
    assert r["privacy"]["epsilon"] is None and r["privacy"]["delta"] is None
    assert "no ε-DP" in r["privacy"]["guarantee"]
    assert r["hops"] == 1 and summary["communication"]["messages"] == 1
    assert (r["scheme"], r["components"], r["b"], r["method"]) == ("pca-laplace", 3, 0.2,
                                                                    "radius")
    assert r["fallback_fraction"] == 0.0 and 0 < r["mean_in_radius"] <= 119
    assert 0 < r["privacy_correlation_attack"] < r["privacy_transform_attack"]
    parties = (folder / "parties.csv").read_text().splitlines()
    assert parties[0].startswith("party,roles") and len(parties) == 3
    assert (folder / "predictions.csv").read_text().splitlines()[0] == \
        f"query,label,{NAME},{NAME}:baseline"


@pytest.mark.ray
@pytest.mark.parametrize("layout", ["actor-per-party", "hosted"])
def test_ray_equals_inprocess(ray_local, tmp_path, layout):
    sc = load_scenario(SCENARIO)
    _, _, rows = assert_ray_equals_inprocess(sc, tmp_path, layout=layout)
    assert len(rows) == 1


@pytest.mark.parametrize("scheme", ["pca-laplace", "laplace"])
def test_amplification_is_the_sanitizers_account(scheme):
    """e^(1/b) per column, the domain's amplification and rho2, computed by hand."""
    b, s, rho1 = 0.2, 3, 0.001
    sc = scenario(scheme=scheme, b=b, components=s, rho1=rho1)
    result = execute(sc)
    r = result.outcome.summary()
    data = result.prepared.data
    Z = normalise(data.train_X, data.bounds.lower, data.bounds.upper)
    if scheme == "pca-laplace":
        fit = fit_pca(Z)
        scores = fit.scores(Z, s)
        ranges = scores.max(axis=0) - scores.min(axis=0)
        widths = np.abs(fit.components[:s]).sum(axis=1)  # a score's width over [0, 1]^m
    else:
        ranges = Z.max(axis=0) - Z.min(axis=0)
        widths = np.ones(Z.shape[1])
    scales = b * ranges
    gamma = math.exp(1 / b)
    assert r["amplification"] == pytest.approx(gamma, rel=1e-12)
    assert r["amplification_bound"] == pytest.approx(gamma, rel=1e-15)
    assert r["log_amplification"] == pytest.approx(1 / b, rel=1e-12)
    assert r["domain_amplification"] == pytest.approx(np.exp(widths / scales).max(), rel=1e-9)
    assert r["rho2_bound"] == pytest.approx(gamma * rho1 / (1 + (gamma - 1) * rho1), rel=1e-12)
    assert r["privacy"] == {"guarantee": r["privacy"]["guarantee"], "epsilon": None,
                            "delta": None, "per_party": {}}
    assert result.outcome.result.per_party["sanitizer"]["released_columns"] == len(ranges)


def test_schemes_without_laplace_claim_no_bound():
    for scheme in ("pca-no-noise", "rand-u"):
        r = execute(scenario(scheme=scheme, method="fixed-k")).outcome.summary()
        assert r["amplification"] is None and r["rho2_bound"] is None and r["b"] is None
        assert r["privacy"]["epsilon"] is None
        assert r["privacy"]["guarantee"].startswith(("none", "no worst-case"))


BAD = [
    # (protocol keys, where the error must be raised, text the message must hold)
    ({"b": 0}, "parse", r"protocol\.b = 0: .*> 0.*pca-no-noise"),
    ({"b": -0.1}, "parse", r"protocol\.b = -0\.1: .*> 0"),
    ({"b": float("nan")}, "parse", r"protocol\.b = nan: .*finite"),
    ({"b": float("inf")}, "parse", r"protocol\.b = inf: .*finite"),
    ({"sd": 0.0, "scheme": "rand-u"}, "parse", r"protocol\.sd = 0\.0: .*> 0"),
    ({"scheme": "pca-gauss"}, "parse", r"protocol\.scheme = 'pca-gauss': .*'pca-laplace'.*"
                                       r"'rand-n'"),
    ({"components": 0}, "parse", r"protocol\.components = 0: .*greater than or equal to 1"),
    ({"components": 14}, "prepare", r"protocol\.components = 14: .*\[1, 13\].*13 features"),
    ({"scheme": "rand-p", "method": "fixed-k", "components": 13}, "prepare",
     r"protocol\.components = 13: .*\[1, 12\].*fewer than the 13 features"),
    ({"method": "nearest"}, "parse", r"protocol\.method = 'nearest': .*'radius'.*'fixed-k'"),
    ({"method": "radius", "scheme": "rand-u"}, "parse",
     r"protocol\.method = 'radius': .*distortion statistics.*'rand-u'"),
    ({"k": 0}, "parse", r"protocol\.k = 0: .*greater than or equal to 1"),
    ({"k": 120}, "prepare", r"protocol\.k = 120: .*119 training rows"),
    ({"fallback_k": 500}, "prepare", r"protocol\.fallback_k = 500: .*119 training rows"),
    ({"folds": 1}, "parse", r"protocol\.folds = 1: .*greater than or equal to 2"),
    ({"folds": 200, "max_validation": 1000}, "prepare", r"protocol\.folds = 200: .*119 training"),
    ({"max_validation": 3, "folds": 5}, "parse", r"protocol\.max_validation = 3: .*>= folds"),
    ({"method": "best-k", "ks": [100, 200]}, "prepare",
     r"protocol\.ks = \[100, 200\]: no k fits .*95 rows"),
    ({"ks": []}, "parse", r"protocol\.ks = \[\]: .*at least 1"),
    ({"ks": [3, 0]}, "parse", r"protocol\.ks\.1 = 0: .*greater than or equal to 1"),
    ({"n_sd": -1.0}, "parse", r"protocol\.n_sd = -1\.0: .*greater than or equal to 0"),
    ({"rho1": 1.0}, "parse", r"protocol\.rho1 = 1\.0: .*less than 1"),
    ({"b": "0.3"}, "parse", r"protocol\.b = '0\.3': .*valid number"),
    ({"components": 2.5}, "parse", r"protocol\.components = 2\.5: .*valid integer"),
    ({"k": True}, "parse", r"protocol\.k = True: .*valid integer"),
    ({"attacks": "yes"}, "parse", r"protocol\.attacks = 'yes': .*valid boolean"),
    ({"epsilon": 1.0}, "parse", r"unknown key 'protocol\.epsilon'; allowed keys here: .*'b'"),
]


@pytest.mark.parametrize(("keys", "where", "message"), BAD,
                         ids=[f"{i}-{'-'.join(map(str, k))}" for i, (k, _, _) in enumerate(BAD)])
def test_bad_inputs_refused_before_any_party_starts(keys, where, message):
    assert_refused(raw(**keys), where, message)


def _non_tied(result, k):
    data = result.prepared.data
    Z = normalise(data.train_X, data.bounds.lower, data.bounds.upper)
    Zq = normalise(data.queries, data.bounds.lower, data.bounds.upper)
    _, ties = union_topk_and_ties(Zq, Z, k)
    return ~ties


@pytest.mark.parametrize("method", ["fixed-k", "radius"])
def test_no_noise_full_release_equals_the_baseline(method):
    """Every component, no noise: distances are preserved, so the miner is the baseline.

    The radius is E(D) + 2 sqrt(Var(D)) = 0: no point is inside (no duplicates
    here), so every query falls back to its fallback_k = k nearest points.
    """
    result = execute(scenario(scheme="pca-no-noise", components=13, method=method, k=5,
                              fallback_k=5))
    o = result.outcome
    keep = _non_tied(result, 5)
    assert keep.sum() >= 55
    np.testing.assert_array_equal(o.predictions[keep], o.baseline.predictions[keep])
    if method == "radius":
        assert o.summary()["radius2"] == pytest.approx(0.0, abs=1e-12)


def test_tiny_b_approaches_the_baseline_and_reports_unbounded_amplification():
    result = execute(scenario(b=1e-5, components=13, method="fixed-k"))
    o = result.outcome
    r = o.summary()
    assert r["amplification"] == math.inf and r["amplification_bound"] == math.inf
    assert r["rho2_bound"] == 1.0 and r["log_amplification"] == pytest.approx(1e5)
    keep = _non_tied(result, 5)
    np.testing.assert_array_equal(o.predictions[keep], o.baseline.predictions[keep])


# ------------------------------------------------------------- no test row sets a parameter
def _run_with_test_rows(tmp_path: Path, shift: float):
    """A two-fold contiguous split of a small table; the test fold's rows scaled by ``shift``."""
    rng = np.random.default_rng(5)
    X = np.vstack([rng.normal(0, 1, (60, 4)), rng.normal(2, 1, (60, 4))])
    y = np.repeat([0, 1], 60)
    order = rng.permutation(120)
    X, y = X[order], y[order]
    X[:40] = X[:40] * shift + shift  # fold 0 (the queries): far outside when shift is large
    folder = tmp_path / f"shift-{shift:g}"
    folder.mkdir()
    lines = ["a,b,c,d,label"] + [",".join(f"{v!r}" for v in row) + f",{c}"
                                 for row, c in zip(X.tolist(), y.tolist())]
    (folder / "t.csv").write_text("\n".join(lines) + "\n")
    (folder / "manifest.json").write_text(json.dumps({"t": {"file": "t.csv", "label": "label"}}))
    sc = parse_scenario({
        "data": {"dataset": "t", "data_dir": str(folder), "folds": 3, "fold": 0,
                 "shuffle": False, "bounds": "data"},
        "parties": {"n": 1}, "runtime": {"kind": "inprocess", "channels": False},
        "protocol": {"name": NAME, "scheme": "pca-laplace", "components": 2, "b": 0.2,
                     "compare": ["best-k", "fixed-k"]}}, source="test")
    with pytest.warns(Warning, match="training rows"):
        out = execute(sc)
    view = out.transcript.view("miner")
    (release,) = [m for m in view.received if m.kind.startswith("release:")]
    return out, release


def test_test_rows_outside_the_training_range_do_not_move_the_release(tmp_path):
    """Every released parameter is the same whether the queries lie inside or far outside."""
    near, rel_near = _run_with_test_rows(tmp_path, 1.0)
    far, rel_far = _run_with_test_rows(tmp_path, 100.0)
    assert rel_near.payload.keys() == rel_far.payload.keys()
    for key in rel_near.payload:
        assert np.array_equal(np.asarray(rel_near.payload[key]),
                              np.asarray(rel_far.payload[key])), key
    a, b = near.outcome.summary(), far.outcome.summary()
    for key in ("amplification", "amplification_min", "domain_amplification", "radius2",
                "rho2_bound", "distortion_mean", "distortion_var"):
        assert a[key] == b[key], key
    # the far queries are clipped onto the bounds by the miner and still classified
    preds = far.outcome.predictions
    assert len(preds) == 40 and set(np.unique(preds)) <= {0, 1}
    # the released bounds are the training rows' extremes, not the queries'
    lower = np.asarray(rel_far.payload["lower"])
    assert lower.min() > -5 and np.asarray(rel_far.payload["upper"]).max() < 8


def test_compare_reports_every_method_and_refuses_radius_without_statistics():
    out = execute(scenario(compare=["best-k", "fixed-k"])).outcome
    m = out.summary()
    for key in ("accuracy_radius", "accuracy_best_k", "accuracy_fixed_k"):
        assert 0.0 <= m[key] <= 1.0, key
    assert m["accuracy_radius"] == pytest.approx(out.accuracy)
    assert m["distortion_mean"] is not None and m["distortion_mean_measured"] is not None
    assert m["noise_to_signal_min"] <= m["noise_to_signal_median"]
    assert m["amplification_min"] == pytest.approx(m["amplification"], rel=1e-9)
    assert_refused(raw(scheme="rand-u", method="best-k", compare=["radius"]), "parse",
                   r"protocol\.compare = \['radius'\]")


def test_the_baseline_cache_is_by_value():
    """Equal inputs share one computation; a changed input (or k) is computed again."""
    from ppknn.protocols.pca_perturbation import plugin

    rng = np.random.default_rng(0)
    X, y, q = rng.random((50, 3)), rng.integers(0, 2, 50), rng.random((7, 3))
    first = plugin.baseline_knn(X, y, q, 3)
    assert np.array_equal(plugin.baseline_knn(X.copy(), y.copy(), q.copy(), 3), first)
    assert np.array_equal(first, plugin._baseline_knn(X, y, q, 3))
    moved = q.copy()
    moved[0] = X[np.flatnonzero(y != first[0])[0]]  # query 0 onto a point of the other class
    assert plugin.baseline_knn(X, y, moved, 3)[0] != first[0]
    assert np.array_equal(plugin.baseline_knn(X, y, q, 1), plugin._baseline_knn(X, y, q, 1))
    first[:] = -1  # the caller's copy: the cache is not touched
    assert (plugin.baseline_knn(X, y, q, 3) >= 0).all()
