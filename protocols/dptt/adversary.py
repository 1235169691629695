"""What the DP-TT server infers about the client's queries, from its view only.

The server sees, per level, the node values it sent for every pending
decision (``nodes``: query slot, node values, discriminator) and the bit the
client answered (``bits``), and at the end the points it released per slot.
Two attacks, each a function of a :class:`~core.transcript.View` of the
server (no provenance, no query coordinates):

Side inference
    For every decision, the server claims that the query lies on the side
    the bit names: with the CMP utility ``q[d] >= node[d]`` for bit 1 and
    ``q[d] < node[d]`` for bit 0; with DIS, closer to the child the bit names.
    A scorer compares the claims with the true queries. With CMP each bit is
    a randomised response between the two sides, so the claims' success rate
    ``p`` gives the empirical per-decision privacy loss ``ln(p / (1 - p))``
    (``e^(ε/2)/(1+e^(ε/2))`` for the exponential mechanism at ε, i.e. ε/2:
    the mechanism's guarantee ε is conservative by a factor 2 here).
Location inference
    The server's estimate of each query is the mean of the points it
    released for that slot (the walk ended among them); its error is the
    Euclidean distance to the true query.

Examples
--------
>>> import numpy as np
>>> from ppknn.core.messages import Message
>>> from ppknn.core.transcript import View
>>> nodes = Message("r", "dptt", 1, 0, "server", "client", "nodes",
...                 {"slot": np.array([0, 1], np.int32), "disc": np.array([0], np.int32),
...                  "parent": np.array([[0.5], [0.5]]), "parent_id": np.array([3, 3])}, {})
>>> bits = Message("r", "dptt", 1, 0, "client", "server", "bits",
...                {"bits": np.array([1, 0], np.uint8)}, {})
>>> claims = side_claims(View(("server",), (bits,), (nodes,)))
>>> claims.slot.tolist(), claims.right.tolist(), claims.utility
([0, 1], [True, False], 'cmp')
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ppknn.core.errors import ProtocolError
from ppknn.core.transcript import View
from ppknn.protocols.dptt.config import PROTOCOL

SIDE = "server-side-inference"
LOCATION = "server-location-inference"


@dataclass(frozen=True)
class SideClaims:
    """The server's claim for every decision it asked for.

    Attributes
    ----------
    slot:
        ``(T,)`` the query slot of each decision.
    disc:
        ``(T,)`` the discriminator (CMP) of each decision.
    values:
        Node values per decision: ``{"parent": (T, D)}`` (CMP) or
        ``{"left": ..., "right": ...}`` (DIS).
    right:
        ``(T,)`` the claim: the query is on the right (CMP) / closer to the
        right child (DIS).
    utility:
        ``"cmp"`` or ``"dis"`` (read off the messages' fields).
    """

    slot: np.ndarray
    disc: np.ndarray
    values: dict[str, np.ndarray]
    right: np.ndarray
    utility: str


def side_claims(view: View) -> SideClaims:
    """Side inference over the server's view (module docstring)."""
    sent = {m.round: m for m in view.sent if m.protocol == PROTOCOL and m.kind == "nodes"}
    got = {m.round: m for m in view.received if m.protocol == PROTOCOL and m.kind == "bits"}
    slots, discs, rights = [], [], []
    values: dict[str, list[np.ndarray]] = {}
    utility = "cmp"
    for r in sorted(sent):
        nodes = sent[r]
        if r not in got:
            continue
        slot = np.asarray(nodes.payload["slot"], dtype=np.int64)
        bits = np.asarray(got[r].payload["bits"]).reshape(-1)
        if bits.shape != slot.shape:
            raise ProtocolError(f"round {r}: {bits.size} bits for {slot.size} decisions")
        utility = "cmp" if "parent" in nodes.payload else "dis"
        fields = ("parent",) if utility == "cmp" else ("left", "right")
        for f in fields:
            values.setdefault(f, []).append(np.asarray(nodes.payload[f], dtype=np.float64))
        slots.append(slot)
        discs.append(np.full(slot.size, int(np.asarray(nodes.payload["disc"]).reshape(-1)[0])))
        rights.append(bits.astype(bool))
    if not slots:
        empty = np.zeros(0, dtype=np.int64)
        return SideClaims(empty, empty, {}, np.zeros(0, dtype=bool), utility)
    return SideClaims(np.concatenate(slots), np.concatenate(discs),
                      {k: np.concatenate(v) for k, v in values.items()},
                      np.concatenate(rights), utility)


def true_sides(claims: SideClaims, queries: np.ndarray) -> np.ndarray:
    """Scorer: the side each decision's true query is on (``True``: right)."""
    q = np.asarray(queries, dtype=np.float64)[claims.slot]
    if claims.utility == "cmp":
        rows = np.arange(len(q))
        return q[rows, claims.disc] >= claims.values["parent"][rows, claims.disc]
    d_left = np.linalg.norm(claims.values["left"] - q, axis=1)
    d_right = np.linalg.norm(claims.values["right"] - q, axis=1)
    return d_right < d_left


def location_estimates(view: View, n_queries: int) -> tuple[np.ndarray, np.ndarray]:
    """Location inference: per slot the mean released point, and whether the slot had any."""
    releases = [m for m in view.sent if m.protocol == PROTOCOL and m.kind == "release"]
    if not releases:
        return np.zeros((n_queries, 0)), np.zeros(n_queries, dtype=bool)
    rel = releases[-1].payload
    slot = np.asarray(rel["slot"], dtype=np.int64)
    points = np.asarray(rel["points"], dtype=np.float64)
    if points.ndim == 1:
        points = points[:, None]
    count = np.bincount(slot, minlength=n_queries).astype(np.float64)
    sums = np.zeros((n_queries, points.shape[1]))
    np.add.at(sums, slot, points)
    has = count > 0
    est = np.where(has[:, None], sums / np.maximum(count, 1)[:, None], np.nan)
    return est, has


__all__ = ["LOCATION", "SIDE", "SideClaims", "location_estimates", "side_claims", "true_sides"]
