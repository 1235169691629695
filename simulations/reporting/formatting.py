"""How numbers appear in reports: significant digits, percentages, intervals.

One set of rules for every report, so the same value always reads the same:

- missing values (``None``, NaN) read ``n/a``; infinities ``∞`` and ``-∞``;
- ``True``/``False`` read ``yes``/``no``;
- integers are exact, with thousands separators (``100,000``);
- other numbers keep ``digits`` significant digits, in fixed notation from
  ``0.001`` up to ``10**9`` and in scientific notation outside it;
- percentages have one decimal (``71.3%``), or significant digits when that
  would show a non-zero share as ``0.0%``;
- intervals are ``[low, high]``.

Examples
--------
>>> fmt(0.71234), fmt(100000.0), fmt(3), fmt(12345), fmt(2.5e-05)
('0.712', '100,000', '3', '12,345', '2.50e-05')
>>> fmt(0.0125, signed=True), fmt(float("nan")), fmt(True)
('+0.0125', 'n/a', 'yes')
>>> pct(0.7134), pct(0.0004), pct(-0.012, signed=True)
('71.3%', '0.0400%', '-1.2%')
>>> interval(0.701, 0.723), interval(0.05, 0.1, percent=True)
('[0.701, 0.723]', '[5.0%, 10.0%]')
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

MISSING = "n/a"
"""How a missing value (``None`` or NaN) reads."""


def is_missing(value: Any) -> bool:
    """``True`` for ``None`` and for a NaN number."""
    if value is None:
        return True
    return isinstance(value, Real) and not isinstance(value, Integral) and math.isnan(value)


def fmt(value: Any, digits: int = 3, *, signed: bool = False) -> str:
    """A value as report text (see the module docstring for the rules).

    Parameters
    ----------
    value
        A number, a bool, ``None`` or anything else (shown with ``str``).
    digits
        Significant digits of a non-integer number.
    signed
        Prefix positive numbers with ``+`` (for differences).

    Returns
    -------
    str
        The text.
    """
    if is_missing(value):
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Integral):
        return f"{int(value):+,}" if signed else f"{int(value):,}"
    if not isinstance(value, Real):
        return str(value)
    x = float(value)
    sign = "+" if signed and x > 0 else ""
    if math.isinf(x):
        return ("-" if x < 0 else sign) + "∞"
    if x == 0:
        return "0"
    mantissa = f"{x:.{max(digits, 1) - 1}e}"
    exponent = int(mantissa.split("e")[1])  # after rounding: 9.9996 -> 1.00e+01
    if exponent < -3 or exponent >= 9:
        return sign + mantissa
    decimals = max(digits - 1 - exponent, 0)
    return sign + f"{x:,.{decimals}f}"


def pct(value: Any, decimals: int = 1, *, signed: bool = False) -> str:
    """A share (``0.713``) as a percentage (``71.3%``).

    Parameters
    ----------
    value
        The share; ``None`` or NaN read ``n/a``.
    decimals
        Decimals of the percentage; a non-zero share that would round to
        zero is shown with significant digits instead.
    signed
        Prefix positive shares with ``+`` (for differences).

    Returns
    -------
    str
        The text, ending in ``%``.
    """
    if is_missing(value):
        return MISSING
    x = 100.0 * float(value)
    if math.isinf(x):
        return fmt(x, signed=signed) + "%"
    if x != 0 and abs(x) < 0.5 * 10.0**-decimals:
        return fmt(x, signed=signed) + "%"
    sign = "+" if signed and x > 0 else ""
    return sign + f"{x:,.{decimals}f}%"


def number(value: Any, *, percent: bool = False, signed: bool = False, digits: int = 3) -> str:
    """:func:`pct` when ``percent`` else :func:`fmt` (the one switch reports use)."""
    if percent and not isinstance(value, bool):
        return pct(value, signed=signed)
    return fmt(value, digits, signed=signed)


def interval(low: Any, high: Any, *, percent: bool = False, digits: int = 3) -> str:
    """An interval as ``[low, high]``, each bound formatted like a value."""
    return (f"[{number(low, percent=percent, digits=digits)}, "
            f"{number(high, percent=percent, digits=digits)}]")


def duration(seconds: float) -> str:
    """Seconds as ``42 s`` below two minutes, else ``12.3 min``."""
    if is_missing(seconds):
        return MISSING
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


__all__ = ["MISSING", "duration", "fmt", "interval", "is_missing", "number", "pct"]
