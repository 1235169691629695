"""What a fitted estimator's releases have cost since ``fit``: check, run, spend.

A DP estimator releases something on every ``predict`` (``transform``): each
call is a new release about the same training rows (DP-TT: about the query
slots), so the costs add up (sequential composition). :class:`Spending` keeps
the exact sums since ``fit`` (amounts as :class:`fractions.Fraction` of their
shortest decimal, as the privacy ledger does, so three calls at ε = 0.1 spend
exactly 0.3) and refuses a call that would take the total above the
estimator's ``budget`` *before* anything runs (:class:`BudgetRefused`).

Examples
--------
>>> s = Spending("Est", guarantee="ε-DP", budget=10.0)
>>> for _ in range(2):
...     s.check(4.0)
...     s.spend(4.0, 0.0, {"owner": (4.0, 0.0)})
>>> s.total().epsilon, s.total().per_party["owner"], s.calls
(8.0, (8.0, 0.0), 2)
>>> s.check(4.0)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ppknn.simulations.estimators.spending.BudgetRefused: Est: budget = 10.0 cannot pay ...
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction

from ppknn.core.dp.ledger import exact
from ppknn.core.errors import BudgetExhausted, ConfigError
from ppknn.protocols.base import PrivacySpent

Amount = Fraction | float
"""An exact amount, or ``math.inf`` (a release without noise)."""


class BudgetRefused(BudgetExhausted, ConfigError):
    """A call the estimator's ``budget`` cannot pay for; raised before anything is released.

    Both a :class:`~ppknn.core.errors.BudgetExhausted` (what a ledger raises) and a
    :class:`~ppknn.core.errors.ConfigError`, so a ``ValueError``.
    """


def _amount(value: float) -> Amount:
    value = float(value)
    return math.inf if math.isinf(value) else exact(value)


def _fmt(value: Amount) -> str:
    return f"{float(value):.6g}"


class Spending:
    """The sums of what one fitted estimator's calls spent (module docstring).

    Parameters
    ----------
    who:
        The estimator's name (in messages).
    guarantee:
        What one call's ε means (the protocol's privacy unit).
    budget:
        The most ε all calls since ``fit`` may spend together (``None``: no cap).
    """

    def __init__(self, who: str, *, guarantee: str, budget: float | None = None) -> None:
        self.who = who
        self.guarantee = guarantee
        self.budget = budget
        self.calls = 0
        self._eps: Amount | None = Fraction(0)
        self._delta: Amount | None = Fraction(0)
        self._per_party: dict[str, list[Amount]] = {}

    def check(self, epsilon: float | None) -> None:
        """Raise :class:`BudgetRefused` unless a call costing ``epsilon`` fits the budget."""
        if self.budget is None or epsilon is None or self._eps is None:
            return
        after = self._eps + _amount(epsilon)
        if after > exact(self.budget):
            raise BudgetRefused(
                f"{self.who}: budget = {self.budget!r} cannot pay for this call (epsilon "
                f"{_fmt(_amount(epsilon))}) on top of the {_fmt(self._eps)} spent by "
                f"{self.calls} call(s) since fit; nothing was released. Batch the rows "
                "into fewer calls; a refit starts a new account, which only a new budget "
                "from the data owner justifies")

    def spend(self, epsilon: float | None, delta: float | None = 0.0,
              per_party: Mapping[str, tuple[float, float]] | None = None) -> None:
        """Add one call's cost (``epsilon None``: a protocol without an ε, nothing to add)."""
        self.calls += 1
        if epsilon is None or self._eps is None or self._delta is None:
            self._eps = self._delta = None
            return
        self._eps = self._eps + _amount(epsilon)
        self._delta = self._delta + _amount(delta or 0.0)
        for party, (e, d) in (per_party or {}).items():
            acc = self._per_party.setdefault(party, [Fraction(0), Fraction(0)])
            acc[0] += _amount(e)
            acc[1] += _amount(d)

    def total(self) -> PrivacySpent:
        """The sums since ``fit`` as a :class:`~ppknn.protocols.base.PrivacySpent`."""
        guarantee = (f"{self.guarantee}; the sum over {self.calls} call(s) since fit "
                     "(sequential composition)")
        if self._eps is None or self._delta is None:
            return PrivacySpent(guarantee=f"{self.guarantee}; {self.calls} call(s) since fit")
        return PrivacySpent(guarantee=guarantee, epsilon=float(self._eps),
                            delta=float(self._delta),
                            per_party={p: (float(e), float(d))
                                       for p, (e, d) in self._per_party.items()})


__all__ = ["BudgetRefused", "Spending"]
