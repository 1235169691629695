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
    hosting a client and a server (their classes are bound to the roles in
    :mod:`.parties`).
geo, metrics, neighbours
    The GEO baseline and its fairness rules; raw and top-5 accuracy.
data
    Synthetic data of §6.1; SNAP check-ins and the thesis's quantisation.

The reproduction's session, measurements, sweeps and claims live in
:mod:`ppknn_reproductions.experiments` (``dptt_session``, ``dptt_evaluation``,
``dptt_sweeps``) and :mod:`ppknn_reproductions.lepert_claims`.
"""

from ppknn.protocols.dptt.config import PROTOCOL, ClientOutcome, DPTTSetup, ServerInfo
from ppknn.protocols.dptt.driver import DPTTResult, run_dptt
from ppknn.protocols.dptt.geo import Geo, geo_fairness
from ppknn.protocols.dptt.metrics import Truth, hits
from ppknn.protocols.dptt.neighbours import NeighbourIndex
from ppknn.protocols.dptt.tree import ModifiedKDTree
from ppknn.protocols.dptt.utility import Utility
from ppknn.protocols.dptt.variants import PrivacyAccount, Variant

__all__ = [
    "PROTOCOL",
    "ClientOutcome",
    "DPTTResult",
    "DPTTSetup",
    "Geo",
    "ModifiedKDTree",
    "NeighbourIndex",
    "PrivacyAccount",
    "ServerInfo",
    "Truth",
    "Utility",
    "Variant",
    "geo_fairness",
    "hits",
    "run_dptt",
]
