"""Party specs: which party class plays each role of a protocol, with its arguments.

Drivers in :mod:`protocols` address parties by name through a runtime and
never import a party class; the binding of roles to the classes of this
package happens here, in the layer above them.

Examples
--------
DP-TT: one client and one server (:func:`dptt_specs`).

>>> import numpy as np
>>> from ppknn.core.runtime import RunContext, make_runtime
>>> from ppknn.protocols.dptt import DPTTSetup, Utility, run_dptt
>>> rt = make_runtime("inprocess")
>>> rt.start(dptt_specs(points=np.arange(16.0), run_id="doc"), RunContext(run_id="doc"))
>>> setup = DPTTSetup(variant="basic", utility=Utility.cmp(), epsilon=40.0)
>>> result = run_dptt(rt, np.array([[3.2], [11.7]]), setup)
>>> result.outcome.ids.tolist(), result.rounds, result.messages
([3, 11], 4, 10)
>>> rt.shutdown()

DP r-N / k-NN: a DP owner and an analyst (:func:`dp_owner_spec`, :func:`analyst_spec`).

>>> from ppknn.protocols.dp_knn.driver import ask
>>> from ppknn.protocols.dp_knn.protocol import Query
>>> rt = make_runtime("inprocess")
>>> rt.start([dp_owner_spec(party_id="owner", X=np.array([[0.1], [0.9]]), y=np.array([0, 1]),
...                         classes=[0, 1], lower=[0.0], upper=[1.0], epsilon=1.0, run_id="r"),
...           analyst_spec(party_id="alice", owner="owner", run_id="r")],
...          RunContext(run_id="r"))
>>> q = Query(task="rn", algorithm="proposed", x=np.array([[0.1], [0.9]]), radius=0.2,
...           epsilon=0.5)
>>> [a.epsilon for a in ask(rt, [("alice", "owner", q), ("alice", "owner", q)])]
[0.5, 0.5]
>>> rt.state("owner", "ledger").remaining().epsilon
0.0

DP Naive Bayes model release: an NB owner and a requester
(:func:`nb_owner_spec`, :func:`nb_requester_spec`).

>>> from ppknn.protocols.dp_nb.driver import ask as ask_model
>>> from ppknn.protocols.dp_nb.protocol import ModelRequest
>>> from ppknn.protocols.dp_nb.schema import FeatureSchema
>>> schema = FeatureSchema.build(1, bounds=([0.0], [10.0]))
>>> X, y = np.array([[1.0], [2.0], [8.0], [9.0]] * 25), np.array([0, 0, 1, 1] * 25)
>>> rt = make_runtime("inprocess")
>>> rt.start([nb_owner_spec(party_id="owner", X=X, y=y, classes=[0, 1],
...                         bounds=([0.0], [10.0]), epsilon=1.0, run_id="r"),
...           nb_requester_spec(party_id="alice", owner="owner", run_id="r", classes=[0, 1],
...                             schema=schema)], RunContext(run_id="r"))
>>> models = ask_model(rt, [("alice", "owner", ModelRequest(epsilon=0.5))] * 2)
>>> [m.epsilon for m in models], rt.state("owner", "remaining_budget").epsilon
([0.5, 0.5], 0.0)
"""

from __future__ import annotations

from typing import Any

from ppknn.core.messages import PartyId
from ppknn.core.runtime import PartySpec
from ppknn.parties.analyst import Analyst
from ppknn.parties.dp_owner import DPOwner
from ppknn.parties.dptt_client import DPTTClient
from ppknn.parties.dptt_server import DPTTServer
from ppknn.parties.nb_owner import NBOwner, NBRequester
from ppknn.protocols.dptt.tree import ModifiedKDTree


# --------------------------------------------------------------------------- DP-TT
def dptt_specs(*, run_id: str, points: Any = None, tree: ModifiedKDTree | None = None,
               seed: int = 0, mode: str = "reproducible", budget: float | None = None,
               budget_delta: float = 0.0, labels: Any = None,
               client: PartyId = "client", server: PartyId = "server") -> list[PartySpec]:
    """Party specs for one DP-TT client (index 0) and one server (index 1).

    ``budget``/``budget_delta``: the client's per-user ledger cap (``None``: no
    ledger); ``labels``: the points' class labels, released with them.
    """
    return [
        PartySpec(client, DPTTClient, {"party_id": client, "server": server, "run_id": run_id,
                                       "index": 0, "seed": seed, "mode": mode,
                                       "budget": budget, "budget_delta": budget_delta}),
        PartySpec(server, DPTTServer, {"party_id": server, "client": client, "run_id": run_id,
                                       "index": 1, "points": points, "tree": tree,
                                       "labels": labels}),
    ]


# --------------------------------------------------------------------------- DP r-N / k-NN
def dp_owner_spec(*, party_id: PartyId, **kwargs: Any) -> PartySpec:
    """The :class:`~core.runtime.PartySpec` of a DP owner (``kwargs``: :class:`DPOwner`'s)."""
    return PartySpec(party_id, DPOwner, {"party_id": party_id, **kwargs})


def analyst_spec(*, party_id: PartyId, owner: PartyId, run_id: str, index: int = 1) -> PartySpec:
    """The :class:`~core.runtime.PartySpec` of an analyst of the DP owner."""
    return PartySpec(party_id, Analyst, {"party_id": party_id, "owner": owner, "run_id": run_id,
                                         "index": index})


# --------------------------------------------------------------------------- DP Naive Bayes
def nb_owner_spec(*, party_id: PartyId, **kwargs: Any) -> PartySpec:
    """The :class:`~core.runtime.PartySpec` of an NB owner (``kwargs``: :class:`NBOwner`'s)."""
    return PartySpec(party_id, NBOwner, {"party_id": party_id, **kwargs})


def nb_requester_spec(*, party_id: PartyId, **kwargs: Any) -> PartySpec:
    """The :class:`~core.runtime.PartySpec` of a requester (``kwargs``: :class:`NBRequester`'s)."""
    return PartySpec(party_id, NBRequester, {"party_id": party_id, **kwargs})


__all__ = ["analyst_spec", "dp_owner_spec", "dptt_specs", "nb_owner_spec", "nb_requester_spec"]
