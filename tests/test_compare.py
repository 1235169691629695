"""``ppknn compare``: the spec, the network model, the reference, equal runs, the CLI."""

from __future__ import annotations

import math
import statistics
import warnings

import numpy as np
import pytest
from typer.testing import CliRunner

from ppknn.cli import app
from ppknn.core.errors import ConfigError, PrivacyLeakWarning
from ppknn.simulations.compare import (
    QUICK_SPEC,
    NetworkProfile,
    aggregate,
    load_comparison,
    predict_network,
    quick_spec,
    ranking,
    run_comparison,
)
from ppknn.simulations.network import replay
from ppknn.simulations.prepare import prepare_data
from ppknn.simulations.scenario import parse_scenario

IRIS = QUICK_SPEC["dataset_settings"]["sklearn:iris"]


def small(protocols, datasets=("sklearn:iris",), seeds=(0,), **extra):
    return load_comparison({
        "compare": {"name": "t", "datasets": list(datasets), "seeds": list(seeds),
                    "parallel": "sequential"},
        "base": {"data": {"scale": "minmax", "max_queries": 30}},
        "dataset_settings": {"sklearn:iris": IRIS},
        "protocol": protocols, **extra})


RING = {"name": "ppknn-ring", "privacy_key": "p0", "levels": [1.0, 0.0]}
OWNER = {"name": "dp-knn", "privacy_key": "epsilon", "levels": [1.0],
         "settings": {"task": "knn", "k": 5}}


@pytest.mark.parametrize("spec, message", [
    ({"protocol": [{"name": "nope", "privacy_key": "p0", "levels": [1.0]}]}, "unknown protocol"),
    ({"protocol": [{"name": "dp-knn", "privacy_key": "p0", "levels": [1.0]}]}, "has no key 'p0'"),
    ({"protocol": [{"name": "dp-knn", "privacy_key": "epsilon", "levels": []}]},
     "at least 1 item"),
    ({"protocol": [RING], "dataset_settings": {"glass": {}}}, "not in compare.datasets"),
    ({"protocol": [RING], "network": {"slow": {"latency_ms": 1, "bandwidth_mbps": 0}}},
     "greater than 0"),
])
def test_bad_specs_are_refused(spec, message):
    base = {"compare": {"datasets": ["sklearn:iris"]}}
    with pytest.raises(ConfigError, match=message):
        load_comparison({**base, **spec})


def test_a_bad_level_fails_before_anything_runs():
    spec = small([{**OWNER, "levels": [-1.0]}])
    with pytest.raises(ConfigError, match="protocol.epsilon = -1"):
        spec.jobs()


def test_network_model_against_a_hand_computed_critical_path():
    """A ring of n owners over r rounds pays n·r sequential hops for its top-k (then the
    final vector goes out with the secure sum's first hop; the sum pays n more); a central
    owner answers in one round trip. The cells' predicted times are the transcript replay."""
    n, r = 6, 2
    spec = small([{**RING, "levels": [1.0], "settings": {"rounds": r}},
                  OWNER], base={"data": {"scale": "minmax", "max_queries": 20},
                                "parties": {"n": n}})
    rows = run_comparison(spec)
    ring, owner = rows
    assert ring["critical_hops"] == n * r + n + 1 and owner["critical_hops"] == 2
    assert ring["network_wan_s"] >= ring["critical_hops"] * 0.050
    assert ring["network_wan_s"] < ring["wan_sum_of_hops_s"]  # the ring's hops overlap a bit
    # the owner's round trip: two latencies and both messages' bytes, nothing overlaps
    assert owner["network_wan_s"] == pytest.approx(2 * 0.050 + owner["bytes"] * 8 / 100e6,
                                                   rel=1e-12)
    assert owner["network_lan_s"] == pytest.approx(2 * 0.0005 + owner["bytes"] * 8 / 1000e6,
                                                   rel=1e-12)
    custom = NetworkProfile(latency_ms=0.0, bandwidth_mbps=8.0)  # 1 byte per microsecond
    assert predict_network(hops=3, messages=2, bytes_=2000, profile=custom) == \
        pytest.approx(3 * 1000 * 1e-6)


def test_reference_equals_scikit_learn_and_no_privacy_rows_equal_it():
    from sklearn.neighbors import KNeighborsClassifier

    spec = small([RING, {"name": "dp-nb", "privacy_key": "epsilon", "levels": [1e6]}],
                 seeds=(0, 1))
    rows = run_comparison(spec)
    for row in rows:
        sc = parse_scenario({"data": {"dataset": "sklearn:iris", "scale": "minmax",
                                      "max_queries": 30, **IRIS["data"]},
                             "protocol": {"name": row["protocol"]}, "run": {"seed": row["seed"]}})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            p = prepare_data(sc)
        if row["protocol"] == "ppknn-ring":
            knn = KNeighborsClassifier(n_neighbors=5, algorithm="brute").fit(p.union_X, p.union_y)
            assert row["reference_accuracy"] == pytest.approx(
                float(np.mean(knn.predict(p.queries) == p.query_labels)))
    no_privacy = [r for r in rows if (r["protocol"], r["level"]) in
                  {("ppknn-ring", 0.0), ("dp-nb", 1e6)}]
    assert len(no_privacy) == 4
    for r in no_privacy:
        assert abs(r["accuracy"] - r["reference_accuracy"]) <= 0.05, r


