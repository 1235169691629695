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

from dataclasses import dataclass, replace

import numpy as np

from ppknn.core.dp.validation import check_delta, check_epsilon
from ppknn.core.errors import ConfigError
from ppknn.protocols.dptt.utility import Utility
from ppknn.protocols.dptt.variants import DEFAULT_DELTA, PrivacyAccount, Variant

PROTOCOL = "dptt"
"""Protocol name in every DP-TT message."""
CALIBRATIONS = ("proven", "thesis-reading")
"""How the exponential mechanism scales the utility (:class:`DPTTSetup`)."""


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
    calibration:
        How the client's exponential mechanism scales the utility.
        ``"proven"`` (default): ``exp(ε u / (2Δ))`` (Algorithm 12); each
        decision is ε-bounded-range, ε-DP for DIS (queries within the radius)
        and ε/2-DP for CMP (randomised response with log-odds ε/2).
        ``"thesis-reading"``: ``exp(ε u / Δ)``, the mechanism the thesis's
        reported accuracies imply (a reading, for the reproduction only): each
        decision is 2ε-bounded-range, ε-DP for CMP (log-odds ε) and 2ε-DP for
        DIS. :meth:`decision_epsilons` gives these per-decision figures.

    Accounting: :meth:`account` is what a query is charged (the client's
    ledger, the run's ``privacy``); :meth:`spent_account` is the smallest
    final ε this code proves for the mechanism that runs; :meth:`stated_account`
    is what the thesis would state (ε-bounded-range decisions at ``epsilon``).
    ``"proven"`` charges the stated account: for DIS that is what it spends;
    for CMP it charges ε per decision for an ε/2-DP decision, up to twice what
    it spends (2x wherever summation is the smaller bound) -- safe, and kept,
    as it is Algorithm 12's and the thesis's accounting. ``"thesis-reading"``
    charges what it spends (charging the stated ε would be unsafe).
    """

    variant: Variant
    utility: Utility
    epsilon: float
    delta: float = DEFAULT_DELTA
    calibration: str = "proven"

    def __post_init__(self) -> None:
        object.__setattr__(self, "variant", Variant.parse(self.variant))
        if not isinstance(self.utility, Utility):
            raise ConfigError(f"utility must be Utility.cmp() or Utility.dis(radius), got "
                              f"{self.utility!r}")
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "delta", check_delta(self.delta))
        if self.calibration not in CALIBRATIONS:
            raise ConfigError(f"calibration must be one of {list(CALIBRATIONS)}, got "
                              f"{self.calibration!r}")

    @property
    def mechanism_epsilon(self) -> float:
        """The ε handed to the exponential mechanism ``exp(ε u / (2Δ))``.

        ``"thesis-reading"`` runs ``exp(ε u / Δ) = exp(2ε u / (2Δ))``.
        """
        return self.epsilon * (2.0 if self.calibration == "thesis-reading" else 1.0)

    def rounds(self, height: int) -> int:
        """Client/server rounds for a tree of this height."""
        return self.variant.rounds(height)

    @property
    def decision_epsilons(self) -> tuple[float, float]:
        """``(pure ε-DP, bounded-range ε)`` of one decision of the mechanism that runs.

        With two outcomes the log-odds of the EM's choice is
        ``η (u_left - u_right)``, ``η = mechanism_epsilon / (2Δ)``. CMP: the
        difference is ±1 and flips between two queries, so the choice is
        randomised response with log-odds ``η``: ``η``-DP and ``2η``-bounded-range.
        DIS: the difference moves by up to ``2Δ`` within the radius, so the
        decision is ``2ηΔ``-DP and ``2ηΔ``-bounded-range.

        >>> [DPTTSetup(variant="basic", utility=u, epsilon=1.0, calibration=c).decision_epsilons
        ...  for u in (Utility.cmp(), Utility.dis(5.0)) for c in CALIBRATIONS]
        [(0.5, 1.0), (1.0, 2.0), (1.0, 1.0), (2.0, 2.0)]
        """
        br = self.mechanism_epsilon
        return (br / 2.0 if self.utility.name == "cmp" else br), br

    def account(self, height: int) -> PrivacyAccount:
        """Final ε one query is charged (worst-case height; see ``calibration``).

        ``"proven"``: :meth:`stated_account`; ``"thesis-reading"``: :meth:`spent_account`.

        >>> s = DPTTSetup(variant="E8", utility=Utility.cmp(), epsilon=5.0,
        ...               calibration="thesis-reading")
        >>> a, st = s.account(17), s.stated_account(17)
        >>> round(st.epsilon_br, 3), round(a.epsilon_br, 3), a.epsilon_sum
        (45.0, 45.0, 45.0)
        >>> round(DPTTSetup(variant="E8", utility=Utility.dis(1.0), epsilon=5.0,
        ...                 calibration="thesis-reading").account(17).epsilon_sum, 6)
        90.0
        """
        if self.calibration == "proven":
            return self.stated_account(height)
        return self.spent_account(height)

    def spent_account(self, height: int) -> PrivacyAccount:
        """The smallest final ε this code proves for one query of the mechanism that runs.

        The minimum of the bounded-range bound (Theorem 2.13) over decisions of
        the bounded-range ε of :meth:`decision_epsilons` and the sum of their
        pure ε; ``epsilon`` of the account is the pure ε of one decision. At
        most :meth:`account`; below it only for CMP under ``"proven"``:

        >>> s = DPTTSetup(variant="E8", utility=Utility.cmp(), epsilon=5.0)
        >>> s.account(17).epsilon_br, s.spent_account(17).epsilon_br
        (45.0, 22.5)
        >>> round(DPTTSetup(variant="GS", utility=Utility.cmp(), epsilon=1.0
        ...                 ).spent_account(17).epsilon_br, 3)  # the bound beats the sum 76.5
        53.98
        """
        dp, br = self.decision_epsilons
        if dp == br == self.epsilon:
            return self.stated_account(height)
        c = self.variant.compositions(height)
        # br-bounded-range decisions (the bound), each dp-DP (the sum): the smaller holds
        true = PrivacyAccount.of(c, br, self.delta)
        total = c * dp
        return replace(true, epsilon=dp, epsilon_sum=total,
                       epsilon_br=min(true.epsilon_br, total))

    def stated_account(self, height: int) -> PrivacyAccount:
        """The account of ε-bounded-range decisions at ``epsilon`` (what the thesis states)."""
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


__all__ = ["CALIBRATIONS", "PROTOCOL", "ClientOutcome", "DPTTSetup", "ServerInfo"]
