"""Differentially private r-N and k-NN classification (Gursoy, Inan, Nergiz & Saygin 2017).

A central DP owner (:class:`protocols.dp_knn.parties.dp_owner.DPOwner`) holds the training
data and a privacy ledger; analysts (:class:`protocols.dp_knn.parties.analyst.Analyst`) send
batches of test instances and get ε-DP labels.

Modules
-------
validation
    Input checks (``ConfigError`` naming the value and what is allowed).
index
    The owner's private per-label kd-trees (every data access goes through it).
overlap, cliques
    The region overlap graph (spatial index) and per-component clique bounds.
rn
    r-N classifiers: baseline (Laplace, exponential) and proposed (Algorithm 3).
conversion
    k-NN → r-N: interactive (Algorithm 6) and non-interactive (Algorithm 7).
knn
    k-NN classifiers: baseline (Algorithm 4) and converted (Algorithm 5).
protocol
    Queries and answers as messages.
driver
    Asking through a runtime (the request/reply loop of :mod:`core.service`;
    an owner with ``max_concurrency > 1`` serves analysts concurrently on Ray).
"""

from ppknn.protocols.dp_knn.cliques import METHODS, CliqueBounds, clique_bounds
from ppknn.protocols.dp_knn.conversion import (
    CONVERSIONS,
    Conversion,
    NoisyGrid,
    avre,
    build_grid,
    convert_interactive,
    convert_noninteractive,
    rmse_k,
)
from ppknn.protocols.dp_knn.index import LabelIndex
from ppknn.protocols.dp_knn.knn import KNN_ALGORITHMS, KNNResult, classify_knn
from ppknn.protocols.dp_knn.overlap import OverlapGraph, overlap_graph
from ppknn.protocols.dp_knn.protocol import PROTOCOL, Answer, Query
from ppknn.protocols.dp_knn.rn import RN_ALGORITHMS, RNPlan, RNResult, classify_rn, plan_rn

__all__ = [
    "CONVERSIONS",
    "KNN_ALGORITHMS",
    "METHODS",
    "PROTOCOL",
    "RN_ALGORITHMS",
    "Answer",
    "CliqueBounds",
    "Conversion",
    "KNNResult",
    "LabelIndex",
    "NoisyGrid",
    "OverlapGraph",
    "Query",
    "RNPlan",
    "RNResult",
    "avre",
    "build_grid",
    "classify_knn",
    "classify_rn",
    "clique_bounds",
    "convert_interactive",
    "convert_noninteractive",
    "overlap_graph",
    "plan_rn",
    "rmse_k",
]
