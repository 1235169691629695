"""What a fitted estimator's releases have cost since ``fit``: check, run, spend.

A DP estimator releases something on every ``predict`` (``transform``): each
call is a new release about the same training rows (DP-TT: about the query
slots), so the costs add up (sequential composition). :class:`Spending` keeps
the exact sums since ``fit`` (amounts as :class:`fractions.Fraction` of their
shortest decimal, as the privacy ledger does, so three calls at ε = 0.1 spend
exactly 0.3) and refuses a call that would take the total ε above the
estimator's ``budget``, or the total δ above its ``budget_delta``, *before*
anything runs (:class:`BudgetRefused`): three calls at δ = 1e-6 fit a
``budget_delta`` of 3e-6 exactly, a fourth is refused.

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
>>> d = Spending("Est", guarantee="(ε, δ)-DP", budget_delta=3e-6)
>>> for _ in range(3):
...     d.check(1.0, 1e-6)
...     d.spend(1.0, 1e-6)
>>> d.total().delta
3e-06
>>> d.check(1.0, 1e-6)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ppknn.simulations.estimators.spending.BudgetRefused: Est: budget_delta = 3e-06 cannot pay ...
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
    budget_delta:
        The most δ all calls since ``fit`` may spend together (``None``: no cap).
    """

    def __init__(self, who: str, *, guarantee: str, budget: float | None = None,
                 budget_delta: float | None = None) -> None:
        self.who = who
        self.guarantee = guarantee
        self.budget = budget
        self.budget_delta = budget_delta
        self.calls = 0
        self._eps: Amount | None = Fraction(0)
        self._delta: Amount | None = Fraction(0)
        self._per_party: dict[str, list[Amount]] = {}

    def _over(self, epsilon: float, delta: float | None, spent: tuple[Amount, Amount]
              ) -> list[tuple[str, float, str, Amount, Amount]]:
        """The caps a call costing ``(epsilon, delta)`` on top of ``spent`` would exceed.

        Each as ``(parameter, cap, "epsilon" | "delta", the call's amount, the amount
        spent)``; ``[]``: the call fits. Exact: amounts as fractions of their shortest
        decimal.
        """
        caps = (("budget", self.budget, "epsilon", epsilon, spent[0]),
                ("budget_delta", self.budget_delta, "delta", delta or 0.0, spent[1]))
        return [(name, cap, word, _amount(cost), before)
                for name, cap, word, cost, before in caps
                if cap is not None and before + _amount(cost) > exact(cap)]

    def check(self, epsilon: float | None, delta: float | None = 0.0) -> None:
        """Raise :class:`BudgetRefused` unless a call costing ``(epsilon, delta)`` fits.

        It fits when the totals since ``fit`` with it stay at most ``budget`` (ε) and
        ``budget_delta`` (δ); a call without an ε (no DP) is never capped.
        """
        if epsilon is None or self._eps is None or self._delta is None:
            return
        over = self._over(epsilon, delta, (self._eps, self._delta))
        if over:
            why = " and ".join(f"{name} = {cap!r} cannot pay for this call ({word} "
                               f"{_fmt(amount)}) on top of the {_fmt(before)} spent"
                               for name, cap, word, amount, before in over)
            raise BudgetRefused(
                f"{self.who}: {why} by {self.calls} call(s) since fit; nothing was released. "
                "Batch the rows into fewer calls; a refit starts a new account, which only a "
                "new budget from the data owner justifies")

    def check_first(self, epsilon: float | None, delta: float | None, what: str) -> None:
        """Refuse (``ConfigError``) a cap below ``(epsilon, delta)``, the cheapest call's cost.

        Checked at ``fit`` as :meth:`check` checks the first call: with such a cap every
        call would be refused. ``what`` names the cheapest call (in the message).
        """
        if epsilon is None:
            return
        over = self._over(epsilon, delta, (Fraction(0), Fraction(0)))
        if over:
            name, cap, word, amount, _ = over[0]
            raise ConfigError(f"{self.who}: {name} = {cap!r} is below the cost of {what}: "
                              f"{word} {_fmt(amount)}, so every call would be refused; "
                              f"allowed: >= {_fmt(amount)} or None")

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