def test_aggregate_and_ranking():
    rows = [{"dataset": "d", "protocol": p, "level_rank": 1, "privacy_key": "epsilon",
             "level": 1.0, "accuracy": a, "reference_accuracy": 0.9, "reference": "kNN",
             "empirical_epsilon_lb": e, "hops": 2, "messages": 2, "bytes": 10,
             "network_wan_s": 0.1, "audit_epsilon_lb": au}
            for p, a, e, au in (("a", 0.8, 0.5, math.nan), ("a", 0.6, 0.5, 0.2),
                                ("b", 0.75, 2.0, math.nan), ("c", 0.9, 0.1, 3.0),
                                ("c", 0.9, 0.1, math.nan), ("d", 0.69, 0.9, math.nan),
                                ("d", 0.71, 0.9, math.nan))]
    agg = aggregate(rows)
    a = next(r for r in agg if r["protocol"] == "a")
    assert a["accuracy"] == pytest.approx(0.7) and a["seeds"] == 2
    assert 0.0 <= a["accuracy_low"] < 0.7 < a["accuracy_high"] <= 1.0
    assert a["audit_epsilon_lb"] == 0.2 and a["audit_seeds"] == 1  # over the audited seed
    assert a["empirical_epsilon"] == 0.5  # the larger of the attacks' and the audit's
    c = next(r for r in agg if r["protocol"] == "c")
    assert c["empirical_epsilon"] == 3.0  # the audit found more than the attacks
    rank = ranking(agg)[0]
    assert rank["best_at_strongest_setting"] == "c"
    # c is the most accurate but its audit measured ε = 3; b's attacks measured 2
    assert rank["best_at_empirical_eps_le_1"] == "a (epsilon = 1)"
    assert rank["accuracy_there"].startswith("0.700 [") and rank["its_empirical_eps"] == "0.5"
    assert rank["tied_with"] == "d (epsilon = 1)"  # its interval overlaps a's
    assert rank["measured_settings"] == 2


@pytest.mark.ray
def test_one_cell_reruns_identically_on_both_runtimes(ray_local):
    spec = small([RING, OWNER], seeds=(0, 1))
    seq = run_comparison(spec, parallel="sequential")
    par = run_comparison(spec, parallel="ray")
    drop = {"protocol_s"}
    assert [_plain(r, drop) for r in seq] == [_plain(r, drop) for r in par]
    again = run_comparison(spec.model_copy(update={"compare": spec.compare.model_copy(
        update={"seeds": [1]})}), parallel="sequential")
    assert _plain(again[0], drop | {"run_id"}) == _plain(seq[1], drop | {"run_id"})


def _plain(row, drop):
    """The row without timings, NaN written as a string so that equal rows compare equal."""
    return {k: ("nan" if isinstance(v, float) and v != v else v)
            for k, v in row.items() if k not in drop}


def test_quick_cli_writes_the_report_and_refuses_to_overwrite(tmp_path):
    out = tmp_path / "cmp"
    runner = CliRunner()
    done = runner.invoke(app, ["compare", "--quick", "--runtime", "inprocess",
                               "--output", str(out)])
    assert done.exit_code == 0, done.output
    text = (out / "compare.md").read_text()
    for protocol in ("ppknn-ring", "dp-knn", "dptt", "pca-perturbation", "dp-nb"):
        assert f"**{protocol}**" in text
    assert "When to choose which" in text and "[" in text  # intervals
    assert "## Audit: empirical ε at the same settings" in text  # the quick spec audits
    written = {"compare.parquet", "compare-aggregate.csv", "compare-run.json", "compare.md",
               "utility_vs_privacy_level.png", "utility_vs_leakage.png", "utility_vs_cost.png",
               "utility_vs_empirical_epsilon.png"}
    # the per-run table once (no compare.csv), no figure CSV (the aggregate is their data)
    assert {f.name for f in out.iterdir() if not f.name.startswith(".")} == written
    assert all((out / f).stat().st_size > 0 for f in written)
    assert "## Each protocol's strongest leak, by advantage over baseline" in text
    assert "(data: `compare-aggregate.csv`)" in text
    assert "| its baseline (no transcript) | its advantage over baseline [95% CI] |" in text
    from PIL import Image

    for f in written - {"compare.parquet", "compare-aggregate.csv", "compare-run.json",
                        "compare.md"}:
        with Image.open(out / f) as image:  # a palette PNG, at a readable size
            assert image.mode == "P" and image.size[0] >= 600
    before = (out / "compare.md").read_text()
    again = runner.invoke(app, ["compare", "--quick", "--runtime", "inprocess",
                                "--output", str(out)])
    assert again.exit_code == 2 and (out / "compare.md").read_text() == before


