"""The DP-TT server: holds the data in the modified kd-tree and walks it as the client's bits say.

The server learns only what it receives -- the number of queries in the
batch and, per level, one bit per pending decision -- and sends the node
values each decision needs (CMP: the node; DIS: its two children) and, at
the end, the released points. Its privacy is not protected (thesis §5.2),
so it also sends the data indices of the points it reveals, which lets the
client count how much of the data it has seen, and -- when built with
``labels`` -- the released points' labels (for classification).

Rounds: ``open`` (client → server, round 0), then for r = 1..R a ``nodes``
message (server → client, round r) and a ``bits`` message (client →
server, round r), then ``release`` (server → client, round R + 1), with
R = ``Variant.rounds(height)``.
"""

from __future__ import annotations

import numpy as np

from ppknn.core.errors import ConfigError, ProtocolError
from ppknn.core.messages import Message, PartyId, uniform_provenance
from ppknn.protocols.dptt.api import ServerAPI
from ppknn.protocols.dptt.config import PROTOCOL, DPTTSetup, ServerInfo
from ppknn.protocols.dptt.neighbours import NeighbourIndex
from ppknn.protocols.dptt.traversal import ServerTraversal
from ppknn.protocols.dptt.tree import ModifiedKDTree


class DPTTServer(ServerAPI):
    """The server party.

    Parameters
    ----------
    party_id, client:
        This party's and the client's names.
    run_id:
        The run's id (bound into messages).
    index:
        Provenance code of this party.
    points:
        The server's data ``(N, k)``; the tree is built here (O(N log N)).
    tree:
        Alternatively a tree built beforehand (shared between runs in one process).
    labels:
        Optional ``(N,)`` class labels of the points; when given, the release
        carries the released points' labels too (classification).
    """

    def __init__(self, *, party_id: PartyId = "server", client: PartyId = "client",
                 run_id: str, index: int = 1, points: np.ndarray | None = None,
                 tree: ModifiedKDTree | None = None, labels: np.ndarray | None = None) -> None:
        if (points is None) == (tree is None):
            raise ConfigError("give the server either points or a prebuilt tree, not both")
        self.party_id, self.client, self.run_id, self.index = party_id, client, run_id, index
        self.tree = tree if tree is not None else ModifiedKDTree.build_cached(points)
        self.labels: np.ndarray | None = None
        if labels is not None:
            lab = np.asarray(labels)
            if lab.shape != (self.tree.n_points,) or lab.dtype.kind not in "iu":
                raise ConfigError(f"labels must be {self.tree.n_points} integer class labels "
                                  f"(one per point), got shape {lab.shape} of {lab.dtype}")
            self.labels = lab.astype(np.int64)
        self._neighbours: NeighbourIndex | None = None
        self.setup: DPTTSetup | None = None
        self.walk: ServerTraversal | None = None
        self.round = 0

    # -- set-up ----------------------------------------------------------------
    def describe(self) -> ServerInfo:
        """The public facts about the tree."""
        return ServerInfo(n_points=self.tree.n_points, dim=self.tree.dim,
                          height=self.tree.height)

    def configure(self, setup: DPTTSetup) -> int:
        """Accept the public set-up; returns the number of rounds."""
        if not isinstance(setup, DPTTSetup):
            raise ConfigError(f"expected a DPTTSetup, got {type(setup).__name__}")
        rounds = setup.rounds(self.tree.height)  # checks s against the height
        if setup.variant.neighbourhood > 1 and self._neighbours is None:
            self._neighbours = NeighbourIndex(self.tree.points)
        self.setup, self.walk, self.round = setup, None, 0
        return rounds

    # -- protocol steps --------------------------------------------------------
    def begin(self, opening: Message) -> Message:
        """Start the batch announced by ``opening``; returns round 1's nodes (or the release)."""
        if self.setup is None:
            raise ProtocolError(f"{self.party_id}: configure() before begin()")
        if opening.kind != "open":
            raise ProtocolError(f"{self.party_id}: expected 'open', got {opening.kind!r}")
        n_queries = int(np.asarray(opening.payload["n_queries"]).reshape(-1)[0])
        self.walk = ServerTraversal(self.tree, self.setup.variant, n_queries)
        self.round = 1
        return self._next()

    def advance(self, answer: Message) -> Message:
        """Apply the client's bits of this round; returns the next nodes (or the release)."""
        if self.walk is None or self.setup is None:
            raise ProtocolError(f"{self.party_id}: begin() before advance()")
        if answer.kind != "bits" or answer.round != self.round:
            raise ProtocolError(f"{self.party_id}: expected the bits of round {self.round}, got "
                                f"{answer.kind!r} of round {answer.round}")
        self.walk.apply(answer.payload["bits"])
        self.round += 1
        return self._next()

    def _next(self) -> Message:
        assert self.walk is not None and self.setup is not None
        rounds = self.setup.rounds(self.tree.height)
        if self.round > rounds:
            return self._release()
        slots, nodes = self.walk.request()
        tree = self.tree
        if self.setup.utility.name == "cmp":
            ids = {"parent": tree.value[nodes]}
        else:
            ids = {"left": tree.value[2 * nodes], "right": tree.value[2 * nodes + 1]}
        payload: dict[str, np.ndarray] = {
            "slot": slots.astype(np.int32),
            "disc": np.array([tree.discriminator(self.walk.depth)], dtype=np.int32),
        }
        for name, idx in ids.items():
            payload[name] = tree.points[idx]
            payload[f"{name}_id"] = idx
        return self._message("nodes", payload)

    def _release(self) -> Message:
        assert self.walk is not None
        if not self.walk.finished:
            raise ProtocolError(f"{self.party_id}: rounds are over but the traversal is not")
        out = self.walk.release(self._neighbours)
        payload = {"slot": out.slots.astype(np.int32), "ids": out.ids,
                   "points": self.tree.points[out.ids], "found": out.found.astype(np.int32)}
        if self.labels is not None:
            payload["labels"] = self.labels[out.ids]
        return self._message("release", payload)

    def _message(self, kind: str, payload: dict[str, np.ndarray]) -> Message:
        return Message(self.run_id, PROTOCOL, self.round, -1, self.party_id, self.client, kind,
                       payload, {k: uniform_provenance(self.index) for k in payload})


__all__ = ["DPTTServer"]
