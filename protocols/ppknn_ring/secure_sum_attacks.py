"""What colluding parties learn about a node's vote vector in the secure sums.

Adversaries take the coalition's pooled :class:`~core.transcript.View`
(no provenance) and return their estimate of the target's local vote
vector; :func:`recovery_rate` scores estimates against the true vectors
(simulation ground truth read from the owners).

Ring sum (Algorithm 3): node ``i`` sends ``S_i = S_pred(i) + v_i``
(mod 2^64) and the start node sends the mask. Members ``a`` (the nearest
before the target) and ``b`` (the nearest after) know ``S_a`` and
``S_pred(b)``; their difference is the sum of the vectors of the
non-members in between, i.e. the target's vector when it is alone there
(or the others in between have empty vote rows). If the start node lies
strictly between them the mask hides everything.

Secret-shared sum: the coalition holds the target's shares sent to its
members; their sum is its best linear estimate of the vector without the
target's kept share and the shares sent to honest nodes, and it is
uniformly distributed whatever the vector.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ppknn.core.transcript import View
from ppknn.protocols.ppknn_ring import secure_sum as ss


def _between(ring: list[str], a: str, b: str,
             position: Mapping[str, int] | None = None) -> list[str]:
    """Nodes strictly after ``a`` and strictly before ``b`` going forward.

    ``position`` (each node's index in ``ring``) saves searching the ring.
    """
    n = len(ring)
    out, i = [], ((position[a] if position is not None else ring.index(a)) + 1) % n
    while ring[i] != b:
        out.append(ring[i])
        i = (i + 1) % n
    return out


def ring_sum_estimate(view: View, *, target: str, ring: list[str], start: str
                      ) -> np.ndarray | None:
    """The coalition's estimate of ``target``'s vote vector, or ``None`` if it has none."""
    members = set(view.parties)
    n = len(ring)
    pos = ring.index(target)
    b = next((ring[(pos + j) % n] for j in range(1, n) if ring[(pos + j) % n] in members), None)
    a = next((ring[(pos - j) % n] for j in range(1, n) if ring[(pos - j) % n] in members), None)
    if a is None or b is None or start in _between(ring, a, b) or target == start:
        return None
    sent = [m for m in view.sent if m.sender == a and m.kind == "partial-sum"
            and m.protocol == ss.RING_PROTOCOL]
    got = [m for m in view.received if m.receiver == b and m.kind == "partial-sum"
           and m.protocol == ss.RING_PROTOCOL]
    if not sent or not got:
        return None
    return ss.sub(got[0].payload["s"], sent[0].payload["s"])


def shared_sum_estimate(view: View, *, target: str) -> np.ndarray | None:
    """Sum of the target's shares the coalition received."""
    shares = [m.payload["s"] for m in view.received
              if m.sender == target and m.kind == "share" and m.receiver in view.parties]
    if not shares:
        return None
    total = shares[0]
    for s in shares[1:]:
        total = ss.add(total, s)
    return total


def recovery_rate(estimate: np.ndarray | None, truth: np.ndarray) -> np.ndarray:
    """Per query: the estimate equals the true vote vector exactly."""
    if estimate is None:
        return np.zeros(len(truth), dtype=bool)
    return np.all(np.asarray(estimate, dtype=np.uint64) == np.asarray(truth, dtype=np.uint64),
                  axis=1)


__all__ = ["recovery_rate", "ring_sum_estimate", "shared_sum_estimate"]
