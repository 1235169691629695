"""DP r-N / k-NN parties: the DP owner and its analysts, and their specs.

Drivers address parties by name through a runtime and never import a party class;
the binding of roles to classes happens here.

Examples
--------
DP r-N / k-NN: a DP owner and an analyst (:func:`dp_owner_spec`, :func:`analyst_spec`).

>>> import numpy as np
>>> from ppknn.core.runtime import RunContext, make_runtime
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
"""

from __future__ import annotations

from typing import Any

from ppknn.core.messages import PartyId
from ppknn.core.runtime import PartySpec
from ppknn.protocols.dp_knn.parties.analyst import Analyst
from ppknn.protocols.dp_knn.parties.dp_owner import DPOwner


def dp_owner_spec(*, party_id: PartyId, **kwargs: Any) -> PartySpec:
    """The :class:`~core.runtime.PartySpec` of a DP owner (``kwargs``: :class:`DPOwner`'s)."""
    return PartySpec(party_id, DPOwner, {"party_id": party_id, **kwargs})


def analyst_spec(*, party_id: PartyId, owner: PartyId, run_id: str, index: int = 1) -> PartySpec:
    """The :class:`~core.runtime.PartySpec` of an analyst of the DP owner."""
    return PartySpec(party_id, Analyst, {"party_id": party_id, "owner": owner, "run_id": run_id,
                                         "index": index})


__all__ = ["analyst_spec", "dp_owner_spec"]
