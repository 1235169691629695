"""Brute-force references for the smooth sensitivity (small n only).

``smooth_by_enumeration`` follows the definition ``S(x) = max_y exp(-β d(x, y)) ℓ(y)``:
it enumerates every dataset y reachable by removing any subset of x and adding
copies of L and U, and computes ℓ(y) from y's own order statistics -- no use of
the pair decomposition or of the endpoint argument of the fast algorithm.
``true_local_sensitivity`` is the exact local sensitivity of the trimmed mean /
variance themselves (removals of every element, additions from a fine grid).
"""

from __future__ import annotations

import itertools
import math

import numpy as np


def trimmed(values, m, lo, hi):
    """(mean, variance) of the trimmed window, with the empty-window conventions."""
    xs = np.sort(np.asarray(values, dtype=float))
    n = xs.size
    if n - 2 * m <= 0:
        return (lo + hi) / 2.0, 0.0
    win = xs[m:n - m]
    mu = float(win.mean())
    return mu, float(np.mean((win - mu) ** 2))


def proxy_local(values, m, lo, hi, statistic):
    """ℓ(y) from y's sorted values: D = y_(n-m+1) - y_(m), w = n - 2m."""
    xs = np.sort(np.asarray(values, dtype=float))
    n = xs.size
    w = n - 2 * m
    c = (hi - lo) if statistic == "mean" else (hi - lo) ** 2 / 4

    def order(i):  # 1-based, with the L / U conventions
        return lo if i <= 0 else hi if i > n else xs[i - 1]

    if w <= 1:
        return c
    d = order(n - m + 1) - order(m)
    val = d / (w - 1) if statistic == "mean" else d * d * w / (w - 1) ** 2
    return min(val, c)


def smooth_by_enumeration(values, m, lo, hi, beta, statistic):
    """max over removals (any subset) and additions at L and U of exp(-β d) ℓ(y)."""
    x = list(values)
    n = len(x)
    best = 0.0
    for r in range(n + 1):
        for removed in itertools.combinations(range(n), r):
            keep = [v for i, v in enumerate(x) if i not in removed]
            for a_lo in range(m + 2):
                for a_hi in range(m + 2):
                    y = keep + [lo] * a_lo + [hi] * a_hi
                    d = r + a_lo + a_hi
                    best = max(best, math.exp(-beta * d) * proxy_local(y, m, lo, hi, statistic))
    return best


def smooth_by_distance(values, m, lo, hi, beta, statistic):
    """The paper's procedure, literally: for every k, every split of k (i at U, j at L, rest
    removed from the middle), the bound at the resulting dataset; O(n^3) loops."""
    xs = sorted(values)
    n = len(xs)
    w = n - 2 * m
    c = (hi - lo) if statistic == "mean" else (hi - lo) ** 2 / 4

    def order(i):
        return lo if i <= 0 else hi if i > n else xs[i - 1]

    best = 0.0
    for k in range(n + 2 * m + 2):
        ak = 0.0
        for a in range(k + 1):
            wp = w + 2 * a - k
            for i in range(a + 1):
                j = a - i
                d = order(n - m + 1 + i) - order(m - j)
                if wp <= 1:
                    val = c
                elif statistic == "mean":
                    val = min(d / (wp - 1), c)
                else:
                    val = min(d * d * wp / (wp - 1) ** 2, c)
                ak = max(ak, val)
        best = max(best, math.exp(-beta * k) * ak)
    return best


def true_local_sensitivity(values, m, lo, hi, statistic, grid=64):
    """Exact local sensitivity of the trimmed statistic (add/remove one value)."""
    x = list(values)
    idx = 0 if statistic == "mean" else 1
    base = trimmed(x, m, lo, hi)[idx]
    adds = set(np.linspace(lo, hi, grid)) | set(x) | {lo, hi}
    adds |= {(a + b) / 2 for a in x for b in x}
    best = 0.0
    for v in adds:
        best = max(best, abs(trimmed(x + [v], m, lo, hi)[idx] - base))
    for i in range(len(x)):
        best = max(best, abs(trimmed(x[:i] + x[i + 1:], m, lo, hi)[idx] - base))
    return best


