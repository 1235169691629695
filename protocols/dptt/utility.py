"""The client's utilities for the left/right choice: DIS (Algorithm 13) and CMP (Algorithm 14).

Both return a ``(T, 2)`` matrix, column 0 the utility of going left and
column 1 of going right, for T decisions at once; the client feeds it to
:class:`core.dp.ExponentialMechanism` (``eta = ε / (2Δ)``, Algorithm 12).

DIS
    ``u_left = d(right child, q)``, ``u_right = d(left child, q)`` (Euclidean):
    Algorithm 13 swaps the distances "since bigger distances are worse". With
    two candidates this is the EM on ``(-d_left, -d_right)`` (softmax is
    shift-invariant). By the triangle inequality each utility moves by at
    most ``d(q, q')`` between two queries, so with the declared bound Δ (the
    *privacy radius*) each decision is ε-DP for queries within Δ of each
    other -- and ``ε d(q, q') / Δ``-DP for any pair, i.e. geo-indistinguishable
    with ε/Δ per unit of distance, like the GEO baseline. The final ε of a
    DIS query therefore holds only for queries within the radius; two queries
    d > Δ apart compose at ``ε d / Δ`` per decision.
CMP
    ``(0, 1)`` if the query lies on the right of the node at the
    discriminator d, else ``(1, 0)``; sensitivity 1 for *any* two queries, so
    the correct side is taken with probability ``e^(ε/2) / (1 + e^(ε/2))``:
    randomised response with log-odds ε/2, so each decision is ε/2-DP (and
    ε-bounded-range) -- half the ε it is charged (see
    :meth:`DPTTSetup.decision_epsilons <protocols.dptt.config.DPTTSetup.decision_epsilons>`).
    Algorithm 14 tests ``P < Q`` strictly, which sends a query equal to the
    median left although the median lies in the right subtree (Algorithm 10);
    we use Algorithm 5's rule, right iff ``q[d] >= value[d]``, so that a
    query equal to a data point can reach it. The two differ only on ties.

Examples
--------
>>> import numpy as np
>>> cmp = Utility.cmp()
>>> cmp.scores(np.array([[0.2], [0.9]]), {"parent": np.array([[0.5], [0.5]])}, 0)
array([[1., 0.],
       [0., 1.]])
>>> dis = Utility.dis(10.0)
>>> dis.scores(np.array([[1.0, 0.0]]), {"left": np.array([[0.0, 0.0]]),
...                                     "right": np.array([[4.0, 4.0]])}, 0)
array([[5., 1.]])
>>> round(float(cmp.correct_side_probability(2.0)), 4)
0.7311
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ppknn.core.dp.validation import check_epsilon, check_sensitivity
from ppknn.core.errors import ConfigError

UTILITIES = ("cmp", "dis")
NODE_FIELDS = {"cmp": ("parent",), "dis": ("left", "right")}
"""Which node values the server sends per decision: CMP needs the node, DIS its two children."""


@dataclass(frozen=True, kw_only=True)
class Utility:
    """A utility for the left/right decision.

    Parameters
    ----------
    name:
        ``"cmp"`` or ``"dis"``.
    sensitivity:
        CMP: always 1. DIS: the declared bound Δ on how far apart two
        queries may be for the per-decision ε to hold (the privacy radius).
    """

    name: str
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        if self.name not in UTILITIES:
            raise ConfigError(f"unknown utility {self.name!r}; allowed: {list(UTILITIES)}")
        sens = check_sensitivity(self.sensitivity)
        if self.name == "cmp" and sens != 1.0:
            raise ConfigError(f"the CMP utility has sensitivity 1, got sensitivity={sens!r}")
        object.__setattr__(self, "sensitivity", sens)

    @classmethod
    def cmp(cls) -> Utility:
        """The comparison utility (sensitivity 1)."""
        return cls(name="cmp")

    @classmethod
    def dis(cls, radius: float) -> Utility:
        """The distance utility with declared sensitivity bound ``radius``."""
        return cls(name="dis", sensitivity=radius)

    @property
    def fields(self) -> tuple[str, ...]:
        """Node values this utility needs per decision."""
        return NODE_FIELDS[self.name]

    def scores(self, queries: np.ndarray, nodes: dict[str, np.ndarray], disc: int) -> np.ndarray:
        """Utilities ``(T, 2)`` (left, right) for queries ``(T, k)`` and the node values sent."""
        if self.name == "cmp":
            right = queries[:, disc] >= nodes["parent"][:, disc]
            return np.stack([~right, right], axis=1).astype(np.float64)
        d_left = np.linalg.norm(nodes["left"] - queries, axis=1)
        d_right = np.linalg.norm(nodes["right"] - queries, axis=1)
        return np.stack([d_right, d_left], axis=1)  # Algorithm 13: inverted

    def correct_side_probability(self, epsilon: float) -> float:
        """CMP: ``e^(ε/2) / (1 + e^(ε/2))``, the chance of taking the correct side."""
        if self.name != "cmp":
            raise ConfigError("the correct-side probability is defined for the CMP utility")
        eps = check_epsilon(epsilon)
        return 1.0 / (1.0 + math.exp(-eps / 2.0))


__all__ = ["NODE_FIELDS", "UTILITIES", "Utility"]