def test_quick_spec_is_a_valid_spec():
    from ppknn.testing import builtin_names

    spec = load_comparison(quick_spec())
    assert len([e for e in spec.protocol if e.name in builtin_names()]) == 5
    assert len(spec.jobs()) == 2 * len(spec.protocol) * 2 * 2  # a protocol installed beside


def test_the_full_spec_covers_every_protocol_on_many_datasets_three_levels_ten_seeds():
    from pathlib import Path

    spec = load_comparison(Path(__file__).resolve().parent.parent / "scenarios" / "compare.toml")
    assert len(spec.compare.datasets) >= 8 and len(spec.compare.seeds) >= 10
    assert {e.name for e in spec.protocol} == {"ppknn-ring", "dp-knn", "dptt",
                                               "pca-perturbation", "dp-nb"}
    assert all(len(e.levels) >= 3 for e in spec.protocol)
    assert len(spec.jobs()) == 13 * 5 * 3 * 10  # every cell validates before anything runs
    assert sum(d.startswith("synthetic:") for d in spec.compare.datasets) == 4
    jobs = spec.jobs()
    audited = {(m["dataset"], m["protocol"]) for m, _ in jobs if m["audit"]}
    assert len({d for d, _ in audited}) >= 8  # the audit axis on at least eight datasets
    assert sum(bool(m["ray_layout"]) for m, _ in jobs) == 45


def test_a_cell_the_protocol_cannot_serve_is_reported_not_a_hole(tmp_path):
    """The sanitizer refuses constant columns: the comparison goes on and says why."""
    from ppknn.simulations.compare import write_report

    data = tmp_path / "flat.csv"
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 3))
    lines = ["a,b,c,label"] + [f"{r[0]:.4f},1.0,{r[2]:.4f},{int(r[0] > 0)}" for r in x]
    data.write_text("\n".join(lines) + "\n")
    spec = load_comparison({
        "compare": {"name": "t", "datasets": [f"file://{data}"], "seeds": [0],
                    "parallel": "sequential"},
        "base": {"data": {"scale": "minmax", "bounds": {"lower": [-5.0, 0.0, -5.0],
                                                        "upper": [5.0, 2.0, 5.0]}}},
        "protocol": [RING, {"name": "pca-perturbation", "privacy_key": "b",
                            "levels": [0.2], "settings": {"components": 2}}]})
    rows = run_comparison(spec)
    pca = [r for r in rows if r["protocol"] == "pca-perturbation"]
    assert pca and all("constant" in r["cannot_run"] for r in pca)
    assert all(not r["cannot_run"] for r in rows if r["protocol"] == "ppknn-ring")
    text = write_report(spec, rows, tmp_path / "out", command="test").read_text()
    assert "cannot run:" in text and "could not run on" in text


def test_leak_figure_keeps_one_quantity_and_prefers_epsilon():
    from types import SimpleNamespace as Row

    from ppknn.simulations.compare_runs import _strongest_leak

    rates = [Row(attack="transform", quantity="reconstruction RMS error", value=0.9,
                 ci_low=0.8, ci_high=1.0),
             Row(attack="transform", quantity="values reconstructed within 5%", value=0.3,
                 ci_low=0.2, ci_high=0.4),
             Row(attack="transform", quantity="values reconstructed within 5%", value=0.5,
                 ci_low=0.45, ci_high=0.55)]
    got = _strongest_leak(rates)
    assert got["leak_quantity"] == "transform: values reconstructed within 5%"
    assert got["leak_value"] == 0.5 and math.isnan(got["empirical_epsilon_lb"])
    eps = rates + [Row(attack="mia", quantity="empirical ε lower bound", value=0.7,
                       ci_low=0.1, ci_high=1.2)]
    got = _strongest_leak(eps)
    assert got["leak_quantity"] == "mia: empirical ε lower bound"
    assert got["empirical_epsilon_lb"] == 0.1


def _leak(protocol, attack, quantity, value, **extra):
    from types import SimpleNamespace as Row

    return Row(protocol=protocol, attack=attack, quantity=quantity, value=value,
               ci_low=max(0.0, value - 0.05), ci_high=min(1.0, value + 0.05), **extra)


