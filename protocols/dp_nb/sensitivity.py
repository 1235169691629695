r"""Smooth sensitivity of the trimmed mean and variance of bounded values, fast.

Two neighbouring relations are supported (``neighbours``):

``"add-remove"`` (default)
    neighbouring multisets differ by adding or removing one value (one
    record of one class; the class sizes are private);
``"replace"``
    the paper's model: one value is replaced and the class size ``n`` is
    fixed (public) -- what the paper's Theorem 4 and Vaidya et al.'s
    ``(U - L)/(n + 1)`` assume.

Setting. ``x`` is a multiset of ``n`` values in ``[L, U]``, sorted
``x_(1) <= ... <= x_(n)``, with the conventions ``x_(i) = L`` for ``i <= 0``
and ``x_(i) = U`` for ``i > n``. With a public trimming parameter ``m``
(Definition 4.1 of Zafarani & Clifton) the *window* is
``x_(m+1), ..., x_(n-m)`` of size ``w = n - 2m``; the released statistics are
its mean ``T`` and population variance ``V`` (``T = (L+U)/2`` and ``V = 0``
when ``w <= 0``).

Local sensitivity bound, add/remove. Adding a value ``v`` adds ``clip(v, x_(m),
x_(n-m+1))`` to the window; removing a value removes one window element.
With the *extended spread* ``D(x) = x_(n-m+1) - x_(m)`` this gives, for
``w >= 2``,

* mean: ``|ΔT| <= D / (w - 1)``,
* variance: ``|ΔV| <= D**2 * w / (w - 1)**2``

(from ``ΔT = (u - T)/(w + 1)`` or ``(T - u)/(w - 1)`` and Welford's update
of ``V``), and the caps ``U - L`` and ``(U - L)**2 / 4`` (every value of the
statistic lies in ``[L, U]``, resp. ``[0, (U-L)**2/4]``) for ``w <= 1``. Call
this bound ``ℓ(D, w)``; it is at most a factor 2 (mean) or 4 (variance) above
the exact local sensitivity.

Smooth sensitivity. ``S(x) = max_y exp(-β d(x, y)) ℓ(D(y), w(y))`` is the
β-smooth sensitivity of ``ℓ`` (NRS Def. 2.2), hence a β-smooth upper bound on
the local sensitivity of ``T`` (and of ``V``). Writing ``P_i = x_(n-m+1+i)``
and ``B_j = x_(m-j)``, a dataset at distance ``k`` reached by ``i`` additions
at ``U``, ``j`` at ``L`` and ``k - i - j`` removals from inside the window
attains the largest ``ℓ`` there, so

``A(k) = max_{i+j=a<=k} ℓ(P_i - B_j, w + 2a - k)``    (``ℓ = cap`` when ``w + 2a - k <= 1``)

and ``S = max_k exp(-kβ) A(k)``. This is the paper's procedure (Theorems 4
and 7: push k values to the extremes); evaluating it for every k is
quadratic.

Replace. ``w`` is fixed; the window loses one element and gains one in
``[x_(m), x_(n-m+1)]``, so ``|ΔT| <= D / w`` and ``|ΔV| <= D**2 (w + 1) / w**2``
(``ΔV = s (v + u - 2T - s/w) / w`` with ``s = v - u``). Moving ``i`` window
values to ``U`` and ``j`` to ``L`` costs ``i + j`` replacements, so
``S = max_{i,j} exp(-(i+j)β) ℓ(P_i - B_j, w)`` -- the trimmed-mean formula of
Bun & Steinke (2019) with a one-index looser spread, applied to the variance
too. It is β-smooth because one replacement shifts the order statistics of
one side by at most one position.

Exact (replace; ``method="exact"``, the default under replace). The trimmed
mean's local sensitivity under replace is exactly ``D*(y) / w`` with the *exact
spread* ``D*(y) = max(y_(n-m+1) - y_(m+1), y_(n-m) - y_(m))`` (move the lowest
window value to ``U`` or the highest to ``L``), and the largest ``D*`` over the
samples at distance ``k`` is ``G_k = max_{0<=t<=k+1} x_(n-m+1+k-t) - x_(m+1-t)``
(``k - t`` values moved to ``U``, ``t`` to ``L``; Bun & Steinke 2019, the paper's
Theorem 4), so ``S = max_k e^{-kβ} G_k / w`` exactly -- the pair bound above has
the spread one index looser and ``w - 1`` for ``w``. The pairs ``(a, b)`` with
value ``e^{-(a+b)β} (x_(n-m+1+a) - x_(m+1-b))`` have a monotone maximiser (``a``
does not grow with ``b``), so a level-by-level divide and conquer finds the
maximum in ``O((m + 2) log m)`` evaluations (:func:`exact_spread`). Variance:
the exact smooth sensitivity of the trimmed variance depends on the window's inner
values too; :func:`exact_variance` computes it from the sorted sample (the
extreme replacement configurations at each distance, ``O(k)`` candidates each).
The earlier exact-spread bound ``(w-1)/w² max_k e^{-kβ} G_k²`` is kept as
:func:`spread_variance_bound`. ``tests/dpnb`` checks both statistics against an
exhaustive search over every sample reachable on ``{L, U} ∪ x``.

The fast algorithm swaps the maxima. For fixed ``(i, j)``, ``k -> exp(-kβ)
ℓ(D, w + 2a - k)`` is log-convex while ``ℓ`` is below its cap, so its
maximum over ``k`` is at ``k = a`` or near the end where ``ℓ`` reaches the
cap (``w + 2a - k <= 6``, six candidates). Only ``i, j <= m`` matter
(``P_m = U``, ``B_m = L``), and since the bound decreases in ``a`` for the
largest possible spread ``U - L``, pairs with ``a >= K`` -- the first ``a``
whose bound at ``D = U - L`` falls below a lower bound on ``S`` -- are never
evaluated (the **early stop in the distance**). Cost: ``O(n)`` selection plus
``O(K min(K, m))`` pair evaluations, independent of ``n`` for a fixed ``m``.

:func:`smooth_sensitivity_direct` evaluates ``A(k)`` for every ``k`` (the
quadratic procedure); ``tests/dpnb`` keeps a brute-force reference that
enumerates the datasets themselves.

Examples
--------
>>> import numpy as np
>>> x = np.array([2.0, 3.0, 3.5, 4.0, 4.5, 5.0, 9.0])
>>> stats = trimmed_statistics(x, trim=1, lower=0.0, upper=10.0)
>>> round(stats.mean, 4), round(stats.variance, 4), stats.window
(4.0, 0.5, 5)
>>> s = smooth_sensitivity(x, trim=1, lower=0.0, upper=10.0, beta=0.5)
>>> round(s.mean, 4), s.mean >= s.local_mean
(1.75, True)
>>> bool(np.isclose(s.mean, smooth_sensitivity_direct(x, trim=1, lower=0.0, upper=10.0,
...                                                     beta=0.5).mean))
True
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ppknn.core.errors import ConfigError

STATISTICS = ("mean", "variance")
NEIGHBOURS = ("add-remove", "replace")
SENSITIVITIES = ("exact", "bound")
"""``"exact"``: the exact smooth sensitivities of the trimmed mean (Theorem 4) and of the
trimmed variance (:func:`exact_variance`; replace model only); ``"bound"``: the pair bound
``ℓ(D, w)`` of the module docstring (both neighbouring relations; looser)."""
_TINY = float(np.finfo(np.float64).tiny)
_END_CANDIDATES = 5
"""Window sizes 2..6 near the end of the k range (where the variance bound meets its cap)."""
_BLOCK = 1 << 18
"""Pair evaluations per vectorised block (direct procedure)."""
_LEAF = 16
"""Blocks of at most this many rows and columns are evaluated pair by pair."""
_DENSE = 1 << 14
"""Pair grids up to this size are evaluated whole, without branch and bound."""
_DENSE_ROWS = 1 << 16
"""Exact variance: when the distances that matter have at most this many (k, t) rows in
all, every distance is evaluated (no branch and bound, no monotonicity needed)."""


@dataclass(frozen=True)
class TrimmedStatistics:
    """The trimmed window of one sample and its order statistics.

    Attributes
    ----------
    n, trim, window:
        Sample size, trimming ``m`` per side, and ``w = n - 2m``.
    mean, variance:
        ``T`` and ``V`` of the window (``(L+U)/2`` and 0 when it is empty).
    top, bottom:
        ``P_i = x_(n-m+1+i)`` and ``B_j = x_(m-j)`` for ``i, j = 0..m``.
    lower, upper:
        The declared bounds.
    """

    n: int
    trim: int
    window: int
    mean: float
    variance: float
    top: np.ndarray
    bottom: np.ndarray
    lower: float
    upper: float
    window_low: float = math.nan
    """``x_(m+1)``, the window's smallest value (``L`` when the window is empty)."""
    window_high: float = math.nan
    """``x_(n-m)``, the window's largest value (``U`` when the window is empty)."""
    values: np.ndarray | None = None
    """The whole sample, sorted (the exact variance sensitivity reads every value)."""

    @property
    def spread(self) -> float:
        """``D(x) = x_(n-m+1) - x_(m)``."""
        return float(self.top[0] - self.bottom[0])


