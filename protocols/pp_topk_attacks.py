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

from core.leakage import Claim, Claims, message_key, multiset_new
from core.transcript import View
from protocols.pp_topk import PROTOCOL

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


__all__ = ["ADVERSARY", "successor_attribution"]
