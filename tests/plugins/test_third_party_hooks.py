"""A third-party plugin registers its evaluation pieces through the hooks, no dict patched.

A minimal out-of-tree protocol (an owner answering Laplace counts) declares
its attack with :func:`simulations.leakage.attacks.register`, its ground
truth, worst-case audit, deviating party and comparison defaults as plugin
hooks; the generic machinery finds each of them by the protocol's name.
The registry and the attack table are restored after each test.
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest

from ppknn.parties.deviations import Kind
from ppknn.simulations import registry
from ppknn.simulations.leakage import attacks, audit, truth, worstcase
from ppknn.simulations.leakage.measure import adversaries_for, score
from ppknn.simulations.leakage.table import LeakageRow

NAME = "fake-count"


class FakeConfig(registry.ProtocolConfig):
    name: str = NAME
    epsilon: float = 1.0


class Owner:
    """The honest owner."""


class GreedyOwner(Owner):
    """An owner that answers without noise."""


@dataclass
class _Prepared:
    name: str
    plan: Any


def _scorer(ctx: attacks.Context, adv: attacks.Adversary) -> list[LeakageRow]:
    hits = float(np.mean(ctx.truth["counts"] > 0))
    return [LeakageRow(protocol=ctx.protocol, observer="analyst", target="owner",
                       attack=adv.attack, quantity="share of positive counts", value=hits,
                       ci_low=hits, ci_high=hits, trials=int(ctx.truth["counts"].size),
                       bound=ctx.public["epsilon"], bound_name="ε")]


def _make_plugin() -> type[registry.ProtocolPlugin]:
    class FakeCount(registry.ProtocolPlugin):
        name: ClassVar[str] = NAME
        title: ClassVar[str] = "an owner answering Laplace counts (test)"
        config_model: ClassVar[type[registry.ProtocolConfig]] = FakeConfig
        roles: ClassVar[tuple[registry.Role, ...]] = (registry.Role("owner", Owner, "1"),)
        adversaries: ClassVar[tuple[str, ...]] = ("count-sign",)

        @staticmethod
        def driver(runtime, parties, config, queries):  # pragma: no cover - never run here
            raise NotImplementedError

        def plan(self, config, data):  # pragma: no cover - never run here
            raise NotImplementedError

        def baseline(self, config, data):  # pragma: no cover - never run here
            raise NotImplementedError

        def ground_truth(self, outcome, data):
            return {"counts": np.asarray(outcome.plan.public["counts"], dtype=np.int64)}

        def worst_case(self, scenario, protocol, *, n_test, confidence, deviation):
            eps = float(protocol.plan.public["epsilon"])
            case = worstcase.count_case("fake count", NAME, eps, eps, "one record added",
                                        deviation)
            return case, "analyst", "one record added"

        def deviations(self):
            return {"greedy": Kind(Owner, GreedyOwner, (), "answers without noise")}

        def compare_defaults(self):
            return {"privacy_key": "epsilon", "quick_levels": [0.5, 10.0]}

    return FakeCount


@pytest.fixture
def plugin(monkeypatch):
    """The fake plugin registered (and its attack), both tables restored afterwards."""
    registry.names()  # the built-in plugins are loaded before the tables are copied
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(attacks, "_ATTACKS", dict(attacks._ATTACKS))
    registry.register(_make_plugin())
    attacks.register(NAME, "count-sign", default=True,
                     description="the sign of each count")(_scorer)
    return registry.get(NAME)


def test_its_attack_is_listed_defaulted_and_scored(plugin):
    assert attacks.allowed(NAME) == ["count-sign"]
    advs = adversaries_for([NAME], [])
    assert [(a.protocol, a.attack) for a in advs] == [(NAME, "count-sign")]
    rows = score(NAME, None, {"epsilon": 1.0}, {"counts": np.array([3, 0, 2, 5])}, advs)
    assert [(r.attack, r.value, r.trials) for r in rows] == [("count-sign", 0.75, 4)]


def test_its_ground_truth_comes_from_its_hook(plugin):
    outcome = types.SimpleNamespace(name=NAME, plan=types.SimpleNamespace(
        public={"counts": [1, 0, 4]}))
    assert truth.has_truth(NAME) and not truth.has_truth("no-such-protocol")
    got = truth.truth_of(outcome, data=None)
    assert got.keys() == {"counts"} and got["counts"].tolist() == [1, 0, 4]


def test_the_audit_covers_it_through_its_worst_case_hook(plugin):
    assert NAME in audit.audited()
    prepared = _Prepared(NAME, types.SimpleNamespace(public={"epsilon": 2.0}))
    case, observer, target = plugin.worst_case(None, prepared, n_test=100, confidence=0.95,
                                               deviation="none")
    assert (case.protocol, case.claimed, observer) == (NAME, 2.0, "analyst")
    res = worstcase.run_case(case, n_samples=2_000, seed=0)
    assert res.eps_lower <= 2.0 + 1e-9


def test_its_deviation_and_comparison_defaults_are_found(plugin):
    from ppknn.simulations.compare import quick_spec

    assert registry.deviation_kinds()["greedy"].deviant is GreedyOwner
    entry = next(e for e in quick_spec()["protocol"] if e["name"] == NAME)
    assert entry == {"name": NAME, "privacy_key": "epsilon", "levels": [0.5, 10.0]}


def test_the_tables_are_restored_after_the_fake_plugin():
    assert NAME not in registry.names() and attacks.allowed(NAME) == []