def test_the_strongest_leak_is_the_largest_not_the_first_by_name():
    """The ring's neighbours recover every vote vector (1.0); the informed successor (the
    first name) is at 0.5. PCA's sanitizer sees nothing (0, the first name) while the
    transform attack reconstructs 30% of values. The first-by-name rule picked the
    smaller figure in both."""
    from ppknn.simulations.compare_runs import _strongest_leak

    ring = [_leak("ppknn-ring", "informed-successor", "disclosure probability (informed)", v)
            for v in (0.4, 0.5)]
    ring += [_leak("ppknn-ring", "secure-sum-neighbours", "vote vector recovered exactly", 1.0)]
    got = _strongest_leak(ring)
    assert got["leak_quantity"] == "secure-sum-neighbours: vote vector recovered exactly"
    assert got["leak_value"] == 1.0
    pca = [_leak("pca-perturbation", "sanitizer-sees-instances",
                 "miner's instances seen exactly", 0.0),
           _leak("pca-perturbation", "transform-attack",
                 "values reconstructed within ±0.05 of the range", 0.3),
           _leak("pca-perturbation", "correlation-attack",
                 "average privacy (95% interval width / range; lower leaks more)", 0.9)]
    got = _strongest_leak(pca)
    assert got["leak_quantity"].startswith("transform-attack: values reconstructed")
    # the old rule: the alphabetically first (attack, quantity) among the rates
    first = min((r.attack, r.quantity) for r in pca if "lower leaks more" not in r.quantity)
    assert first[0] == "sanitizer-sees-instances"


def test_a_leak_handed_over_by_design_is_reported_not_ranked():
    from ppknn.simulations.compare_runs import _strongest_leak

    rows = [_leak("dp-knn", "owner-sees-queries", "analyst's instances seen exactly", 1.0),
            _leak("dp-knn", "analyst-label-inference", "labels inferred correctly", 0.6)]
    got = _strongest_leak(rows)
    assert got["leak_quantity"] == "analyst-label-inference: labels inferred correctly"


def test_the_strongest_leak_ranks_by_advantage_where_rows_carry_one():
    from ppknn.simulations.compare_runs import _strongest_leak

    rows = [_leak("dp-knn", "analyst-label-inference", "labels inferred correctly", 0.8,
                  advantage=0.02),
            _leak("dp-knn", "other", "records recovered", 0.3, advantage=0.25)]
    assert _strongest_leak(rows)["leak_quantity"] == "other: records recovered"


def test_a_cell_names_the_attack_largest_over_its_seeds():
    """Seeds may disagree on their largest attack; the cell names the attack with the
    largest mean over its seeds and averages that attack's figures."""
    import json

    def seed(i, a, b):
        return {"dataset": "d", "protocol": "p", "level_rank": 1, "privacy_key": "k",
                "level": 1.0, "seed": i, "accuracy": 0.5, "reference_accuracy": 0.6,
                "reference": "r", "hops": 1, "messages": 1, "bytes": 1,
                "leak_quantity": "a: q" if a >= b else "b: q", "leak_value": max(a, b),
                "empirical_epsilon_lb": math.nan,
                "leak_candidates": json.dumps({"a: q": a, "b: q": b})}

    # a: 0.9, 0.1, 0.1 (mean 0.367, seed 0's largest); b: 0.2, 0.5, 0.5 (mean 0.4)
    (cell,) = aggregate([seed(0, 0.9, 0.2), seed(1, 0.1, 0.5), seed(2, 0.1, 0.5)])
    assert cell["leak_quantity"] == "b: q"
    assert cell["leak_value"] == pytest.approx(0.4)
    assert cell["leak_seeds"] == 3


def test_advice_does_not_say_choose_it_when_nearly_every_target_leaks():
    from ppknn.simulations.compare import HEAVY_LEAK, advice

    def cell(protocol, leak):
        return {"dataset": "d", "protocol": protocol, "level_rank": 1, "privacy_key": "p0",
                "level": 1.0, "seeds": 10, "gap_to_reference": 0.0, "hops": 4,
                "network_wan_s": 0.1, "leak_quantity": f"{protocol}-attack: recovered",
                "leak_value": leak, "leak_seeds": 10, "epsilon_lb_seeds": 0}

    text = advice([cell("ppknn-ring", 1.0), cell("dp-knn", HEAVY_LEAK - 0.01)])
    assert "consider it only when" in text["ppknn-ring"]
    assert "recovering 100% of its targets" in text["ppknn-ring"]
    assert "choose it when" in text["dp-knn"] and "consider" not in text["dp-knn"]


NO_PRIVACY = [  # each protocol's no-privacy setting (with its exact non-private mode)
    {"name": "dp-knn", "privacy_key": "epsilon", "levels": [1e12],
     "settings": {"task": "knn", "k": 5, "algorithm": "baseline"}},
    {"name": "pca-perturbation", "privacy_key": "b", "levels": [1e-9],
     "settings": {"components": 4, "method": "fixed-k"}},
    {"name": "dptt", "privacy_key": "final_epsilon", "levels": [1e9],
     "settings": {"variant": "N200"}},
]


@pytest.mark.parametrize("entry", NO_PRIVACY, ids=lambda e: e["name"])
def test_no_privacy_rows_equal_the_reference(entry):
    """ε → ∞ (DP owner, DP-TT with a neighbourhood covering every point), b → 0 with every
    component kept: the protocol's accuracy equals its non-private reference's, per seed."""
    rows = run_comparison(small([entry], seeds=(0, 1)))
    assert len(rows) == 2
    for r in rows:
        assert r["accuracy"] == pytest.approx(r["reference_accuracy"]), r


