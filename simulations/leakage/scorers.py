"""Scoring helpers the attacks of several protocols share.

The secure-sum neighbours' estimate on a ring (a node's two neighbours pool
their views and subtract), the best-constant and nothing-seen baselines, the
membership-inference rows with their empirical ε, and the test whether a
message carries given rows. They read views, public facts and ground truth
(:class:`~simulations.leakage.attacks.Context`) and name no protocol: each
protocol's attacks (``simulations/plugins/<name>/attacks.py``) call them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ppknn.core.transcript import View
from ppknn.simulations.leakage.attacks import Adversary, Context
from ppknn.simulations.leakage.table import (
    LeakageRow,
    bound_baseline,
    epsilon_row,
    paired_rate_baseline,
    proportion_row,
)


def observer_name(parties: Sequence[str]) -> str:
    """A coalition's name: its members joined by ``+``."""
    return "+".join(parties)


def ring_neighbours(ring: Sequence[str], party: str,
                    position: Mapping[str, int]) -> tuple[str, str]:
    """``party``'s predecessor and successor (``position``: :func:`positions` of ``ring``)."""
    i = position[party]
    return ring[(i - 1) % len(ring)], ring[(i + 1) % len(ring)]


def positions(ring: Sequence[str]) -> dict[str, int]:
    """Each party's index in the ring (a ring of 100,000 is not searched per node)."""
    return {p: i for i, p in enumerate(ring)}


