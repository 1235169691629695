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
