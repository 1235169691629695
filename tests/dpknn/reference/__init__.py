"""The DP owner's previous index, overlap graph and clique search, kept verbatim.

The fast paths must give the very answers of this code: :func:`reference_knn` is the
interactive DP k-NN of :func:`ppknn.protocols.dp_knn.knn.classify_knn` computed with
these modules (the same random draws in the same order).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ppknn.protocols.dp_knn.conversion import convert_interactive
from ppknn.protocols.dp_knn.rn import RNPlan, classify_rn
from tests.dpknn.reference.ref_cliques import clique_bounds
from tests.dpknn.reference.ref_index import LabelIndex
from tests.dpknn.reference.ref_overlap import overlap_graph


def reference_knn(X: np.ndarray, y: np.ndarray, n_classes: int, x: np.ndarray, k: int, *,
                  epsilon: float, bounds: Any, rng: Any, weight: float = 0.5,
                  time_limit_s: float = 600.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(labels, radii, sensitivity) of the interactive DP k-NN by the previous code."""
    index = LabelIndex(X, y, n_classes=n_classes)
    conv = convert_interactive(index, x, k, epsilon=epsilon * weight, bounds=bounds, rng=rng)
    graph = overlap_graph(x, conv.radii)
    plan = RNPlan(graph=graph, cliques=clique_bounds(graph, time_limit_s=time_limit_s))
    eps_rn = math.inf if epsilon == math.inf else epsilon - epsilon * weight
    rn = classify_rn(index, x, conv.radii, algorithm="proposed", epsilon=eps_rn, rng=rng,
                     plan=plan)
    return rn.labels, conv.radii, rn.sensitivity
