"""Means over seeds with their Student-t 95% intervals (tables and plots of sweeps).

>>> m, lo, hi = t_interval([0.8, 0.9, 1.0])
>>> round(m, 3), round(lo, 3), round(hi, 3)
(0.9, 0.652, 1.148)
>>> t_interval([0.8, 0.9, 1.0], clip=(0.0, 1.0))[2]
1.0
>>> t_interval([0.7])
(0.7, nan, nan)
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from typing import Any


def t_interval(values: Iterable[Any], *, confidence: float = 0.95,
               clip: tuple[float, float] | None = None) -> tuple[float, float, float]:
    """Mean and Student-t interval of the finite numbers in ``values``.

    Parameters
    ----------
    values
        One value per seed; ``None``, NaN, infinities and non-numbers are left out.
    confidence
        The interval's coverage (default 95%).
    clip
        Bounds the interval cannot cross (``(0, 1)`` for proportions such as accuracy).

    Returns
    -------
    tuple of float
        ``(mean, low, high)``; NaN for all three without a value, and NaN bounds with one
        value (one seed gives no interval).
    """
    v = []
    for x in values:
        try:
            f = float(x)
        except (TypeError, ValueError):
            continue
        if math.isfinite(f):
            v.append(f)
    if not v:
        return math.nan, math.nan, math.nan
    m = statistics.fmean(v)
    if len(v) < 2:
        return m, math.nan, math.nan
    from scipy import stats

    half = float(stats.t.ppf(0.5 + confidence / 2, len(v) - 1)) * statistics.stdev(v) \
        / math.sqrt(len(v))
    lo, hi = m - half, m + half
    if clip is not None:
        lo, hi = max(lo, clip[0]), min(hi, clip[1])
    return m, lo, hi


__all__ = ["t_interval"]