def sum_rows(ctx: Context, adv: Adversary, *, protocol: str, truth_prefix: str,
             ring_protocol: str, shared_protocol: str | None, kind: str,
             quantity: str, per_query: bool) -> list[LeakageRow]:
    """The secure-sum neighbours' rows: each ring node's vector recovered by its neighbours."""
    ring = list(ctx.public["ring"])
    targets = [t for t in ring if f"{truth_prefix}{t}" in ctx.truth]
    if adv.observers:  # a scripted coalition: its pooled view of the whole sum
        msgs = [m for p in {ring_protocol, shared_protocol} - {None}
                for m in ctx.messages(protocol=p)]
        return sum_group(ctx, adv, msgs, targets, truth_prefix=truth_prefix,
                         ring_protocol=ring_protocol, kind=kind, quantity=quantity,
                         per_query=per_query,
                         shared=any(m.kind == "share" for m in msgs),
                         position=positions(ring))
    # each node's two neighbours: streamed, for groups of targets whose messages (the
    # target's partial sums in and out, or the shares it sent them) fit the state budget;
    # the transcript is read once and each group's messages scattered to it
    from ppknn.simulations.leakage import stream

    if not targets:
        return []
    start = ctx.public["start"]
    position = positions(ring)
    shared = shared_protocol is not None and bool(stream.rounds_of(ctx.transcript,
                                                                   shared_protocol))
    protocol_read = shared_protocol if shared and shared_protocol else ring_protocol
    vector = np.asarray(ctx.truth[f"{truth_prefix}{targets[0]}"]).nbytes
    size = max(1, int(stream.STATE_BUDGET // (3 * max(vector, 1))))
    group_of = {t: i // size for i, t in enumerate(targets)}
    near_start = set(ring_neighbours(ring, start, position)) if start in position else set()

    def groups_of(sender: str, receiver: str, kind_: str) -> set[int]:
        if shared:
            g = group_of.get(sender)
            return ({g} if g is not None and kind_ == "share"
                    and receiver in ring_neighbours(ring, sender, position) else set())
        if kind_ == kind:
            return {g for g in (group_of.get(sender), group_of.get(receiver)) if g is not None}
        if kind_ == "sum-result" and receiver in near_start and start in group_of:
            return {group_of[start]}
        return set()

    rows: list[LeakageRow] = []
    n_groups = -(-len(targets) // size)
    for g, msgs in stream.scatter(ctx.transcript, protocol_read, n_groups, groups_of,
                                  with_provenance=False):
        # copies: a view of a record batch would hold the whole batch
        kept = [dataclasses.replace(m, payload={k: np.array(v) for k, v in m.payload.items()})
                for m in msgs]
        kept.sort(key=lambda m: (m.protocol, m.round, m.sender, m.receiver, m.seq))
        rows.extend(sum_group(ctx, adv, kept, targets[g * size:(g + 1) * size],
                              truth_prefix=truth_prefix, ring_protocol=ring_protocol,
                              kind=kind, quantity=quantity, per_query=per_query,
                              shared=shared, position=position))
    return rows


def sum_group(ctx: Context, adv: Adversary, msgs: Sequence[Any], targets: Sequence[str], *,
              truth_prefix: str, ring_protocol: str, kind: str, quantity: str,
              per_query: bool, shared: bool, position: Mapping[str, int]
              ) -> list[LeakageRow]:
    """The secure-sum rows of ``targets``, from the messages their observers need."""
    ring = list(ctx.public["ring"])
    start = ctx.public["start"]
    by_party: dict[str, list[Any]] = {}
    for m in msgs:  # each party's messages, so a view costs its own messages only
        by_party.setdefault(m.sender, []).append(m)
        if m.receiver != m.sender:
            by_party.setdefault(m.receiver, []).append(m)
    rows = []
    for target in targets:
        key = f"{truth_prefix}{target}"
        truth = np.asarray(ctx.truth[key], dtype=np.uint64)
        pred, succ = ring_neighbours(ring, target, position)
        observers = tuple(adv.observers) if adv.observers else (pred, succ)
        if target in observers:
            continue
        mine = list({id(m): m for o in observers for m in by_party.get(o, ())}.values())
        view = View.of(mine, observers)
        if shared:
            estimate = shared_estimate(view, target)
        else:
            estimate = ring_estimate(view, target=target, ring=ring, start=start, kind=kind,
                                     protocol=ring_protocol, position=position)
        t2 = truth.reshape(len(truth), -1) if per_query else truth.reshape(1, -1)
        if estimate is None:
            hits = np.zeros(len(t2), dtype=bool)
        else:
            e2 = np.asarray(estimate, dtype=np.uint64).reshape(t2.shape)
            hits = np.all(e2 == t2, axis=1)
        base, base_name = own_guess(ctx, truth_prefix, observers, t2)
        sum_kind = "secret-shared" if shared else "ring"
        if shared:
            why = "shares of honest nodes hide the target"
        elif target == start and estimate is None:
            why = "no broadcast total: the start node's mask hides the target"
        elif target == start:
            why = ("the broadcast total minus what the neighbours sent and received is the "
                   "start node's vector: the mask does not hide it from both neighbours")
        else:
            why = "no guarantee against colluding neighbours"
        rows.append(paired_rate_baseline(proportion_row(
            successes=int(hits.sum()), trials=len(hits), protocol=ctx.protocol,
            observer=observer_name(sorted(observers)), target=target, attack=adv.attack,
            quantity=quantity, note=f"{sum_kind} secure sum; {why}"),
            hits=hits, base=base, name=base_name))
    return rows


OWN_VECTORS = ("the observers' own data: the most frequent of their own vectors (over the "
               "queries), named as the target's for every trial (no transcript)")


def own_guess(ctx: Context, prefix: str, observers: Sequence[str], t2: np.ndarray
              ) -> tuple[np.ndarray, str]:
    """The secure-sum baseline: what the observers guess from their own vectors alone.

    Each observer knows its own vector (per query, or one per run); the guess is the most
    frequent row among them (the first of the most frequent, sorted), the same for every
    trial. An observer without a saved vector adds nothing; none at all: the guess is the
    most frequent true row of the target (an oracle constant, at least as strong).
    """
    own = [np.asarray(ctx.truth[f"{prefix}{o}"], dtype=np.uint64).reshape(t2.shape)
           for o in observers if f"{prefix}{o}" in ctx.truth]
    if not own:
        return np.all(t2 == mode_row(t2), axis=1), BEST_CONSTANT
    return np.all(t2 == mode_row(np.concatenate(own)), axis=1), OWN_VECTORS


BEST_CONSTANT = ("the best constant guess: the target's most frequent true vector over "
                 "the queries (an oracle choice; no transcript)")
BEST_CONSTANT_TARGETS = ("the best constant guess: the most frequent true vector over "
                         "every target (an oracle choice; no transcript)")
NOTHING_SEEN = ("no transcript: nothing seen (an exact real-valued row or total is not "
                "guessed)")


def mode_row(rows: np.ndarray) -> np.ndarray:
    """The most frequent row of ``rows`` (the first of the most frequent, sorted)."""
    flat = np.asarray(rows).reshape(len(rows), -1)
    if flat.dtype.kind not in "biu" or not flat.size:  # floats: NaN and -0.0 as np.unique
        uniq, counts = np.unique(flat, axis=0, return_counts=True)
        return uniq[int(np.argmax(counts))]
    # integers: equal rows are equal bytes, so rows are counted as opaque byte strings
    # (one 1-D sort, ~20x faster than np.unique's structured sort); of the most frequent,
    # the first in np.unique's (numeric, lexicographic) order is taken
    packed = np.ascontiguousarray(flat)
    keys = packed.view(np.dtype((np.void, packed.dtype.itemsize * packed.shape[1]))).ravel()
    _, first, counts = np.unique(keys, return_index=True, return_counts=True)
    tied = packed[first[counts == counts.max()]]
    return tied[np.lexsort(tied.T[::-1])[0]]


def all_vectors(ctx: Context, prefix: str) -> np.ndarray:
    """Every party's truth vector under ``prefix`` (one row each), cached on the context."""
    cache = ctx.__dict__.setdefault("_cache", {})
    key = f"_vectors:{prefix}"
    if key not in cache:
        keys = sorted(k for k in ctx.truth if k.startswith(prefix))
        cache[key] = np.stack([np.asarray(ctx.truth[k], dtype=np.uint64).ravel()
                               for k in keys])
    return cache[key]


def nothing_seen(row: LeakageRow) -> LeakageRow:
    """The baseline of an exact-sighting row: no sighting on the same trials."""
    hits = np.zeros(row.trials, dtype=bool)
    hits[:int(round(row.value * row.trials)) if math.isfinite(row.value) else 0] = True
    return paired_rate_baseline(row, hits=hits, base=np.zeros(row.trials, dtype=bool),
                                name=NOTHING_SEEN)


def ring_estimate(view: View, *, target: str, ring: list[str], start: str, kind: str,
                  protocol: str, position: Mapping[str, int]) -> np.ndarray | None:
    """``target``'s vector as its two ring neighbours estimate it from ``view`` (or ``None``)."""
    from ppknn.protocols.ppknn import secure_sum as ss
    from ppknn.protocols.ppknn.secure_sum_attacks import _between

    members = set(view.parties)
    n = len(ring)
    pos = position[target]
    b = next((ring[(pos + j) % n] for j in range(1, n) if ring[(pos + j) % n] in members), None)
    a = next((ring[(pos - j) % n] for j in range(1, n) if ring[(pos - j) % n] in members), None)
    if a is None or b is None:
        return None
    if target == start or start in _between(ring, a, b, position):
        # b received the mask (plus the votes from the start's successor to b's
        # predecessor), a sent the mask plus the votes through a: their difference is the
        # votes from b through a, and the broadcast total minus it is the votes strictly
        # between a and b, the start node's among them. Without a total (ring-nb keeps it
        # at the start node) the mask hides them.
        out = [m for m in view.sent if m.sender == a and m.kind == kind
               and m.protocol == protocol]
        into = [m for m in view.received if m.receiver == b and m.kind == kind
                and m.protocol == protocol]
        total = [m for m in view.received if m.kind == "sum-result" and m.protocol == protocol]
        if not out or not into or not total:
            return None
        return ss.sub(total[0].payload["s"], ss.sub(out[0].payload["s"], into[0].payload["s"]))
    sent = [m for m in view.sent if m.sender == a and m.kind == kind and m.protocol == protocol
            and m.receiver != start]
    got = [m for m in view.received if m.receiver == b and m.kind == kind
           and m.protocol == protocol]
    if not sent or not got:
        return None
    return ss.sub(got[0].payload["s"], sent[0].payload["s"])


def shared_estimate(view: View, target: str) -> np.ndarray | None:
    """``target``'s vector from a secret-shared sum's view (or ``None``)."""
    from ppknn.protocols.ppknn.secure_sum_attacks import shared_sum_estimate

    return shared_sum_estimate(view, target=target)


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


def analyst_groups(ctx: Context, adv: Adversary) -> list[tuple[str, ...]]:
    """The scripted coalition, or else each analyst on its own."""
    return ([tuple(adv.observers)] if adv.observers
            else [(a,) for a in ctx.public["analysts"]])


def rows_carried(messages: Sequence[Any], rows: np.ndarray) -> np.ndarray:
    """Which of ``rows`` appear exactly as a row of some float payload array of ``messages``.

    Every floating-point payload array whose last axis has the rows' width is
    read as rows of that width; a party's private rows sent in any field are
    found, whatever the field is called. Returns a mask over ``rows``.
    """
    r = np.asarray(rows, dtype=np.float64)
    found = np.zeros(len(r), dtype=bool)
    if r.ndim != 2 or not len(r):
        return found
    index: dict[bytes, list[int]] = {}
    for i, row in enumerate(r):
        index.setdefault(row.tobytes(), []).append(i)
    for m in messages:
        for value in m.payload.values():
            a = np.asarray(value)
            if a.ndim == 0 or a.shape[-1] != r.shape[1] or not np.issubdtype(a.dtype,
                                                                            np.floating):
                continue
            for row in a.reshape(-1, r.shape[1]).astype(np.float64):
                for i in index.get(row.tobytes(), ()):
                    found[i] = True
    return found


__all__ = ["BEST_CONSTANT", "BEST_CONSTANT_TARGETS", "NOTHING_SEEN", "OWN_VECTORS", "all_vectors",
           "analyst_groups", "membership_epsilon", "membership_rows", "mode_row", "nothing_seen",
           "observer_name", "own_guess",
           "positions", "ring_estimate", "ring_neighbours", "rows_carried", "select_threshold",
           "shared_estimate", "sum_group", "sum_rows"]
