# examples/dp_count/src/dp_count/attacks.py
"""The attack the leakage table scores after every run of ``dp-count``.

``count-rounding``: each analyst rounds the noisy counts it received and
claims them as the true counts. Scored against the ground truth the plugin
saves (the true ``(Q, C)`` counts): the share of counts recovered exactly,
beside the baseline of an attacker without the transcript (the most frequent
true count, claimed everywhere) and the rounding's exact-hit rate under honest
Laplace noise, ``1 - exp(-ε / 2)`` (the bound: an owner adding less noise
than it charges for lets the analysts exceed it).
"""

from __future__ import annotations

import math

import numpy as np

from ppknn.simulations.leakage.attacks import Adversary, Context, register
from ppknn.simulations.leakage.table import LeakageRow, paired_rate_baseline, proportion_row

PROTOCOL = "dp-count"


@register(PROTOCOL, "count-rounding", default=True,
          description="each analyst rounds its noisy counts to guess the true ones")
def count_rounding(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    """One row per analyst: the share of its queries' class counts recovered exactly."""
    truth = np.asarray(ctx.truth["counts"])
    eps = float(ctx.public["epsilon"])
    rows, start = [], 0
    replies = {m.receiver: m for m in ctx.messages() if m.kind == "noisy-counts"}
    for analyst in ctx.public["analysts"]:
        if analyst not in replies:
            continue
        guess = np.rint(replies[analyst].payload["counts"])
        true = truth[start:start + len(guess)]
        start += len(guess)
        hits = (guess == true).ravel()
        mode = np.bincount(truth.ravel().astype(np.int64)).argmax()
        row = proportion_row(
            successes=int(hits.sum()), trials=int(hits.size), protocol=ctx.protocol,
            observer=analyst, target="owner's training rows (class counts)",
            attack=adv.attack, quantity="class counts recovered exactly",
            bound=1.0 - math.exp(-eps / 2.0), bound_name="1 - exp(-ε/2): rounding's rate "
            "under Laplace(1/ε)")
        rows.append(paired_rate_baseline(row, hits=hits, base=(true == mode).ravel(),
                                         name="the most frequent true count, everywhere"))
    return rows
