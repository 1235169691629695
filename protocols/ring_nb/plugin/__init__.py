"""``ring-nb``: the ring data owners train one ε-DP Gaussian Naive Bayes model together.

A building block of the framework, **not a protocol of the five papers**.

Scenario table::

    [[protocol]]                 # or [protocol]
    name = "ring-nb"
    epsilon = 1.0                # ε of the released model
    split = [1.0, 1.0, 1.0]      # ε weights of class counts, sums, sums of squares
    secure_sum = "ring"          # or "shared" (collusion-resistant)
    var_floor = 0.001            # variances >= var_floor * ((U - L) / 2)**2
    var_smoothing = 1e-9         # added to every normalised variance
    # budget = 2.0               # the start node's ledger (default: epsilon)

Parties: the ``[parties].n`` ring data owners of ``ppknn-ring`` (at least 3;
built by :func:`protocols.ppknn_ring.plugin.owner_specs`, on the same
ring and start node, so a scenario holding both protocols starts them once).
Each owner computes per-class counts, sums and sums of squares of its rows
normalised by the declared public bounds; the owners add them with the ring
(or secret-shared) secure sum; the **start node sees the exact total**,
adds Laplace noise once at the global sensitivity and broadcasts the model;
every owner predicts the public query batch with it. Declared bounds
(``[data.bounds]``) are required: bounds derived from the rows would void
the guarantee. Baseline: scikit-learn's ``GaussianNB`` on the union.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field, field_validator

from ppknn.core.errors import ConfigError
from ppknn.core.transcript import Transcript
from ppknn.protocols.dp_nb.plugin.baseline import gaussian_nb
from ppknn.protocols.ppknn_ring import ring_from_start
from ppknn.protocols.ppknn_ring.parties.ring_owner import RingDataOwner
from ppknn.protocols.ppknn_ring.plugin import check_ring_size, owner_specs, ring_of
from ppknn.protocols.ring_nb import GROUPS, GUARANTEE, RingNBConfig, RingNBPlan, RingNBResult, drive
from ppknn.protocols.ring_nb.api import RingNBOwnerAPI
from ppknn.protocols.ring_nb.plugin import attacks as attacks  # registers its attacks
from ppknn.protocols.ring_nb.plugin import audit as audit_cases
from ppknn.protocols.ring_nb.steps import sensitivities
from ppknn.simulations.leakage.truth import members_truth, owners_data
from ppknn.simulations.prepare import PreparedData
from ppknn.simulations.registry import (
    Baseline,
    Measured,
    Plan,
    ProtocolConfig,
    ProtocolPlugin,
    Role,
    register,
)
from ppknn.simulations.scenario import Scenario, epsilon_floor

NAME = "ring-nb"

PositiveWeight = Annotated[float, Field(gt=0, allow_inf_nan=False, strict=True)]


class RingNBPluginConfig(ProtocolConfig):
    """``[protocol]`` of ``ring-nb`` (see :class:`protocols.ring_nb.RingNBConfig`)."""

    name: Literal["ring-nb"] = "ring-nb"
    epsilon: float = Field(1.0, gt=0, allow_inf_nan=False, strict=True)
    split: tuple[PositiveWeight, ...] = Field((1.0, 1.0, 1.0), min_length=3, max_length=3)
    secure_sum: Literal["ring", "shared"] = "ring"
    var_floor: float = Field(1e-3, ge=0, lt=1, allow_inf_nan=False, strict=True)
    var_smoothing: float = Field(1e-9, gt=0, allow_inf_nan=False, strict=True)
    budget: float | None = Field(None, gt=0, allow_inf_nan=False, strict=True)

    _epsilon_floor = field_validator("epsilon")(epsilon_floor)


def _refuse(source: str | None, key: str, value: Any, why: str) -> ConfigError:
    head = f"invalid scenario {source}:\n  " if source else ""
    return ConfigError(f"{head}{key} = {value!r}: {why}")


def check_declared_bounds(scenario: Scenario, source: str, name: str) -> None:
    """DP protocols calibrate to public bounds: they must be declared, not read off the rows."""
    if scenario.data.bounds == "data":
        raise _refuse(source, "data.bounds", "data",
                      f"{name} calibrates its noise to public bounds; declare [data.bounds] "
                      "lower/upper (bounds derived from the rows, test rows included, void "
                      "the ε-DP guarantee)")


@register
class RingNB(ProtocolPlugin):
    """Ring Naive Bayes: a secure sum of NB statistics, noised once (no paper: a building block).

    Secure sum of Naive Bayes statistics over the ring, noised once by the start node.
    """

    name = NAME
    config_model = RingNBPluginConfig
    roles = (
        Role("owner", RingDataOwner, "[parties].n (>= 3)",
             "a ring data owner (shared with ppknn-ring), in ring order from the start node",
             api=RingNBOwnerAPI),
        Role("start", RingDataOwner, "1 of the owners",
             "the random start node: sees the exact sum, adds the noise, broadcasts the model",
             api=RingNBOwnerAPI),
    )
    guarantee = GUARANTEE
    adversaries = ("model-membership-inference", "secure-sum-neighbours",
                   "start-node-aggregate")
    driver = staticmethod(drive)

    def check_scenario(self, config: ProtocolConfig, scenario: Scenario, *, source: str
                       ) -> None:
        """A ring of three or more owners, declared bounds, a budget that pays for the release."""
        assert isinstance(config, RingNBPluginConfig)
        check_ring_size(scenario, source, self.name)
        check_declared_bounds(scenario, source, self.name)
        if config.budget is not None and config.budget < config.epsilon:
            raise _refuse(source, "protocol.budget", config.budget,
                          f"the start node's budget is below the release's epsilon "
                          f"({config.epsilon!r}); allowed: budget >= epsilon")

    def plan(self, config: ProtocolConfig, data: PreparedData) -> Plan:
        """The PP-kNN ring owners on the same ring and start node; the public query batch."""
        assert isinstance(config, RingNBPluginConfig)
        s = data.scenario
        ring, start = ring_of(data)
        release = RingNBConfig(epsilon=config.epsilon, split=config.split,
                               secure_sum=config.secure_sum, var_floor=config.var_floor,
                               var_smoothing=config.var_smoothing, budget=config.budget,
                               mode=s.run.mode)
        plan = RingNBPlan(config=release, lower=data.bounds.lower.copy(),
                          upper=data.bounds.upper.copy())
        d = int(data.train_X.shape[1])
        public = {
            "run_id": data.run_id, "ring": list(ring), "start": start,
            "n_queries": int(len(data.queries)), "features": d,
            "bounds": {"lower": data.bounds.lower.tolist(),
                       "upper": data.bounds.upper.tolist()},
            "epsilon": config.epsilon, "group_epsilons": list(release.group_epsilons()),
            "sensitivities": list(sensitivities(d)),
            "classes": [str(c) for c in data.dataset.classes],
        }
        return Plan(specs=tuple(owner_specs(data, ring_from_start(ring, start))),
                    roles={"owner": tuple(ring), "start": (start,)}, config=plan,
                    queries=data.queries, query_labels=data.query_labels, public=public)

    def baseline(self, config: ProtocolConfig, data: PreparedData) -> Baseline:
        """scikit-learn's ``GaussianNB`` on the union (one BLAS thread).

        Fitted on the training rows in their split order, as ``dp-nb``'s, so the two
        Naive Bayes protocols of a scenario stand beside the very same baseline.
        """
        return Baseline("GaussianNB (union, non-private)",
                        gaussian_nb(data.train_X, data.train_y, data.queries))

    def measure(self, config: ProtocolConfig, data: PreparedData, plan: Plan,
                result: Any, baseline: Baseline, transcript: Transcript | None) -> Measured:
        """The release's figures and how far the released counts are from the true ones."""
        assert isinstance(config, RingNBPluginConfig)
        detail: RingNBResult = result.detail
        true_counts = np.bincount(data.union_y, minlength=data.n_classes)
        eps_c, eps_s, eps_q = detail.group_epsilons
        sens = sensitivities(int(data.train_X.shape[1]))
        metrics: dict[str, Any] = {
            "epsilon": config.epsilon, "split": list(config.split),
            "secure_sum": config.secure_sum, "var_floor": config.var_floor,
            "budget": plan.config.config.ledger_budget,
            "laplace_scales": [sens[0] / eps_c, sens[1] / eps_s, sens[2] / eps_q],
            "laplace_scales_note": "on the normalised domain [-1, 1] per feature; "
                                   "class counts, sums, sums of squares",
            "count_abs_error_mean": float(np.mean(np.abs(detail.model.counts - true_counts))),
            "trust": "the start node sees the exact summed statistics before noising",
        }
        return Measured(metrics=metrics)

    def ground_truth(self, outcome: Any, data: PreparedData) -> dict[str, np.ndarray]:
        """Membership truth (:func:`~simulations.leakage.truth.members_truth`) and statistics.

        ``stats/<owner>``: each owner's encoded Naive Bayes statistics vector;
        ``members_X``/``members_y`` (the union of the owners' rows) and
        ``others_X``/``others_y`` (the held-out query rows); ``members_pick``
        and ``others_pick``, the membership test's class-matched random
        samples of them (positions, drawn from the run's seed:
        :func:`~simulations.sampling.matched_sample`).
        """
        from ppknn.protocols.ring_nb import steps as nb

        lower = np.asarray(outcome.plan.public["bounds"]["lower"], dtype=np.float64)
        upper = np.asarray(outcome.plan.public["bounds"]["upper"], dtype=np.float64)
        truth = members_truth(data, outcome.plan, outcome.name)
        for party, (X, y) in owners_data(outcome).items():
            stats = nb.local_statistics(X, y, data.n_classes, lower, upper)
            truth[f"stats/{party}"] = nb.encode_signed(stats)
        return truth

    def audit_setup(self, prepared: Any, protocol: Any, common: Mapping[str, Any], *,
                    record: int, repeats: int) -> Any:
        """The start's successor without row ``record`` (its audit module)."""
        return audit_cases.replay_setup(dict(common), protocol, record)

    def worst_case(self, scenario: Scenario, protocol: Any, *, n_test: int,
                   confidence: float, deviation: str) -> Any:
        """The class-count release at its group's ε."""
        return audit_cases.worst_case(protocol, deviation)

    def worst_case_references(self, epsilon: float, deviation: str) -> list[Any]:
        """The class-count case at ``epsilon``."""
        return [audit_cases.ring_nb(epsilon, deviation=deviation)]

    def headline(self, summary: Mapping[str, Any]) -> list[tuple[str, str]]:
        """ε spent and its split; the released counts' error."""
        keys = ["epsilon_" + g.replace(" ", "_") for g in GROUPS]
        groups = " / ".join(f"{summary[k]:.4g}" for k in keys)
        return [("ε spent (start node's ledger): counts / sums / squares",
                 f"{summary['epsilon_spent']:.4g}: {groups}"),
                ("mean |noisy - true| class count", f"{summary['count_abs_error_mean']:.3g}")]


__all__ = ["NAME", "RingNB", "RingNBPluginConfig", "check_declared_bounds", "gaussian_nb"]