@dataclass(frozen=True)
class SmoothSensitivity:
    """β-smooth sensitivities of the trimmed mean and variance of one sample.

    These are owner-side quantities: they depend on the data and are never
    released (only the noisy statistics are).

    Attributes
    ----------
    mean, variance:
        ``S`` of the mean and of the variance.
    neighbours:
        ``"add-remove"`` or ``"replace"``.
    local_mean, local_variance:
        The local bounds ``ℓ(D(x), w)`` (``S >= local``).
    beta:
        The smoothness parameter used.
    stop_mean, stop_variance:
        Early-stop distances ``K`` (pairs with ``i + j >= K`` were skipped).
    pairs:
        Pair evaluations done (both statistics).
    """

    mean: float
    variance: float
    local_mean: float
    local_variance: float
    beta: float
    stop_mean: int
    stop_variance: int
    pairs: int
    neighbours: str = "add-remove"
    method: str = "bound"
    """``"exact"`` or ``"bound"`` (:data:`SENSITIVITIES`)."""

    def of(self, statistic: str) -> float:
        """``S`` of ``"mean"`` or ``"variance"``."""
        return self.mean if statistic == "mean" else self.variance


def _check(values, trim, lower, upper) -> tuple[np.ndarray, int, float, float]:
    x = np.asarray(values, dtype=np.float64).ravel()
    lo, hi = float(lower), float(upper)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ConfigError(f"bounds must be finite with lower < upper, got [{lower!r}, {upper!r}]")
    if isinstance(trim, bool) or not isinstance(trim, (int, np.integer)) or trim < 0:
        raise ConfigError(f"trim must be an integer >= 0, got {trim!r}")
    if x.size and (not np.all(np.isfinite(x)) or x.min() < lo or x.max() > hi):
        raise ConfigError(f"values must be finite and inside [{lo}, {hi}]; clip them first")
    return x, int(trim), lo, hi


def trimmed_statistics(values, *, trim: int, lower: float, upper: float) -> TrimmedStatistics:
    """Trim ``trim`` values from each end and return the window's statistics (``O(n)``)."""
    x, m, lo, hi = _check(values, trim, lower, upper)
    n = x.size
    w = n - 2 * m
    k = min(m, n)
    if 0 < k < n:
        part = np.partition(x, [k - 1, n - k]) if n - k > k - 1 else np.sort(x)
    else:
        part = np.sort(x) if k else x
    low = np.sort(part[:k])  # the k smallest, ascending
    high = np.sort(part[n - k:]) if k else part[:0]  # the k largest, ascending
    if w > 0:
        win = part[k:n - k]
        mean = float(win.mean())
        var = float(np.mean((win - mean) ** 2))
        w_lo, w_hi = float(win.min()), float(win.max())
    else:
        mean, var = (lo + hi) / 2.0, 0.0
        w_lo, w_hi = lo, hi
    # bottom[j] = x_(m-j), top[i] = x_(n-m+1+i) for i, j = 0..m, with x_(<=0) = L, x_(>n) = U
    if w >= 0:
        ext = np.concatenate([[lo], low, high, [hi]])  # order statistics 0..k and n-k+1..n+1
        pos_b = np.clip(m - np.arange(m + 1), 0, None)  # 1-based index, 0 means L
        pos_t = n - m + 1 + np.arange(m + 1)
        bottom = ext[pos_b]
        top = np.where(pos_t > n, hi, ext[np.clip(pos_t - (n - k) + k, 0, ext.size - 1)])
    else:  # fewer than 2m values
        ext = np.concatenate([[lo], np.sort(x), [hi]])
        bottom = ext[np.clip(m - np.arange(m + 1), 0, n + 1)]
        top = ext[np.clip(n - m + 1 + np.arange(m + 1), 0, n + 1)]
    return TrimmedStatistics(n, m, w, mean, var, top, bottom, lo, hi, w_lo, w_hi, np.sort(x))


