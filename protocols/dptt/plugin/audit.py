"""The audit of ``dptt``: its neighbouring inputs, replayed and worst-case.

The generic audit (:mod:`simulations.leakage.audit`) asks the plugin through
its ``audit_setup``, ``worst_case`` and ``worst_case_references`` hooks,
which call this module.

Replay audit (neighbours and feature; the promise compared with, in brackets):

``dptt`` [ε of one decision; the query's composed ε in the note]
    query 0 reflected through the centre of the declared domain; feature: the
    server's view of the first bit answered for it.

Worst-case audit (:mod:`simulations.leakage.worstcase`):

``dptt``
    one decision of the client's :class:`core.dp.ExponentialMechanism` at
    its set-up's ε, the query on either side of the split (CMP utilities
    ``(1, 0)`` vs ``(0, 1)``); output: the bit.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ppknn.core.dp import ExponentialMechanism
from ppknn.core.errors import ConfigError
from ppknn.core.transcript import Transcript
from ppknn.simulations.leakage.audit import (
    Setup,
)
from ppknn.simulations.leakage.worstcase import (
    Case,
    discrete_max,
    noise_factor,
)

NAME = "dptt"


def dptt(epsilon: float, *, calibration: str = "thesis-reading", variant: str = "basic",
         deviation: str = "none", setup: object = None) -> Case:
    """One DP-TT decision (CMP) at the client's mechanism ε, the query on either side.

    ``setup``: a scenario's :class:`protocols.dptt.config.DPTTSetup` (then
    ``epsilon``, ``calibration`` and ``variant`` are taken from it).
    """
    from ppknn.protocols.dptt.config import DPTTSetup
    from ppknn.protocols.dptt.utility import Utility

    if setup is None:
        setup = DPTTSetup(variant=variant, utility=Utility.cmp(), epsilon=epsilon,
                          calibration=calibration)
    elif setup.utility.name != "cmp":
        raise ConfigError(f"the DP-TT worst case is built for the CMP utility, got "
                          f"{setup.utility.name!r}")
    epsilon, calibration, variant = setup.epsilon, setup.calibration, setup.variant.label
    claimed = setup.decision_epsilons[0]
    factor = noise_factor(deviation)
    mech_eps = setup.mechanism_epsilon * factor
    ua, ub = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    if mech_eps == math.inf:
        pa, pb = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    else:
        mech = ExponentialMechanism(epsilon=mech_eps, sensitivity=1.0)
        pa, pb = mech.probabilities(ua), mech.probabilities(ub)

    def draw(which: str, rng: np.random.Generator, n: int) -> np.ndarray:
        u = np.broadcast_to(ua if which == "a" else ub, (n, 2))
        if mech_eps == math.inf:
            return np.argmax(u, axis=1).astype(np.float64)
        mech = ExponentialMechanism(epsilon=mech_eps, sensitivity=1.0)
        return np.asarray(mech.randomise(np.ascontiguousarray(u), rng).value, np.float64)

    return Case("dptt decision", "dptt", f"CMP decision, query left vs right of the split "
                f"({variant}, {calibration}, ε = {epsilon:g})", claimed,
                discrete_max(pa, pb), draw, one_run_ok=True, deviation=deviation)


def bit_feature(transcript: Transcript) -> float:
    """The server's view of the first bit answered for query 0 (-1: none)."""
    from ppknn.protocols.dptt.adversary import side_claims

    claims = side_claims(transcript.view("server", protocol=NAME))
    first = np.flatnonzero(claims.slot == 0)
    return float(claims.right[first[0]]) if first.size else -1.0


def replay_setup(common: dict[str, Any], p: Any, prepared: Any) -> Setup:
    """The replay audit (module docstring): query 0 reflected through the domain's centre."""
    plan, public = p.plan, p.plan.public
    lo, hi = prepared.data.bounds.lower, prepared.data.bounds.upper
    moved = np.array(plan.queries, dtype=np.float64, copy=True)
    moved[0] = lo + hi - moved[0]
    return Setup(**common, specs_b=tuple(plan.specs), queries_b=moved, observer=("server",),
                 feature=bit_feature, target="client query 0 (moved)",
                 bound=float(public["per_decision_epsilon"]),
                 bound_name=f"ε of one decision (a query: "
                            f"{float(public['final_epsilon_br']):.4g})")


def worst_case(p: Any, deviation: str) -> tuple[Case, str, str]:
    """The worst-case audit: one decision with the query on either side of the split."""
    case = dptt(0.0, setup=p.plan.config.setup, deviation=deviation)
    return case, "server", "a client query moved across a split"