# ----------------------------------------------------------------- replace model
def proxy_local_replace(values, m, lo, hi, statistic):
    """ℓ(y) for the replace model: D / w or D**2 (w + 1) / w**2, capped."""
    xs = np.sort(np.asarray(values, dtype=float))
    n = xs.size
    w = n - 2 * m

    def order(i):
        return lo if i <= 0 else hi if i > n else xs[i - 1]

    d = order(n - m + 1) - order(m)
    c = (hi - lo) if statistic == "mean" else (hi - lo) ** 2 / 4
    val = d / w if statistic == "mean" else d * d * (w + 1) / w**2
    return min(val, c)


def smooth_by_distance_replace(values, m, lo, hi, beta, statistic):
    """For every k: the best split of k replacements (i values to U, j to L), literally."""
    xs = sorted(values)
    n = len(xs)
    w = n - 2 * m
    c = (hi - lo) if statistic == "mean" else (hi - lo) ** 2 / 4

    def order(i):
        return lo if i <= 0 else hi if i > n else xs[i - 1]

    best = 0.0
    for k in range(2 * m + 2):
        for i in range(k + 1):
            d = order(n - m + 1 + i) - order(m - (k - i))
            val = d / w if statistic == "mean" else d * d * (w + 1) / w**2
            best = max(best, math.exp(-beta * k) * min(val, c))
    return best


def smooth_by_enumeration_replace(values, m, lo, hi, beta, statistic):
    """max over replacing any subset by copies of L and U of exp(-β r) ℓ(y)."""
    x = list(values)
    n = len(x)
    best = 0.0
    for r in range(n + 1):
        for removed in itertools.combinations(range(n), r):
            keep = [v for i, v in enumerate(x) if i not in removed]
            for a_lo in range(r + 1):
                y = keep + [lo] * a_lo + [hi] * (r - a_lo)
                best = max(best, math.exp(-beta * r) * proxy_local_replace(y, m, lo, hi,
                                                                           statistic))
    return best


def true_local_sensitivity_replace(values, m, lo, hi, statistic, grid=64):
    """Exact local sensitivity of the trimmed statistic, replacing one value."""
    x = list(values)
    idx = 0 if statistic == "mean" else 1
    base = trimmed(x, m, lo, hi)[idx]
    news = set(np.linspace(lo, hi, grid)) | set(x) | {lo, hi}
    best = 0.0
    for i in range(len(x)):
        for v in news:
            best = max(best, abs(trimmed(x[:i] + [v] + x[i + 1:], m, lo, hi)[idx] - base))
    return best


# ------------------------------------------------- exact smooth sensitivity, replace model
def _trimmed_rows(ys, m, lo, hi):
    """(mean, variance) of the trimmed window of every row of ``ys`` (vectorised)."""
    ys = np.sort(ys, axis=-1)
    n = ys.shape[-1]
    if n - 2 * m <= 0:
        shape = ys.shape[:-1]
        return np.full(shape, (lo + hi) / 2.0), np.zeros(shape)
    win = ys[..., m:n - m]
    mu = win.mean(axis=-1)
    return mu, ((win - mu[..., None]) ** 2).mean(axis=-1)


def exact_local_replace(ys, m, lo, hi, grid):
    """Exact local sensitivity (mean, variance) of every row of ``ys``: every position
    replaced by every grid value (the extremes of a trimmed statistic are reached at grid
    points when the grid holds L, U and the data's values)."""
    ys = np.atleast_2d(np.asarray(ys, dtype=float))
    n_rows, n = ys.shape
    g = np.asarray(grid, dtype=float)
    base_mu, base_var = _trimmed_rows(ys, m, lo, hi)
    moved = np.repeat(ys[:, None, None, :], n, axis=1).repeat(g.size, axis=2)
    idx = np.arange(n)
    moved[:, idx, :, idx] = g[None, None, :]
    mu, var = _trimmed_rows(moved, m, lo, hi)
    ls_mu = np.abs(mu - base_mu[:, None, None]).reshape(n_rows, -1).max(axis=1)
    ls_var = np.abs(var - base_var[:, None, None]).reshape(n_rows, -1).max(axis=1)
    return ls_mu, ls_var


