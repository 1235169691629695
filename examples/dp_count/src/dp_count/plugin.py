# examples/dp_count/src/dp_count/plugin.py
"""``dp-count``: the registry entry and its evaluation hooks (no ppknn module is edited)."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import Any, Literal

import numpy as np
from pydantic import Field

from dp_count import attacks as attacks  # registers the attack on import
from dp_count.protocol import (
    GUARANTEE,
    CountAnalyst,
    CountOwner,
    CountSetup,
    class_counts,
    drive,
)
from ppknn.core.runtime import PartySpec
from ppknn.parties.deviations import Kind, number
from ppknn.simulations.leakage import worstcase
from ppknn.simulations.registry import (
    Baseline,
    Measured,
    Plan,
    ProtocolConfig,
    ProtocolPlugin,
    Role,
)

NAME = "dp-count"


class DPCountConfig(ProtocolConfig):
    """``[protocol]`` of ``dp-count``: strict, every key typed."""

    name: Literal["dp-count"] = "dp-count"
    epsilon: float = Field(1.0, gt=0, allow_inf_nan=False, strict=True)
    radius: float = Field(0.2, gt=0, allow_inf_nan=False, strict=True)


class WeakNoiseOwner(CountOwner):
    """``weak-noise-count``: answers at ε / ``scale`` while its ledger charges ε."""

    def __init__(self, *, deviation: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scale = number(dict(deviation or {}), "scale", 0.5, low=1e-9, high=1.0)

    def answer(self, request: Any) -> Any:
        """The honest reply with its noise scaled by ``scale`` (the ledger charged ε)."""
        reply = super().answer(request)
        x = np.asarray(request.payload["x"], dtype=np.float64)
        exact = class_counts(self.X, self.y, x, self.radius, self.n_classes)
        noise = reply.payload["counts"] - exact
        return dataclasses.replace(reply, payload={"counts": exact + self.scale * noise})


def owner_budget(epsilon: float, queries: int) -> float:
    """The smallest float budget that pays for ``queries`` answers at ``epsilon``."""
    need = Fraction(epsilon) * queries
    b = float(need)
    return b if Fraction(b) >= need else math.nextafter(b, math.inf)


class DPCount(ProtocolPlugin):
    """An owner answering Laplace class counts within a public radius to analysts."""

    name = NAME
    config_model = DPCountConfig
    roles = (Role("owner", CountOwner, "1", "holds the training rows and the ledger"),
             Role("analyst", CountAnalyst, "[parties].analysts", "asks for its query block"))
    guarantee = GUARANTEE
    adversaries = ("count-rounding",)
    driver = staticmethod(drive)

    def plan(self, config: Any, data: Any) -> Plan:
        """One owner with the union of the training rows, the analysts, the query batch."""
        s = data.scenario
        analysts = tuple(f"analyst-{i}" for i in range(s.parties.analysts))
        owner = PartySpec("owner", CountOwner, {
            "party_id": "owner", "X": data.union_X, "y": data.union_y,
            "n_classes": data.n_classes, "radius": config.radius,
            "budget": owner_budget(config.epsilon, len(data.queries)),
            "run_id": data.run_id, "seed": s.run.seed, "mode": s.run.mode})
        specs = [owner] + [PartySpec(a, CountAnalyst, {"party_id": a, "owner": "owner",
                                                       "run_id": data.run_id})
                           for a in analysts]
        public = {"epsilon": config.epsilon, "radius": config.radius,
                  "analysts": list(analysts), "n_queries": int(len(data.queries))}
        return Plan(specs=tuple(specs), roles={"owner": ("owner",), "analyst": analysts},
                    config=CountSetup(epsilon=config.epsilon), queries=data.queries,
                    query_labels=data.query_labels, public=public)

    def baseline(self, config: Any, data: Any) -> Baseline:
        """The same rule on the exact counts (no noise)."""
        counts = class_counts(data.union_X, data.union_y, data.queries, config.radius,
                              data.n_classes)
        return Baseline("exact class counts within the radius", np.argmax(counts, axis=1))

    def measure(self, config: Any, data: Any, plan: Plan, result: Any, baseline: Baseline,
                transcript: Any) -> Measured:
        """The configuration and the ε the owner's ledger spent."""
        return Measured(metrics={"epsilon": config.epsilon, "radius": config.radius,
                                 "epsilon_spent": result.privacy.epsilon})

    # -- the evaluation hooks --------------------------------------------------------------
    def ground_truth(self, outcome: Any, data: Any) -> dict[str, np.ndarray]:
        """The true ``(Q, C)`` counts the analysts' noisy ones stand for."""
        config = outcome.config
        return {"counts": class_counts(data.union_X, data.union_y, outcome.plan.queries,
                                       config.radius, data.n_classes)}

    def worst_case(self, scenario: Any, protocol: Any, *, n_test: int, confidence: float,
                   deviation: str) -> Any:
        """One query's class count, 10 vs 11 (one record added), at ε per query."""
        eps = float(protocol.plan.public["epsilon"])
        case = worstcase.count_case("one noisy class count", NAME, eps, eps,
                                    "ε per query", deviation)
        return case, "analyst", "one training record (added or removed)"

    def worst_case_references(self, epsilon: float, deviation: str) -> list[Any]:
        """The count case at ``epsilon`` (for the audit's calibration)."""
        return [worstcase.count_case("one noisy class count", NAME, epsilon, epsilon,
                                     "ε per query", deviation)]

    def deviations(self) -> dict[str, Kind]:
        """``weak-noise-count``: the owner adds ``scale`` times the noise it charges for."""
        return {"weak-noise-count": Kind(CountOwner, WeakNoiseOwner, ("scale",),
                                         "the owner answers at ε / scale, charging ε")}

    def compare_defaults(self) -> dict[str, Any]:
        """In ``ppknn compare --quick`` at two levels of ε per query."""
        return {"privacy_key": "epsilon", "quick_levels": [0.5, 4.0]}
