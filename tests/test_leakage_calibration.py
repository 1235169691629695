"""Single-run attacks against honest and deliberately broken variants (seeded, with power).

Honest runs keep every bounded row within its bound over several seeds; a
broken variant (randomisation off, a tenth of the noise) puts the same
attack's row above the bound it was promised. The attack calibration
(:mod:`simulations.leakage.calibrate_attacks`) covers every default attack
with a control and a planted leak, and its control catches a broken attack
(one that reads the true secret, or one whose baseline is 0).
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


# -- the attack calibration (simulations/leakage/calibrate_attacks.py) ----------------------

def test_every_default_attack_has_a_control_and_a_planted_leak():
    from ppknn.simulations import registry
    from ppknn.simulations.leakage import attacks
    from ppknn.simulations.leakage import calibrate_attacks as ca

    for protocol in registry.names():
        module = ca.calibration_module(protocol)
        assert module is not None, protocol
        kinds = {(c.attack, c.kind) for c in module.CHECKS}
        for adv in attacks.defaults(protocol):
            assert {(adv.attack, ca.CONTROL), (adv.attack, ca.PLANTED)} <= kinds, \
                (protocol, adv.attack)


def _label_rows(broken: str):
    """``analyst-label-inference`` with a planted fault: it reads the true labels
    (``"reads-truth"``) or reports a baseline of 0 (``"zero-baseline"``)."""
    import numpy as np

    from ppknn.protocols.dp_knn.plugin import attacks as dp_attacks
    from ppknn.simulations.leakage.table import paired_rate_baseline, proportion_row

    real = dp_attacks._dp_knn_labels

    def scorer(ctx, adv):
        rows = real(ctx, adv)
        if broken == "zero-baseline":
            out = []
            for r in rows:
                n = r.trials
                hits = np.arange(n) < round(r.value * n)
                out.append(paired_rate_baseline(r, hits=hits, base=np.zeros(n, bool),
                                                name="broken: 0"))
            return out
        out = []
        for r in rows:  # every claim right: the attack copies the true labels
            out.append(paired_rate_baseline(
                proportion_row(successes=r.trials, trials=r.trials, protocol=r.protocol,
                               observer=r.observer, target=r.target, attack=r.attack,
                               quantity=r.quantity),
                hits=np.ones(r.trials, bool),
                base=np.arange(r.trials) < round(r.baseline * r.trials), name="broken"))
        return out
    return scorer


@pytest.mark.parametrize("broken", ["reads-truth", "zero-baseline"])
def test_the_control_catches_a_broken_attack(monkeypatch, broken):
    """The honest attack is flagged on 0 of 6 control seeds; a broken one on all 6."""
    from ppknn.simulations.leakage import attacks
    from ppknn.simulations.leakage import calibrate_attacks as ca

    def control_rate() -> ca.Rate:
        (rate,) = [r for r in ca.calibrate_protocol("dp-knn", seeds=6)
                   if r.attack == "analyst-label-inference" and r.kind == ca.CONTROL]
        return rate

    module = ca.calibration_module("dp-knn")
    monkeypatch.setattr(module, "CHECKS", tuple(c for c in module.CHECKS
                                                if c.attack == "analyst-label-inference"
                                                and c.kind == ca.CONTROL))
    honest = control_rate()
    assert (honest.flagged, honest.seeds, honest.passed) == (0, 6, True)
    key = ("dp-knn", "analyst-label-inference")
    monkeypatch.setitem(attacks._ATTACKS, key, attacks._ATTACKS[key].__class__(
        **{**attacks._ATTACKS[key].__dict__, "scorer": _label_rows(broken)}))
    bad = control_rate()
    assert (bad.flagged, bad.seeds, bad.passed) == (6, 6, False)


def test_pooled_rows_are_paired_trials_and_refuse_wider_rows():
    import numpy as np

    from ppknn.simulations.leakage import calibrate_attacks as ca
    from ppknn.simulations.leakage.table import LeakageRow, newcombe_paired

    def row(value, baseline, trials=1):
        return LeakageRow(protocol="p", observer="o", target="t", attack="a", quantity="q",
                          value=value, ci_low=0.0, ci_high=1.0, trials=trials,
                          baseline=baseline)

    out = ca.pooled([row(1.0, 0.0)] * 4 + [row(0.0, 0.0)])
    d, lo, hi = newcombe_paired(np.array([1, 1, 1, 1, 0], bool), np.zeros(5, bool))
    assert (out.value, out.trials, out.advantage, out.advantage_low) == (0.8, 5, d, lo)
    assert lo > 0 and ca.flagged(out)
    with pytest.raises(ValueError, match="one trial each"):
        ca.pooled([row(1.0, 0.0, trials=3)])


def test_held_out_as_members_names_two_disjoint_class_matched_halves():
    import numpy as np

    from ppknn.simulations.leakage import calibrate_attacks as ca

    x = np.arange(40, dtype=float).reshape(20, 2)
    y = np.repeat([0, 1], 10)
    s = ca.Scoring(None, {}, {"others_X": x, "others_y": y, "members_X": x[:0]})
    t = ca.held_out_as_members(s, np.random.default_rng(0)).truth
    a, b = t["members_X"][t["members_pick"]], t["others_X"][t["others_pick"]]
    assert not {r.tobytes() for r in a} & {r.tobytes() for r in b}
    assert np.array_equal(t["members_y"][t["members_pick"]], t["others_y"][t["others_pick"]])



def test_a_protocol_without_checks_is_listed_as_not_calibrated(monkeypatch):
    from ppknn.simulations.leakage import calibrate_attacks as ca

    monkeypatch.setattr(ca, "calibration_module", lambda protocol: None)
    rates = ca.calibrate_protocol("dp-knn", seeds=3)
    assert {(r.attack, r.kind) for r in rates} == {
        (a, k) for a in ("analyst-label-inference", "owner-sees-queries")
        for k in (ca.CONTROL, ca.PLANTED)}
    assert all(r.seeds == 0 and not r.passed and "not calibrated" in r.what for r in rates)
    lines = ca.markdown_lines(rates, seconds=0.0)
    assert sum("not calibrated" in line for line in lines) == 4
    assert sum("declares no such check" in line for line in lines) == 4
