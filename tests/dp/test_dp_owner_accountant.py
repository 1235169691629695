"""The DP owner's accountant, chosen in the scenario: more requests served under (ε, δ)."""

from __future__ import annotations

import numpy as np
import pytest

from ppknn.api import load_scenario, run
from ppknn.core.dp.pld import Composite, LaplaceLoss, RandomisedResponseLoss
from ppknn.core.errors import ConfigError
from ppknn.protocols.dp_knn.parties.dp_owner import DPOwner, request_law
from ppknn.protocols.dp_knn.protocol import Query
from ppknn.protocols.dp_nb.parties.nb_owner import NBOwner

SCENARIO = "scenarios/dp-knn.toml"
WORKLOAD = {"runtime.kind": "inprocess", "runtime.channels": False, "parties.analysts": 2,
            "protocol.batches": 100, "protocol.epsilon": 0.05, "protocol.budget": 2.0,
            "protocol.delta": 1e-6, "data.max_queries": 200}


def _answered(accountant: str) -> dict:
    r = run(SCENARIO, overrides={**WORKLOAD, "protocol.accountant": accountant})
    return r.summary["results"]["dp-knn"]


def test_pld_answers_at_least_a_quarter_more_than_basic() -> None:
    """200 r-N requests at ε = 0.05 under (2, 1e-6): basic 40 answered, pld 84."""
    basic, pld = _answered("basic"), _answered("auto")
    assert (basic["requests"], basic["answered_requests"]) == (200, 40)
    assert pld["answered_requests"] == 84
    assert pld["answered_requests"] >= 1.25 * basic["answered_requests"]
    assert pld["epsilon_spent"] <= 2.0 and pld["delta_spent"] == 1e-6
    assert "pld composition" in pld["privacy"]["guarantee"]


def test_pld_without_delta_is_refused_with_the_reason() -> None:
    with pytest.raises(ConfigError, match="accountant.*needs the owner's budget delta > 0"):
        load_scenario(SCENARIO, overrides={"protocol.accountant": "pld"})


def test_request_laws() -> None:
    rn = Query(task="rn", algorithm="proposed", x=np.zeros((1, 1)), radius=0.1, epsilon=0.25)
    assert request_law(rn) == LaplaceLoss(0.25)
    assert request_law(rn, "secure") == RandomisedResponseLoss(0.25)
    knn = Query(task="knn", algorithm="interactive", x=np.zeros((1, 1)), k=3, epsilon=0.25)
    assert request_law(knn) == RandomisedResponseLoss(0.25)
    auto = Query(task="rn", algorithm="proposed", x=np.zeros((1, 1)),
                 radius_target=5.0, radius_epsilon=0.5, epsilon=0.25)
    law = request_law(auto)
    assert isinstance(law, Composite) and law.cost.epsilon == auto.cost


def test_owners_take_the_accountant() -> None:
    X, y = np.array([[0.1], [0.9]] * 10), np.array([0, 1] * 10)
    owner = DPOwner(party_id="o", X=X, y=y, classes=[0, 1], lower=[0.0], upper=[1.0],
                    epsilon=1.0, delta=1e-6, run_id="r", accountant="advanced")
    assert owner.ledger.accountant == "advanced"
    nb = NBOwner(party_id="n", X=X, y=y, classes=[0, 1], bounds=([0.0], [1.0]), epsilon=1.0,
                 delta=1e-6, run_id="r", accountant="basic")
    assert nb.ledger.accountant == "basic"