def test_network_section_of_a_run_predicts_each_profile(tmp_path):
    """``[network]`` in a scenario: summary.json reports the predicted time per profile and
    protocol, the replay of the run's own transcript."""
    import json

    from ppknn.simulations.results import summary_of
    from ppknn.simulations.runner import execute

    sc = parse_scenario({"data": {"dataset": "sklearn:iris", "max_queries": 20, **IRIS["data"]},
                         "parties": {"n": 5}, "protocol": {"name": "ppknn-ring"},
                         "runtime": {"kind": "inprocess"},
                         "network": {"profiles": ["wan"],
                                     "custom": {"campus": {"latency_ms": 5.0,
                                                           "bandwidth_mbps": 200.0}}}})
    result = execute(sc)
    summary = summary_of(result)
    net = summary["network"]["profiles"]
    assert set(net) == {"wan", "campus"}
    campus = NetworkProfile(latency_ms=5.0, bandwidth_mbps=200.0)
    whole = replay(result.transcript, campus, per_protocol=False)["run"]
    assert net["campus"]["seconds"]["ppknn-ring"] == whole.seconds > 0
    assert net["campus"]["critical_path_hops"]["ppknn-ring"] == whole.critical_hops
    assert net["wan"]["seconds"]["ppknn-ring"] > net["campus"]["seconds"]["ppknn-ring"]
    json.dumps(summary)  # plain JSON
    with pytest.raises(ConfigError, match="neither built in"):
        parse_scenario({"network": {"profiles": ["moon"]}})
    assert "network" not in summary_of(execute(sc.model_copy(update={"network": None})))


@pytest.mark.ray
def test_a_cell_gives_the_same_row_with_its_parties_on_ray(ray_local):
    """Re-running one cell with its parties as Ray actors reproduces the in-process row."""
    from ppknn.simulations.compare import run_cell

    spec = small([RING, OWNER])
    for meta, scenario in spec.jobs()[::2]:
        local = run_cell((meta, scenario))
        on_ray = run_cell((meta, {**scenario, "runtime": {**scenario["runtime"],
                                                          "kind": "ray", "layout": "hosted"}}))
        assert _plain(local, {"protocol_s"}) == _plain(on_ray, {"protocol_s"})


@pytest.mark.parametrize("sub, message", [
    ({"audit": {"seeds": [5]}}, r"compare.audit.seeds = \[5\]: \[5\] not in compare.seeds"),
    ({"audit": {"datasets": ["glass"]}}, r"compare.audit.datasets: \['glass'\] not in"),
    ({"runtime_compare": {"protocols": ["nope"]}}, "compare.runtime_compare.protocols"),
    ({"audit": {"trials": 10}}, "greater than or equal to 100"),
    ({"runtime_compare": {"layout": "star"}}, "hosted"),
])
def test_bad_measurement_subsets_are_refused(sub, message):
    with pytest.raises(ConfigError, match=message):
        load_comparison({"compare": {"datasets": ["sklearn:iris"], "seeds": [0, 1], **sub},
                         "protocol": [RING]})


def test_an_audited_cell_reports_the_audit_at_the_same_settings():
    """dp-nb at ε = 10 on iris, seed 0 audited (100 reruns per neighbour): a finite lower
    bound within the promise; seed 1 and the ring (no ε promised) are not audited."""
    spec = small([{"name": "dp-nb", "privacy_key": "epsilon", "levels": [10.0]}, RING],
                 seeds=(0, 1))
    data = spec.model_dump()
    data["compare"]["audit"] = {"seeds": [0]}
    spec = load_comparison(data)
    rows = run_comparison(spec)
    nb0, nb1 = (r for r in rows if r["protocol"] == "dp-nb")
    assert 0.0 <= nb0["audit_epsilon_lb"] <= nb0["audit_bound"] == 10.0
    assert nb0["audit_note"].startswith("ε of a model: 100 runs per input")
    assert nb0["empirical_epsilon"] == max(nb0["audit_epsilon_lb"],
                                           nb0["empirical_epsilon_lb"])
    assert math.isnan(nb1["audit_epsilon_lb"])
    assert all(math.isnan(r["audit_epsilon_lb"]) for r in rows if r["protocol"] == "ppknn-ring")
    again = run_comparison(load_comparison(spec.model_dump()))  # the audit repeats exactly
    assert again[0]["audit_epsilon_lb"] == nb0["audit_epsilon_lb"]


@pytest.mark.ray
def test_runtime_compare_measures_both_runtimes_in_one_run(ray_local, tmp_path):
    from ppknn.simulations.compare import write_report

    spec = load_comparison({**small([OWNER]).model_dump(),
                            "compare": {"name": "t", "datasets": ["sklearn:iris"],
                                        "seeds": [0], "parallel": "sequential",
                                        "runtime_compare": {"seeds": [0]}}})
    (row,) = run_comparison(spec)
    assert row["ray_same_row"] is True
    assert row["ray_protocol_s"] > 0 and row["protocol_s"] > 0
    assert row["ray_over_inprocess"] == pytest.approx(row["ray_protocol_s"] / row["protocol_s"])
    text = write_report(spec, [row], tmp_path / "out", command="test").read_text()
    assert "## Wall time in-process and on Ray" in text and "1 of 1" in text


