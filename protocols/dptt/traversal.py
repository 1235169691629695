"""The server's level-synchronous traversal of a query batch (Algorithms 11, 15-18).

A *thread* is one (query slot, tree node) pair being walked down; the basic
traversal has one per query, P(s) 2^s, GS one more per level. All threads
of all queries sit at the same depth, so one client message per level
answers every pending decision of the batch. Per level the server

1. retires threads at leaves (and, for E(s), every thread once the depth
   reaches ``H - s``: the whole subtree is released);
2. for P(s) above depth s, splits every thread in two *without* asking
   the client (no exponential mechanism, no message);
3. asks the client for one bit per remaining thread (:meth:`request`),
   and on the answer (:meth:`apply`) moves each thread to the chosen
   child; a GS thread that still splits also starts a thread, which never
   splits, in the other child.

E(s) stops at depth ``H - s`` for every thread. Algorithm 16 tests the
node's *height* (``P.height > S``); in this tree the two agree except in a
subtree that is one level short of the worst case, where the depth rule
keeps the number of decisions at exactly ``H - s`` as §5.4 counts it
(Algorithm 16 would stop one level higher there). Deviation from the
thesis, flagged in the Lepert report; :func:`early_stop_disagreements`
counts where it matters.

The number of rounds is public (``Variant.rounds(height)``): it depends on
the tree and the variant only, never on a query, so the server can send
an empty message at a level where no decision is pending.

Examples
--------
>>> import numpy as np
>>> from ppknn.protocols.dptt.tree import ModifiedKDTree
>>> from ppknn.protocols.dptt.variants import Variant
>>> tree = ModifiedKDTree.build(np.arange(8.0))
>>> walk = ServerTraversal(tree, Variant.parse("GS"), n_queries=1)
>>> for _ in range(Variant.parse("GS").rounds(tree.height)):
...     slots, nodes = walk.request()
...     walk.apply(np.zeros(len(slots), dtype=np.uint8))  # always "left"
>>> walk.finished, sorted(tree.points[walk.release().ids].ravel().tolist())
(True, [0.0, 1.0, 2.0, 4.0])
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from ppknn.core.errors import ProtocolError
from ppknn.protocols.dptt.neighbours import NeighbourIndex, counts_per_slot, dedupe_pairs
from ppknn.protocols.dptt.tree import ModifiedKDTree, tree_height
from ppknn.protocols.dptt.variants import Variant


@dataclass(frozen=True)
class Released:
    """What the server releases for a batch.

    Attributes
    ----------
    slots, ids:
        Distinct ``(query slot, data index)`` pairs, sorted by slot then id.
    found:
        ``(Q,)`` points the traversal itself reached per query (leaves, or the
        leaves of the E(s) subtree), before neighbourhoods are added.
    """

    slots: np.ndarray
    ids: np.ndarray
    found: np.ndarray


class ServerTraversal:
    """Walk ``n_queries`` threads down ``tree`` as ``variant`` prescribes (module docstring)."""

    def __init__(self, tree: ModifiedKDTree, variant: Variant, n_queries: int) -> None:
        variant.check_height(tree.height)
        self.tree, self.variant, self.n_queries = tree, variant, int(n_queries)
        self.depth = 0
        self.slot = np.arange(self.n_queries, dtype=np.int64)
        self.node = np.ones(self.n_queries, dtype=np.int64)
        self.split = np.full(self.n_queries, variant.greedy)
        self._done_slot: list[np.ndarray] = []
        self._done_node: list[np.ndarray] = []
        self._settle()

    @property
    def finished(self) -> bool:
        """No thread waits for a decision."""
        return self.slot.size == 0

    def _retire(self, mask: np.ndarray) -> None:
        self._done_slot.append(self.slot[mask])
        self._done_node.append(self.node[mask])
        keep = ~mask
        self.slot, self.node, self.split = self.slot[keep], self.node[keep], self.split[keep]

    def _settle(self) -> None:
        """Retire finished threads and do the splits that need no decision."""
        v, h = self.variant, self.tree.height
        while True:
            self._retire(self.tree.is_leaf(self.node))
            if self.finished:
                return
            if v.kind == "E" and self.depth >= h - v.s:
                self._retire(np.ones(self.slot.size, dtype=bool))
                return
            if v.kind == "P" and self.depth < v.s:
                self.slot = np.repeat(self.slot, 2)
                self.node = (2 * self.node[:, None] + np.array([0, 1])).ravel()
                self.split = np.repeat(self.split, 2)
                self.depth += 1
                continue
            return

    def request(self) -> tuple[np.ndarray, np.ndarray]:
        """Threads awaiting a bit at this depth: ``(query slots, heap nodes)``."""
        return self.slot, self.node

    def apply(self, bits: np.ndarray) -> None:
        """Move every pending thread to the child its bit names (0 left, 1 right)."""
        bits = np.asarray(bits)
        if bits.shape != self.slot.shape:
            raise ProtocolError(
                f"expected {self.slot.size} bits at depth {self.depth}, got shape {bits.shape}"
            )
        if bits.size and (bits.min() < 0 or bits.max() > 1):
            raise ProtocolError("bits must be 0 (left) or 1 (right)")
        b = bits.astype(np.int64)
        chosen = 2 * self.node + b
        if self.variant.greedy:
            sp = self.split
            self.slot = np.concatenate([self.slot, self.slot[sp]])
            self.node = np.concatenate([chosen, 2 * self.node[sp] + 1 - b[sp]])
            self.split = np.concatenate([sp, np.zeros(int(sp.sum()), dtype=bool)])
        else:
            self.node = chosen
        self.depth += 1
        self._settle()

    def release(self, index: NeighbourIndex | None = None) -> Released:
        """The released points: leaves (or subtrees) reached, plus neighbourhoods for N, GS-N."""
        if not self.finished:
            raise ProtocolError(f"{self.slot.size} threads still wait for bits at depth "
                                f"{self.depth}; the traversal is not finished")
        slots = np.concatenate(self._done_slot)
        nodes = np.concatenate(self._done_node)
        owner, ids = self.tree.leaves_of(nodes)
        slots, ids = dedupe_pairs(slots[owner], ids, self.tree.n_points)
        found = counts_per_slot(slots, self.n_queries)
        b = self.variant.neighbourhood
        if b > 1:
            if index is None:
                raise ProtocolError(f"variant {self.variant.label} needs a neighbour index")
            near = index.neighbourhoods(ids, b)
            slots, ids = dedupe_pairs(np.repeat(slots, near.shape[1]), near.ravel(),
                                      self.tree.n_points)
        return Released(slots=slots, ids=ids, found=found)


def early_stop_disagreements(n_points: int, s: int) -> int:
    """Nodes where Algorithm 16's height rule stops E(s) one level above the depth rule.

    Median splits keep the nodes of one depth within one point of each other,
    so a node's height is ``H - depth`` or one less; Algorithm 16 stops where
    it is at most ``s``, which happens above depth ``H - s`` only at depth
    ``H - s - 1``, in a node of 2 to ``2^s`` points. Counts those nodes (0:
    both rules give the same traversals on any ``n_points``-point tree).

    >>> early_stop_disagreements(100_000, 8), early_stop_disagreements(10_000, 2)
    (0, 240)
    """
    height = tree_height(n_points)
    depth = height - s - 1
    if depth < 0:
        return 0
    sizes = Counter({n_points: 1})
    for _ in range(depth):
        below: Counter[int] = Counter()
        for m, c in sizes.items():
            if m > 1:  # Algorithm 10's split: the left child takes the smaller half
                below[m // 2] += c
                below[m - m // 2] += c
        sizes = below
    return sum(c for m, c in sizes.items() if 1 < m <= 2**s)


__all__ = ["Released", "ServerTraversal", "early_stop_disagreements"]