def cap(statistic: str, lower: float, upper: float) -> float:
    """The global bound on the local sensitivity: ``U - L`` or ``(U - L)**2 / 4``."""
    r = upper - lower
    return r if statistic == "mean" else r * r / 4.0


def local_bound(statistic: str, spread, window, lower: float, upper: float):
    """``ℓ(D, w)``: the local-sensitivity bound at spread ``D`` and window ``w`` (vectorised)."""
    d = np.asarray(spread, dtype=np.float64)
    w = np.asarray(window, dtype=np.float64)
    c = cap(statistic, lower, upper)
    safe = np.maximum(w - 1.0, 1.0)
    val = d / safe if statistic == "mean" else d * d * w / (safe * safe)
    return np.where(w >= 2, np.minimum(val, c), c)


def local_bound_replace(statistic: str, spread, window: int, lower: float, upper: float):
    """``ℓ(D, w)`` for the replace model: ``D / w`` or ``D**2 (w + 1) / w**2`` (vectorised)."""
    d = np.asarray(spread, dtype=np.float64)
    val = d / window if statistic == "mean" else d * d * (window + 1.0) / window**2
    return np.minimum(val, cap(statistic, lower, upper))


def _pair_bound(statistic, d, a, w, beta, lower, upper, neighbours="add-remove", ends=True):
    """Max over the candidate distances k of ``exp(-kβ) ℓ(d, w + 2a - k)`` (vectorised).

    ``ends=False`` skips the candidates near the end of the k range (window sizes
    2..6); callers do so only when ``cap · e^{-(w-6)β}`` cannot beat the best value.
    """
    a = np.asarray(a, dtype=np.float64)
    if neighbours == "replace":
        return np.exp(-a * beta) * local_bound_replace(statistic, d, w, lower, upper)
    best = np.exp(-a * beta) * local_bound(statistic, d, w + a, lower, upper)
    if not ends:
        return best
    last = 1 if statistic == "mean" else _END_CANDIDATES
    for wp in range(2, 2 + last):  # k = w + 2a - wp, needs k >= a
        k = w + 2 * a - wp
        with np.errstate(over="ignore", invalid="ignore"):  # k < a: masked out below
            val = np.exp(-k * beta) * local_bound(statistic, d, wp, lower, upper)
        best = np.maximum(best, np.where(k >= a, val, 0.0))
    return best


def _smooth_one(st: TrimmedStatistics, statistic: str, beta: float,
                neighbours: str) -> tuple[float, float, int, int]:
    m, w, lo, hi = st.trim, st.window, st.lower, st.upper
    c = cap(statistic, lo, hi)
    if neighbours == "replace":
        if w <= 0:
            raise ConfigError(f"the replace model needs a non-empty window: n = {st.n} values, "
                              f"trim = {m} per side")
        local = float(local_bound_replace(statistic, st.spread, w, lo, hi))
        s = local
    else:
        local = float(local_bound(statistic, st.spread, w, lo, hi))
        if w <= 1:
            return c, local, 0, 0
        s = c * math.exp(-(w - 1) * beta)  # shrink the window to one value: the cap
    a_all = np.arange(2 * m + 1)
    # a cheap lower bound from the border pairs (i, 0) and (0, j)
    border = np.maximum(st.top[np.minimum(a_all, m)] - st.bottom[0],
                        st.top[0] - st.bottom[np.minimum(a_all, m)])
    s = max(s, float(np.max(_pair_bound(statistic, border, a_all, w, beta, lo, hi,
                                        neighbours))))
    # the end candidates are at distance >= w - 6: skip them when they cannot beat s
    ends = c * math.exp(-max(w - 6, 0) * beta) > s

    def bound(d, a):
        return _pair_bound(statistic, d, a, w, beta, lo, hi, neighbours, ends)

    # early stop: pairs with i + j >= K cannot beat s even at the largest spread
    ceiling = bound(hi - lo, a_all)
    above = np.flatnonzero(ceiling > s)
    stop = int(above[-1]) + 1 if above.size else 0
    if stop == 0:
        return s, local, 0, 0
    side = min(m, stop - 1) + 1
    if side * side <= _DENSE:  # small: every pair with i + j < stop in one vectorised call
        i, j = np.divmod(np.arange(side * side), side)
        keep = i + j < stop
        vals = bound(st.top[i[keep]] - st.bottom[j[keep]], (i + j)[keep])
        return max(s, float(vals.max())), local, stop, int(vals.size)
    s, pairs = _branch_and_bound(st, bound, s, stop)
    return s, local, stop, pairs


