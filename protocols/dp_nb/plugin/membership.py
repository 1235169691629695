"""Membership inference against a released Naive Bayes model: rows and empirical ε.

An observer scores the training rows (members) and held-out rows (non-members) with
the pooled log-likelihood of the model it saw; the rows state the attack's advantage,
its baseline (a coin) and the empirical ε of the best threshold with its interval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ppknn.simulations.leakage.attacks import Adversary, Context
from ppknn.simulations.leakage.scorers import observer_name
from ppknn.simulations.leakage.table import (
    LeakageRow,
    bound_baseline,
    epsilon_row,
)


def membership_rows(ctx: Context, adv: Adversary, *, observers: Sequence[str],
                    models: Sequence[Mapping[str, Any]], claimed: float | None,
                    bound_name: str, delta: float = 0.0) -> LeakageRow:
    """Membership inference with a test chosen on one half, evaluated on the other.

    The threshold, its direction and the event whose likelihood ratio is bounded
    (``TPR <= e^ε FPR + δ`` for "claim member", ``TNR <= e^ε FNR + δ`` for "claim
    held out") are all fixed on the selection half; the test half then gives one
    Clopper-Pearson bound. Taking the better of the two events on the test half
    would be two tests reported as one (a 90% bound called 95%).

    The members and held-out rows compared are the ground truth's class-matched
    random samples (``members_pick``, ``others_pick``, drawn from the run's seed:
    :func:`~simulations.sampling.matched_sample`), never the first rows of a sorted
    split, which on a class-sorted file are one class: the test would then separate
    classes, not members. A truth saved without them is sampled here, from a fixed
    stream (said in the note).
    """
    from ppknn.protocols.dp_nb.adversary import pooled_scores

    mx, my = ctx.truth["members_X"], ctx.truth["members_y"]
    ox, oy = ctx.truth["others_X"], ctx.truth["others_y"]
    sampled = "class-matched random samples of the run's seed"
    if "members_pick" in ctx.truth and "others_pick" in ctx.truth:
        pick_in = np.asarray(ctx.truth["members_pick"], dtype=np.int64)
        pick_out = np.asarray(ctx.truth["others_pick"], dtype=np.int64)
    else:
        from ppknn.simulations.sampling import matched_sample

        pick_in, pick_out = matched_sample(np.asarray(my), np.asarray(oy),
                                           np.random.default_rng(0))
        sampled = "class-matched random samples of a fixed stream (the truth has none)"
    mx, my, ox, oy = mx[pick_in], my[pick_in], ox[pick_out], oy[pick_out]
    m = min(len(mx), len(ox))
    fields: dict[str, Any] = dict(protocol=ctx.protocol, observer=observer_name(observers),
                                  target="training records (members vs held-out rows)",
                                  attack=adv.attack,
                                  quantity="empirical ε lower bound (membership)",
                                  bound=claimed, bound_name=bound_name)
    if not models or m < 4:
        return LeakageRow(value=float("nan"), ci_low=float("nan"), ci_high=float("nan"),
                          trials=0, note="no model received", **fields)
    s_in = pooled_scores(list(models), mx[:m], my[:m])
    s_out = pooled_scores(list(models), ox[:m], oy[:m])
    note = ("P(claim member | member) {tp}/{n_in}, P(claim member | held out) {fp}/{n_out} "
            "on the test half (threshold, direction and event chosen on the other half by "
            "the Clopper-Pearson bound; event: claim {event}"
            + (f"; δ = {delta:g} subtracted" if delta else "") + f"); log-density score; "
            f"{m} members and {m} held-out rows, {sampled}")
    row = membership_epsilon(s_in, s_out, delta=delta, note=note, **fields)
    # the same test on a score that reads no model: the log prior of the row's class
    # (the members' class frequencies); on class-matched samples it is at chance
    classes, counts = np.unique(np.asarray(ctx.truth["members_y"]), return_counts=True)
    prior = dict(zip(classes.tolist(), np.log(counts / counts.sum()).tolist()))
    b_in = np.array([prior.get(c, -np.inf) for c in np.asarray(my[:m]).tolist()])
    b_out = np.array([prior.get(c, -np.inf) for c in np.asarray(oy[:m]).tolist()])
    base = membership_epsilon(b_in, b_out, delta=delta, note="", **fields)
    return bound_baseline(row, baseline=(base.value, base.ci_low, base.ci_high),
                          name="the same test on a score without the model: the log prior "
                               "of the row's class (chance on class-matched samples)")


def membership_epsilon(s_in: np.ndarray, s_out: np.ndarray, *, delta: float, note: str,
                       **fields: Any) -> LeakageRow:
    """Threshold, direction and event chosen on the even positions, ε bounded on the odd."""
    sel, test = slice(0, None, 2), slice(1, None, 2)
    threshold, direction, event = select_threshold(s_in[sel], s_out[sel], delta=delta)
    a, b = direction * s_in[test], direction * s_out[test]
    n_in, n_out = len(a), len(b)
    tp, fp = int((a >= threshold).sum()), int((b >= threshold).sum())
    note = note.format(tp=tp, fp=fp, n_in=n_in, n_out=n_out, event=event)
    if event == "member":
        return epsilon_row(hit_a=tp, n_a=n_in, hit_b=fp, n_b=n_out, delta=delta, note=note,
                           **fields)
    return epsilon_row(hit_a=n_out - fp, n_a=n_out, hit_b=n_in - tp, n_b=n_in, delta=delta,
                       note=note, **fields)


def select_threshold(s_in: np.ndarray, s_out: np.ndarray, *, delta: float = 0.0
                     ) -> tuple[float, int, str]:
    """The threshold, direction and event with the best ε lower bound on the selection half.

    ``(threshold, direction, event)``: "member" is claimed when ``direction * score >=
    threshold``; ``event`` is ``"member"`` (the bound on ``TPR / FPR``) or
    ``"held out"`` (on ``TNR / FNR``).
    """
    from ppknn.simulations.leakage.table import epsilon_from_rates

    best = (-1.0, 0.0, 1, "member")
    qs = np.unique(np.quantile(np.concatenate([s_in, s_out]), np.linspace(0.05, 0.95, 19)))
    n_in, n_out = len(s_in), len(s_out)
    for direction in (1, -1):
        a, b = direction * s_in, direction * s_out
        for t in direction * qs:
            tp, fp = int((a >= t).sum()), int((b >= t).sum())
            for event, lo in (
                    ("member", epsilon_from_rates(tp, n_in, fp, n_out, delta=delta)[1]),
                    ("held out", epsilon_from_rates(n_out - fp, n_out, n_in - tp, n_in,
                                                    delta=delta)[1])):
                if lo > best[0]:
                    best = (lo, float(t), direction, event)
    return best[1], best[2], best[3]


__all__ = ['membership_epsilon', 'membership_rows', 'select_threshold']