def _eps_row(value, ci_low, bound=0.1):
    from types import SimpleNamespace as Row

    return Row(attack="mia", quantity="empirical ε lower bound (membership)", value=value,
               ci_low=ci_low, ci_high=math.inf, bound=bound)


def test_an_infinite_point_estimate_keeps_its_finite_lower_bound_and_promise():
    """One arm of the test never fired (29/29 vs 21/29): the point estimate is infinite, the
    95% lower bound is not; the row keeps the bound and the promise it is compared with."""
    from ppknn.simulations.compare_runs import _strongest_leak

    got = _strongest_leak([_eps_row(math.inf, 0.064), _eps_row(0.4, 0.01)])
    assert got["leak_value"] == math.inf and got["empirical_epsilon_lb"] == 0.064
    assert got["leak_bound"] == 0.1
    nothing = _strongest_leak([_eps_row(math.nan, math.nan)])
    assert math.isnan(nothing["empirical_epsilon_lb"]) and nothing["leak_quantity"]


@pytest.mark.parametrize("n, k, confidence", [
    (10, 3, 0.98850), (9, 3, 0.99164), (8, 3, 0.99421), (7, 2, 0.95562), (1, 1, 0.95)])
def test_cell_bound_is_the_order_statistic_that_holds_at_95_percent(n, k, confidence):
    """The k-th largest of n per-seed 95% bounds, k the smallest with
    P(Binomial(n, 0.05) >= k) <= 0.05; the confidence is 1 minus that tail."""
    from ppknn.simulations.compare import cell_bound

    values = [float(i) for i in range(n)]  # largest n - 1, k-th largest n - k
    bound, rank, conf = cell_bound(values)
    assert (bound, rank) == (float(n - k), k)
    assert conf == pytest.approx(confidence, abs=5e-5)
    assert cell_bound([math.nan, 2.0])[:2] == (2.0, 1)  # NaN seeds are left out


def _seed_rows(lbs, values, *, promise=math.nan, audit=math.nan, quantity="mia: ε"):
    return [{"dataset": "d", "protocol": "p", "level_rank": 1, "privacy_key": "epsilon",
             "level": 0.1, "seed": i, "accuracy": 0.5, "reference_accuracy": 0.6,
             "reference": "r", "hops": 1, "messages": 1, "bytes": 1, "leak_quantity": quantity,
             "leak_value": v, "empirical_epsilon_lb": lb, "leak_bound": promise,
             "audit_epsilon_lb": audit if i == 0 else math.nan,
             "audit_bound": 0.1 if i == 0 and math.isfinite(audit) else math.nan}
            for i, (lb, v) in enumerate(zip(lbs, values, strict=True))]


def test_aggregate_counts_nan_seeds_and_seeds_above_the_promise():
    """A NaN seed no longer hides the cell: the point estimates are averaged over the finite
    seeds (the count says how many), the bounds give the cell's order-statistic bound, and
    a seed whose bound exceeds the promise is counted and named."""
    lbs = [0.0] * 8 + [0.152, math.nan]
    values = [0.1] * 8 + [2.4, math.nan]
    (cell,) = aggregate(_seed_rows(lbs, values, promise=0.1))
    assert cell["leak_value"] == pytest.approx((0.8 + 2.4) / 9) and cell["leak_seeds"] == 9
    assert cell["epsilon_lb_seeds"] == 9 and cell["empirical_epsilon_lb"] == 0.0
    assert cell["epsilon_lb_rank"] == 3 and cell["epsilon_lb_max"] == 0.152
    assert cell["seeds_above"] == 1 and cell["above_promise"] == "seed 8: 0.152"
    assert cell["epsilon_lb_max_seed"] == 8


def test_the_promise_falls_back_to_the_audited_cells_and_else_is_undecided():
    (audited,) = aggregate(_seed_rows([0.2, 0.0], [0.3, 0.0], audit=0.0))
    assert audited["leak_promise"] == 0.1 and audited["seeds_above"] == 1
    (unknown,) = aggregate(_seed_rows([0.2, 0.0], [0.3, 0.0]))
    assert math.isnan(unknown["leak_promise"]) and unknown["seeds_above"] == 0
    assert unknown["seeds_undecided"] == 1 and unknown["undecided_max"] == 0.2


def test_a_cell_with_a_seed_without_a_bound_stays_out_of_the_ranking():
    rows = (_seed_rows([0.0, math.nan], [0.1, math.nan], promise=1.0)
            + [{**r, "protocol": "q", "accuracy": 0.4}
               for r in _seed_rows([0.0, 0.0], [0.1, 0.1], promise=1.0)])
    (rank,) = ranking(aggregate(rows))
    assert rank["best_at_empirical_eps_le_1"] == "q (epsilon = 0.1)"


