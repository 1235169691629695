"""Worst-case audits and their calibration: power, controls, planted leaks, references.

Each check is seeded; rates use 20 seeds in the quick version (the committed
report in docs/calibration uses 100). A planted leak (half the noise scale,
no noise) must be flagged above its claim; identical inputs must not.
"""

from __future__ import annotations

import math

import pytest

from ppknn.core.dp.audit import certifiable_epsilon, one_run_epsilon, trials_to_certify
from ppknn.protocols.dp_knn.plugin import audit as dp_knn_audit
from ppknn.simulations.leakage import worstcase as wc
from ppknn.simulations.leakage.calibrate import TARGET_RATIO, calibrate


def test_trials_to_certify_gives_a_ceiling_above_the_target():
    for eps in (1.0, 3.0, 5.0):
        n = trials_to_certify(eps)
        assert certifiable_epsilon(n - n // 2) > eps
    assert certifiable_epsilon(100) < 3.5  # the old 200 trials could not certify 5


def test_one_run_bound_is_zero_at_chance_and_grows_with_right_guesses():
    assert one_run_epsilon(50, 100) == 0.0
    assert 0 < one_run_epsilon(80, 100) < one_run_epsilon(95, 100) < one_run_epsilon(100, 100)


@pytest.mark.parametrize("eps", [1.0, 4.0])
def test_references_reach_most_of_the_event_maximum_and_never_exceed_the_claim(eps):
    for case in wc.reference_cases(eps):
        res = wc.run_case(case, seed=3)
        assert res.eps_lower <= case.claimed + 1e-9, case.name
        assert res.ratio >= 0.75, (case.name, res.eps_lower, case.analytic)


def test_dp_knn_rn_pair_is_the_tied_region_at_eps_4_with_the_known_maximum():
    case = dp_knn_audit.dp_knn_rn(4.0)
    assert case.analytic == pytest.approx(4.0 - math.log(3.0), abs=1e-9)  # ε - ln(1 + ε/2)


@pytest.mark.parametrize("deviation", ["half-noise", "no-noise"])
def test_planted_leaks_are_flagged_above_the_claim(deviation):
    for case in wc.reference_cases(1.0, deviation):
        n = wc.planned_trials(case.__class__(**{**case.__dict__, "analytic": case.claimed}))
        res = wc.run_case(case, n_samples=n, seed=1)
        assert res.eps_lower > case.claimed, (case.name, res.eps_lower)


def test_quick_calibration_meets_every_check():
    rows = calibrate(seeds=20, epsilons=(1.0,), one_run_canaries=5_000)
    failed = [(r.check, r.case, r.value) for r in rows if not r.passed
              and not (r.check == "reference" and r.value / r.analytic >= TARGET_RATIO - 0.1)]
    assert not failed
    controls = [r for r in rows if r.check.startswith("control")]
    assert controls and all(r.value <= 0.05 for r in controls)
