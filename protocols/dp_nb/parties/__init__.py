"""DP Naive Bayes parties: the NB owner and its requesters, and their specs.

Drivers address parties by name through a runtime and never import a party class;
the binding of roles to classes happens here.

Examples
--------
DP Naive Bayes model release: an NB owner and a requester
(:func:`nb_owner_spec`, :func:`nb_requester_spec`).

>>> import numpy as np
>>> from ppknn.core.runtime import RunContext, make_runtime
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
from ppknn.protocols.dp_nb.parties.nb_owner import NBOwner, NBRequester


def nb_owner_spec(*, party_id: PartyId, **kwargs: Any) -> PartySpec:
    """The :class:`~core.runtime.PartySpec` of an NB owner (``kwargs``: :class:`NBOwner`'s)."""
    return PartySpec(party_id, NBOwner, {"party_id": party_id, **kwargs})


def nb_requester_spec(*, party_id: PartyId, **kwargs: Any) -> PartySpec:
    """The :class:`~core.runtime.PartySpec` of a requester (``kwargs``: :class:`NBRequester`'s)."""
    return PartySpec(party_id, NBRequester, {"party_id": party_id, **kwargs})


__all__ = ["nb_owner_spec", "nb_requester_spec"]
