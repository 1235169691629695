"""The attacks of ``dp-nb`` the leakage table scores, registered on import.

Each scorer runs over views through the protocol's adversary code and is
scored against provenance or the ground truth the plugin's ``ground_truth``
hook saves (:mod:`simulations.leakage.attacks` holds the machinery).

``dp-nb`` [ε-DP per released model]
    ``model-membership-inference`` per analyst (or coalition): empirical ε lower
    bound beside the ε of the models it received (composed by summation, δ
    likewise); a non-private model (ε = 0 charged) gives no bound.
    ``owner-sees-requests``: the fraction of an analyst's requests carrying any
    query row (its private instances) in any field.
"""

from __future__ import annotations

import math

import numpy as np

from ppknn.core.transcript import View
from ppknn.protocols.dp_nb.plugin.membership import membership_rows
from ppknn.simulations.leakage.attacks import Adversary, Context, register
from ppknn.simulations.leakage.scorers import (
    analyst_groups,
    nothing_seen,
    observer_name,
    rows_carried,
)
from ppknn.simulations.leakage.table import (
    LeakageRow,
    proportion_row,
)

DP_NB = "dp-nb"


@register(DP_NB, "model-membership-inference", default=True,
          description="an analyst tests membership of candidate rows on its model(s)")
def _dp_nb_mi(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    from ppknn.protocols.dp_nb.adversary import released_models

    if "members_X" not in ctx.truth:
        return []
    groups = analyst_groups(ctx, adv)
    msgs = ctx.messages()
    rows = []
    for group in groups:
        models = released_models(View.of(msgs, group))
        eps = [float(np.asarray(m["epsilon"])) for m in models]
        deltas = [float(np.asarray(m.get("delta", 0.0))) for m in models]
        # a model charged ε = 0 is a non-private release (method "non-private"): it
        # promises nothing, so it is not "within" an ε of 0
        private = bool(models) and all(math.isfinite(e) and e > 0 for e in eps)
        claimed = float(sum(eps)) if private else None
        delta = min(1.0, float(sum(deltas))) if private else 0.0
        name = (f"ε of the {len(models)} model(s) received (summed)" if private else
                "none: a model received is non-private (ε = 0 charged)" if models else "")
        rows.append(membership_rows(ctx, adv, observers=group, models=models,
                                    claimed=claimed, bound_name=name, delta=delta))
    return rows


@register(DP_NB, "owner-sees-requests", default=True,
          description="the NB owner reads the analysts' model requests")
def _dp_nb_owner(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    owner = ctx.public["owner"]
    observers = tuple(adv.observers or (owner,))
    view = ctx.view(observers)
    private = np.asarray(ctx.truth.get("others_X", np.zeros((0, 0))), dtype=np.float64)
    rows = []
    for analyst in ctx.public["analysts"]:
        requests = [m for m in view.received if m.sender == analyst]
        if requests:
            # measured, not asserted: a request carrying any of the query rows (the
            # analysts' private instances) in any field counts
            carrying = sum(bool(rows_carried([m], private).any()) for m in requests)
            rows.append(nothing_seen(proportion_row(
                successes=carrying, trials=len(requests), protocol=ctx.protocol,
                observer=observer_name(observers), target=analyst, attack=adv.attack,
                quantity="requests carrying the analyst's private data",
                note="a request carrying a query row (any field) counts; an honest request "
                     "names public parameters only (method, ε, noise); no bound")))
    return rows
