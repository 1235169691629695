"""DP-TT variants (Lepert 2022, §5.4), their composition counts and final ε.

A traversal answers one exponential mechanism (EM) per decision; the
variants differ in how many decisions a query costs and in what is
released. With H the worst-case tree height (decisions on the longest path,
``ceil(log2 N)``; the thesis writes ``log2 N``):

========  =========================================  ===============================
variant   what happens                               compositions c
========  =========================================  ===============================
basic     one thread to a leaf (Algorithm 11)        H
P(s)      split s times at the top without the EM,   (H - s) 2^s
          then 2^s DP traversals (Algorithm 15)
E(s)      stop s levels above the bottom, release    H - s
          every leaf of the subtree (Algorithm 16)
GS        EM at every level; the unchosen child      H (H + 1) / 2
          starts a thread that no longer splits
          (Algorithm 17)
N(B)      basic, then the B nearest points of the    H (post-processing)
          found leaf, itself included (Algorithm 18)
GS-N(B)   GS, then the B-neighbourhood of each leaf  H (H + 1) / 2
========  =========================================  ===============================

The final ε is the composition of c ε-bounded-range mechanisms: the
Dong-Durfee-Rogers bound (Theorem 2.13, :func:`core.dp.bounded_range_epsilon`,
which takes the minimum with plain summation) at a stated δ, and plain
summation ``c ε`` (pure ε-DP). The thesis's §5.2 prints the bound with the
count *inside* the KL term, ``KL(c ε)``; that does not follow from the
theorem it cites (which sums ``KL(ε_i)`` over the c mechanisms) and is read
as a typesetting slip -- :func:`printed_section_5_2_epsilon` evaluates the
printed form for comparison only.

Examples
--------
>>> v = Variant.parse("E8")
>>> v.label, v.compositions(17), v.rounds(17)
('E8', 9, 9)
>>> Variant.parse("GS-N20").compositions(17)
153
>>> acct = Variant.parse("basic").account(17, epsilon=1.0, delta=1e-7)
>>> acct.compositions, acct.epsilon_sum, round(acct.epsilon_br, 4)
(17, 17.0, 13.801)
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

from ppknn.core.dp import PrivacyCost, bounded_range_epsilon, bounded_range_kl
from ppknn.core.dp.validation import check_delta, check_epsilon
from ppknn.core.errors import ConfigError

KINDS = ("basic", "P", "E", "GS", "N", "GS-N")
_PATTERN = re.compile(r"^(basic|GS-N|GS|P|E|N)(\d+)?$")
DEFAULT_DELTA = 1e-7
"""δ of the bounded-range bound: below 1/N for the thesis's 100,000 and 1,000,000 points."""


def _check_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name} must be an integer, got {value!r}")
    return value


