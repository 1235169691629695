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
from ppknn.protocols.ppknn_ring.pp_topk import PROTOCOL

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


def _final_message(view: View):
    """The final broadcast as the view holds it (one a member received, else one it sent)."""
    finals = [m for m in view.received if m.kind == "topk-final" and m.protocol == PROTOCOL]
    finals = finals or [m for m in view.sent if m.kind == "topk-final"
                        and m.protocol == PROTOCOL]
    return min(finals, key=message_key) if finals else None


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
    (``a == b``) this is the paper's successor attack.

    The public final vector is a view too: when the stretch holds the last
    node of a round (it wraps past the start node), what its nodes insert in
    the last round never reaches ``b`` but is in the final vector, so the
    final vector is compared with ``a``'s last output and its new values are
    claimed (on the final broadcast message). ``informed`` keeps only claims
    that survive into the final vector.
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
    final_msg = _final_message(view)
    final = np.asarray(final_msg.payload["g"]) if final_msg is not None else None
    claims = Claims(COALITION + ("+informed" if informed else ""))
    observer = tuple(sorted(members))
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
        if informed and final is not None:
            mask &= ~multiset_new(g, final)
        if mask.any():
            claims.add(Claim(observer=observer, target=target, message=message_key(m),
                             key="g", mask=mask))
    wraps = rank[b] <= rank[a] and a != order[-1]
    if final is not None and wraps and sent_by_a:
        last = max(sent_by_a, key=lambda s: s.round)
        mask = multiset_new(final, np.asarray(last.payload["g"]))
        if mask.any():
            claims.add(Claim(observer=observer, target=target, message=message_key(final_msg),
                             key="g", mask=mask))
    return claims


SINGLE_GUESS = "coalition-single-guess"


def single_guess(view: View, claims: Claims) -> Claims:
    """One value per query named as the target's: the smallest claimed value in the final vector.

    Among the values ``claims`` attributes to the target (any round, any message)
    that also appear in the public final vector, the smallest is named; a query
    with no such value gets no guess (a miss). A value of the final vector was never
    pushed out after it was inserted, so it reaches every later member: a larger
    coalition's candidates are a subset of a smaller one's that holds every target
    value the smaller one sees, and its guess is right whenever the smaller one's is.
    Vectorised over the queries; one pass per claimed message.
    """
    final_msg = _final_message(view)
    out = Claims(SINGLE_GUESS)
    if final_msg is None or not claims.items:
        return out
    final = np.asarray(final_msg.payload["g"])
    by_key = {message_key(m): m for m in view.received + view.sent}
    best = np.full(final.shape[0], np.inf)
    where = np.full((final.shape[0], 2), -1, dtype=np.int64)  # (claim, position) per query
    for i, c in enumerate(claims.items):
        g = np.asarray(by_key[c.message].payload["g"], dtype=np.float64)
        cand = c.mask & ~multiset_new(g, final)
        vals = np.where(cand, g, np.inf)
        j = np.argmin(vals, axis=1)
        v = vals[np.arange(len(vals)), j]
        better = v < best
        best[better] = v[better]
        where[better] = np.stack([np.full(int(better.sum()), i), j[better]], axis=1)
    for i, c in enumerate(claims.items):
        rows = np.flatnonzero(where[:, 0] == i)
        if rows.size:
            mask = np.zeros(c.mask.shape, dtype=bool)
            mask[rows, where[rows, 1]] = True
            out.add(Claim(observer=c.observer, target=c.target, message=c.message, key="g",
                          mask=mask))
    return out


__all__ = [
    "ADVERSARY",
    "COALITION",
    "INFORMED",
    "SINGLE_GUESS",
    "coalition_attribution",
    "informed_successor",
    "single_guess",
    "successor_attribution",
]