def exact_smooth_replace(values, m, lo, hi, beta, grid=None):
    """The exact β-smooth sensitivity (mean, variance) by brute force over a grid.

    ``S(x) = max_y exp(-β d(x, y)) LS(y)`` with ``y`` every sample reachable by replacing
    any subset of ``x`` by grid values and ``LS`` the exact local sensitivity
    (:func:`exact_local_replace`). The grid defaults to ``{L, U, (L+U)/2} ∪ x``.
    """
    x = np.asarray(values, dtype=float)
    n = x.size
    pts = sorted(set(x.tolist()) | {lo, hi, (lo + hi) / 2.0}) if grid is None else grid
    best_mu = best_var = 0.0
    for r in range(n + 1):
        ys = []
        for pos in itertools.combinations(range(n), r):
            for vals in itertools.product(pts, repeat=r):
                y = x.copy()
                y[list(pos)] = vals
                ys.append(y)
        ls_mu, ls_var = exact_local_replace(np.array(ys), m, lo, hi, pts)
        decay = math.exp(-beta * r)
        best_mu = max(best_mu, decay * float(ls_mu.max()))
        best_var = max(best_var, decay * float(ls_var.max()))
    return best_mu, best_var


# ------------------------------------------- exact smooth sensitivity of the variance, replace
def exact_local_variance_replace(values, m, lo, hi):
    """Exact local sensitivity of the trimmed variance under replace, ``v`` analytic.

    Replacing a window value ``u`` by ``v`` changes ``V`` by ``(w-1)/w² ((v-c)² - (u-c)²)``
    (``c`` the mean of the other ``w - 1`` window values) with ``v`` anywhere in
    ``[y_(m), y_(n-m+1)]``: the extremes are ``v`` at either end or at ``c``. Every window
    value is tried as ``u``; nothing else of the fast algorithm is used.
    """
    xs = sorted(float(v) for v in values)
    n = len(xs)
    w = n - 2 * m
    if w <= 1:
        return 0.0

    def order(i):
        return lo if i <= 0 else hi if i > n else xs[i - 1]

    win = xs[m:n - m]
    a, b = order(m), order(n - m + 1)
    total = sum(win)
    best = 0.0
    for u in win:
        c = (total - u) / (w - 1)
        for v in (a, b, c):
            best = max(best, abs((v - c) ** 2 - (u - c) ** 2))
    return (w - 1) / w**2 * best


def exact_smooth_variance_replace(values, m, lo, hi, beta):
    """``max_y e^{-β d(x, y)} LS_V(y)`` over every ``y`` reachable by replacing any subset
    of ``x`` by values of ``{L, U} ∪ x`` (exhaustive; :func:`exact_local_variance_replace`).

    The moved values need no other positions: each term of ``LS_V`` is linear or convex
    in a moved value while the order pattern is fixed, so a maximiser sits at ``L``, ``U``
    or an order boundary (a value of ``x``); checked against finer grids when written.
    """
    x = [float(v) for v in values]
    n = len(x)
    pts = sorted(set(x) | {lo, hi})
    best = 0.0
    for r in range(n + 1):
        decay = math.exp(-beta * r)
        for pos in itertools.combinations(range(n), r):
            for vals in itertools.product(pts, repeat=r):
                y = list(x)
                for p, v in zip(pos, vals, strict=True):
                    y[p] = v
                best = max(best, decay * exact_local_variance_replace(y, m, lo, hi))
    return best
