"""Public configuration of a DP-TT run and the results client, server and driver share.

Examples
--------
>>> setup = DPTTSetup(variant="E8", utility=Utility.cmp(), epsilon=5.0)
>>> setup.variant.label, setup.rounds(17)
('E8', 9)
>>> round(setup.account(17).epsilon_sum, 6)
45.0
>>> DPTTSetup(variant="E8", utility=Utility.cmp(), epsilon=0.0)
Traceback (most recent call last):
...
ppknn.core.errors.ConfigError: epsilon must be a finite number > 0, got 0.0
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ppknn.core.dp.validation import check_delta, check_epsilon
from ppknn.core.errors import ConfigError
from ppknn.protocols.dptt.utility import Utility
from ppknn.protocols.dptt.variants import DEFAULT_DELTA, PrivacyAccount, Variant

PROTOCOL = "dptt"
"""Protocol name in every DP-TT message."""


@dataclass(frozen=True, kw_only=True)
class DPTTSetup:
    """What client and server agree on before a batch (all public).

    Parameters
    ----------
    variant:
        A :class:`~protocols.dptt.variants.Variant` or its label (``"E8"``).
    utility:
        :meth:`Utility.cmp() <protocols.dptt.utility.Utility.cmp>` or
        :meth:`Utility.dis(radius) <protocols.dptt.utility.Utility.dis>`.
    epsilon:
        ε of each exponential mechanism (per decision), > 0.
    delta:
        δ of the bounded-range composition bound.
    """

    variant: Variant
    utility: Utility
    epsilon: float
    delta: float = DEFAULT_DELTA

    def __post_init__(self) -> None:
        object.__setattr__(self, "variant", Variant.parse(self.variant))
        if not isinstance(self.utility, Utility):
            raise ConfigError(f"utility must be Utility.cmp() or Utility.dis(radius), got "
                              f"{self.utility!r}")
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "delta", check_delta(self.delta))

    def rounds(self, height: int) -> int:
        """Client/server rounds for a tree of this height."""
        return self.variant.rounds(height)

    def account(self, height: int) -> PrivacyAccount:
        """Final ε of one query (worst-case height)."""
        return self.variant.account(height, epsilon=self.epsilon, delta=self.delta)


@dataclass(frozen=True)
class ServerInfo:
    """What the server makes public about its tree: size, dimension, worst-case height."""

    n_points: int
    dim: int
    height: int


@dataclass(frozen=True)
class ClientOutcome:
    """What the client holds after a batch.

    Attributes
    ----------
    slots, ids, points:
        The released ``(slot, data index)`` pairs (sorted by slot) and the points.
    found:
        ``(Q,)`` points the traversal itself reached, before neighbourhoods.
    released:
        ``(Q,)`` distinct points released per query.
    seen:
        ``(Q,)`` distinct data points the client received per query (node
        values during the traversal and the released points).
    decisions:
        Exponential mechanisms drawn (all queries, all levels).
    labels:
        The released points' class labels, aligned with ``ids`` (``None`` when
        the server holds no labels).
    """

    slots: np.ndarray
    ids: np.ndarray
    points: np.ndarray
    found: np.ndarray
    released: np.ndarray
    seen: np.ndarray
    decisions: int
    labels: np.ndarray | None = None


__all__ = ["PROTOCOL", "ClientOutcome", "DPTTSetup", "ServerInfo"]
