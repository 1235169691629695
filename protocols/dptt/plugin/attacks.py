"""The attacks of ``dptt`` the leakage table scores, registered on import.

Each scorer runs over views through the protocol's adversary code and is
scored against provenance or the ground truth the plugin's ``ground_truth``
hook saves (:mod:`simulations.leakage.attacks` holds the machinery).

``dptt`` [ε per decision, composed ε per query]
    ``server-side-inference``: the server claims the side each bit names; with CMP
    the success rate p gives the empirical per-decision ε = ln(p/(1-p)) (its
    Clopper-Pearson lower bound is compared with the per-decision ε);
    ``server-location-inference``: error distance of the server's estimate of each
    query (mean of the points released for it).
    ``geo-server-location-inference`` (with the GEO baseline): the GEO server's
    estimate of each query, the mean of the noisy copies it answered for it;
    error distance beside the expected error of one planar Laplace draw, 2r/ε*
    (GEO's view is saved with the ground truth: GEO runs outside the runtime).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ppknn.core.dp.audit import clopper_pearson
from ppknn.core.transcript import Transcript, View
from ppknn.simulations.leakage.attacks import Adversary, Context, register
from ppknn.simulations.leakage.scorers import (
    NOTHING_SEEN,
    observer_name,
)
from ppknn.simulations.leakage.stream import round_messages
from ppknn.simulations.leakage.table import (
    LeakageRow,
    bound_baseline,
    mean_row,
    paired_mean_difference,
    paired_rate_baseline,
    proportion_row,
    rate_baseline,
    with_baseline,
)

DPTT = "dptt"


@dataclass(frozen=True)
class SideTally:
    """DP-TT side inference over every decision: how many, how many right, the utility."""

    decisions: int
    correct: int
    utility: str
    right: int = 0
    """Decisions whose true side is the right one (a constant guess's baseline)."""


def dptt_side_inference(transcript: Transcript, queries: np.ndarray,
                        observer: str = "server") -> SideTally:
    """The server's side inference, streamed level by level (:mod:`protocols.dptt.adversary`)."""
    from ppknn.protocols.dptt.adversary import side_claims, true_sides
    from ppknn.protocols.dptt.config import PROTOCOL

    total = correct = right = 0
    utility = "cmp"
    for _, msgs in round_messages(transcript, PROTOCOL, kinds=("nodes", "bits"),
                                  with_provenance=False):
        claims = side_claims(View.of(msgs, observer))
        if claims.slot.size:
            utility = claims.utility
            total += int(claims.slot.size)
            sides = true_sides(claims, queries)
            correct += int(np.sum(claims.right == sides))
            right += int(np.sum(sides))
    return SideTally(total, correct, utility, right)


@register(DPTT, "server-side-inference", default=True,
          description="the server claims the side each bit names")
def _dptt_side(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    from ppknn.protocols.dptt.adversary import side_claims, true_sides

    if "queries" not in ctx.truth:
        return []
    observers = tuple(adv.observers or ("server",))
    if observers == ("server",):  # the default: streamed level by level
        tally = dptt_side_inference(ctx.transcript, np.asarray(ctx.truth["queries"]))
        n, correct, utility = tally.decisions, tally.correct, tally.utility
        right = tally.right
    else:
        claims = side_claims(ctx.view(observers))
        n, utility = int(claims.slot.size), claims.utility
        sides = true_sides(claims, ctx.truth["queries"])
        correct = int(np.sum(claims.right == sides))
        right = int(np.sum(sides))
    if n == 0:
        return []
    base = dict(protocol=ctx.protocol, observer=observer_name(observers),
                target="client (each query)", attack=adv.attack)
    eps = float(ctx.public.get("per_decision_epsilon", float("nan")))
    # without the client's bits: the side most decisions take, named for every decision
    constant = max(right, n - right)
    side_name = ("the better constant side (always right or always left, whichever more "
                 f"decisions take: {constant}/{n}; no transcript)")
    if utility != "cmp":
        return [rate_baseline(proportion_row(
            successes=correct, trials=n, quantity="decisions whose side the server infers",
            note="DIS: ε holds for queries within the privacy radius; no per-decision rate "
                 "bound", **base), successes=constant, trials=n, name=side_name)]
    p = correct / n
    lo, hi = clopper_pearson(correct, n, 0.025)

    def logit(x: float) -> float:
        if x <= 0.5:
            return 0.0
        return math.inf if x >= 1 else math.log(x / (1 - x))

    c_lo, c_hi = clopper_pearson(constant, n, 0.025)
    final = ctx.public.get("final_epsilon_br")
    return [bound_baseline(LeakageRow(
        quantity="empirical ε per decision (side inference)", value=logit(p),
        ci_low=logit(lo), ci_high=logit(hi), trials=n, bound=eps,
        bound_name="per-decision ε of the exponential mechanism",
        note=f"server right on {correct}/{n} decisions; the EM takes the correct side with "
             f"e^(ε/2)/(1+e^(ε/2)), so ε/2 is expected; composed ε per query "
             f"{final if final is None else f'{float(final):.4g}'} (bounded range)", **base),
        baseline=(logit(constant / n), logit(c_lo), logit(c_hi)),
        name=f"{side_name}, as an ε: ln(p / (1 - p))")]


@register(DPTT, "server-location-inference", default=True,
          description="the server estimates each query by the points it released for it")
def _dptt_location(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    from ppknn.protocols.dptt.adversary import location_estimates

    if "queries" not in ctx.truth:
        return []
    queries = np.asarray(ctx.truth["queries"], dtype=np.float64)
    observers = tuple(adv.observers or ("server",))
    from ppknn.simulations.leakage.stream import iter_messages

    # the estimate reads the last release the observers sent: keep that one message only
    last: Any = None
    for m in iter_messages(ctx.transcript, DPTT, kinds=("release",), with_provenance=False):
        if m.sender in observers and (last is None or (m.round, m.sender, m.receiver, m.seq)
                                      >= (last.round, last.sender, last.receiver, last.seq)):
            last = m
    est, has = location_estimates(View.of([last] if last is not None else [], observers),
                                  len(queries))
    if not has.any():
        return []
    err = np.linalg.norm(est[has] - queries[has], axis=1)
    centre = np.linalg.norm(queries - queries.mean(axis=0), axis=1).mean()
    return [_centroid_baseline(mean_row(
        values=err, protocol=ctx.protocol, observer=observer_name(observers),
        target="client (each query)", attack=adv.attack, quantity="location error distance",
        note=f"the queries' own centroid is {centre:.4g} away on average; composed ε per "
             f"query {ctx.public.get('final_epsilon_br')}; no distance bound"),
        queries=queries[has], err=err)]


def _centroid_baseline(row: LeakageRow, *, queries: np.ndarray, err: np.ndarray
                       ) -> LeakageRow:
    """A location row's baseline: every query guessed as the queries' centroid.

    The centroid of the targets themselves is an oracle constant (at least as good as
    any constant an attacker without the transcript could name); the advantage is the
    baseline's error minus the attack's, per query, with a Student-t interval.
    """
    base = np.linalg.norm(queries - queries.mean(axis=0), axis=1)
    b = mean_row(values=base, quantity="", protocol="", observer="", target="", attack="")
    return with_baseline(row, name="every query guessed as the queries' centroid (an oracle "
                                   "constant; no transcript); advantage = baseline error - "
                                   "error",
                         baseline=(b.value, b.ci_low, b.ci_high),
                         advantage=paired_mean_difference(base, err))


@register(DPTT, "geo-server-location-inference", default=True,
          description="the GEO baseline's server estimates each query by its noisy copies")
def _dptt_geo_location(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    if "geo/point" not in ctx.truth or "queries" not in ctx.truth:
        return []  # no GEO baseline in this run
    queries = np.asarray(ctx.truth["queries"], dtype=np.float64)
    slot = np.asarray(ctx.truth["geo/slot"], dtype=np.int64)
    point = np.asarray(ctx.truth["geo/point"], dtype=np.float64).reshape(len(slot), -1)
    eps, radius = float(ctx.truth["geo/epsilon"]), float(ctx.truth["geo/radius"])
    count = np.bincount(slot, minlength=len(queries)).astype(np.float64)
    sums = np.zeros((len(queries), point.shape[1]))
    np.add.at(sums, slot, point)
    has = count > 0
    est = sums[has] / count[has, None]
    err = np.linalg.norm(est - queries[has], axis=1)
    dims = point.shape[1]
    expected = (2.0 if dims == 2 else 1.0) * radius / eps  # E|noise| of one draw
    return [_centroid_baseline(mean_row(values=err, protocol=ctx.protocol,
                                        observer="GEO server",
                     target="client (each query)", attack=adv.attack,
                     quantity="location error distance (GEO baseline)",
                     note=f"GEO at ε* = {eps:.4g} within r = {radius:.4g} ({dims}-D "
                          f"{'planar ' if dims == 2 else ''}Laplace); one draw's expected "
                          f"error {expected:.4g}; {int(count.max())} noisy copies per query "
                          "at most (the thesis's fairness rule), averaged; the view is "
                          "saved with the ground truth (GEO runs outside the runtime); no "
                          "distance bound"), queries=queries[has], err=err)]


@register(DPTT, "client-sees-training-points", default=True, by_design=True,
          description="the client receives the server's released points")
def _dptt_client(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    from ppknn.simulations.leakage.stream import iter_messages

    observers = tuple(adv.observers or ("client",))
    n = int(ctx.public["training_rows"])
    seen = np.zeros(n, dtype=bool)  # one flag per training point, not a set of ids
    for m in iter_messages(ctx.transcript, DPTT, kinds=("nodes", "release"),
                           with_provenance=False):  # one message at a time, order-free
        if m.receiver not in observers:
            continue
        for key in ("ids", "parent_id", "left_id", "right_id"):
            if key in m.payload:
                seen[np.asarray(m.payload[key], dtype=np.int64)] = True
    return [paired_rate_baseline(proportion_row(
        successes=int(seen.sum()), trials=n, protocol=ctx.protocol,
        observer=observer_name(observers), target="server (training points)",
        attack=adv.attack, quantity="training points seen exactly",
        note="node values and released points are sent in the clear by design (the "
             "thesis protects the client's query, not the server's data); no bound"),
        hits=seen, base=np.zeros(n, dtype=bool), name=NOTHING_SEEN)]
