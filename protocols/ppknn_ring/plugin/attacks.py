"""The attacks of ``ppknn-ring`` the leakage table scores, registered on import.

Each scorer runs over views through the protocol's adversary code and is
scored against provenance or the ground truth the plugin's ``ground_truth``
hook saves (:mod:`simulations.leakage.attacks` holds the machinery).

``ppknn-ring`` [no DP; the paper measures per-node disclosure]
    ``successor-attribution``: the paper's §6.6 attack, per node (observer: its
    successor). ``informed-successor``: the same, keeping only values that
    survive into the public final vector. ``secure-sum-neighbours``: the two ring
    neighbours of a node pool their secure-sum views and subtract; the rate is the
    fraction of queries whose vote vector they recover exactly (0 with the
    secret-shared sum). The start node is no exception in the ring sum: its
    neighbours hold the mask (its successor received it) and the broadcast total.
    ``mask-reuse`` (scripted): one node alone against the partial sum it receives
    (differencing queries), at chance with fresh masks, exact with a reused one.
    ``coalition-attribution`` (scripted ``observers``): any coalition attributes
    values to each non-member between two members.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ppknn.core.leakage import message_key, score_attribution
from ppknn.protocols.ppknn_ring.plugin.attribution import random_claim_miss
from ppknn.protocols.ppknn_ring.plugin.sums import sum_rows
from ppknn.simulations.leakage.attacks import Adversary, Context, register
from ppknn.simulations.leakage.scorers import (
    BEST_CONSTANT,
    mode_row,
    observer_name,
    positions,
    ring_neighbours,
)
from ppknn.simulations.leakage.table import (
    LeakageRow,
    paired_mean_difference,
    paired_rate_baseline,
    proportion_row,
    with_baseline,
)

RING = "ppknn-ring"


def _observer_filter(adv: Adversary, ring: Sequence[str]) -> Callable[[str], str]:
    position = positions(ring)

    def observer_of(target: str) -> str:
        succ = ring_neighbours(ring, target, position)[1]
        if adv.observers and succ not in adv.observers:
            return ""
        return succ
    return observer_of


def _streamed(ctx: Context) -> tuple[Any, Any]:
    """Successor and informed reports, one bounded-memory pass, cached on the context."""
    from ppknn.protocols.ppknn_ring.plugin.attribution import ring_attribution

    key = "_ring_attribution"
    cache = ctx.__dict__.setdefault("_cache", {})
    if key not in cache:
        cache[key] = ring_attribution(ctx.transcript, ctx.public)
    return cache[key]


RANDOM_CLAIM = ("a random claimer: as many values as the attack claimed in each vector "
                "row, drawn at random from that row (expected rate from provenance)")


def random_claim_baseline(row: LeakageRow, *, hits: np.ndarray, chance: np.ndarray
                          ) -> LeakageRow:
    """A disclosure row's baseline: the random claimer's expected rate on the same queries.

    ``hits[q]``: whether the attack disclosed the target on query ``q``; ``chance[q]``:
    the probability that the random claimer (:data:`RANDOM_CLAIM`) does. The baseline is
    the mean chance, its interval the spread of a random claimer's realised rate (normal
    approximation to the Poisson-binomial); the advantage is the mean of ``hits - chance``
    over the queries with its Student-t interval.
    """
    # 1 - exp(log miss) can leave [0, 1] by a rounding error (a log miss of +1e-17)
    p = np.clip(np.asarray(chance, dtype=np.float64), 0.0, 1.0)
    n = int(p.size)
    if n == 0:
        return with_baseline(row, name=RANDOM_CLAIM, baseline=(math.nan,) * 3,
                             advantage=(math.nan,) * 3)
    mean = float(p.mean())
    half = 1.959964 * math.sqrt(float(np.sum(p * (1 - p)))) / n
    return with_baseline(row, name=RANDOM_CLAIM,
                         baseline=(mean, max(0.0, mean - half), min(1.0, mean + half)),
                         advantage=paired_mean_difference(np.asarray(hits, dtype=np.float64), p))


def _report_rows(ctx: Context, adv: Adversary, report: Any, quantity: str, note: str
                 ) -> list[LeakageRow]:
    observer_of = _observer_filter(adv, list(ctx.public["ring"]))
    chance = getattr(report, "chance", {})
    hits = getattr(report, "hits", {})
    pool = getattr(report, "pool", {})
    rows = []
    for d in report.parties:
        observer = observer_of(d.party)
        if not observer:
            continue
        precision = "n/a" if math.isnan(d.precision) else f"{d.precision:.3f}"
        have, of = pool.get(d.party, (0, 0))
        random_precision = f"{have / of:.3f}" if of else "n/a"
        row = proportion_row(
            successes=d.disclosed, trials=d.trials, protocol=ctx.protocol, observer=observer,
            target=d.party, attack=adv.attack, quantity=quantity,
            note=f"claims' precision {precision} ({d.correct}/{d.claimed} values), a random "
                 f"claim's {random_precision} ({have}/{of}); {note}")
        if d.party in chance:
            row = random_claim_baseline(row, hits=hits[d.party], chance=chance[d.party])
        rows.append(row)
    return rows


@register(RING, "successor-attribution", default=True,
          description="the paper's §6.6 attack by each node's successor")
def _successor(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    return _report_rows(ctx, adv, _streamed(ctx)[0], "disclosure probability (paper §6.6)",
                        "the paper measures disclosure but promises no bound")


@register(RING, "informed-successor", default=True,
          description="the successor keeps only claims that survive into the final vector")
def _informed(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    return _report_rows(ctx, adv, _streamed(ctx)[1], "disclosure probability (informed)",
                        "stronger than the paper's attacker; no bound")


@register(RING, "coalition-attribution", default=False, needs_observers=True,
          params=("informed",),
          description="a coalition attributes values to every non-member")
def _coalition(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    """Two rows per non-member: §6.6's "any claim right" and one guess per query.

    The single guess (:func:`~protocols.ppknn_ring.pp_topk_attacks.single_guess`) is
    compared with a guess of one value drawn at random from the public final
    vector (what anyone holding only the public output achieves); "any claim right"
    with a random claimer making as many claims in the same vectors.
    """
    from ppknn.protocols.ppknn_ring.pp_topk import PROTOCOL
    from ppknn.protocols.ppknn_ring.pp_topk_attacks import coalition_attribution, single_guess

    ring = list(ctx.public["ring"])
    members = list(adv.observers)
    view = ctx.view(members, protocol=PROTOCOL)
    informed = bool(adv.params.get("informed", False))
    index = {p: int(i) for p, i in dict(ctx.public["party_index"]).items()}
    n_q = int(ctx.public["n_queries"])
    msgs = ctx.messages(with_provenance=True, protocol=PROTOCOL)
    by_key = {message_key(m): m for m in msgs}
    final = next((m for m in msgs if m.kind == "topk-final"), None)
    name = observer_name(members)
    rows = []
    for target in ring:
        if target in members:
            continue
        claims = coalition_attribution(
            view, target=target, ring=ring, start=ctx.public["start"],
            max_distance=float(ctx.public["max_distance"]), informed=informed)
        guess = single_guess(view, claims)
        (d,) = [x for x in score_attribution(claims, msgs, index, n_q).parties
                if x.party == target]
        (g,) = [x for x in score_attribution(guess, msgs, index, n_q).parties
                if x.party == target]
        hits, miss = np.zeros(n_q, dtype=bool), np.zeros(n_q)
        guessed = np.zeros(n_q, dtype=bool)
        have = of = 0
        for c in claims.items:
            mine = np.asarray(by_key[c.message].provenance["g"]) == index[target]
            mine = np.broadcast_to(mine, c.mask.shape)
            hits |= (c.mask & mine).any(axis=1)
            miss += random_claim_miss(c.mask, mine)
            rows_claimed = c.mask.any(axis=1)
            have += int(mine[rows_claimed].sum())
            of += int(rows_claimed.sum()) * c.mask.shape[1]
        for c in guess.items:
            guessed |= (c.mask & (np.asarray(by_key[c.message].provenance["g"])
                                  == index[target])).any(axis=1)
        precision = "n/a" if math.isnan(d.precision) else f"{d.precision:.3f}"
        rows.append(random_claim_baseline(proportion_row(
            successes=d.disclosed, trials=d.trials, protocol=ctx.protocol, observer=name,
            target=target, attack=adv.attack, quantity="disclosure probability (coalition)",
            note=f"claims' precision {precision} ({d.correct}/{d.claimed} values), a random "
                 f"claim's {have / of if of else math.nan:.3f} ({have}/{of}); values new "
                 "between the members' views (and in the final vector after the last member "
                 "before the target, when the stretch wraps past the start node) are claimed "
                 "as the target's; no bound"), hits=hits, chance=1.0 - np.exp(miss)))
        in_final = (np.zeros(n_q) if final is None else
                    np.mean(np.asarray(final.provenance["g"]) == index[target], axis=1))
        rows.append(
            random_guess_baseline(proportion_row(
                successes=g.disclosed, trials=g.trials, protocol=ctx.protocol, observer=name,
                target=target, attack=adv.attack,
                quantity="single guess right (coalition)",
                note="one value per query named as the target's: the smallest claimed value "
                     "that is in the final vector (none: a miss); grows with the coalition; "
                     "no bound"), hits=guessed, chance=in_final))
    return rows


def random_guess_baseline(row: LeakageRow, *, hits: np.ndarray, chance: np.ndarray
                          ) -> LeakageRow:
    """A single guess's baseline: one value of the public final vector drawn at random."""
    out = random_claim_baseline(row, hits=hits, chance=chance)
    return dataclasses.replace(out, baseline_name=(
        "one value of the public final vector named at random (the target's share of it, "
        "per query)"))


