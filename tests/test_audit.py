"""Audit mode and calibration: broken variants measure a leak above their promise.

Every check is seeded; the auditor's bound holds with probability 95%, and
the honest and broken settings sit far from the bound (the honest feature's
true loss is a fraction of the promise, the broken one's several times it),
so the tests have power and rarely flake.
"""

from __future__ import annotations

import numpy as np
import pytest

from ppknn.core.errors import ConfigError
from ppknn.simulations.leakage.audit import audit_scenario, write_audit
from ppknn.simulations.leakage.table import ABOVE, WITHIN, read_table
from ppknn.simulations.scenario import parse_scenario

from .test_leakage import small

TRIALS = 120


def nb(**protocol) -> dict:
    data = small("dp-nb", data={
        "dataset": "synthetic:classification?rows=600&features=2&classes=2",
        "bounds": {"lower": [-6.0, -6.0], "upper": [6.0, 6.0]}, "max_queries": 20,
        "test_fraction": 0.2}, parties={"n": 1, "analysts": 1})
    data["protocol"].update(method="vaidya", **protocol)
    return data


def dptt() -> dict:
    data = small("dptt")
    data["data"]["dataset"] = "synthetic:classification?rows=1000&features=2&classes=2"
    data["data"]["test_fraction"] = 0.02
    data["protocol"].update(final_epsilon=2.0, client_budget=2.0)  # about 1 per decision
    return data


def knn() -> dict:
    """A DP owner of 400 two-class rows; requests at ε = 3, a public radius of 0.05."""
    data = small("dp-knn", data={
        "dataset": "synthetic:classification?rows=400&features=2&classes=2",
        "bounds": {"lower": [-6.0, -6.0], "upper": [6.0, 6.0]}, "max_queries": 20,
        "test_fraction": 0.2, "scale": "minmax"}, parties={"n": 1, "analysts": 1})
    data["protocol"].update(epsilon=3.0, budget=3.0, radius=0.05)
    return data


def _audit(data: dict, deviation: dict | None = None):
    if deviation is not None:
        data["deviation"] = [deviation]
    (run,) = audit_scenario(parse_scenario(data), trials=TRIALS, use_ray=False)
    return run


def test_dp_nb_audit_stays_below_the_promise_and_catches_weak_noise(tmp_path):
    honest = _audit(nb())
    assert honest.row.verdict == WITHIN and honest.row.value < 1.0
    broken = _audit(nb(), {"party": "nb-owner", "kind": "weak-noise-nb",
                           "params": {"scale": 0.05}})
    assert broken.row.verdict == ABOVE and broken.row.value > 1.3
    write_audit([honest, broken], tmp_path)
    rows = read_table(tmp_path / "audit.csv")
    assert [r["verdict"] for r in rows] == [WITHIN, ABOVE]
    assert rows[0]["trials"] == 2 * TRIALS


def test_dptt_audit_catches_a_client_that_does_not_randomise():
    honest = _audit(dptt())
    assert honest.row.verdict == WITHIN
    broken = _audit(dptt(), {"party": "client", "kind": "no-randomisation"})
    assert broken.row.verdict == ABOVE
    a, b = broken.samples
    assert np.unique(a).size == 1 and np.unique(b).size == 1 and a[0] != b[0]


@pytest.mark.slow
def test_dp_knn_audit_stays_below_the_ledger_and_catches_halved_noise(tmp_path):
    """The owner's release audited on neighbours differing in one record (row 0).

    100 runs per input, each asking one worst-case instance 25 times (its region
    ties the record's class with the other): 2,500 draws per input, 1,250 in the
    test half. Honest, the label's event can show at most ε - ln(1 + ε/2) = 2.08
    < ε = 3 (measured 1.68); the auditor's bound exceeds the ledger's ε with
    probability < 5% whatever the release, here < 1e-14 (the neighbour's test
    half would need <= 21 hits where about 78 are expected). With the noise
    halved the event's true loss is 2ε - ln(1 + ε) = 4.61 (measured 3.67, 7
    hits): about 6 hits are expected under the neighbour, and the bound falls
    to ε only with 18 or more (Poisson tail 8e-5): the probability of a false
    pass.
    """
    def audit(deviation: dict | None = None):
        data = knn()
        if deviation is not None:
            data["deviation"] = [deviation]
        (run,) = audit_scenario(parse_scenario(data), trials=100, use_ray=False)
        return run

    honest = audit()
    assert "closest to a tie" in honest.row.target and ": 0 with the record" in honest.row.target
    assert honest.row.verdict == WITHIN and 1.0 < honest.row.value < 2.2
    broken = audit({"party": "dp-owner", "kind": "weak-noise-dpknn"})
    assert broken.row.verdict == ABOVE  # its lower bound is above the ledger's ε = 3
    assert honest.row.trials == broken.row.trials == 2 * 100 * 25
    write_audit([honest, broken], tmp_path)
    assert [r["verdict"] for r in read_table(tmp_path / "audit.csv")] == [WITHIN, ABOVE]


def test_audit_refuses_protocols_without_a_promise_and_too_few_trials():
    with pytest.raises(ConfigError, match="promise no ε"):
        audit_scenario(parse_scenario(small("pca-perturbation")), trials=TRIALS, use_ray=False)
    with pytest.raises(ConfigError, match="at least 100 runs"):
        audit_scenario(parse_scenario(nb()), trials=50, use_ray=False)
    data = nb()
    data["deviation"] = [{"party": "owner", "kind": "weak-noise-nb"}]
    with pytest.raises(ConfigError, match="party = 'owner': no such party"):
        audit_scenario(parse_scenario(data), trials=TRIALS, use_ray=False)
    data = nb()
    data["audit"] = {"record": 10_000}
    with pytest.raises(ConfigError, match="record = 10000"):
        audit_scenario(parse_scenario(data), trials=TRIALS, use_ray=False)


def test_dp_nb_audit_subtracts_the_delta_the_model_promises():
    """An (ε, δ) model is audited against its δ too: the bound is the auditor's with that δ
    subtracted (the same draws without it give a larger, wrongly damning bound)."""
    from ppknn.core.dp.audit import audit
    from ppknn.simulations.leakage.audit import setups

    data = nb(delta=0.05)
    data["protocol"].update(method="smooth", noise="laplace")
    (setup,) = setups(parse_scenario(data), record=0)
    assert setup.delta == 0.05 and "δ = 0.05" in setup.bound_name
    run = _audit(data, {"party": "nb-owner", "kind": "weak-noise-nb", "params": {"scale": 0.05}})
    a, b = run.samples
    assert "δ = 0.05 subtracted" in run.row.note

    def bound(delta: float) -> float:
        return audit(lambda which, rng, count: {"a": a, "b": b}[which][:count], "a", "b",
                     n_samples=len(a), rng=np.random.default_rng(parse_scenario(data).run.seed),
                     confidence=0.95, vectorized=True, delta=delta).eps_lower

    assert run.row.value == pytest.approx(bound(0.05), abs=1e-12)
    assert 0 < run.row.value < bound(0.0)
