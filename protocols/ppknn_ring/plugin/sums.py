"""What a ring secure sum shows its nodes: the neighbours' estimate of a node's vector.

A node's two ring neighbours pool their views of the masked running sums and subtract
(:func:`ring_estimate`), or an observer reads a shared-sum party's share
(:func:`shared_estimate`); :func:`sum_rows` scores the estimate against each node's
true vector, beside the best constant guess (the baseline).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ppknn.core.transcript import View
from ppknn.simulations.leakage.attacks import Adversary, Context
from ppknn.simulations.leakage.scorers import (
    BEST_CONSTANT,
    mode_row,
    observer_name,
    positions,
    ring_neighbours,
)
from ppknn.simulations.leakage.table import (
    LeakageRow,
    paired_rate_baseline,
    proportion_row,
)

OWN_VECTORS = ("the observers' own data: the most frequent of their own vectors (over the "
               "queries), named as the target's for every trial (no transcript)")


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


def all_vectors(ctx: Context, prefix: str) -> np.ndarray:
    """Every party's truth vector under ``prefix`` (one row each), cached on the context."""
    cache = ctx.__dict__.setdefault("_cache", {})
    key = f"_vectors:{prefix}"
    if key not in cache:
        keys = sorted(k for k in ctx.truth if k.startswith(prefix))
        cache[key] = np.stack([np.asarray(ctx.truth[k], dtype=np.uint64).ravel()
                               for k in keys])
    return cache[key]


def ring_estimate(view: View, *, target: str, ring: list[str], start: str, kind: str,
                  protocol: str, position: Mapping[str, int]) -> np.ndarray | None:
    """``target``'s vector as its two ring neighbours estimate it from ``view`` (or ``None``)."""
    from ppknn.protocols.ppknn_ring import secure_sum as ss
    from ppknn.protocols.ppknn_ring.secure_sum_attacks import _between

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
    from ppknn.protocols.ppknn_ring.secure_sum_attacks import shared_sum_estimate

    return shared_sum_estimate(view, target=target)


__all__ = ['all_vectors', 'own_guess', 'ring_estimate', 'shared_estimate', 'sum_group', 'sum_rows']
