"""DP-TT (Lepert 2022): private nearest-neighbour queries by DP kd-tree traversal.

A server holds its data in the modified kd-tree of Algorithm 10; a client
holds private queries. Level by level the server sends node values and the
client answers one bit per query drawn with the exponential mechanism
(utility DIS or CMP), so the server's whole view -- the bits -- is ε-DP in
the queries, ε being the bounded-range composition of the decisions.

Modules
-------
tree
    :class:`ModifiedKDTree` (O(k N log N) build, plain descents).
utility, variants, config
    :class:`Utility` (DIS, CMP), :class:`Variant` (basic, P(s), E(s), GS,
    N(B), GS-N(B)) with composition counts and :class:`PrivacyAccount`,
    the public :class:`DPTTSetup`.
traversal, driver
    The server's level-synchronous walk; :func:`run_dptt` over a runtime
    hosting :class:`~parties.dptt_client.DPTTClient` and
    :class:`~parties.dptt_server.DPTTServer`; :class:`DPTTSession`.
geo, metrics, neighbours
    The GEO baseline and its fairness rules; raw and top-5 accuracy.
data
    Synthetic data of §6.1; SNAP check-ins and the thesis's quantisation.
evaluation, sweeps, claims
    Rows of the reproduction's figures, the experiment grid, the thesis's
    claims checked (``ppknn reproduce lepert``).

Examples
--------
>>> import numpy as np
>>> from protocols.dptt import DPTTSession, DPTTSetup, Utility
>>> rng = np.random.default_rng(0)
>>> with DPTTSession(points=rng.uniform(0, 1, (1000, 2)), seed=1) as session:
...     result = session.run(rng.uniform(0, 1, (5, 2)),
...                          DPTTSetup(variant="E4", utility=Utility.cmp(), epsilon=2.0))
>>> result.account.compositions, result.rounds, int(result.outcome.released.max()) <= 16
(6, 6, True)
"""

import importlib
from typing import Any

from protocols.dptt.config import PROTOCOL, DPTTSetup, ServerInfo
from protocols.dptt.geo import Geo, geo_fairness
from protocols.dptt.metrics import Truth, hits
from protocols.dptt.neighbours import NeighbourIndex
from protocols.dptt.tree import ModifiedKDTree
from protocols.dptt.utility import Utility
from protocols.dptt.variants import PrivacyAccount, Variant

_DRIVER = ("DPTTResult", "DPTTSession", "dptt_specs", "run_batch", "run_dptt")


def __getattr__(name: str) -> Any:
    """The driver's names, imported on first use (the parties import this package)."""
    if name in _DRIVER:
        return getattr(importlib.import_module("protocols.dptt.driver"), name)
    raise AttributeError(f"module 'protocols.dptt' has no attribute {name!r}")


__all__ = [
    "PROTOCOL",
    "DPTTResult",
    "DPTTSession",
    "DPTTSetup",
    "Geo",
    "ModifiedKDTree",
    "NeighbourIndex",
    "PrivacyAccount",
    "ServerInfo",
    "Truth",
    "Utility",
    "Variant",
    "dptt_specs",
    "geo_fairness",
    "hits",
    "run_batch",
    "run_dptt",
]
