"""DP-TT parties: the client and the server, and their specs.

Drivers address parties by name through a runtime and never import a party class;
the binding of roles to classes happens here (:func:`dptt_specs`).

Examples
--------
One client and one server.

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
"""

from __future__ import annotations

from typing import Any

from ppknn.core.messages import PartyId
from ppknn.core.runtime import PartySpec
from ppknn.protocols.dptt.parties.dptt_client import DPTTClient
from ppknn.protocols.dptt.parties.dptt_server import DPTTServer
from ppknn.protocols.dptt.tree import ModifiedKDTree


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


__all__ = ["dptt_specs"]
