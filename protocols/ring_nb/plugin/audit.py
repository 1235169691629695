"""The audit of ``ring-nb``: its neighbouring inputs, replayed and worst-case.

The generic audit (:mod:`simulations.leakage.audit`) asks the plugin through
its ``audit_setup``, ``worst_case`` and ``worst_case_references`` hooks,
which call this module.

Replay audit (neighbours and feature; the promise compared with, in brackets):

``ring-nb`` [ε of the model]
    the start node's successor's rows without its row ``record``; feature:
    the noisy count of that row's class in the model a non-start owner received.

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

NAME = "ring-nb"


def ring_nb(epsilon: float, split: tuple[float, float, float] = (1.0, 1.0, 1.0), *,
            deviation: str = "none") -> Case:
    """ring-nb's class-count release at its group's ε (module docstring)."""
    eps_c = epsilon * split[0] / sum(split)
    return count_case("ring-nb class count", "ring-nb", eps_c, eps_c,
                      f"the counts' group ε_c = {eps_c:.4g} of the model's ε = {epsilon:g}",
                      deviation)


def replay_setup(common: dict[str, Any], p: Any, record: int) -> Setup:
    """The replay audit (module docstring): the start's successor without row ``record``."""
    plan, public = p.plan, p.plan.public
    specs = tuple(plan.specs)
    by_id = {s.party_id: s for s in specs}
    classes = [str(c) for c in public.get("classes", [])]
    ring, start = list(public["ring"]), public["start"]
    holder = ring[(ring.index(start) + 1) % len(ring)]
    observer = ring[(ring.index(start) + 2) % len(ring)]
    neighbour = tuple(drop_row(s, record) if s.party_id == holder else s for s in specs)
    cls = class_index(by_id[holder], record, classes)
    feature = functools.partial(count_feature, protocol=p.name, observer=observer,
                                kind="nb-model", key="counts", cls=cls)
    return Setup(**common, specs_b=neighbour, queries_b=plan.queries,
                 observer=(observer,), feature=feature,
                 target=f"{holder} row {record} (add/remove)",
                 bound=float(public["epsilon"]),
                 bound_name="ε of the released model")


def worst_case(p: Any, deviation: str) -> tuple[Case, str, str]:
    """The worst-case audit: the class-count release at its group's ε."""
    public = p.plan.public
    group = [float(g) for g in public["group_epsilons"]]
    case = ring_nb(float(public["epsilon"]), (group[0], group[1], group[2]),
                   deviation=deviation)
    return case, "every non-start owner", "one owner's record added"