def test_the_report_renders_again_from_the_saved_rows(tmp_path):
    """write_report saves the rows and how the run was made; render_saved writes the same
    report from them (nothing re-run, the rows not rewritten), saying so; the header's
    command carries the --runtime that overrode the spec, so it reproduces the run."""
    from ppknn.simulations.compare import render_saved, write_report

    spec = load_comparison({**small([RING]).model_dump(),
                            "compare": {"name": "t", "datasets": ["sklearn:iris"],
                                        "seeds": [0], "parallel": "ray"}})
    rows = run_comparison(spec, parallel="sequential")
    rows = [{**rows[0], "leak_error": "x"}, *rows[1:]]  # a column only one row has
    out = tmp_path / "cmp"
    first = write_report(spec, rows, out, command="ppknn compare spec.toml", seconds=3.0,
                         parallel="sequential").read_text()
    assert "`ppknn compare spec.toml --runtime inprocess` (full settings, inprocess runtime)" \
        in first and "run one by one in one process" in first
    import pyarrow.parquet as pq

    assert "leak_error" in pq.read_table(out / "compare.parquet").column_names
    assert pq.ParquetFile(out / "compare.parquet").metadata.row_group(0).column(0) \
        .compression == "ZSTD"
    saved_before = (out / "compare.parquet").read_bytes()
    again = render_saved(out).read_text()
    assert (out / "compare.parquet").read_bytes() == saved_before
    assert not (out / "compare.csv").exists()
    assert " This file was rendered from that run's saved rows" in again
    head, _, rest = again.partition(" This file was rendered")
    assert first.startswith(head) and rest.split("the numbers are the run's.", 1)[1] == \
        first.split("Intervals are Student-t 95% over seeds.", 1)[1]


def test_a_runs_strongest_leak_carries_its_baseline_and_advantage_interval():
    import json

    from ppknn.simulations.compare_runs import _strongest_leak

    rows = [_leak("ppknn-ring", "secure-sum-neighbours", "vote vector recovered exactly", 1.0,
                  baseline=0.14, advantage=0.86, advantage_low=0.72, advantage_high=0.93),
            _leak("ppknn-ring", "informed-successor", "disclosure probability (informed)", 0.48,
                  baseline=0.41, advantage=0.07, advantage_low=0.02, advantage_high=0.12)]
    got = _strongest_leak(rows)
    assert got["leak_quantity"] == "secure-sum-neighbours: vote vector recovered exactly"
    assert (got["leak_baseline"], got["leak_advantage"], got["leak_advantage_low"],
            got["leak_advantage_high"]) == (0.14, 0.86, 0.72, 0.93)
    details = json.loads(got["leak_details"])
    assert details["informed-successor: disclosure probability (informed)"] == \
        [0.48, 0.41, 0.07, 0.02, 0.12]


def test_a_cells_advantage_interval_is_over_seeds_or_the_seeds_own_when_they_agree():
    from ppknn.simulations.compare import advantage_cell

    seeds = [(0.1, 0.5, 0.4, 0.6), (0.2, 0.7, 0.6, 0.8), (0.3, 0.9, 0.8, 1.0)]
    half = 4.302652729911275 * 0.2 / math.sqrt(3)  # t(0.975, 2) × sd / √n
    got = advantage_cell(seeds)
    assert got["leak_advantage"] == pytest.approx(0.7)
    assert got["leak_advantage_low"] == pytest.approx(0.7 - half)
    assert got["leak_advantage_high"] == 1.0  # a difference of rates: clipped to [-1, 1]
    assert got["leak_baseline"] == pytest.approx(0.2) and got["leak_advantage_seeds"] == 3
    assert advantage_cell(seeds, rate=False)["leak_advantage_high"] == pytest.approx(0.7 + half)
    # every seed with a figure gives 0: no spread, so their own intervals stand in
    same = advantage_cell([(0.0, 0.0, -0.1, 0.1), (0.0, 0.0, -0.2, 0.2), (math.nan,) * 4])
    assert same["leak_advantage"] == 0.0 and same["leak_advantage_seeds"] == 2
    assert (same["leak_advantage_low"], same["leak_advantage_high"]) == \
        (pytest.approx(-0.15), pytest.approx(0.15))


def test_a_cell_reports_the_named_attacks_point_estimate_baseline_and_advantage():
    """The cell ranks attacks by advantage but reports the named attack's point estimate
    (all targets recovered: 1.0), not its ranking figure (the advantage, 0.85)."""
    import json

    def seed(i, value, base):
        adv = value - base
        return {"dataset": "d", "protocol": "p", "level_rank": 1, "privacy_key": "k",
                "level": 1.0, "seed": i, "accuracy": 0.5, "reference_accuracy": 0.6,
                "reference": "r", "hops": 1, "messages": 1, "bytes": 1,
                "leak_quantity": "a: q", "leak_value": value, "empirical_epsilon_lb": math.nan,
                "leak_baseline": base, "leak_advantage": adv,
                "leak_candidates": json.dumps({"a: q": adv, "b: q": -0.5}),
                "leak_details": json.dumps({"a: q": [value, base, adv, adv - 0.1, adv + 0.1],
                                            "b: q": [0.1, 0.6, -0.5, -0.6, -0.4]})}

    (cell,) = aggregate([seed(0, 1.0, 0.2), seed(1, 1.0, 0.1)])
    assert cell["leak_quantity"] == "a: q" and cell["leak_value"] == 1.0
    assert cell["leak_baseline"] == pytest.approx(0.15)
    assert cell["leak_advantage"] == pytest.approx(0.85)
    half = 12.706204736174698 * statistics.stdev([0.8, 0.9]) / math.sqrt(2)
    assert cell["leak_advantage_low"] == pytest.approx(0.85 - half)
    assert cell["leak_advantage_high"] == 1.0