def _branch_and_bound(st: TrimmedStatistics, bound: Callable, best: float,
                      stop: int) -> tuple[float, int]:
    """Exact max of the pair bound over ``i, j <= min(m, stop - 1)``, ``i + j < stop``.

    Blocks of pairs are bounded from above by the bound at their largest spread
    (``P_i1 - B_j1``) and smallest distance (``i0 + j0``) -- valid because the
    pair bound grows with the spread and shrinks with the distance -- and
    discarded when that is not above the best value found; the rest are split
    in four until they are small enough to evaluate pair by pair.
    """
    top, bottom = st.top, st.bottom
    last = min(st.trim, stop - 1)
    i0 = np.zeros(1, dtype=np.int64)
    j0 = np.zeros(1, dtype=np.int64)
    i1 = np.full(1, last, dtype=np.int64)
    j1 = np.full(1, last, dtype=np.int64)
    side = np.arange(_LEAF)
    pairs = 0

    def exact(i, j):
        return bound(top[i] - bottom[j], i + j)

    while i0.size:
        ok = i0 + j0 < stop
        i0, i1, j0, j1 = i0[ok], i1[ok], j0[ok], j1[ok]
        # lower bounds: exact values at the corners (clipped to i + j < stop)
        for ci, cj in ((i0, j0), (i1, j0), (i0, j1)):
            good = ci + cj < stop
            if good.any():
                best = max(best, float(exact(ci[good], cj[good]).max()))
        ub = bound(top[i1] - bottom[j1], i0 + j0)
        ok = ub > best
        i0, i1, j0, j1 = i0[ok], i1[ok], j0[ok], j1[ok]
        leaf = (i1 - i0 < _LEAF) & (j1 - j0 < _LEAF)
        if leaf.any():
            ii, jj = np.broadcast_arrays(i0[leaf][:, None, None] + side[None, :, None],
                                         j0[leaf][:, None, None] + side[None, None, :])
            mask = (ii <= i1[leaf][:, None, None]) & (jj <= j1[leaf][:, None, None]) & (
                ii + jj < stop)
            vals = exact(ii[mask], jj[mask])
            pairs += vals.size
            if vals.size:
                best = max(best, float(vals.max()))
        big = ~leaf
        i0, i1, j0, j1 = i0[big], i1[big], j0[big], j1[big]
        im = (i0 + i1) // 2
        jm = (j0 + j1) // 2
        i0, i1, j0, j1 = (np.concatenate([i0, i0, im + 1, im + 1]),
                          np.concatenate([im, im, i1, i1]),
                          np.concatenate([j0, jm + 1, j0, jm + 1]),
                          np.concatenate([jm, j1, jm, j1]))
        ok = (i0 <= i1) & (j0 <= j1)
        i0, i1, j0, j1 = i0[ok], i1[ok], j0[ok], j1[ok]
    return best, pairs


def _check_beta(beta: float) -> float:
    b = float(beta)
    if not (b > 0) or math.isnan(b):
        raise ConfigError(f"beta must be a number > 0 (math.inf allowed), got {beta!r}")
    return b


def _check_neighbours(neighbours: str) -> str:
    if neighbours not in NEIGHBOURS:
        raise ConfigError(f"neighbours must be one of {list(NEIGHBOURS)}, got {neighbours!r}")
    return neighbours


def smooth_sensitivity(values, *, trim: int, lower: float, upper: float, beta: float,
                       neighbours: str = "add-remove", method: str | None = None
                       ) -> SmoothSensitivity:
    """β-smooth sensitivities of the trimmed mean and variance (fast; see module docstring).

    Parameters
    ----------
    values:
        One sample (one class, one feature), inside ``[lower, upper]``.
    trim:
        ``m``, values trimmed from each end.
    lower, upper:
        The declared (public) bounds.
    beta:
        Smoothness, ``> 0``; ``math.inf`` gives the local bound itself.
    neighbours:
        ``"add-remove"`` or ``"replace"`` (see the module docstring).
    method:
        ``"exact"`` (replace only: the exact smooth sensitivities of the trimmed
        mean, Theorem 4, and of the trimmed variance, :func:`exact_variance`),
        ``"bound"`` (the pair bound), or ``None``: ``"exact"`` under
        replace, ``"bound"`` under add/remove (see :data:`SENSITIVITIES`).
    """
    return smooth_from_statistics(trimmed_statistics(values, trim=trim, lower=lower,
                                                     upper=upper), beta=beta,
                                  neighbours=neighbours, method=method)


def resolve_method(method: str | None, neighbours: str) -> str:
    """The sensitivity procedure for ``neighbours``: ``method`` checked, or the default.

    ``None`` gives ``"exact"`` under replace and ``"bound"`` under add/remove;
    ``"exact"`` with add/remove raises :class:`ConfigError` (no exact procedure).
    """
    nb = _check_neighbours(neighbours)
    if method is None:
        return "exact" if nb == "replace" else "bound"
    if method not in SENSITIVITIES:
        raise ConfigError(f"sensitivity must be one of {list(SENSITIVITIES)}, got {method!r}")
    if method == "exact" and nb != "replace":
        raise ConfigError(f"sensitivity = 'exact' is defined for neighbours = 'replace' (the "
                          f"paper's model), got neighbours = {nb!r}; use sensitivity = 'bound' "
                          "with add-remove")
    return method


def _floor(s: float) -> float:
    """Replace a sensitivity that underflowed to 0 by the smallest normal float.

    ``e^{-kβ}`` terms below the smallest float vanish (ε = 10⁵ on a class whose window
    is constant): the floor is still an upper bound on the true, positive, value and
    gives a positive noise scale.
    """
    return max(s, _TINY)


def smooth_from_statistics(st: TrimmedStatistics, *, beta: float,
                           neighbours: str = "add-remove",
                           method: str | None = None) -> SmoothSensitivity:
    """Like :func:`smooth_sensitivity`, from precomputed :class:`TrimmedStatistics`."""
    b = _check_beta(beta)
    nb = _check_neighbours(neighbours)
    how = resolve_method(method, nb)
    if how == "exact":
        return _exact_replace(st, b)
    if math.isinf(b):
        bound = local_bound_replace if nb == "replace" else local_bound
        lm = float(bound("mean", st.spread, st.window, st.lower, st.upper))
        lv = float(bound("variance", st.spread, st.window, st.lower, st.upper))
        return SmoothSensitivity(_floor(lm), _floor(lv), lm, lv, b, 0, 0, 0, nb, "bound")
    sm, lm, km, pm = _smooth_one(st, "mean", b, nb)
    sv, lv, kv, pv = _smooth_one(st, "variance", b, nb)
    return SmoothSensitivity(_floor(sm), _floor(sv), lm, lv, b, km, kv, pm + pv, nb, "bound")


def _order(st: TrimmedStatistics) -> tuple[np.ndarray, np.ndarray]:
    """``P_a = x_(n-m+1+a)``, ``a = -1..m``, and ``Q_b = x_(m+1-b)``, ``b = 0..m+1``.

    Read from :class:`TrimmedStatistics` (``top`` holds ``x_(n-m+1..n+1)``, ``bottom``
    ``x_(m..0)``) plus the window's two ends ``x_(n-m)`` and ``x_(m+1)``.
    """
    lo, hi = st.lower, st.upper
    top = np.concatenate([[st.window_high], st.top])  # a = -1, 0, ..., m
    bottom = np.concatenate([[st.window_low], st.bottom])  # b = 0, 1, ..., m + 1
    return np.clip(top, lo, hi), np.clip(bottom, lo, hi)


