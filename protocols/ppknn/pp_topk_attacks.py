"""Adversaries against PP-TopK, over views only (no provenance).

**Successor attribution** (the paper's §6.6 measure). The successor ``s``
of node ``p`` tries to identify values of ``p`` in each vector it receives
from ``p``. Its reference is the last vector it sent itself before this
one arrived (in round 1, before it has sent anything, the public initial
vector of ``k`` copies of the maximum distance). Every value of the
received vector that is not in the reference (multiset difference) is
claimed as ``p``'s. It is right when the value's provenance is ``p``.

Definition used for the *per-node disclosure probability* of ``p``: the
fraction of queries for which, in at least one round, at least one value
claimed by ``p``'s successor really is ``p``'s. The precision of the
claims (correct claimed values / claimed values) is reported beside it.

Whether a node is the start node is public (it sends the final
broadcast); the start node's reference for the vector closing round ``r``
is its own round-``r`` output, since it sent that one first.
"""

from __future__ import annotations

import numpy as np

from ppknn.core.leakage import Claim, Claims, message_key, multiset_new
from ppknn.core.transcript import View
from ppknn.protocols.ppknn.pp_topk import PROTOCOL

ADVERSARY = "successor-attribution"


def successor_attribution(view: View, *, max_distance: float) -> Claims:
    """The paper's attribution attack by one observer (see module docstring)."""
    claims = Claims(ADVERSARY)
    observers = view.parties
    for me in observers:
        sent = [m for m in view.sent if m.sender == me and m.protocol == PROTOCOL
                and m.kind == "topk-vector"]
        is_start = any(m.sender == me and m.kind == "topk-final" for m in view.sent)
        received = [m for m in view.received if m.receiver == me and m.protocol == PROTOCOL
                    and m.kind == "topk-vector"]
        for m in received:
            before = [s for s in sent if s.round < m.round or (is_start and s.round == m.round)]
            g = np.asarray(m.payload["g"])
            if before:
                reference = np.asarray(max(before, key=lambda s: s.round).payload["g"])
            else:
                reference = np.full(g.shape, max_distance)
            mask = multiset_new(g, reference)
            if mask.any():
                claims.add(Claim(observer=(me,), target=m.sender, message=message_key(m),
                                 key="g", mask=mask))
    return claims




INFORMED = "informed-successor"
COALITION = "coalition-attribution"


def _vector_messages(view: View, party: str, *, sent: bool) -> list:
    pool = view.sent if sent else view.received
    key = "sender" if sent else "receiver"
    return [m for m in pool if getattr(m, key) == party and m.protocol == PROTOCOL
            and m.kind == "topk-vector"]


def _final_vector(view: View) -> np.ndarray | None:
    finals = [m for m in view.received + view.sent if m.kind == "topk-final"]
    return np.asarray(finals[0].payload["g"]) if finals else None


def informed_successor(view: View, *, max_distance: float) -> Claims:
    """A stronger single-node adversary than the paper's.

    Same observer as :func:`successor_attribution`, but it also uses what is
    public after the run: the final broadcast vector. Random fills are drawn
    at or above the current k-th value and are pushed out by real values in
    later steps, so a new value that is *also in the final vector* is very
    likely real data. The informed adversary claims only new values that
    survive into the final vector (multiset intersection), trading a little
    recall for much higher precision: when it claims, it is usually right.
    """
    base = successor_attribution(view, max_distance=max_distance)
    final = _final_vector(view)
    claims = Claims(INFORMED)
    if final is None:
        return claims
    received = {(m.protocol, m.round, m.sender, m.receiver, m.seq): m for m in view.received}
    for c in base.items:
        g = np.asarray(received[c.message].payload["g"])
        in_final = ~multiset_new(g, final)
        mask = c.mask & in_final
        if mask.any():
            claims.add(Claim(observer=c.observer, target=c.target, message=c.message, key="g",
                             mask=mask))
    return claims


def coalition_attribution(view: View, *, target: str, ring: list[str], start: str,
                          max_distance: float, informed: bool = False) -> Claims:
    """Colluding parties (the view's members) attribute values to ``target``.

    The coalition watches the vector leaving ``target`` through the first
    member after it on the ring (``b``) and compares it with the last vector
    that entered the stretch of the ring from the nearest member before it
    (``a``): every value new between the two can only come from the
    non-members in between, and is claimed as ``target``'s. With ``a`` and
    ``b`` the two neighbours of the target, the difference is exactly what
    the target inserted (its real values or its random fills). Alone
    (``a == b``) this is the paper's successor attack. ``informed`` keeps
    only claims that survive into the final vector.
    """
    members = set(view.parties)
    if target in members:
        raise ValueError(f"target {target!r} is in the coalition")
    n = len(ring)
    pos = ring.index(target)
    b = next(ring[(pos + j) % n] for j in range(1, n) if ring[(pos + j) % n] in members)
    a = next(ring[(pos - j) % n] for j in range(1, n) if ring[(pos - j) % n] in members)
    order = ring[ring.index(start):] + ring[:ring.index(start)]  # processing order per round
    rank = {p: i for i, p in enumerate(order)}
    final = _final_vector(view) if informed else None
    claims = Claims(COALITION + ("+informed" if informed else ""))
    sent_by_a = _vector_messages(view, a, sent=True)
    for m in _vector_messages(view, b, sent=False):
        # the vector b received in round r left a in round r (a processed before b in
        # that round) or in round r-1 (the stretch wraps past the start node)
        same_round = rank[a] < rank[m.sender] or (a == m.sender)
        want = m.round if same_round else m.round - 1
        ref = [s for s in sent_by_a if s.round == want]
        g = np.asarray(m.payload["g"])
        reference = np.asarray(ref[0].payload["g"]) if ref else np.full(g.shape, max_distance)
        mask = multiset_new(g, reference)
        if final is not None:
            mask &= ~multiset_new(g, final)
        if mask.any():
            claims.add(Claim(observer=tuple(sorted(members)), target=target,
                             message=message_key(m), key="g", mask=mask))
    return claims


__all__ = [
    "ADVERSARY",
    "COALITION",
    "INFORMED",
    "coalition_attribution",
    "informed_successor",
    "successor_attribution",
]
