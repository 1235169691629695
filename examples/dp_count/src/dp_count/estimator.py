# examples/dp_count/src/dp_count/estimator.py
"""A scikit-learn classifier that runs ``dp-count`` on every ``predict``.

Built on ppknn's estimator base: ``fit`` checks the parameters and keeps the
rows; each ``predict`` is one simulated run (the owner, its ledger, the
analysts, the transcript), and ``privacy_`` adds up what the calls spent.
"""

from __future__ import annotations

from typing import Any

from dp_count.protocol import GUARANTEE
from ppknn.simulations.estimators import params as P
from ppknn.simulations.estimators.base import BATCH_DEPENDENT, ProtocolClassifier


class DPCountClassifier(ProtocolClassifier):
    """Laplace class counts within ``radius``; ``epsilon`` per query row."""

    protocol_name = "dp-count"
    privacy_unit = "per query row: add/remove one training row, epsilon per row"
    expected_failed_checks = {
        **ProtocolClassifier.expected_failed_checks,
        "check_methods_subset_invariance": BATCH_DEPENDENT,
        "check_methods_sample_order_invariance": BATCH_DEPENDENT,
    }

    def __init__(self, radius: float = 0.2, *, epsilon: float = 1.0, n_analysts: int = 1,
                 budget: float | None = None, budget_delta: float | None = None,
                 bounds: Any = "data", runtime: str = "inprocess", channels: bool = False,
                 random_state: Any = None, utility_folds: int = 0) -> None:
        self.radius = radius
        self.epsilon = epsilon
        self.n_analysts = n_analysts
        self.budget = budget
        self.budget_delta = budget_delta
        self.bounds = bounds
        self.runtime = runtime
        self.channels = channels
        self.random_state = random_state
        self.utility_folds = utility_folds

    def _validated(self) -> dict[str, Any]:
        who = type(self).__name__
        return {**super()._validated(), "radius": P.real(who, "radius", self.radius),
                "epsilon": P.real(who, "epsilon", self.epsilon),
                "n_analysts": P.integer(who, "n_analysts", self.n_analysts, low=1),
                "utility_folds": P.integer(who, "utility_folds", self.utility_folds, low=0),
                **P.budgets(who, self.budget, self.budget_delta)}

    def _protocol(self, p: dict[str, Any], n_train: int) -> dict[str, Any]:
        return {"name": "dp-count", "epsilon": p["epsilon"], "radius": p["radius"]}

    def _parties(self, p: dict[str, Any]) -> tuple[int, int]:
        return 1, p["n_analysts"]

    def _guarantee(self) -> str:
        return GUARANTEE

    def _call_cost(self, planned: Any) -> tuple[float | None, float]:
        return planned.config.epsilon * len(planned.plan.queries), 0.0
