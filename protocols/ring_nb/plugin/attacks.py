"""The attacks of ``ring-nb`` the leakage table scores, registered on import.

Each scorer runs over views through the protocol's adversary code and is
scored against provenance or the ground truth the plugin's ``ground_truth``
hook saves (:mod:`simulations.leakage.attacks` holds the machinery).

``ring-nb`` [ε-DP release; the start node is trusted with the exact total]
    ``secure-sum-neighbours``: as above on the statistics vectors.
    ``model-membership-inference``: each owner that received the model, against
    the union's rows (members) vs the query rows (non-members); empirical ε lower
    bound vs the release's ε.
"""

from __future__ import annotations

import numpy as np

from ppknn.core.transcript import View
from ppknn.protocols.dp_nb.plugin.membership import membership_rows
from ppknn.protocols.ppknn_ring.plugin.sums import sum_rows
from ppknn.simulations.leakage.attacks import Adversary, Context, register
from ppknn.simulations.leakage.scorers import nothing_seen
from ppknn.simulations.leakage.table import (
    LeakageRow,
    proportion_row,
)

RING_NB = "ring-nb"


@register(RING_NB, "secure-sum-neighbours", default=True,
          description="a node's two ring neighbours pool their secure-sum views")
def _ring_nb_sum(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    return sum_rows(ctx, adv, protocol=RING_NB, truth_prefix="stats/",
                    ring_protocol=RING_NB, shared_protocol=None, kind="partial-sum",
                    quantity="statistics vector recovered exactly", per_query=False)


@register(RING_NB, "start-node-aggregate", default=True, by_design=True,
          description="the start node unmasks the exact pre-noise total of the others")
def _ring_nb_start(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    from ppknn.protocols.ppknn_ring import secure_sum as ss

    ring, start = list(ctx.public["ring"]), ctx.public["start"]
    keys = [f"stats/{p}" for p in ring if p != start]
    if not all(k in ctx.truth for k in keys):
        return []
    msgs = [m for m in ctx.messages() if m.kind == "partial-sum"]
    sent = [m for m in msgs if m.sender == start]
    got = [m for m in msgs if m.receiver == start]
    truth = np.zeros_like(np.asarray(ctx.truth[keys[0]], dtype=np.uint64))
    for k in keys:
        truth = ss.add(truth, np.asarray(ctx.truth[k], dtype=np.uint64))
    shared = any(m.kind == "share" for m in ctx.messages())
    hit = bool(sent and got and not shared
               and np.array_equal(ss.sub(got[0].payload["s"], sent[0].payload["s"]), truth))
    return [nothing_seen(proportion_row(
        successes=int(hit), trials=1, protocol=ctx.protocol, observer=start,
        target="the other owners (exact statistics before noise)", attack=adv.attack,
        quantity="exact pre-noise aggregate recovered",
        note="the start node subtracts the mask it sent from the sum it received; it is "
             "trusted for the noise step by design (no bound)" if not shared else
             "secret-shared sum: no mask to subtract"))]


@register(RING_NB, "model-membership-inference", default=True,
          description="owners receiving the model test membership of candidate rows")
def _ring_nb_mi(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    if "members_X" not in ctx.truth:
        return []
    ring = list(ctx.public["ring"])
    lower = np.asarray(ctx.public["bounds"]["lower"])
    upper = np.asarray(ctx.public["bounds"]["upper"])
    groups = [tuple(adv.observers)] if adv.observers else [(p,) for p in ring]
    rows = []
    msgs = ctx.messages()
    for group in groups:
        view = View.of(msgs, group)
        models = [{"theta": m.payload["theta"], "var": m.payload["var"], "lower": lower,
                   "upper": upper} for m in view.received if m.kind == "nb-model"]
        if not models:
            continue
        rows.append(membership_rows(ctx, adv, observers=group, models=models[:1],
                                    claimed=float(ctx.public["epsilon"]),
                                    bound_name="ε of the released model"))
    return rows
