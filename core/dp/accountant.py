"""How a :class:`~core.dp.ledger.PrivacyLedger` composes its charges: the accountants.

* ``"basic"`` -- ε and δ add up (sequential composition). Tight for pure
  ε-DP budgets and valid whatever the analysts choose after seeing earlier
  answers (a privacy filter).
* ``"advanced"`` -- the heterogeneous advanced composition theorem over the
  releases' declared (ε_i, δ_i) (:func:`advanced_epsilon`), using the
  budget's δ left over by the releases as its slack δ'.
* ``"pld"`` -- the releases' privacy-loss distributions composed
  (:mod:`core.dp.pld`), read at the budget's δ.

The last two account for releases whose *parameters* (not their outputs)
are fixed in advance -- a scenario's schedule of requests, as the DP
owner's analysts send -- and fall back to basic composition where they
cannot help:

* a release with no known loss law (a bare :class:`PrivacyCost`, the
  smooth-sensitivity mechanisms, the secure discrete Gaussian, a charge
  already composed by another theorem) is added on top by basic
  composition: the guarantee is ``(ε_known(δ_B - δ_u) + ε_u, δ_B)`` with
  ``(ε_u, δ_u)`` the sum over such releases and δ_B the budget's δ;
* each accountant is compared with plain summation and the better one is
  kept, so ``"pld"`` and ``"advanced"`` never refuse what ``"basic"`` serves.

A pure ε-DP budget (δ = 0) composes by ``"basic"`` (``"auto"`` picks it;
asking for another accountant there is an error).

Examples
--------
>>> from ppknn.core.dp.pld import LaplaceLoss
>>> t = Tally.empty("pld")
>>> for _ in range(100):
...     t = t.add(LaplaceLoss(0.1), exact(0.1), exact(0.0))
>>> eps, delta = t.guarantee(exact(1e-6))
>>> round(float(eps), 4), float(delta), float(t.basic[0])
(4.6933, 1e-06, 10.0)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from ppknn.core.dp.pld import INTERVAL, PLD, Composite, MechanismLoss, loss_model
from ppknn.core.dp.validation import check_delta
from ppknn.core.errors import ConfigError

ACCOUNTANTS = ("basic", "advanced", "pld")
"""The accountants a ledger can use (``"auto"``: ``"pld"`` when δ > 0, else ``"basic"``)."""

_ZERO = Fraction(0)


def exact(value: float) -> Fraction:
    """Return a float as the Fraction of its shortest decimal repr (0.1 -> 1/10)."""
    return Fraction(repr(float(value)))


def resolve_accountant(accountant: Any, delta: float) -> str:
    """The accountant to use for a budget with this δ (``None``/``"auto"``: the best valid one).

    >>> resolve_accountant("auto", 1e-6), resolve_accountant(None, 0.0)
    ('pld', 'basic')
    """
    delta = check_delta(delta, name="delta budget")
    if accountant is None or accountant == "auto":
        return "pld" if delta > 0 else "basic"
    if not isinstance(accountant, str) or accountant not in ACCOUNTANTS:
        raise ConfigError(f"accountant must be one of {['auto', *ACCOUNTANTS]}, "
                          f"got {accountant!r}")
    if accountant != "basic" and delta == 0:
        raise ConfigError(f"accountant {accountant!r} needs a budget with delta > 0, got "
                          "delta = 0; a pure epsilon-DP budget composes tightly by 'basic' "
                          "(or leave the accountant on 'auto')")
    return accountant


def advanced_epsilon(epsilons: Sequence[float], counts: Sequence[int], delta_slack: float
                     ) -> float:
    """Heterogeneous advanced composition (Dwork & Roth, Thm. 3.20, per-release ε_i).

    ``sqrt(2 ln(1/δ') Σ k_i ε_i²) + Σ k_i ε_i (e^ε_i - 1)``, for ``k_i`` releases of ε_i.

    >>> round(advanced_epsilon([0.1], [100], 1e-6), 4)
    6.3082
    """
    delta_slack = check_delta(delta_slack, name="delta_slack", allow_zero=False)
    sq = math.fsum(k * e * e for e, k in zip(epsilons, counts, strict=True))
    lin = math.fsum(k * e * math.expm1(e) for e, k in zip(epsilons, counts, strict=True))
    return math.sqrt(2 * math.log(1 / delta_slack) * sq) + lin


@functools.lru_cache(maxsize=256)
def _law_pld(law: Any, repeat: int, interval: float) -> PLD:
    return law.pld(interval).self_compose(repeat)


def release_law(release: Any) -> MechanismLoss | Composite | None:
    """The loss law the ledger composes for a charge (``None``: basic composition)."""
    return loss_model(release)


@dataclass(frozen=True, eq=False)
class Tally:
    """What one scope (the owner, or one analyst) has released, per accountant.

    Attributes
    ----------
    accountant:
        ``"basic"``, ``"advanced"`` or ``"pld"``.
    basic:
        Σε and Σδ of every release, exactly (today's sequential composition).
    unknown:
        Σε and Σδ of the releases without a known loss law.
    known:
        ``(ε_i, δ_i, k_i)`` of the releases with one (for ``"advanced"``).
    pld:
        Their loss laws composed (for ``"pld"``), or ``None``.
    """

    accountant: str
    basic: tuple[Fraction, Fraction] = (_ZERO, _ZERO)
    unknown: tuple[Fraction, Fraction] = (_ZERO, _ZERO)
    known: tuple[tuple[float, float, int], ...] = ()
    pld: PLD | None = None
    interval: float = INTERVAL
    _solved: dict = field(default_factory=dict, init=False, repr=False)

    @classmethod
    def empty(cls, accountant: str, interval: float = INTERVAL) -> Tally:
        """A scope with nothing released."""
        if accountant not in ACCOUNTANTS:
            raise ConfigError(f"accountant must be one of {list(ACCOUNTANTS)}, got {accountant!r}")
        return cls(accountant, interval=interval)

    def add(self, law: Any, eps: Fraction, delta: Fraction, repeat: int = 1) -> Tally:
        """This tally with ``repeat`` more releases of cost ``(eps, delta)`` each, total.

        ``eps`` and ``delta`` are the *total* amounts of the ``repeat`` releases;
        ``law`` is their loss law (one release's) or ``None``.
        """
        basic = (self.basic[0] + eps, self.basic[1] + delta)
        if self.accountant == "basic":
            return replace(self, basic=basic)
        if law is None:
            return replace(self, basic=basic,
                           unknown=(self.unknown[0] + eps, self.unknown[1] + delta))
        each = law.cost
        known = (*self.known, (each.epsilon, each.delta, repeat))
        if self.accountant == "advanced":
            return replace(self, basic=basic, known=known)
        part = _law_pld(law, repeat, self.interval)
        pld = part if self.pld is None else self.pld.compose(part)
        return replace(self, basic=basic, known=known, pld=pld)

    def fits(self, budget: tuple[Fraction, Fraction]) -> bool:
        """Whether :meth:`guarantee` at ``budget``'s δ is within ``budget`` (without solving ε)."""
        eps_b, delta_b = budget
        if self.basic[0] <= eps_b and self.basic[1] <= delta_b:
            return True
        if self.accountant != "pld" or self.pld is None:
            eps, delta = self.guarantee(delta_b)
            return eps <= eps_b and delta <= delta_b
        slack, left = delta_b - self.unknown[1], eps_b - self.unknown[0]
        if slack <= 0 or left < 0:
            return False
        slack_f = float(slack)
        if exact(slack_f) > slack:
            slack_f = math.nextafter(slack_f, 0.0)
        left_f = float(left)
        if exact(left_f) > left:
            left_f = math.nextafter(left_f, -math.inf)
        return self.pld.delta(left_f) <= slack_f

    def guarantee(self, budget_delta: Fraction) -> tuple[Fraction, Fraction]:
        """The (ε, δ) this tally is: the smaller ε of summation and the accountant's route.

        The route spends the budget's δ (``budget_delta``): what the releases
        without a law leave is the δ at which the others' composition is read.
        Summation wins when the route does not fit the budget's δ.
        """
        best = self.basic
        if self.accountant == "basic" or not self.known:
            return best
        if budget_delta not in self._solved:  # a tally never changes: solve once per δ
            self._solved[budget_delta] = self._guarantee(budget_delta)
        return self._solved[budget_delta]

    def _guarantee(self, budget_delta: Fraction) -> tuple[Fraction, Fraction]:
        best = self.basic
        slack = budget_delta - self.unknown[1]
        if self.accountant == "advanced":
            slack -= sum((exact(d) * k for _, d, k in self.known), _ZERO)
        if slack <= 0:
            return best
        slack_f = float(slack)
        if exact(slack_f) > slack:  # never read the composition at more δ than is left
            slack_f = math.nextafter(slack_f, 0.0)
        if self.accountant == "advanced":
            eps = advanced_epsilon([e for e, _, _ in self.known], [k for _, _, k in self.known],
                                   slack_f)
        else:
            assert self.pld is not None
            eps = self.pld.epsilon(slack_f)
        if not math.isfinite(eps):
            return best
        route = (self.unknown[0] + exact(eps), budget_delta)
        if best[1] > budget_delta or route[0] < best[0]:
            return route
        return best


__all__ = [
    "ACCOUNTANTS",
    "Tally",
    "advanced_epsilon",
    "release_law",
    "resolve_accountant",
]