def _monotone_max(top: np.ndarray, bottom: np.ndarray, beta: float) -> tuple[float, int]:
    """``max_{a, b >= 0} e^{-(a+b)β} (top[a] - bottom[b])`` in ``O((A + B) log B)``.

    ``top`` is non-decreasing and ``bottom`` non-increasing, so for a fixed ``b`` the
    log of the value has increasing differences in ``(a, bottom[b])``: the (rightmost)
    maximising ``a`` does not increase with ``b``. Divide and conquer on ``b``, level
    by level (one vectorised evaluation of every row midpoint per level).
    """
    n_b = bottom.size
    seg = np.array([[0, n_b - 1, 0, top.size - 1]], dtype=np.int64)  # b0, b1, a0, a1
    best, evaluated = -np.inf, 0
    while seg.size:
        b0, b1, a0, a1 = seg.T
        mid = (b0 + b1) // 2
        lengths = a1 - a0 + 1
        owner = np.repeat(np.arange(mid.size), lengths)
        starts = np.cumsum(lengths) - lengths
        a = a0[owner] + (np.arange(lengths.sum()) - starts[owner])
        bb = mid[owner]
        vals = np.exp(-(a + bb) * beta) * (top[a] - bottom[bb])
        evaluated += vals.size
        best = max(best, float(vals.max()))
        # rightmost argmax per segment
        order = np.lexsort((a, vals, owner))
        last = np.r_[np.flatnonzero(np.diff(owner[order])), order.size - 1]
        arg = a[order[last]]
        left = np.stack([b0, mid - 1, arg, a1], axis=1)  # b < mid: argmax >= arg
        right = np.stack([mid + 1, b1, a0, arg], axis=1)  # b > mid: argmax <= arg
        seg = np.concatenate([left, right])
        seg = seg[seg[:, 0] <= seg[:, 1]]
    return best, evaluated


def exact_spread(st: TrimmedStatistics, beta: float) -> tuple[float, float, int]:
    """``max_k e^{-kβ} G_k`` with ``G_k = max_{0<=t<=k+1} x_(n-m+1+k-t) - x_(m+1-t)``.

    ``G_k`` is the largest *exact spread* ``max(y_(n-m+1) - y_(m+1), y_(n-m) - y_(m))``
    over the samples ``y`` at replace distance ``k`` (Bun & Steinke 2019; the paper's
    Theorem 4). Returns (that maximum, ``G_0``, pairs evaluated). Pairs ``t <= k``
    (``a = k - t`` values moved up, ``t`` down) form a monotone 2-D maximum
    (:func:`_monotone_max`); ``t = k + 1`` is one row.
    """
    top, bottom = _order(st)
    fam_i, pairs = _monotone_max(top[1:], bottom, beta) if math.isfinite(beta) else (
        float(top[1] - bottom[0]), 1)
    # t = k + 1: top x_(n-m), bottom x_(m-k), cost k
    b = np.arange(bottom.size - 1)
    decay = np.exp(-b * beta) if math.isfinite(beta) else (b == 0).astype(float)
    fam_ii = float(np.max(decay * (top[0] - bottom[1:])))
    g0 = max(float(top[1] - bottom[0]), float(top[0] - bottom[1]))
    return max(fam_i, fam_ii), g0, pairs + b.size


def spread_variance_bound(st: TrimmedStatistics, beta: float) -> float:
    """``(w-1)/w² · max_k e^{-kβ} G_k²`` from the exact spread (an upper bound).

    An upper bound on the variance's smooth sensitivity under replace (two windows one
    replacement apart share
    ``w - 1`` values and lie in an interval of length ``D*``). It was this project's
    variance calibration before :func:`exact_variance`; kept as a reference (never below
    the exact value, never above the pair bound).
    """
    w = st.window
    g_var, _, _ = exact_spread(st, beta / 2.0)
    return (w - 1) / (w * w) * g_var * g_var


def _exact_replace(st: TrimmedStatistics, beta: float) -> SmoothSensitivity:
    """Exact smooth sensitivities of the trimmed mean and variance under replace.

    Mean: ``LS(y) = D*(y) / w`` exactly, with ``D*`` the exact spread, so
    ``S = max_k e^{-kβ} G_k / w`` (:func:`exact_spread`, Theorem 4). Variance:
    :func:`exact_variance` (Theorem 7 made exact for the trimmed window). A window of
    one value has a constant variance (its sensitivity is floored at the smallest float).
    """
    w = st.window
    if w <= 0:
        raise ConfigError(f"the replace model needs a non-empty window: n = {st.n} values, "
                          f"trim = {st.trim} per side")
    g_mean, g0, pm = exact_spread(st, beta)
    var, local_var, pv = exact_variance(st, beta)
    return SmoothSensitivity(_floor(g_mean / w), _floor(var), g0 / w, local_var, beta, 0, 0,
                             pm + pv, "replace", "exact")


class _Extended:
    """The sorted sample extended by ``x_(i) = L`` for ``i <= 0`` and ``U`` for ``i > n``.

    Values are shifted by ``L`` (the variance does not move) so that prefix sums of a
    large sample keep their precision.
    """

    def __init__(self, xs: np.ndarray, lower: float, upper: float) -> None:
        self.n = xs.size
        self.hi = upper - lower
        self.pad = np.concatenate([[0.0], xs - lower, [self.hi]])
        self.csum = np.concatenate([[0.0], np.cumsum(self.pad[1:-1])])
        self.sorted = self.pad[1:-1]

    def value(self, i):
        """``x_(i)`` (1-based, vectorised)."""
        return self.pad[np.clip(i, 0, self.n + 1)]

    def range_sum(self, left, right):
        """``sum_{i=left}^{right} x_(i)`` (0 when ``right < left``; vectorised)."""
        left, right = np.broadcast_arrays(np.asarray(left), np.asarray(right))
        n = self.n
        lo_r = np.clip(left, 1, n + 1)
        hi_r = np.clip(right, 0, n)
        real = np.where(hi_r >= lo_r, self.csum[hi_r] - self.csum[np.maximum(lo_r - 1, 0)], 0.0)
        n_u = np.clip(right - np.maximum(left, n + 1) + 1, 0, None)  # L copies add 0
        return real + n_u * self.hi


