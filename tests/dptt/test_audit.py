"""The DP core's auditor on the server's view of whole traversals (neighbouring queries)."""

from __future__ import annotations

import numpy as np
import pytest

from ppknn.core.dp import ExponentialMechanism, audit
from ppknn.protocols.dptt.config import DPTTSetup
from ppknn.protocols.dptt.parties.dptt_client import DPTTClient
from ppknn.protocols.dptt.utility import Utility

from .helpers import run_recorded, server_paths

POINTS = np.arange(32.0)  # H = 5: every path has 5 decisions


class OverconfidentClient(DPTTClient):
    """A broken client: draws its bits with 4x the ε it declares (the audit must catch it)."""

    def configure(self, setup, info):
        rounds = super().configure(setup, info)
        self.mechanism = ExponentialMechanism(epsilon=4 * setup.epsilon,
                                              sensitivity=setup.utility.sensitivity)
        return rounds


def _traversals(setup, client_factory=None):
    def run(x, rng, n):
        queries = np.full((n, 1), float(x))
        seed = int(rng.integers(2**31))
        _, msgs = run_recorded(POINTS, queries, setup, seed=seed, client_factory=client_factory)
        return server_paths(msgs, n)  # the server's view of each traversal: its bits

    return run


@pytest.mark.parametrize(("utility", "pair"), [
    (Utility.cmp(), (-100.0, 100.0)),  # CMP: any two queries; these flip every decision
    (Utility.dis(4.0), (3.0, 7.0)),  # DIS: neighbours within the declared radius
])
def test_auditor_bounds_one_traversal_below_the_claimed_epsilon(utility, pair):
    setup = DPTTSetup(variant="basic", utility=utility, epsilon=0.8)
    claimed = setup.account(5)
    result = audit(_traversals(setup), *pair, n_samples=30_000,
                   rng=np.random.default_rng(11), vectorized=True, confidence=0.999)
    assert claimed.epsilon_sum == pytest.approx(4.0)
    assert result.eps_lower < claimed.epsilon_br <= claimed.epsilon_sum
    if utility.name == "cmp":  # the auditor sees the true loss H ε / 2 = 2 of this pair
        assert result.eps_lower > 1.2


def test_auditor_catches_a_client_spending_more_than_it_claims():
    setup = DPTTSetup(variant="basic", utility=Utility.cmp(), epsilon=0.8)
    result = audit(_traversals(setup, OverconfidentClient), -100.0, 100.0, n_samples=30_000,
                   rng=np.random.default_rng(12), vectorized=True, confidence=0.999)
    assert result.eps_lower > setup.account(5).epsilon_sum


def test_thesis_reading_calibration_spends_twice_the_proven_loss_on_a_cmp_traversal():
    """exp(εu/Δ) on CMP is randomised response at log-odds ε; exp(εu/2Δ) at ε/2."""
    from ppknn_reproductions.experiments.dptt_audit import audit_variant

    proven = audit_variant("basic", "cmp", epsilon=0.5, n_samples=10_000, seed=4)
    read = audit_variant("basic", "cmp", epsilon=0.5, calibration="thesis-reading",
                         n_samples=10_000, seed=4)
    assert proven.compositions == read.compositions == 8
    assert proven.promised_sum == read.promised_sum == read.spent_epsilon == 4.0
    # the proven traversal really loses H ε / 2 = 2 on this pair (what it spends: its
    # promise over-charges it 2x), the thesis reading H ε = 4
    assert proven.spent_epsilon == 2.0
    assert proven.eps_lower < proven.spent_epsilon < read.eps_lower < read.spent_epsilon
    assert read.loss_low == read.eps_lower < read.loss_high