def _ring_cell(dataset, value, adv, low, high):
    return {"dataset": dataset, "protocol": "ppknn-ring", "level_rank": 1, "privacy_key": "p0",
            "level": 1.0, "seeds": 10, "gap_to_reference": 0.0, "hops": 4,
            "network_wan_s": 0.1, "leak_quantity": "x-attack: recovered", "leak_value": value,
            "leak_seeds": 10, "epsilon_lb_seeds": 0, "leak_baseline": value - adv,
            "leak_advantage": adv, "leak_advantage_low": low, "leak_advantage_high": high}


def test_advice_names_the_leak_largest_by_advantage_and_heavy_means_beyond_the_baseline():
    """d1: every target recovered, but a constant guess gets 95% of them (advantage 0.05,
    its interval reaching below 0): not heavy, and not the strongest leak either, which is
    d2's (60% recovered against 10%). Ranked by the point estimate (the old rule), d1 was
    named and the advice said "consider it only when"."""
    from ppknn.simulations.compare import advice

    text = advice([_ring_cell("d1", 1.0, 0.05, -0.02, 0.12),
                   _ring_cell("d2", 0.6, 0.5, 0.4, 0.6)])["ppknn-ring"]
    assert "choose it when" in text and "consider" not in text
    assert ("by advantage over baseline, is 0.6 (x-attack: recovered, mean over 10 seeds, on "
            "d2; advantage +0.5 [+0.4, +0.6] over the baseline's 0.1)") in text
    heavy = advice([_ring_cell("d1", 1.0, 0.86, 0.72, 0.93),
                    _ring_cell("d2", 0.6, 0.5, 0.4, 0.6)])["ppknn-ring"]
    assert "consider it only when" in heavy and "recovering 100% of its targets" in heavy
    assert "on d1; advantage +0.86 [+0.72, +0.93] over the baseline's 0.14)" in heavy


def test_a_protocol_with_only_a_worst_case_audit_is_run_without_a_replay_audit():
    """The replay audit covers the protocols with a replay set-up; one with only a
    worst-case model (the PCA sanitizer) in [compare.audit] gets no audit figure instead of
    stopping the comparison ("nothing to audit")."""
    from ppknn.simulations.compare import replay_audited
    from ppknn.simulations.leakage.audit import audited

    assert "pca-perturbation" in set(audited()) - set(replay_audited())
    assert {"dp-knn", "dp-nb", "dptt"} <= set(replay_audited())
    spec = small([{"name": "pca-perturbation", "privacy_key": "b", "levels": [0.2],
                   "settings": {"components": 2}}]).model_dump()
    spec["compare"]["audit"] = {"seeds": [0]}
    (row,) = run_comparison(load_comparison(spec))
    assert math.isnan(row["audit_epsilon_lb"]) and not row["cannot_run"]


def test_a_comparison_folder_without_its_marker_is_still_taken_for_ppknns(tmp_path):
    """A committed comparison (docs/comparison) keeps no .ppknn-output: its compare-run.json
    marks it, so --overwrite can replace it (compare.csv, the old mark, is no longer
    written)."""
    from ppknn.simulations.output import MARKER, legacy_output

    folder = tmp_path / "comparison"
    folder.mkdir()
    for name in ("compare.md", "compare.parquet", "compare-aggregate.csv", "a.png"):
        (folder / name).write_text("x")
    assert not legacy_output(folder)
    (folder / "compare-run.json").write_text("{}")
    assert legacy_output(folder) and not (folder / MARKER).exists()


def test_the_advantage_cell_counts_seeds_without_one_and_makes_no_markdown_link():
    from ppknn.simulations.compare_report import _advantage_cell_text

    cell = {"seeds": 10, "leak_advantage": 6.29, "leak_advantage_low": 5.77,
            "leak_advantage_high": 6.81, "leak_advantage_seeds": 4}
    assert _advantage_cell_text(cell) == "6.29 [5.77, 6.81]; 6 of 10 seeds n/a"
    assert _advantage_cell_text({**cell, "leak_advantage_seeds": 10}) == "6.29 [5.77, 6.81]"
    assert _advantage_cell_text({"seeds": 10, "leak_advantage": math.nan}) == "—"
