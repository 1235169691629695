"""``dp-nb`` through the registry: runner, results, Ray, exact ledger accounting, bad inputs."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from ppknn.core.runtime import make_runtime
from ppknn.protocols.dp_nb import METHODS
from ppknn.protocols.dp_nb.model import DENSITIES
from ppknn.protocols.dp_nb.noise import NOISES
from ppknn.protocols.dp_nb.plugin import OWNER, DPNBConfig
from ppknn.protocols.dp_nb.sensitivity import NEIGHBOURS
from ppknn.simulations.pipeline import write_results
from ppknn.simulations.runner import execute, prepare
from ppknn.simulations.scenario import load_scenario, parse_scenario, tomllib
from tests.plugins.equivalence import assert_ray_equals_inprocess, assert_refused

NAME = "dp-nb"
SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / f"{NAME}.toml"
COMMON_FILES = ("scenario.json", "public.json", "predictions.csv", "parties.csv",
                "summary.json", "summary.svg", "transcript/totals.json")
ANALYSTS = ("nb-analyst-00", "nb-analyst-01", "nb-analyst-02")


def raw(**protocol) -> dict:
    """The example scenario as a mapping, in-process, with protocol keys replaced."""
    data = tomllib.loads(SCENARIO.read_text())
    data["runtime"]["kind"] = "inprocess"
    data["protocol"].update(protocol)
    return data


def scenario(**protocol):
    return parse_scenario(raw(**protocol), source="test")


def test_config_choices_are_the_training_codes():
    fields = DPNBConfig.model_fields
    assert fields["method"].annotation.__args__ == METHODS
    assert fields["noise"].annotation.__args__ == NOISES
    assert fields["neighbours"].annotation.__args__ == NEIGHBOURS
    assert fields["density"].annotation.__args__ == DENSITIES


def test_example_scenario_runs_and_writes_the_common_shape(tmp_path):
    sc = load_scenario(SCENARIO)
    assert sc.runtime.kind == "ray" and sc.data.bounds != "data" and sc.parties.analysts == 3
    result = execute(sc.with_overrides(runtime={"kind": "inprocess"}),
                     transcript_dir=tmp_path / "run" / "transcript")
    folder = write_results(result, tmp_path / "run")
    for f in COMMON_FILES:
        assert (folder / f).is_file(), f
    summary = json.loads((folder / "summary.json").read_text())
    r = summary["results"][NAME]
    # 220 / 300 before the public global fallback (the same draws with global_fallback = false)
    assert r["accuracy"] == pytest.approx(211 / 300)  # 215 / 300 on the first 300 sorted test rows
    assert r["global_fallback"] is True and r["sensitivity"] == "bound"
    assert r["baseline"] == {"name": "GaussianNB (union, non-private)",
                             "accuracy": pytest.approx(224 / 300)}
    assert r["privacy"] == {
        "guarantee": "ε-DP, add/remove one training record (released model)",
        "epsilon": 3.0, "delta": 0.0,
        "per_party": {OWNER: {"epsilon": 3.0, "delta": 0.0},
                      **{a: {"epsilon": 1.0, "delta": 0.0} for a in ANALYSTS}}}
    assert (r["epsilon_per_model"], r["epsilon_spent"], r["released_models"],
            r["refused_requests"], r["method"], r["noise"]) == (1.0, 3.0, 3, 0, "smooth",
                                                                "polynomial")
    assert r["hops"] == 3 and summary["communication"]["messages"] == 2 * 3
    assert r["calibration"].startswith("polynomial (proven")
    parties = (folder / "parties.csv").read_text().splitlines()
    assert parties[0].startswith("party,roles") and len(parties) == 1 + 1 + 3
    head = (folder / "predictions.csv").read_text().splitlines()[0]
    assert head == f"query,label,{NAME},{NAME}:baseline,{NAME}:analyst"
    public = json.loads((folder / "public.json").read_text())["protocols"][NAME]
    assert public["query_shares"] == {a: [100 * i, 100 * (i + 1)] for i, a in enumerate(ANALYSTS)}


@pytest.mark.ray
@pytest.mark.parametrize(("layout", "analysts"), [("actor-per-party", 2), ("hosted", 3)])
def test_ray_equals_inprocess(ray_local, tmp_path, layout, analysts):
    """Both layouts (an actor per party is slow to start: two analysts there)."""
    sc = load_scenario(SCENARIO).set_key("parties.analysts", analysts)
    plan = prepare(sc).plan
    assert plan.specs[0].max_concurrency == analysts  # the budget pays for every request
    _, _, rows = assert_ray_equals_inprocess(sc, tmp_path, layout=layout)
    assert len(rows) == 2 * analysts


def _run_keeping_ledger(sc):
    rt = make_runtime("inprocess")
    try:
        result = execute(sc, runtime=rt)
        return result, rt.state(OWNER, "ledger")
    finally:
        rt.shutdown()


def test_budget_below_the_requests_refuses_the_last_and_charges_exactly():
    """Budget 2.5 for three models of ε = 1: the third analyst is refused, nothing charged."""
    sc = scenario(budget=2.5)
    assert prepare(sc).plan.specs[0].max_concurrency == 1  # refusals follow the driver's order
    result, ledger = _run_keeping_ledger(sc)
    r = result.outcome.summary()
    assert (r["released_models"], r["refused_requests"]) == (2, 1)
    assert r["privacy"]["epsilon"] == 2.0 and r["epsilon_spent"] == 2.0 and r["budget"] == 2.5
    assert r["privacy"]["per_party"] == {
        OWNER: {"epsilon": 2.0, "delta": 0.0}, ANALYSTS[0]: {"epsilon": 1.0, "delta": 0.0},
        ANALYSTS[1]: {"epsilon": 1.0, "delta": 0.0}, ANALYSTS[2]: {"epsilon": 0.0, "delta": 0.0}}
    assert ledger.spent_exact() == (Fraction(2), Fraction(0))
    assert ledger.remaining().epsilon == 0.5 and len(ledger.entries) == 2
    preds = result.predictions
    assert (preds[200:] == -1).all() and (preds[:200] >= 0).all()
    assert r["answered_fraction"] == pytest.approx(2 / 3)
    assert r["accuracy_answered"] == pytest.approx(
        float(np.mean(preds[:200] == result.outcome.labels[:200])))


@pytest.mark.parametrize(("epsilon", "delta", "noise"), [(0.1, 0.0, "polynomial"),
                                                        (0.7, 1e-6, "laplace")])
def test_spent_is_the_exact_sum_of_the_charges(epsilon, delta, noise):
    """Three models: 3 x 0.1 is exactly 0.3 on the ledger (Fractions), not 0.30000000000000004."""
    result, ledger = _run_keeping_ledger(scenario(epsilon=epsilon, delta=delta, noise=noise))
    r = result.outcome.summary()
    eps3, delta3 = 3 * Fraction(repr(epsilon)), 3 * Fraction(repr(delta))
    assert ledger.spent_exact() == (eps3, delta3)
    assert r["epsilon_spent"] == float(eps3) and r["delta_spent"] == float(delta3)
    assert r["privacy"]["epsilon"] == float(eps3) and r["privacy"]["delta"] == float(delta3)
    if delta:
        assert r["privacy"]["guarantee"].startswith("(ε, δ)-DP")
    for a in ANALYSTS:
        assert r["privacy"]["per_party"][a] == {"epsilon": epsilon, "delta": delta}


def test_analyst_cap_and_paper_calibration_are_reported():
    r = execute(scenario(noise="paper", analyst_budget=1.0)).outcome.summary()
    assert r["analyst_budget"] == 1.0 and r["refused_requests"] == 0
    assert r["calibration"].startswith("the paper's constant")


def test_non_private_method_equals_gaussian_nb_on_non_tied_queries():
    from sklearn.naive_bayes import GaussianNB

    result = execute(scenario(method="non-private"))
    o = result.outcome
    data = result.prepared.data
    jll = GaussianNB().fit(data.train_X, data.train_y).predict_joint_log_proba(data.queries)
    top2 = np.sort(jll, axis=1)[:, -2:]
    non_tied = (top2[:, 1] - top2[:, 0]) > 1e-6
    assert non_tied.sum() >= len(non_tied) - 2
    np.testing.assert_array_equal(o.predictions[non_tied], o.baseline.predictions[non_tied])
    r = o.summary()
    assert r["epsilon_spent"] == 0.0 and r["epsilon_per_model"] == 0.0
    assert r["privacy"]["guarantee"].startswith("none")


BAD = [
    # (protocol keys, other sections, where, message)
    ({"epsilon": 0}, {}, "parse", r"protocol\.epsilon = 0: .*greater than 0"),
    ({"epsilon": -1.0}, {}, "parse", r"protocol\.epsilon = -1\.0: .*greater than 0"),
    ({"epsilon": float("nan")}, {}, "parse", r"protocol\.epsilon = nan: .*finite"),
    ({"epsilon": float("inf")}, {}, "parse", r"protocol\.epsilon = inf: .*finite"),
    ({"epsilon": "1"}, {}, "parse", r"protocol\.epsilon = '1': .*valid number"),
    ({"delta": 1.0}, {}, "parse", r"protocol\.delta = 1\.0: .*less than 1"),
    ({"delta": -0.1}, {}, "parse", r"protocol\.delta = -0\.1: .*greater than or equal to 0"),
    ({"delta": float("nan")}, {}, "parse", r"protocol\.delta = nan: .*finite"),
    ({"method": "laplace-nb"}, {}, "parse",
     r"protocol\.method = 'laplace-nb': .*'smooth'.*'non-private'"),
    ({"noise": "student"}, {}, "parse", r"protocol\.noise = 'student': .*'polynomial'"),
    ({"neighbours": "swap"}, {}, "parse", r"protocol\.neighbours = 'swap': .*'add-remove'"),
    ({"density": "uniform"}, {}, "parse", r"protocol\.density = 'uniform': .*'gaussian'"),
    ({"sensitivity": "tight"}, {}, "parse", r"protocol\.sensitivity.* = 'tight': .*'exact'"),
    ({"sensitivity": "exact"}, {}, "parse",
     r"protocol\.sensitivity = 'exact': .*neighbours = 'replace'.*'bound'"),
    ({"global_fallback": 1}, {}, "parse", r"protocol\.global_fallback = 1: .*boolean"),
    ({"gamma": 1.0}, {}, "parse", r"protocol\.gamma = 1\.0: .*greater than 1"),
    ({"trim": 0.5}, {}, "parse", r"protocol\.trim = 0\.5: .*less than 0\.5"),
    ({"trim": -1}, {}, "parse", r"protocol\.trim = -1: .*greater than or equal to 0"),
    ({"trim": "half"}, {}, "parse", r"protocol\.trim = 'half': .*'auto'"),
    ({"trim": 5000}, {}, "prepare",
     r"protocol\.trim = 5000: class .* training rows; trim = m needs 2m \+ 2"),
    ({"budget": 0.5}, {}, "parse", r"protocol\.budget = 0\.5: below one model's cost"),
    ({"budget": 0.0}, {}, "parse", r"protocol\.budget = 0\.0: .*greater than 0"),
    ({"analyst_budget": 0.25}, {}, "parse",
     r"protocol\.analyst_budget = 0\.25: below one model's cost"),
    ({"delta": 1e-6, "noise": "laplace", "budget_delta": 1e-7}, {}, "parse",
     r"protocol\.budget_delta = 1e-07: below one model's delta"),
    ({"delta": 1e-6, "method": "vaidya"}, {}, "parse",
     r"protocol\.delta = 1e-06: delta > 0 is only for method 'smooth'"),
    ({"noise": "laplace"}, {}, "parse", r"protocol\.noise = 'laplace': .*needs delta > 0"),
    ({"delta": 1e-6}, {}, "parse", r"protocol\.noise = 'polynomial': delta = 1e-06 needs noise"),
    ({"noise": "gaussian", "delta": 1e-6}, {"run": {"mode": "secure"}}, "parse",
     r"protocol\.noise = 'gaussian': .*secure sampler.*run\.mode = 'secure'"),
    ({"k": 5}, {}, "parse", r"unknown key 'protocol\.k'; allowed keys here: .*'epsilon'"),
    ({}, {"data": {"bounds": None}}, "parse",
     r"data\.bounds = 'data': dp-nb calibrates its noise to public bounds and none are "
     r"declared"),
    ({"delta_from_n": "1/n", "delta": 1e-6, "noise": "laplace"}, {}, "parse",
     r"protocol\.delta_from_n = '1/n': .*delta = 1e-06 given too"),
    ({"delta_from_n": "1/m"}, {}, "parse", r"protocol\.delta_from_n = '1/m': .*'1/n'"),
    ({"delta_from_n": "1/n"}, {}, "parse",
     r"protocol\.delta_from_n = '1/n': a δ > 0 needs .*noise 'polynomial'"),
    ({"delta_from_n": "1/n", "noise": "gaussian"}, {"run": {"mode": "secure"}}, "parse",
     r"protocol\.noise = 'gaussian': .*run\.mode = 'secure'"),
    ({}, {"data": {"bounds": {"lower": [-2.0, -2.0, -2.0, -2.0, 5.0],
                              "upper": [5.0, 5.0, 5.0, 5.0, 5.0]}}}, "prepare",
     r"data\.bounds"),
]


@pytest.mark.parametrize(("keys", "sections", "where", "message"), BAD,
                         ids=[f"{i}-{'-'.join(map(str, {**k, **s}))}"
                              for i, (k, s, _, _) in enumerate(BAD)])
def test_bad_inputs_refused_before_any_party_starts(keys, sections, where, message):
    data = raw(**keys)
    for section, values in sections.items():
        table = data.setdefault(section, {})
        for k, v in values.items():  # None: the key left out
            if v is None:
                table.pop(k, None)
            else:
                table[k] = v
    assert_refused(data, where, message)


def test_delta_from_the_training_size_warns_where_the_size_is_private():
    """δ = 1/n reveals the true training size n in every model message: a PrivacyLeakWarning
    under add/remove (n private), none under replace (sizes public in that model)."""
    import warnings

    from ppknn.core.errors import PrivacyLeakWarning

    with pytest.warns(PrivacyLeakWarning, match=r"delta_from_n = '1/n'.*true training size"):
        prepare(scenario(delta_from_n="1/n", noise="gaussian"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        prepared = prepare(scenario(delta_from_n="1/n", noise="gaussian", neighbours="replace"))
    assert prepared.protocols[0].plan.config.delta > 0