def _BLOCK_OFFSETS(w: int) -> list[int]:
    """Offsets of the moved block in the range: its two ends and next to a kept extreme."""
    return sorted({q for q in (0, 1, w - 1, w) if 0 <= q <= w})


_TIE_SPLITS = True
"""Evaluate only the splits at the ends of tie segments (:func:`_splits`); ``False``
evaluates every split (the tests compare the two)."""
_TIE_FACTOR = 40
"""A distance keeps every split unless ``_TIE_FACTOR`` × (runs of tied values) is below
its ``k + 1`` splits (each run gives at most about 40 segment ends)."""


def _splits(ext: _Extended, m: int, w: int, k: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (distance, split) rows to evaluate: ``(kk, t, starts)``, rows grouped by ``k``.

    Every order statistic that the score at ``(k, t)`` reads sits at ``s + c`` with
    ``s = m + 1 - t`` and ``c`` in a fixed set for each ``k`` (the brackets ``c = -1``
    and ``w + k``, the window's ends, the two single values of the offsets 1 and
    ``w - 1``, and the values entering and leaving the window as ``t`` moves). Where
    none of them crosses from one run of tied values to the next, the window loses one
    value of a run and gains one of another: its sum is linear in ``t``, its distinct
    values, ``a`` and ``b`` do not change, and for each value ``u`` the score --
    ``max(max_e (e - u)(e + u - 2c) , (u - c)²)`` with ``c`` linear in ``t`` -- is the
    maximum of a linear and a convex function, so convex; so is the maximum over ``u``.
    The maximum over such a segment of splits is at one of its two ends: only the ends
    (and the ends of the ranges where the moved block is real values) are evaluated.
    With few ties a distance keeps all its ``k + 1`` splits.
    """
    pad = ext.pad
    # extended positions r in 1..n+1 where x_(r) differs from x_(r-1) (x_(0) = L, x_(n+1) = U)
    runs = np.flatnonzero(pad[1:] != pad[:-1]) + 1
    counts = k + 1
    if not _TIE_SPLITS or runs.size * _TIE_FACTOR >= int(k.max(initial=0)) + 1:
        kk = np.repeat(k, counts)
        starts = np.cumsum(counts) - counts
        return kk, np.arange(kk.size) - np.repeat(starts, counts), starts
    rows_k, rows_t = [], []
    for kv in k.tolist():
        if runs.size * _TIE_FACTOR >= kv + 1:
            ts = np.arange(kv + 1)
        else:
            offsets = np.concatenate([np.arange(-2, 3), np.arange(kv - 2, kv + 3),
                                      np.arange(w - 3, w + 2), np.arange(w + kv - 3, w + kv + 2)])
            # x_(s + c) changes between t and t + 1 where s + c is the first of a run:
            # t = m + 1 + c - r; a segment's ends are such t and t + 1
            edge = (m + 1 + offsets[:, None] - runs[None, :]).ravel()
            valid = np.array([m + q for q in _BLOCK_OFFSETS(w)]
                             + [m + q + kv - ext.n for q in _BLOCK_OFFSETS(w)])
            ts = np.concatenate([edge, edge + 1, valid - 1, valid, valid + 1, [0, kv]])
            ts = np.unique(ts[(ts >= 0) & (ts <= kv)])
        rows_k.append(np.full(ts.size, kv, dtype=np.int64))
        rows_t.append(ts.astype(np.int64))
    sizes = np.array([r.size for r in rows_t], dtype=np.int64)
    starts = np.cumsum(sizes) - sizes
    if not rows_k:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), starts
    return np.concatenate(rows_k), np.concatenate(rows_t), starts


def _variance_scores(ext: _Extended, m: int, w: int, k: np.ndarray) -> np.ndarray:
    """``A_k · w² / (w - 1)`` for every distance in ``k`` (exact; see :func:`exact_variance`).

    For each ``k`` and each split ``t`` (values moved to ``L``; ``k - t`` to ``U``) the
    candidates are: the moved block at offset ``q in {0, 1, w-1, w}`` of the range with
    ``u`` the window's smallest or largest value, and ``q in {0, w}`` with ``u`` the two
    window values around ``(S + a)/(w + 1)`` and ``(S + b)/(w + 1)``. Only the splits
    of :func:`_splits` are evaluated (every split when the sample has few ties).
    """
    k = np.asarray(k, dtype=np.int64)
    kk, t, starts = _splits(ext, m, w, k)  # one row per (k, t) that can hold the maximum
    s = m + 1 - t  # the range is x_(s..s+w+k-1); a = x_(s-1), b = x_(s+w+k)
    n = ext.n
    a = ext.value(s - 1)
    b = ext.value(s + w + kk)
    total = ext.range_sum(s, s + w + kk - 1)
    best = np.zeros(kk.size)

    def score(q, u_abs, s_sum):
        u = ext.value(u_abs)
        c = (s_sum - u) / (w - 1)
        far = np.maximum((a - c) ** 2, (b - c) ** 2)
        near = (u - c) ** 2
        return np.maximum(far - near, near)

    for q in _BLOCK_OFFSETS(w):
        ok = (kk == 0) | ((s + q >= 1) & (s + q + kk - 1 <= n))
        s_sum = total - ext.range_sum(s + q, s + q + kk - 1)
        # window index i -> x_(s + i) below the block, x_(s + i + k) above it
        low = s + (kk if q == 0 else 0)
        high = s + w - 1 + (kk if q < w else 0)
        cands = [low, high]
        if q in (0, w):
            for end in (a, b):
                target = (s_sum + end) / (w + 1)
                first = np.searchsorted(ext.sorted, target, side="left") + 1  # x_(first) >= it
                lo_abs = s + (kk if q == 0 else 0)
                hi_abs = lo_abs + w - 1
                cands += [np.clip(first - 1, lo_abs, hi_abs), np.clip(first, lo_abs, hi_abs)]
        for u_abs in cands:
            best = np.where(ok, np.maximum(best, score(q, u_abs, s_sum)), best)
    # rows are grouped by distance (k + 1 rows each, never empty): a segmented maximum
    return np.maximum.reduceat(best, starts)


_A_MEMO: OrderedDict[bytes, dict[int, float]] = OrderedDict()
"""``A_k`` (times ``(w-1)/w²``) per sample, keyed by a digest of the sorted values, the
trim and the bounds: a pure function of them, so a fit at another ε, or by another
calibration, of the same sample reuses the distances already evaluated."""
_A_MEMO_SAMPLES = 256
"""Samples kept in :data:`_A_MEMO` (least recently used dropped first)."""
_A_MEMO_LOCK = threading.Lock()


def _memo_scores(ext: _Extended, m: int, w: int, factor: float
                 ) -> Callable[[np.ndarray], np.ndarray]:
    """``ks -> A_k · (w-1)/w²`` for one sample, evaluating only distances not seen before.

    Each value is the one :func:`_variance_scores` gives for that ``k`` alone (the
    computation is element-wise per distance), so the result does not depend on what
    the memo held.
    """
    key = hashlib.blake2b(ext.sorted.tobytes() + repr((m, w, ext.hi, ext.n)).encode(),
                          digest_size=20).digest()
    with _A_MEMO_LOCK:
        memo = _A_MEMO.get(key)
        if memo is None:
            memo = _A_MEMO[key] = {}
            while len(_A_MEMO) > _A_MEMO_SAMPLES:
                _A_MEMO.popitem(last=False)
        else:
            _A_MEMO.move_to_end(key)

    def scores(ks: np.ndarray) -> np.ndarray:
        wanted = ks.tolist()
        missing = sorted({k for k in wanted if k not in memo})
        if missing:
            vals = _variance_scores(ext, m, w, np.array(missing, dtype=np.int64)) * factor
            memo.update(zip(missing, vals.tolist(), strict=True))
        return np.array([memo[k] for k in wanted], dtype=np.float64)

    return scores


def _variance_branch_and_bound(ext: _Extended, m: int, w: int, factor: float, beta: float,
                               best: float) -> tuple[float, int]:
    """``max(best, max_k e^{-kβ} A_k)`` over distances ``1..n``; and the candidates evaluated.

    Branch and bound over intervals of distances: ``A_k`` does not decrease with
    ``k``, so ``max_{k1<=k<=k2} e^{-kβ} A_k <= e^{-k1 β} A_{k2}``. ``A_k`` does not
    depend on β: the values are memoised per sample (``_A_MEMO``) and the intervals
    are halvings of ``[1, n]`` whatever the largest useful distance is (an interval
    past it is pruned at once: its bound is at most the local value), so the fits of
    one sample at several ε, or by several calibrations, share their evaluations.
    """
    n = ext.n
    a_k = _memo_scores(ext, m, w, factor)
    f_end = float(a_k(np.array([n]))[0])
    evaluated = n + 1
    best = max(best, math.exp(-n * beta) * f_end)
    todo = [(1, n, f_end)]
    while todo:
        todo = [(k1, k2, f2) for k1, k2, f2 in todo if math.exp(-k1 * beta) * f2 > best]
        if not todo:
            break
        small = [(k1, k2) for k1, k2, _ in todo if k2 - k1 < 8]
        big = [(k1, k2, f2) for k1, k2, f2 in todo if k2 - k1 >= 8]
        ks = np.array([k for k1, k2 in small for k in range(k1, k2 + 1)]
                      + [(k1 + k2) // 2 for k1, k2, _ in big], dtype=np.int64)
        vals = a_k(ks)
        evaluated += int(np.sum(ks + 1))
        best = max(best, float(np.max(np.exp(-ks * beta) * vals)))
        mids = vals[ks.size - len(big):]
        todo = []
        for (k1, k2, f2), f_mid in zip(big, mids, strict=True):
            mid = (k1 + k2) // 2
            todo += [(k1, mid - 1, float(f_mid)), (mid + 1, k2, f2)]
    return best, evaluated


def exact_variance(st: TrimmedStatistics, beta: float) -> tuple[float, float, int]:
    r"""Exact β-smooth sensitivity of the trimmed variance under replace.

    Returns (``S_V``, the local sensitivity ``LS_V(x)``, candidates evaluated).

    Local sensitivity. Replacing one value of ``y`` changes its window ``W`` (``w``
    values) into ``W - {u} + {v}`` with ``u`` any window value and ``v`` anywhere in
    ``[a, b] = [y_(m), y_(n-m+1)]`` (conventions ``y_(0) = L``, ``y_(n+1) = U``), and
    ``ΔV = (w-1)/w² ((v - c)² - (u - c)²)`` with ``c`` the mean of ``W - {u}``.
    ``(v - c)²`` is convex in ``v`` and ``c`` lies in ``[a, b]``, so

    ``LS_V(y) = (w-1)/w² max_u max(max((a-c_u)², (b-c_u)²) - (u-c_u)², (u-c_u)²)``

    (``v`` at ``a``, ``b`` or ``c_u``).

    Smooth sensitivity. ``S_V = max_k e^{-kβ} A_k`` with ``A_k`` the largest ``LS_V``
    over the samples at replace distance ``<= k``. Proof sketch of the search:
    (i) for a moved value other than ``u``, each term above is linear (``c`` is linear
    in it) or convex in it while the sample's order pattern is fixed, so a maximiser
    puts every moved value at ``L``, at ``U`` or at an order boundary, i.e. on a value
    of ``x`` -- and a moved value tied to a value of ``x`` is dominated by leaving that
    value in place (Corollary 5.1 of the paper: the moved values form one block of
    consecutive order statistics); (ii) so the samples at distance ``k`` are
    ``t`` copies of ``L``, ``x`` without one block of ``k`` consecutive order
    statistics, and ``k - t`` copies of ``U``: the window is the extended range
    ``x_(s..s+w+k-1)`` (``s = m + 1 - t``) without a block at offset ``q``, with
    ``a = x_(s-1)`` and ``b = x_(s+w+k)``; (iii) for a fixed window the best ``u``
    of the first term is a neighbour of ``(S + a)/(w + 1)`` or ``(S + b)/(w + 1)``
    (each branch is concave in ``u``) and of the second term the window's smallest or
    largest value (convex); (iv) the first term falls with the window mean moving
    towards the bracket end it measures, so the block sits at an end of the range
    (``q = 0`` or ``w``), and the second term is largest with the block next to the
    kept extreme (``q = 1`` or ``w - 1``). Steps (i)-(ii) follow the paper's Theorems
    5-7 (which treat the untrimmed variance); (iv) is an exchange argument. The tests
    check the result against an exhaustive search over every sample reachable on
    ``{L, U} ∪ x`` and against a search over every block offset and every ``u``.

    Cost: ``O(k)`` candidates at distance ``k`` (``O(log n)`` each). Distances up to
    ``K`` (where ``e^{-Kβ}`` times the cap ``(w-1)/w² (U-L)²`` falls below the local
    value) are searched by branch and bound over intervals: ``A_k`` does not decrease
    with ``k`` (a sample within distance ``k`` is within ``k + 1``), so an interval
    ``[k1, k2]`` is worth at most ``e^{-k1 β} A_{k2}`` and is dropped when that cannot
    beat the best value found; the rest is halved. The search at distance ``k`` is the
    exact maximum over distance ``<= k`` when it does not decrease in ``k``, which held
    on every sample tested (``tests/dpnb``); typically ``O(K log K)`` candidates. When
    the ``K`` distances have few rows in all (``K² / 2 <= 65,536``) every distance is
    evaluated in one vectorised call instead (no monotonicity needed).
    """
    w = st.window
    if w <= 1:  # a window of one value has a constant variance
        return 0.0, 0.0, 0
    xs = st.values if st.values is not None else None
    if xs is None:
        raise ValueError("exact_variance needs TrimmedStatistics.values (the sorted sample)")
    ext = _Extended(np.asarray(xs, dtype=np.float64), st.lower, st.upper)
    m, n = st.trim, st.n
    factor = (w - 1) / (w * w)
    if n * (n + 3) // 2 <= _DENSE_ROWS and math.isfinite(beta):  # small: every distance at once
        ks = np.arange(n + 1)
        vals = _variance_scores(ext, m, w, ks) * factor
        return (float(np.max(np.exp(-ks * beta) * vals)), float(vals[0]),
                int(np.sum(ks + 1)))
    local = float(_variance_scores(ext, m, w, np.array([0]))[0]) * factor
    best = local
    cap_v = factor * ext.hi ** 2
    evaluated = 1
    if not math.isfinite(beta) or cap_v <= 0:
        return local, local, evaluated
    # the distances that can matter: e^{-kβ} · cap above the local value
    k_max = n if local <= 0 else min(n, int(math.floor(math.log(cap_v / local) / beta)) + 1)
    if k_max < 1:
        return local, local, evaluated
    if k_max * (k_max + 3) // 2 <= _DENSE_ROWS:  # few distances: every one, in one call
        ks = np.arange(1, k_max + 1)
        vals = _variance_scores(ext, m, w, ks) * factor
        best = max(best, float(np.max(np.exp(-ks * beta) * vals)))
        return best, local, evaluated + int(np.sum(ks + 1))
    found, more = _variance_branch_and_bound(ext, m, w, factor, beta, best)
    return found, local, evaluated + more


def smooth_sensitivity_direct(values, *, trim: int, lower: float, upper: float, beta: float,
                              neighbours: str = "add-remove") -> SmoothSensitivity:
    """The quadratic procedure: ``A(k)`` for every ``k`` up to ``n + 2m``, no early stop.

    ``G(a) = max_{i+j=a} (P_i - B_j)`` is tabulated for every ``a <= 2m``, then
    ``S = max_k exp(-kβ) max_{a<=k} ℓ(G(a), w + 2a - k)``. Used as a
    cross-check and for the runtime comparison (Fig. 13).
    """
    b = _check_beta(beta)
    nb = _check_neighbours(neighbours)
    st = trimmed_statistics(values, trim=trim, lower=lower, upper=upper)
    m, w, lo, hi = st.trim, st.window, st.lower, st.upper
    spread = st.top[:, None] - st.bottom[None, :]
    a_grid = np.add.outer(np.arange(m + 1), np.arange(m + 1))
    g = np.full(2 * m + 1, -np.inf)
    np.maximum.at(g, a_grid.ravel(), spread.ravel())
    a = np.arange(2 * m + 1)
    if nb == "replace":  # A(k) = ℓ(G(k)) for k <= 2m, then constant
        if w <= 0:
            raise ConfigError(f"the replace model needs a non-empty window: n = {st.n} values, "
                              f"trim = {m} per side")
        decay = np.exp(-a * b) if math.isfinite(b) else (a == 0).astype(float)
        res = [float(np.max(decay * local_bound_replace(stat, g, w, lo, hi)))
               for stat in STATISTICS]
        loc = [float(local_bound_replace(stat, st.spread, w, lo, hi)) for stat in STATISTICS]
        return SmoothSensitivity(res[0], res[1], loc[0], loc[1], b, a.size, a.size,
                                 2 * a.size, nb)
    ks = np.arange(st.n + 2 * m + 1)
    out = []
    for statistic in STATISTICS:
        best = 0.0
        for start in range(0, ks.size, max(1, _BLOCK // a.size)):
            k = ks[start:start + max(1, _BLOCK // a.size)][:, None]
            ell = local_bound(statistic, g[None, :], w + 2 * a[None, :] - k, lo, hi)
            ak = np.max(np.where(a[None, :] <= k, ell, 0.0), axis=1)
            decay = np.exp(-k[:, 0] * b) if math.isfinite(b) else (k[:, 0] == 0).astype(float)
            best = max(best, float(np.max(decay * ak)))
        out.append((best, float(local_bound(statistic, st.spread, w, lo, hi))))
    evaluated = ks.size * a.size
    return SmoothSensitivity(out[0][0], out[1][0], out[0][1], out[1][1], b,
                             ks.size, ks.size, 2 * evaluated, nb)


__all__ = [
    "NEIGHBOURS",
    "SENSITIVITIES",
    "STATISTICS",
    "SmoothSensitivity",
    "TrimmedStatistics",
    "cap",
    "exact_spread",
    "exact_variance",
    "local_bound",
    "local_bound_replace",
    "resolve_method",
    "smooth_from_statistics",
    "smooth_sensitivity",
    "smooth_sensitivity_direct",
    "spread_variance_bound",
    "trimmed_statistics",
]
