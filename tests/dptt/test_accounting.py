"""Composition counts (§5.4) and final ε (Theorem 2.13 and summation), exact values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ppknn.core.errors import ConfigError
from ppknn.protocols.dptt.config import DPTTSetup
from ppknn.protocols.dptt.tree import ModifiedKDTree
from ppknn.protocols.dptt.utility import Utility
from ppknn.protocols.dptt.variants import PrivacyAccount, Variant, printed_section_5_2_epsilon

# H = ceil(log2 N): 17 for the thesis's 100,000 points, 20 for 1,000,000
COUNTS = [
    ("basic", 17, 17), ("N20", 17, 17), ("E8", 17, 9), ("E2", 17, 15), ("P4", 17, 208),
    ("P8", 17, 2304), ("P0", 17, 17), ("GS", 17, 153), ("GS-N20", 17, 153),
    ("basic", 20, 20), ("E8", 20, 12), ("P8", 20, 3072), ("GS", 20, 210), ("E20", 20, 0),
]


@pytest.mark.parametrize(("label", "height", "expected"), COUNTS)
def test_composition_counts(label, height, expected):
    assert Variant.parse(label).compositions(height) == expected


def test_counts_follow_the_thesis_formulas_for_every_height():
    for h in range(0, 25):
        for s in range(0, h + 1):
            assert Variant(kind="P", s=s).compositions(h) == (h - s) * 2**s
            assert Variant(kind="E", s=s).compositions(h) == h - s
        assert Variant(kind="GS").compositions(h) == sum(range(1, h + 1))


def test_thesis_height_for_100k_and_1m_points():
    assert ModifiedKDTree.build(np.arange(100_000.0)).height == 17
    assert math.ceil(math.log2(1_000_000)) == 20


def ddr_epsilon(c: int, eps: float, delta: float) -> float:
    """Theorem 2.13 written out for c equal ε_i (independent of core.dp)."""
    y = eps / (1 - math.exp(-eps))
    bound = c * (y - 1 - math.log(y)) + math.sqrt(0.5 * c * eps**2 * math.log(1 / delta))
    return min(c * eps, bound)


FINAL = [  # (variant, ε per decision, ε_BR at δ = 1e-7, ε_sum); pinned values
    ("basic", 1.0, 13.800989339487792, 17.0),
    ("P4", 0.1, 4.354206131684361, 20.8),
    ("GS", 0.1, 3.702682281688247, 15.3),
    ("GS-N20", 0.05, 1.803540259079421, 7.65),
    ("P8", 0.01, 1.391446142613314, 23.04),
    ("E8", 0.5, 4.5, 4.5),  # summation wins
    ("E8", 10.0, 90.0, 90.0),
]


@pytest.mark.parametrize(("label", "eps", "br", "total"), FINAL)
def test_final_epsilon_exact(label, eps, br, total):
    acct = Variant.parse(label).account(17, epsilon=eps, delta=1e-7)
    assert acct.epsilon_br == pytest.approx(br, rel=1e-12)
    assert acct.epsilon_br == pytest.approx(ddr_epsilon(acct.compositions, eps, 1e-7), rel=1e-12)
    assert acct.epsilon_sum == pytest.approx(total, rel=1e-15)
    assert acct.epsilon_br <= acct.epsilon_sum


def test_cost_carries_delta_only_when_the_bound_beats_summation():
    tight = PrivacyAccount.of(17, 1.0, 1e-7).cost
    plain = PrivacyAccount.of(9, 10.0, 1e-7).cost
    assert (tight.epsilon, tight.delta) == (pytest.approx(13.800989339487792), 1e-7)
    assert (plain.epsilon, plain.delta) == (90.0, 0.0)


def test_neighbourhoods_do_not_change_the_final_epsilon():
    a = Variant.parse("N20").account(17, epsilon=2.0, delta=1e-7)
    b = Variant.parse("basic").account(17, epsilon=2.0, delta=1e-7)
    assert a == b


def test_printed_section_5_2_formula_differs_from_theorem_2_13():
    # the printed form puts c inside the KL term; it is never below the theorem
    for c, eps in [(17, 0.1), (17, 1.0), (153, 0.1), (9, 5.0)]:
        printed = printed_section_5_2_epsilon(c, eps, 1e-7)
        assert printed >= ddr_epsilon(c, eps, 1e-7) - 1e-12
    assert printed_section_5_2_epsilon(17, 1.0, 1e-7) == 17.0
    assert ddr_epsilon(17, 1.0, 1e-7) < 14.0


def test_setup_rounds_and_account_use_the_tree_height():
    setup = DPTTSetup(variant="P4", utility=Utility.dis(1e5), epsilon=1.0)
    assert setup.rounds(17) == 13
    assert setup.account(17).compositions == 208


def test_split_count_beyond_the_height_is_refused():
    with pytest.raises(ConfigError, match="beyond the tree height 17"):
        Variant.parse("E18").compositions(17)


# (utility, calibration) -> (pure ε-DP, bounded-range ε) of one decision at ε = 1
DECISIONS = [
    (Utility.cmp(), "proven", (0.5, 1.0)),  # randomised response, log-odds ε/2
    (Utility.cmp(), "thesis-reading", (1.0, 2.0)),  # log-odds ε
    (Utility.dis(3.0), "proven", (1.0, 1.0)),  # within the radius
    (Utility.dis(3.0), "thesis-reading", (2.0, 2.0)),
]


@pytest.mark.parametrize(("utility", "calibration", "expected"), DECISIONS)
def test_one_decision_spends_what_its_randomised_response_allows(utility, calibration,
                                                                 expected):
    setup = DPTTSetup(variant="basic", utility=utility, epsilon=1.0, calibration=calibration)
    assert setup.decision_epsilons == expected


SPENT = [  # (variant, utility, calibration, ε, charged ε_BR, spent ε_BR) at H = 17, δ = 1e-7
    ("E8", "cmp", "proven", 5.0, 45.0, 22.5),  # summation: the charge is twice the loss
    ("basic", "cmp", "proven", 1.0, 13.800989339487792, 8.5),
    ("GS", "cmp", "proven", 1.0, 53.97972728965232, 53.97972728965232),  # the bound wins
    ("E8", "dis", "proven", 5.0, 45.0, 45.0),
    ("E8", "cmp", "thesis-reading", 5.0, 45.0, 45.0),
    ("E8", "dis", "thesis-reading", 5.0, 90.0, 90.0),
]


@pytest.mark.parametrize(("label", "utility", "calibration", "eps", "charged", "spent"), SPENT)
def test_spent_account_is_exact_and_never_above_the_charge(label, utility, calibration, eps,
                                                           charged, spent):
    u = Utility.cmp() if utility == "cmp" else Utility.dis(2.0)
    setup = DPTTSetup(variant=label, utility=u, epsilon=eps, calibration=calibration)
    assert setup.account(17).epsilon_br == pytest.approx(charged, rel=1e-12)
    assert setup.spent_account(17).epsilon_br == pytest.approx(spent, rel=1e-12)
    assert setup.spent_account(17).epsilon_br <= setup.account(17).epsilon_br


def test_proven_at_epsilon_is_the_thesis_reading_at_half_epsilon():
    proven = DPTTSetup(variant="E8", utility=Utility.cmp(), epsilon=10.0)
    read = DPTTSetup(variant="E8", utility=Utility.cmp(), epsilon=5.0,
                     calibration="thesis-reading")
    assert proven.mechanism_epsilon == read.mechanism_epsilon == 10.0
    assert proven.decision_epsilons == read.decision_epsilons
    assert proven.spent_account(17).epsilon_br == read.spent_account(17).epsilon_br == 45.0
    # charged 90 and 45 for one mechanism: the proven calibration over-charges CMP 2x
    assert (proven.account(17).epsilon_br, read.account(17).epsilon_br) == (90.0, 45.0)


def test_calibration_reading_computes_the_spent_epsilon_at_the_stated_one():
    from ppknn_reproductions.lepert_claims import cmp_setup_at

    # E8 at stated 50 (c = 9, summation): 50/9 per decision, spent 25 (proven) and 50 (reading)
    proven, read = (cmp_setup_at("E8", 17, 50.0, delta=1e-7, calibration=c)
                    for c in ("proven", "thesis-reading"))
    assert proven.epsilon == read.epsilon == pytest.approx(50 / 9, rel=1e-12)
    assert proven.spent_account(17).epsilon_br == pytest.approx(25.0, rel=1e-12)
    assert read.spent_account(17).epsilon_br == pytest.approx(50.0, rel=1e-12)


def test_guarantee_limits_dis_to_the_radius_and_names_delta():
    from ppknn.protocols.dptt.driver import GUARANTEE
    from ppknn.simulations import registry

    assert registry.get("dptt").guarantee == GUARANTEE
    assert "(ε, δ)-DP" in GUARANTEE and "DIS: only within radius" in GUARANTEE


@pytest.mark.parametrize(("utility", "ratio"), [("cmp", 0.5), ("dis", 1.0)])
def test_a_run_reports_the_spent_epsilon_beside_the_charge(utility, ratio):
    from pathlib import Path

    from ppknn.simulations.runner import execute
    from ppknn.simulations.scenario import parse_scenario, tomllib

    data = tomllib.loads((Path(__file__).resolve().parents[2] / "scenarios" / "dptt.toml"
                          ).read_text())
    data["data"].update(dataset="synthetic:classification?rows=3000&features=2&classes=2",
                        max_queries=20)
    data["protocol"].update(utility=utility, radius=0.1)
    data["runtime"] = {"kind": "inprocess"}
    s = execute(parse_scenario(data)).outcome.summary()
    # E8 sums (c = 3 on 2,000 rows): charged 10 = the budget, a CMP decision spends ε/2
    assert s["privacy"]["epsilon"] == s["final_epsilon_br"] == pytest.approx(10.0)
    assert s["spent_final_epsilon"] == pytest.approx(ratio * 10.0)
