"""The audit of ``dp-nb``: its neighbouring inputs, replayed and worst-case.

The generic audit (:mod:`simulations.leakage.audit`) asks the plugin through
its ``audit_setup``, ``worst_case`` and ``worst_case_references`` hooks,
which call this module.

Replay audit (neighbours and feature; the promise compared with, in brackets):

``dp-nb`` [ε of a model]
    the owner's training rows without row ``[audit] record``; feature: the
    first analyst's released noisy count of that row's class.

Worst-case audit (:mod:`simulations.leakage.worstcase`):

``dp-nb`` / ``ring-nb``
    the class-count release (Laplace at the protocol's own budget share,
    :func:`protocols.dp_nb.training.budget_split` /
    ``RingNBConfig.group_epsilons``); output: the record's class count. The
    means and variances are other releases: the event's maximum is the
    count's share of ε, stated beside the model's ε.
"""

from __future__ import annotations

import functools
from typing import Any

from ppknn.simulations.leakage.audit import (
    Setup,
    class_index,
    count_feature,
    drop_row,
)
from ppknn.simulations.leakage.worstcase import (
    Case,
    count_case,
)

NAME = "dp-nb"


def dp_nb(epsilon: float, n_numeric: int = 2, *, budget: object = "equal",
          deviation: str = "none") -> Case:
    """dp-nb's class-count release at its own budget share (module docstring)."""
    from ppknn.protocols.dp_nb.training import NBConfig, budget_split

    split = budget_split(NBConfig(epsilon=epsilon, budget=budget), n_numeric, 0)
    return count_case("dp-nb class count", "dp-nb", split.counts, split.counts,
                      f"the counts' share ε_c = {split.counts:.4g} of the model's "
                      f"ε = {epsilon:g} ({n_numeric} numeric features)", deviation)


def replay_setup(common: dict[str, Any], p: Any, record: int) -> Setup:
    """The replay audit (module docstring): the owner without row ``record``."""
    plan, public = p.plan, p.plan.public
    specs = tuple(plan.specs)
    by_id = {s.party_id: s for s in specs}
    classes = [str(c) for c in public.get("classes", [])]
    owner = plan.roles["owner"][0]
    neighbour = tuple(drop_row(s, record) if s.party_id == owner else s for s in specs)
    analyst = plan.roles["analyst"][0]
    cls = class_index(by_id[owner], record, classes)
    feature = functools.partial(count_feature, protocol=p.name, observer=analyst,
                                kind="model", key="class_count", cls=cls)
    delta = float(public.get("delta_per_model", 0.0))
    return Setup(**common, specs_b=neighbour, queries_b=plan.queries,
                 observer=(analyst,), feature=feature,
                 target=f"{owner} row {record} (add/remove)",
                 bound=float(public["epsilon_per_model"]),
                 bound_name="ε of a model" + (f" (δ = {delta:g})" if delta else ""),
                 delta=delta)


def worst_case(p: Any, deviation: str) -> tuple[Case, str, str]:
    """The worst-case audit: the class-count release at its budget share."""
    plan, public = p.plan, p.plan.public
    owner = plan.roles["owner"][0]
    n_numeric = len(public["bounds"]["lower"]) - len(public.get("categorical", {}))
    case = dp_nb(float(public["epsilon_per_model"]), n_numeric, deviation=deviation)
    return case, plan.roles["analyst"][0], f"{owner}: one record added"
