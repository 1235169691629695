"""Single-run attacks against honest and deliberately broken variants (seeded, with power).

Honest runs keep every bounded row within its bound over several seeds; a
broken variant (randomisation off, a tenth of the noise) puts the same
attack's row above the bound it was promised.
"""

from __future__ import annotations

import pytest

from ppknn.simulations.leakage.deviations import run_with_deviations
from ppknn.simulations.leakage.measure import run_table
from ppknn.simulations.leakage.table import ABOVE, WITHIN
from ppknn.simulations.runner import execute
from ppknn.simulations.scenario import parse_scenario

from .test_leakage import small


def dptt(seed: int) -> dict:
    data = small("dptt", run={"name": "cal", "seed": seed, "output": "unused"})
    data["protocol"].update(final_epsilon=4.0, client_budget=4.0)
    return data


def pca(seed: int) -> dict:
    data = small("pca-perturbation", run={"name": "cal", "seed": seed, "output": "unused"})
    data["protocol"].update(scheme="laplace", b=2.0, method="fixed-k", attacks=False)
    data["data"].pop("max_queries")
    return data


def rows_of(result, attack: str, prefix: str = ""):
    return [r for r in run_table(result, save=False)
            if r.attack == attack and r.quantity.startswith(prefix)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dptt_side_inference_stays_below_the_per_decision_epsilon(seed):
    (row,) = rows_of(execute(parse_scenario(dptt(seed))), "server-side-inference")
    assert row.verdict == WITHIN
    # the exponential mechanism takes the right side with e^(ε/2)/(1+e^(ε/2)): about ε/2
    assert row.ci_low <= row.bound / 2 <= row.ci_high


def test_dptt_side_inference_catches_a_client_that_does_not_randomise():
    data = dptt(0)
    data["deviation"] = [{"party": "client", "kind": "no-randomisation"}]
    result, report = run_with_deviations(parse_scenario(data))
    assert not report.detected  # nothing in the protocol can tell
    (row,) = rows_of(result, "server-side-inference")
    assert row.verdict == ABOVE and row.ci_low > 2 * row.bound


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_transform_attack_stays_within_the_amplification_bound(seed):
    (row,) = rows_of(execute(parse_scenario(pca(seed))), "transform-attack", "values")
    assert row.verdict == WITHIN


def test_transform_attack_is_above_the_bound_when_the_noise_is_a_tenth():
    data = pca(0)
    data["deviation"] = [{"party": "sanitizer", "kind": "weak-noise", "params": {"scale": 0.1}}]
    result, _ = run_with_deviations(parse_scenario(data))
    (row,) = rows_of(result, "transform-attack", "values")
    assert row.verdict == ABOVE  # its lower 95% end is above the promised ρ2
