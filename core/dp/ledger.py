"""The privacy ledger: check, then spend -- atomically, exactly, per owner and analyst.

One :class:`PrivacyLedger` holds one data owner's (ε, δ) budget and,
optionally, a cap per analyst. A release is paid for *before* it happens:

* :meth:`PrivacyLedger.charge` checks and spends in one atomic step and
  raises :class:`~core.errors.BudgetExhausted` -- leaving the ledger unchanged
  -- when the owner's or the analyst's budget would be exceeded;
* :meth:`PrivacyLedger.reserve` holds budget for a protocol run: the protocol
  reserves before touching data and the reservation commits when the
  ``with`` block ends (see :class:`Reservation` for failures).

Composition. Across charges the ledger composes by its ``accountant``
(:mod:`core.dp.accountant`): ``"basic"`` (sequential composition: valid even
when later per-release ε depend on earlier outputs, a privacy filter; tight
for pure ε-DP budgets), ``"advanced"`` (heterogeneous advanced composition) or
``"pld"`` (the releases' privacy-loss distributions, :mod:`core.dp.pld`). The
default ``"auto"`` is ``"pld"`` for a budget with δ > 0 and ``"basic"`` for a
pure ε-DP one. The last two assume the schedule of release *parameters* is
fixed in advance; a charge whose mechanism has no known loss distribution
(a bare :class:`PrivacyCost`, smooth-sensitivity noise) is added on top of
their composition by basic composition. Charge a mechanism (or a loss law of
:mod:`core.dp.pld`) rather than its bare cost to let ``"pld"`` use it.
Within one charge a protocol can claim a better
theorem for a fixed schedule of releases: :meth:`~PrivacyLedger.charge_parallel`
(disjoint data), :meth:`~PrivacyLedger.charge_advanced` (DRV) and
:meth:`~PrivacyLedger.charge_bounded_range` (exponential mechanisms, DDR 2020).

Exactness. Amounts are kept as :class:`fractions.Fraction` of their shortest
decimal representation (``repr``), so 0.1 counts as exactly 1/10 and ten
charges of 0.1 fill a budget of 1.0 exactly. The difference from the binary
double is below one part in 10**16 of the amount.

Concurrency. A :class:`threading.Lock` guards every check-and-spend, so
concurrent threads never double-spend. The lock is never held across an
``await``, so the same ledger is safe for asyncio tasks (and for
``asyncio.to_thread``) without a separate async lock.

Examples
--------
>>> ledger = PrivacyLedger(owner="hospital", epsilon=1.0)
>>> for _ in range(10):
...     _ = ledger.charge(PrivacyCost(0.1), analyst="alice", label="count")
>>> ledger.remaining()
PrivacyCost(epsilon=0.0, delta=0.0)
>>> ledger.charge(PrivacyCost(0.1))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ppknn.core.errors.BudgetExhausted: ledger 'hospital': charge of epsilon=0.1, delta=0 ...

With δ > 0 the PLD accountant composes Laplace releases tightly:

>>> from ppknn.core.dp.mechanisms import Laplace
>>> pld = PrivacyLedger(owner="clinic", epsilon=2.0, delta=1e-6)
>>> pld.accountant, sum(pld.can_afford(Laplace(epsilon=0.05), repeat=n) for n in (40, 80))
('pld', 2)
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ppknn.core.dp.accountant import Tally, exact, release_law, resolve_accountant
from ppknn.core.dp.accounting import (
    PrivacyCost,
    advanced_composition,
    bounded_range_epsilon,
    parallel_composition,
)
from ppknn.core.dp.validation import check_delta, check_epsilon, check_positive_int
from ppknn.core.errors import BudgetExhausted, ConfigError


def _as_cost(cost: Any) -> PrivacyCost:
    if isinstance(cost, PrivacyCost):
        return cost
    inner = getattr(cost, "cost", None)  # mechanisms and releases expose .cost
    if isinstance(inner, PrivacyCost):
        return inner
    raise TypeError(f"expected a PrivacyCost or an object with a .cost, got {type(cost).__name__}")


def _fmt(x: Fraction) -> str:
    return f"{float(x):.6g}"


@dataclass(frozen=True)
class LedgerEntry:
    """One committed charge.

    Attributes
    ----------
    seq:
        Position in the ledger (0, 1, ...).
    label:
        What was released (free text from the caller).
    analyst:
        Who asked (``None`` for the owner's own releases).
    epsilon, delta:
        The exact amounts spent.
    composition:
        ``"sequential"``, ``"parallel"``, ``"advanced"`` or ``"bounded_range"``.
    releases:
        How many releases this charge pays for.
    aborted:
        The reservation ended with an exception (the budget stays spent).
    """

    seq: int
    label: str
    analyst: str | None
    epsilon: Fraction
    delta: Fraction
    composition: str = "sequential"
    releases: int = 1
    aborted: bool = False

    @property
    def cost(self) -> PrivacyCost:
        """The amounts as a float :class:`PrivacyCost`."""
        return PrivacyCost(float(self.epsilon), float(self.delta))


class Reservation:
    """Budget held for one protocol run; returned by :meth:`PrivacyLedger.reserve`.

    Leaving the ``with`` block commits the reservation. If the block raises,
    the reservation is still committed (marked ``aborted``): the protocol may
    have touched data or produced output before failing, so returning the
    budget would be unsafe. Call :meth:`cancel` explicitly -- only when no
    data was accessed -- to give the budget back.
    """

    def __init__(
        self,
        ledger: PrivacyLedger,
        eps: Fraction,
        delta: Fraction,
        analyst: str | None,
        label: str,
        composition: str,
        releases: int,
        token: int = -1,
    ) -> None:
        self._ledger = ledger
        self._token = token
        self.epsilon, self.delta = eps, delta
        self.analyst, self.label = analyst, label
        self._composition, self._releases = composition, releases
        self.state = "held"
        self.entry: LedgerEntry | None = None

    def commit(self, *, aborted: bool = False) -> LedgerEntry:
        """Turn the held budget into a ledger entry."""
        entry = self._ledger._settle(self, commit=True, aborted=aborted)
        assert entry is not None
        return entry

    def cancel(self) -> None:
        """Return the held budget (only if no data has been accessed)."""
        self._ledger._settle(self, commit=False, aborted=False)

    def __enter__(self) -> Reservation:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.state == "held":
            self.commit(aborted=exc_type is not None)

    async def __aenter__(self) -> Reservation:
        return self

    async def __aexit__(self, exc_type, exc, tb) -> None:
        self.__exit__(exc_type, exc, tb)


class PrivacyLedger:
    """The (ε, δ) budget of one data owner, with optional per-analyst caps.

    Parameters
    ----------
    owner:
        The data owner whose budget this is.
    epsilon, delta:
        The owner's total budget (ε > 0, δ in ``[0, 1)``).
    analyst_epsilon, analyst_delta:
        Optional cap on what any single analyst may spend (defaults: no cap;
        ``analyst_delta`` defaults to ``delta`` when only ``analyst_epsilon``
        is given).
    accountant:
        ``"auto"`` (default: ``"pld"`` when ``delta > 0``, else ``"basic"``),
        ``"basic"``, ``"advanced"`` or ``"pld"`` (module docstring). Under
        ``"advanced"`` and ``"pld"``, :meth:`spent` is the composed guarantee
        read at the budget's δ: its δ is the whole budget's once a release
        was composed that way, and :meth:`remaining` gives the ε left at it.
    """

    def __init__(
        self,
        *,
        owner: str,
        epsilon: float,
        delta: float = 0.0,
        analyst_epsilon: float | None = None,
        analyst_delta: float | None = None,
        accountant: str | None = "auto",
    ) -> None:
        if not isinstance(owner, str) or not owner:
            raise ConfigError(f"owner must be a non-empty string, got {owner!r}")
        self.owner = owner
        self._eps_budget = exact(check_epsilon(epsilon, name="epsilon budget"))
        self._delta_budget = exact(check_delta(delta, name="delta budget"))
        self._analyst_cap: tuple[Fraction, Fraction] | None = None
        if analyst_epsilon is not None or analyst_delta is not None:
            a_eps = check_epsilon(
                analyst_epsilon if analyst_epsilon is not None else epsilon, name="analyst_epsilon"
            )
            a_delta = check_delta(
                analyst_delta if analyst_delta is not None else delta, name="analyst_delta"
            )
            self._analyst_cap = (exact(a_eps), exact(a_delta))
        self.accountant = resolve_accountant(accountant, delta)
        self._lock = threading.Lock()
        self._entries: list[LedgerEntry] = []
        self._used: dict[str | None, list[Fraction]] = {}  # committed + held, per analyst
        self._total = [Fraction(0), Fraction(0)]
        # committed + held releases composed by the accountant: owner-wide and per analyst
        self._tally = Tally.empty(self.accountant)
        self._analyst_tally: dict[str, Tally] = {}
        self._releases: dict[int, tuple[str | None, Any, Fraction, Fraction, int]] = {}
        self._next_token = 0

    def __getstate__(self) -> dict:
        """A snapshot for pickling (e.g. returned from a Ray actor); the lock is not copied."""
        with self._lock:
            state = dict(self.__dict__)
        del state["_lock"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # ----------------------------------------------------------- inspection
    @property
    def budget(self) -> PrivacyCost:
        """The owner's total budget."""
        return PrivacyCost(float(self._eps_budget), float(self._delta_budget))

    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        """The committed charges, oldest first."""
        with self._lock:
            return tuple(self._entries)

    def spent(self, analyst: str | None = None) -> PrivacyCost:
        """Return committed plus held amounts (the owner's total, or one analyst's)."""
        eps, delta = self.spent_exact(analyst)
        return PrivacyCost(float(eps), float(delta))

    def spent_exact(self, analyst: str | None = None) -> tuple[Fraction, Fraction]:
        """Like :meth:`spent`, as exact Fractions."""
        with self._lock:
            if analyst is None:
                return self._guarantee(self._tally, None)
            return self._guarantee(self._analyst_tally.get(analyst), analyst)

    def _guarantee(self, tally: Tally | None, analyst: str | None) -> tuple[Fraction, Fraction]:
        """The (ε, δ) a scope has spent, by the accountant. Call with the lock held."""
        if tally is None:
            return Fraction(0), Fraction(0)
        if self.accountant == "basic":  # the exact running sums
            used = self._total if analyst is None else self._used[analyst]
            return used[0], used[1]
        cap = self._analyst_cap if analyst is not None else None
        return tally.guarantee(cap[1] if cap is not None else self._delta_budget)

    def remaining(self, analyst: str | None = None) -> PrivacyCost:
        """Return what can still be spent (by ``analyst``, if given)."""
        with self._lock:
            total = self._guarantee(self._tally, None)
            eps = self._eps_budget - total[0]
            delta = self._delta_budget - total[1]
            if analyst is not None and self._analyst_cap is not None:
                used = self._guarantee(self._analyst_tally.get(analyst), analyst)
                eps = min(eps, self._analyst_cap[0] - used[0])
                delta = min(delta, self._analyst_cap[1] - used[1])
        return PrivacyCost(float(eps), float(delta))

    # --------------------------------------------------------------- checks
    def _refusal(
        self, eps: Fraction, delta: Fraction, analyst: str | None, law: Any = None,
        repeat: int = 1,
    ) -> tuple[str | None, Tally, Tally | None]:
        """Why (eps, delta) does not fit now (or None), and the scopes' tallies after it.

        Call with the lock held.
        """
        what = f"charge of epsilon={_fmt(eps)}, delta={_fmt(delta)}"
        by = "" if self.accountant == "basic" else f" by {self.accountant} composition"
        owner_after = self._tally.add(law, eps, delta, repeat)
        analyst_after = None
        if analyst is not None:
            before = self._analyst_tally.get(analyst) or Tally.empty(self.accountant)
            analyst_after = before.add(law, eps, delta, repeat)
        if not self._fits_after(owner_after, self._total, eps, delta,
                                (self._eps_budget, self._delta_budget)):
            used = self._guarantee(self._tally, None)
            return (
                f"ledger {self.owner!r}: {what} would exceed the owner's budget{by} "
                f"(epsilon {_fmt(used[0])} of {_fmt(self._eps_budget)} used, "
                f"delta {_fmt(used[1])} of {_fmt(self._delta_budget)}); "
                "lower the per-release epsilon/delta, batch the queries, or stop releasing"
            ), owner_after, analyst_after
        if analyst is not None and self._analyst_cap is not None:
            assert analyst_after is not None
            used_sum = self._used.get(analyst, [Fraction(0), Fraction(0)])
            cap_eps, cap_delta = self._analyst_cap
            if not self._fits_after(analyst_after, used_sum, eps, delta, self._analyst_cap):
                used = self._guarantee(self._analyst_tally.get(analyst), analyst)
                return (
                    f"ledger {self.owner!r}: {what} would exceed analyst {analyst!r}'s cap{by} "
                    f"(epsilon {_fmt(used[0])} of {_fmt(cap_eps)} used, "
                    f"delta {_fmt(used[1])} of {_fmt(cap_delta)}); "
                    "this analyst has no budget left for such a release"
                ), owner_after, analyst_after
        return None, owner_after, analyst_after

    def _fits_after(self, tally: Tally, sums: list[Fraction], eps: Fraction, delta: Fraction,
                    budget: tuple[Fraction, Fraction]) -> bool:
        """Whether the scope stays within ``budget`` once the charge is added (lock held)."""
        if self.accountant == "basic":  # today's exact sums
            return sums[0] + eps <= budget[0] and sums[1] + delta <= budget[1]
        return tally.fits(budget)

    def check(self, cost: Any, *, analyst: str | None = None, repeat: int = 1) -> None:
        """Raise :class:`BudgetExhausted` if ``cost`` (times ``repeat``) does not fit now."""
        eps, delta = self._amounts(cost, repeat)
        law = self._law(cost)
        with self._lock:
            reason, _, _ = self._refusal(eps, delta, analyst, law, repeat)
        if reason:
            raise BudgetExhausted(reason)

    def _law(self, cost: Any) -> Any:
        """The loss law the accountant composes for ``cost`` (``None``: basic composition)."""
        return None if self.accountant == "basic" else release_law(cost)

    def can_afford(self, cost: Any, *, analyst: str | None = None, repeat: int = 1) -> bool:
        """Whether :meth:`check` would pass."""
        try:
            self.check(cost, analyst=analyst, repeat=repeat)
        except BudgetExhausted:
            return False
        return True

    @staticmethod
    def _amounts(cost: Any, repeat: int) -> tuple[Fraction, Fraction]:
        c = _as_cost(cost)
        n = check_positive_int(repeat, name="repeat")
        return exact(c.epsilon) * n, exact(c.delta) * n

    # ------------------------------------------------------------- spending
    def _hold(self, eps: Fraction, delta: Fraction, analyst: str | None, law: Any = None,
              repeat: int = 1) -> int:
        """Check and hold (lock held); returns the release's token."""
        reason, owner_after, analyst_after = self._refusal(eps, delta, analyst, law, repeat)
        if reason:
            raise BudgetExhausted(reason)
        self._tally = owner_after
        if analyst is not None:
            assert analyst_after is not None
            self._analyst_tally[analyst] = analyst_after
        token = self._next_token
        self._next_token += 1
        self._releases[token] = (analyst, law, eps, delta, repeat)
        self._total[0] += eps
        self._total[1] += delta
        used = self._used.setdefault(analyst, [Fraction(0), Fraction(0)])
        used[0] += eps
        used[1] += delta
        return token

    def _record(self, eps, delta, analyst, label, composition, releases, aborted) -> LedgerEntry:
        entry = LedgerEntry(
            len(self._entries), label, analyst, eps, delta, composition, releases, aborted
        )
        self._entries.append(entry)
        return entry

    def _spend(
        self,
        eps: Fraction,
        delta: Fraction,
        analyst: str | None,
        label: str,
        composition: str,
        releases: int,
        law: Any = None,
    ) -> LedgerEntry:
        if analyst is not None and not isinstance(analyst, str):
            raise TypeError(f"analyst must be a string or None, got {type(analyst).__name__}")
        with self._lock:
            self._hold(eps, delta, analyst, law, releases if law is not None else 1)
            return self._record(eps, delta, analyst, label, composition, releases, False)

    def charge(
        self, cost: Any, *, analyst: str | None = None, label: str = "", repeat: int = 1
    ) -> LedgerEntry:
        """Check and spend ``cost`` (a PrivacyCost or mechanism) ``repeat`` times, atomically."""
        eps, delta = self._amounts(cost, repeat)
        return self._spend(eps, delta, analyst, label, "sequential", repeat, self._law(cost))

    def charge_parallel(
        self, costs: Iterable[Any], *, analyst: str | None = None, label: str = ""
    ) -> LedgerEntry:
        """Pay for releases on *disjoint* parts of the data: the maximum ε and δ."""
        items = [_as_cost(c) for c in costs]
        if not items:
            raise ConfigError("charge_parallel needs at least one cost, got none")
        c = parallel_composition(items)
        return self._spend(exact(c.epsilon), exact(c.delta), analyst, label, "parallel", len(items))

    def charge_advanced(
        self,
        cost_each: Any,
        k: int,
        delta_slack: float,
        *,
        analyst: str | None = None,
        label: str = "",
    ) -> LedgerEntry:
        """Pay for k releases of ``cost_each`` by advanced composition (or summation if lower)."""
        each = _as_cost(cost_each)
        c = advanced_composition(check_epsilon(each.epsilon), each.delta, k, delta_slack)
        return self._spend(exact(c.epsilon), exact(c.delta), analyst, label, "advanced", k)

    def charge_bounded_range(
        self,
        epsilons: Sequence[float],
        delta: float,
        *,
        analyst: str | None = None,
        label: str = "",
    ) -> LedgerEntry:
        """Pay for exponential mechanisms (ε_i-bounded-range) by the DDR 2020 bound.

        Costs ``(ε_BR, delta)``, or ``(Σε_i, 0)`` when summation is lower.
        """
        eps_list = [float(e) for e in epsilons]
        if not eps_list:
            raise ConfigError("charge_bounded_range needs at least one epsilon, got none")
        br = bounded_range_epsilon(eps_list, delta)
        if br >= sum(eps_list):
            eps_exact, delta_exact = sum((exact(e) for e in eps_list), Fraction(0)), Fraction(0)
        else:
            eps_exact, delta_exact = exact(br), exact(check_delta(delta))
        return self._spend(eps_exact, delta_exact, analyst, label, "bounded_range", len(eps_list))

    # --------------------------------------------------------- reservations
    def reserve(
        self, cost: Any, *, analyst: str | None = None, label: str = "", repeat: int = 1
    ) -> Reservation:
        """Hold ``cost`` now (raising :class:`BudgetExhausted` if it does not fit)."""
        eps, delta = self._amounts(cost, repeat)
        law = self._law(cost)
        if analyst is not None and not isinstance(analyst, str):
            raise TypeError(f"analyst must be a string or None, got {type(analyst).__name__}")
        with self._lock:
            token = self._hold(eps, delta, analyst, law, repeat)
        return Reservation(self, eps, delta, analyst, label, "sequential", repeat, token)

    def _settle(self, res: Reservation, *, commit: bool, aborted: bool) -> LedgerEntry | None:
        with self._lock:
            if res.state != "held":
                raise ConfigError(f"reservation {res.label!r} is already {res.state}")
            if commit:
                res.state = "committed"
                res.entry = self._record(
                    res.epsilon,
                    res.delta,
                    res.analyst,
                    res.label,
                    res._composition,
                    res._releases,
                    aborted,
                )
                return res.entry
            res.state = "cancelled"
            self._total[0] -= res.epsilon
            self._total[1] -= res.delta
            used = self._used[res.analyst]
            used[0] -= res.epsilon
            used[1] -= res.delta
            self._releases.pop(res._token, None)
            self._rebuild(res.analyst)
            return None

    def _rebuild(self, analyst: str | None) -> None:
        """Recompose the owner's (and ``analyst``'s) tally from the held releases (lock held)."""
        owner = Tally.empty(self.accountant)
        mine = Tally.empty(self.accountant)
        for who, law, eps, delta, repeat in self._releases.values():
            owner = owner.add(law, eps, delta, repeat)
            if analyst is not None and who == analyst:
                mine = mine.add(law, eps, delta, repeat)
        self._tally = owner
        if analyst is not None:
            self._analyst_tally[analyst] = mine


__all__ = ["LedgerEntry", "PrivacyLedger", "Reservation", "exact"]