@register(RING, "secure-sum-neighbours", default=True,
          description="a node's two ring neighbours pool their secure-sum views")
def _ring_sum(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    from ppknn.protocols.ppknn_ring import secure_sum as ss

    return sum_rows(ctx, adv, protocol=RING, truth_prefix="votes/",
                    ring_protocol=ss.RING_PROTOCOL, shared_protocol=ss.SHARED_PROTOCOL,
                    kind="partial-sum", quantity="vote vector recovered exactly",
                    per_query=True)


@register(RING, "mask-reuse", default=False,
          description="a node alone unmasks the partial sums it receives by differencing "
                      "queries (works when the start node reuses its mask)")
def _ring_mask_reuse(ctx: Context, adv: Adversary) -> list[LeakageRow]:
    """One node, alone, against the ring sum's mask (the sum's single-node guarantee).

    Node ``b`` receives ``M[q] = R[q] + S_t[q]`` from its predecessor ``t``, where
    ``S_t`` is the sum of the vote vectors from the start node's successor through
    ``t`` (``t``'s own votes when ``t`` follows the start node). It subtracts the
    first query's row, ``M[q] - M[0]``, and, since every count is >= 0 and some
    query has none of a class, takes the smallest difference per class as
    ``-S_t[0]``. With a fresh uniform mask per query the difference is uniform and
    the estimate is garbage; with a mask reused across queries it is ``S_t``
    exactly. The bound is the chance level: the rate of the best constant guess
    (the most frequent true ``S_t`` row of the run), which no estimator of a
    uniformly masked view can beat in expectation.
    """
    from ppknn.protocols.ppknn_ring import secure_sum as ss

    ring, start = list(ctx.public["ring"]), ctx.public["start"]
    n = len(ring)
    first = ring.index(start)
    order = [ring[(first + j) % n] for j in range(n)]  # the ring from the start node
    if not all(f"votes/{p}" in ctx.truth for p in order[1:]):
        return []
    received = {m.receiver: m for m in ctx.messages(protocol=ss.RING_PROTOCOL)
                if m.kind == "partial-sum" and m.sender != start}
    shared = any(m.kind == "share" for m in ctx.messages(protocol=ss.SHARED_PROTOCOL))
    rows = []
    partial: np.ndarray | None = None
    for t, b in zip(order[1:-1], order[2:]):
        votes = np.asarray(ctx.truth[f"votes/{t}"], dtype=np.uint64)
        partial = votes if partial is None else ss.add(partial, votes)
        truth = partial.reshape(len(partial), -1)
        if adv.observers and b not in adv.observers:
            continue
        msg = received.get(b)
        if msg is None or shared:
            hits = np.zeros(len(truth), dtype=bool)
        else:
            m = np.asarray(msg.payload["s"], dtype=np.uint64).reshape(truth.shape)
            diff = ss.sub(m, m[:1]).view(np.int64)
            estimate = (diff - diff.min(axis=0, keepdims=True)).view(np.uint64)
            hits = np.all(estimate == truth, axis=1)
        _, counts = np.unique(truth, axis=0, return_counts=True)
        chance = float(counts.max()) / len(truth)
        base = np.all(truth == mode_row(truth), axis=1)
        what = "its vote vector" if t == order[1] else f"the votes of {order[1]}..{t}"
        rows.append(paired_rate_baseline(proportion_row(
            successes=int(hits.sum()), trials=len(hits), protocol=ctx.protocol, observer=b,
            target=t, attack=adv.attack,
            quantity="masked partial sum recovered exactly (one node alone)",
            bound=chance, bound_name="chance level (best constant guess of this run)",
            note=f"{'secret-shared sum: no ring mask' if shared else 'ring secure sum'}; "
                 f"the partial sum is {what}; a fresh uniform mask per query keeps a single "
                 "node at chance, a reused one does not"), hits=hits, base=base,
            name=BEST_CONSTANT))
    return rows