@dataclass(frozen=True, kw_only=True)
class Variant:
    """A DP-TT variant: ``kind`` with its split count ``s`` (P, E) or neighbourhood ``b`` (N, GS-N).

    Parameters
    ----------
    kind:
        One of ``"basic", "P", "E", "GS", "N", "GS-N"``.
    s:
        Splits at the top (P) or levels stopped early (E); >= 0, and at most
        the tree height (checked against a tree by :meth:`check_height`).
    b:
        Neighbourhood size, the found leaf included (N, GS-N); >= 1.
    """

    kind: str
    s: int = 0
    b: int = 1

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ConfigError(f"unknown DP-TT variant {self.kind!r}; allowed: {list(KINDS)}")
        s = _check_int(self.s, "s")
        b = _check_int(self.b, "B")
        if s < 0:
            raise ConfigError(f"the split count s must be >= 0, got {s}")
        if b < 1:
            raise ConfigError(f"the neighbourhood size B must be >= 1, got {b}")
        if s and self.kind not in ("P", "E"):
            raise ConfigError(f"variant {self.kind!r} takes no split count, got s={s}")
        if b != 1 and self.kind not in ("N", "GS-N"):
            raise ConfigError(f"variant {self.kind!r} takes no neighbourhood size, got B={b}")

    @classmethod
    def parse(cls, label: str | Variant) -> Variant:
        """Read a thesis label: ``basic``, ``P8``, ``E8``, ``GS``, ``N20``, ``GS-N20``."""
        if isinstance(label, Variant):
            return label
        match = _PATTERN.match(label.strip()) if isinstance(label, str) else None
        if match is None:
            raise ConfigError(
                f"unknown DP-TT variant {label!r}; allowed: 'basic', 'P<s>', 'E<s>', 'GS', "
                "'N<B>', 'GS-N<B>' (e.g. 'E8', 'GS-N20')"
            )
        kind, num = match.group(1), match.group(2)
        if kind in ("basic", "GS"):
            if num is not None:
                raise ConfigError(f"variant {kind!r} takes no number, got {label!r}")
            return cls(kind=kind)
        if num is None:
            raise ConfigError(f"variant {kind!r} needs a number (e.g. '{kind}8'), got {label!r}")
        return cls(kind=kind, s=int(num)) if kind in ("P", "E") else cls(kind=kind, b=int(num))

    @property
    def label(self) -> str:
        """The thesis's name of the variant (``E8``, ``GS-N20``, ...)."""
        if self.kind in ("P", "E"):
            return f"{self.kind}{self.s}"
        if self.kind in ("N", "GS-N"):
            return f"{self.kind}{self.b}"
        return self.kind

    @property
    def greedy(self) -> bool:
        """Whether threads split at every level (GS, GS-N)."""
        return self.kind in ("GS", "GS-N")

    @property
    def neighbourhood(self) -> int:
        """Points released around every found leaf (1: the leaf only)."""
        return self.b

    def check_height(self, height: int) -> int:
        """Raise ``ConfigError`` if ``s`` exceeds the tree height; returns the height."""
        if self.s > height:
            raise ConfigError(
                f"variant {self.label}: s={self.s} is beyond the tree height {height} "
                f"(allowed 0 <= s <= {height} for this dataset)"
            )
        return height

    def compositions(self, height: int) -> int:
        """Number of exponential mechanisms one query costs, worst case (§5.4)."""
        h = self.check_height(height)
        if self.kind == "P":
            return (h - self.s) * 2**self.s
        if self.kind == "E":
            return h - self.s
        if self.greedy:
            return h * (h + 1) // 2
        return h

    def rounds(self, height: int) -> int:
        """Client/server rounds (levels at which the client answers bits)."""
        h = self.check_height(height)
        return h - self.s if self.kind in ("P", "E") else h

    def max_released(self, height: int) -> int:
        """Upper bound on points released per query."""
        h = self.check_height(height)
        if self.kind in ("P", "E"):
            return 2**self.s
        if self.greedy:
            return (h + 1) * self.b
        return self.b

    def account(self, height: int, *, epsilon: float, delta: float = DEFAULT_DELTA
                ) -> PrivacyAccount:
        """Final ε of one query under this variant (see :class:`PrivacyAccount`)."""
        return PrivacyAccount.of(self.compositions(height), epsilon, delta)

    def epsilon_for(self, height: int, final_epsilon: float, *, delta: float = DEFAULT_DELTA
                    ) -> float:
        """The per-decision ε whose final ε (:meth:`account`'s ``epsilon_br``) is ``final_epsilon``.

        See :func:`per_decision_epsilon`; the worst-case ``height`` fixes the count.

        >>> v = Variant.parse("GS-N20")
        >>> eps = v.epsilon_for(20, 10.0, delta=1e-7)
        >>> round(eps, 6), round(v.account(20, epsilon=eps, delta=1e-7).epsilon_br, 12)
        (0.213903, 10.0)
        """
        c = self.compositions(height)
        if c == 0:
            raise ConfigError(
                f"variant {self.label} makes no private decision on a tree of height {height} "
                "(it releases without asking the client), so no per-decision epsilon gives a "
                "final epsilon; give the per-decision epsilon instead"
            )
        return per_decision_epsilon(c, final_epsilon, delta)


