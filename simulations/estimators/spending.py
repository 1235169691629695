"""What a fitted estimator's releases have cost since ``fit``: reserve, run, settle.

A DP estimator releases something on every ``predict`` (``transform``): each
call is a new release about the same training rows (DP-TT: about the query
slots), so the costs add up (sequential composition). :class:`Spending` keeps
the exact sums since ``fit`` (amounts as :class:`fractions.Fraction` of their
shortest decimal, as the privacy ledger does, so three calls at ε = 0.1 spend
exactly 0.3) and refuses a call that would take the total ε above the
estimator's ``budget``, or the total δ above its ``budget_delta``, *before*
anything runs (:class:`BudgetRefused`): three calls at δ = 1e-6 fit a
``budget_delta`` of 3e-6 exactly, a fourth is refused.

Accountant (``accountant``, as a scenario's ledger, :mod:`core.dp.accountant`):
``"basic"`` adds the calls' ε and δ (valid whatever a caller chooses after
seeing earlier answers); ``"pld"`` composes their privacy-loss distributions
and ``"advanced"`` the advanced composition theorem, both read at
``budget_delta`` (the δ they spend) and kept only where they beat the sum. A
call's loss law is the one its estimator declares, else randomised response
at its (ε, δ), which dominates every (ε, δ)-DP release (Kairouz, Oh &
Viswanath 2015). Like the ledger's, these two assume the calls' costs are set
in advance (the same settings and batch sizes whatever the answers were); a
caller who adapts the next call's cost to earlier answers needs ``"basic"``.

Calls may come from several threads at once: a call *reserves* its cost
(:meth:`Spending.reserve`: the check and the booking are one step under a
lock, so what is reserved counts against the caps before the call runs),
runs, then *settles* the reservation at what it spent (:meth:`Spending.settle`)
or gives it back (:meth:`Spending.release`, for a call that released nothing).
Eight threads against ``budget = 6`` at ε = 4 a call: one runs, seven are refused.

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
>>> r = s.reserve(2.0)  # 8 spent + 2 reserved: the cap is reached
>>> s.reserve(0.5)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ppknn.simulations.estimators.spending.BudgetRefused: Est: budget = 10.0 cannot pay ...
>>> s.settle(r, 2.0)
>>> s.total().epsilon, s.calls
(10.0, 3)
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from ppknn.core.dp.accountant import Tally
from ppknn.core.dp.ledger import exact
from ppknn.core.errors import BudgetExhausted, ConfigError
from ppknn.core.protocol import PrivacySpent

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


def _fraction(value: Amount | None) -> Fraction:
    assert value is not None and not isinstance(value, float)
    return value


def _fmt(value: Amount) -> str:
    return f"{float(value):.6g}"


@dataclass(frozen=True, eq=False)
class Reservation:
    """A call's cost booked by :meth:`Spending.reserve`, until it settles or is released."""

    epsilon: Amount | None
    delta: Amount
    law: Any = None


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
    accountant:
        ``"basic"``, ``"advanced"`` or ``"pld"`` (module docstring; the last two need
        ``budget_delta > 0``).
    """

    def __init__(self, who: str, *, guarantee: str, budget: float | None = None,
                 budget_delta: float | None = None, accountant: str = "basic") -> None:
        self.who = who
        self.guarantee = guarantee
        self.budget = budget
        self.budget_delta = budget_delta
        if accountant != "basic" and not budget_delta:
            raise ConfigError(f"{who}: accountant = {accountant!r} needs budget_delta > 0, "
                              f"got {budget_delta!r}")
        self.accountant = accountant
        self._tally = Tally.empty(accountant)
        self.calls = 0
        self._eps: Amount | None = Fraction(0)
        self._delta: Amount | None = Fraction(0)
        self._per_party: dict[str, list[Amount]] = {}
        self._held: list[Reservation] = []  # reserved by calls still running
        self._lock = threading.RLock()

    def __getstate__(self) -> dict[str, Any]:  # a lock does not pickle (joblib, deepcopy)
        with self._lock:
            state = dict(self.__dict__)
        del state["_lock"]
        state["_held"] = []  # a copy has no call running
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    def _booked(self) -> tuple[Amount, Amount]:
        """Spent plus reserved: what the caps are checked against (lock held)."""
        assert self._eps is not None and self._delta is not None
        eps, delta = self._eps, self._delta
        for r in self._held:
            if r.epsilon is not None:
                eps, delta = eps + r.epsilon, delta + r.delta
        return eps, delta

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

    def _composed(self, extra: tuple[Reservation, ...] = ()) -> Tally:
        """The spent calls' tally with the held reservations and ``extra`` added (lock held)."""
        tally = self._tally
        for r in (*self._held, *extra):
            if r.epsilon is not None:
                tally = tally.add(r.law, _fraction(r.epsilon), _fraction(r.delta))
        return tally

    def _route_fits(self, call: Reservation) -> bool:
        """Whether the accountant's composition with ``call`` stays within both caps."""
        if self.budget is None or not math.isfinite(float(call.epsilon or 0.0)):
            return False
        assert self.budget_delta is not None
        return self._composed((call,)).fits((exact(self.budget), exact(self.budget_delta)))

    def check(self, epsilon: float | None, delta: float | None = 0.0, law: Any = None) -> None:
        """Raise :class:`BudgetRefused` unless a call costing ``(epsilon, delta)`` fits.

        It fits when the totals since ``fit`` with it stay at most ``budget`` (ε) and
        ``budget_delta`` (δ), or (``"advanced"``, ``"pld"``) their composition with
        ``law`` (the call's loss law; ``None``: randomised response at its cost) does;
        a call without an ε (no DP) is never capped.
        """
        with self._lock:
            if epsilon is None or self._eps is None or self._delta is None:
                return
            booked = self._booked()
            over = self._over(epsilon, delta, booked)
            if over and self.accountant != "basic" and self._route_fits(
                    self._booking(epsilon, delta, law)):
                over = []
            held = bool(self._held)
        if over:
            spent = "spent or reserved" if held else "spent"
            why = " and ".join(f"{name} = {cap!r} cannot pay for this call ({word} "
                               f"{_fmt(amount)}) on top of the {_fmt(before)} {spent}"
                               for name, cap, word, amount, before in over)
            raise BudgetRefused(
                f"{self.who}: {why} by {self.calls} call(s) since fit; nothing was released. "
                "Batch the rows into fewer calls; a refit starts a new account, which only a "
                "new budget from the data owner justifies")

    def _booking(self, epsilon: float | None, delta: float | None, law: Any) -> Reservation:
        """A call's reservation, its loss law resolved (randomised response by default)."""
        eps, d = (None if epsilon is None else _amount(epsilon)), _amount(delta or 0.0)
        if law is None and eps is not None and math.isfinite(float(eps)) and eps > 0:
            from ppknn.core.dp.pld import RandomisedResponseLoss

            law = RandomisedResponseLoss(float(eps), float(d))
        return Reservation(eps, d, law)

    def reserve(self, epsilon: float | None, delta: float | None = 0.0, law: Any = None
                ) -> Reservation:
        """Check a call costing ``(epsilon, delta)`` and book it, as one step (thread-safe).

        Raises :class:`BudgetRefused` as :meth:`check` does, counting what calls still
        running have reserved; else the cost counts against the caps until the call
        :meth:`settle` s or :meth:`release` s the returned reservation. ``law``: the
        call's loss law for the ``"advanced"``/``"pld"`` accountants (:meth:`check`).
        """
        with self._lock:
            self.check(epsilon, delta, law)
            r = self._booking(epsilon, delta, law)
            self._held.append(r)
            return r

    def _drop(self, reservation: Reservation) -> None:
        for i, held in enumerate(self._held):
            if held is reservation:
                del self._held[i]
                return
        raise ValueError("this reservation was settled or released already")

    def settle(self, reservation: Reservation, epsilon: float | None,
               delta: float | None = 0.0,
               per_party: Mapping[str, tuple[float, float]] | None = None) -> None:
        """Replace ``reservation`` with what the call spent (:meth:`spend`), as one step."""
        with self._lock:
            self._drop(reservation)
            same = (reservation.epsilon == (None if epsilon is None else _amount(epsilon))
                    and reservation.delta == _amount(delta or 0.0))
            self.spend(epsilon, delta, per_party, law=reservation.law if same else None)

    def release(self, reservation: Reservation) -> None:
        """Give ``reservation`` back: its call released nothing."""
        with self._lock:
            self._drop(reservation)

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
              per_party: Mapping[str, tuple[float, float]] | None = None, *,
              law: Any = None) -> None:
        """Add one call's cost (``epsilon None``: a protocol without an ε, nothing to add)."""
        with self._lock:
            self.calls += 1
            if epsilon is None or self._eps is None or self._delta is None:
                self._eps = self._delta = None
                return
            self._eps = self._eps + _amount(epsilon)
            self._delta = self._delta + _amount(delta or 0.0)
            if self.accountant != "basic":
                call = self._booking(epsilon, delta, law)
                if call.law is None:  # no finite ε: nothing the route can compose
                    self._tally = replace(self._tally, accountant="basic")
                else:
                    self._tally = self._tally.add(call.law, _fraction(call.epsilon),
                                                  _fraction(call.delta))
            for party, (e, d) in (per_party or {}).items():
                acc = self._per_party.setdefault(party, [Fraction(0), Fraction(0)])
                acc[0] += _amount(e)
                acc[1] += _amount(d)

    def total(self) -> PrivacySpent:
        """The sums since ``fit`` as a :class:`~ppknn.core.protocol.PrivacySpent`."""
        with self._lock:
            guarantee = (f"{self.guarantee}; the sum over {self.calls} call(s) since fit "
                         "(sequential composition)")
            if self._eps is None or self._delta is None:
                return PrivacySpent(guarantee=f"{self.guarantee}; {self.calls} call(s) since "
                                    "fit")
            eps, delta = self._eps, self._delta
            if self.accountant != "basic" and self._tally.accountant != "basic":
                assert self.budget_delta is not None
                eps, delta = self._tally.guarantee(exact(self.budget_delta))
                if (eps, delta) != (self._eps, self._delta):
                    guarantee = (f"{self.guarantee}; {self.accountant} composition of "
                                 f"{self.calls} call(s) since fit at the budget's δ")
            return PrivacySpent(guarantee=guarantee, epsilon=float(eps), delta=float(delta),
                                per_party={p: (float(e), float(d))
                                           for p, (e, d) in self._per_party.items()})


__all__ = ["BudgetRefused", "Reservation", "Spending"]