@dataclass(frozen=True, kw_only=True)
class PrivacyAccount:
    """The privacy of one query: c ε-bounded-range mechanisms composed.

    Attributes
    ----------
    compositions:
        c, the number of exponential mechanisms.
    epsilon:
        ε per mechanism.
    delta:
        δ of the bounded-range bound.
    epsilon_br:
        Theorem 2.13 (DDR 2020, Prop. 4): the minimum of summation and the
        bounded-range bound; (ε_br, δ)-DP (pure when it equals the sum).
    epsilon_sum:
        Plain summation ``c ε`` (pure ε-DP).
    """

    compositions: int
    epsilon: float
    delta: float
    epsilon_br: float
    epsilon_sum: float

    @classmethod
    def of(cls, compositions: int, epsilon: float, delta: float) -> PrivacyAccount:
        """Compose ``compositions`` ε-bounded-range mechanisms."""
        eps = check_epsilon(epsilon)
        delta = check_delta(delta)
        c = _check_int(compositions, "compositions")
        if c < 0:
            raise ConfigError(f"compositions must be >= 0, got {c}")
        br, total = _compose(c, eps, delta)
        return cls(compositions=c, epsilon=eps, delta=delta, epsilon_br=br, epsilon_sum=total)

    @property
    def cost(self) -> PrivacyCost:
        """The (ε, δ) this account certifies: δ only when the bound beats summation."""
        if self.epsilon_br < self.epsilon_sum:
            return PrivacyCost(self.epsilon_br, self.delta)
        return PrivacyCost(self.epsilon_sum, 0.0)


@functools.lru_cache(maxsize=4096)
def _compose(c: int, eps: float, delta: float) -> tuple[float, float]:
    """Bounded-range and summed ε of c equal mechanisms (memoised: sweeps repeat them)."""
    return bounded_range_epsilon([eps] * c, delta), math.fsum([eps] * c)


def per_decision_epsilon(compositions: int, final_epsilon: float, delta: float) -> float:
    """The largest ε per mechanism whose composition over ``compositions`` is <= ``final_epsilon``.

    The final ε (:class:`PrivacyAccount`'s ``epsilon_br``: the minimum of the
    bounded-range bound at ``delta`` and summation) increases strictly and
    continuously with the per-mechanism ε, from 0, so every target > 0 is
    reached; bisection to adjacent floats gives the answer, whose account is
    at most the target and equal to it up to rounding (relative ~1e-15).

    >>> eps = per_decision_epsilon(17, 13.801, 1e-7)
    >>> round(eps, 4), PrivacyAccount.of(17, eps, 1e-7).epsilon_br <= 13.801
    (1.0, True)
    >>> per_decision_epsilon(4, 2.0, 0.0)  # delta = 0: summation
    0.5
    """
    target = check_epsilon(final_epsilon, name="final_epsilon")
    delta = check_delta(delta)
    c = _check_int(compositions, "compositions")
    if c < 1:
        raise ConfigError(f"compositions must be >= 1 to solve for a per-decision epsilon, got {c}")

    def final(eps: float) -> float:
        return bounded_range_epsilon([eps] * c, delta)

    lo, hi = target / c, target  # final(target / c) <= c * (target / c); final(eps) >= eps
    if final(hi) <= target:
        return hi
    for _ in range(2000):  # halves the gap (or reaches adjacent floats) each step
        mid = lo + (hi - lo) / 2
        if mid <= lo or mid >= hi:
            break
        if final(mid) <= target:
            lo = mid
        else:
            hi = mid
    return lo


def printed_section_5_2_epsilon(compositions: int, epsilon: float, delta: float) -> float:
    """The §5.2 formula as printed: ``min{cε, KL(cε) + sqrt(½ c ε² ln(1/δ))}`` (not used).

    >>> round(printed_section_5_2_epsilon(17, 1.0, 1e-7), 4)
    17.0
    """
    eps = check_epsilon(epsilon)
    delta = check_delta(delta, allow_zero=False)
    c = _check_int(compositions, "compositions")
    if c == 0:
        return 0.0
    bound = bounded_range_kl(c * eps) + math.sqrt(0.5 * c * eps**2 * math.log(1 / delta))
    return min(c * eps, bound)


__all__ = [
    "DEFAULT_DELTA",
    "KINDS",
    "PrivacyAccount",
    "Variant",
    "per_decision_epsilon",
    "printed_section_5_2_epsilon",
]
