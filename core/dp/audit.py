"""Empirical privacy auditing: a lower confidence bound on ε from samples.

:func:`audit` runs a mechanism -- or a whole protocol, given as a callable
``(input, rng) -> output`` -- many times on two neighbouring inputs and turns
the output histograms into a statistically valid lower bound on the ε the
mechanism actually spends, in the manner of Google's stochastic DP tester and
DP-Sniper (Bichsel et al. 2021):

1. Draw ``n_samples`` outputs on each input and reduce each output to a
   scalar with ``feature`` (default: the output itself, or ``Release.value``).
   Discrete outputs with few distinct values get a cell per value,
   continuous ones are binned at quantiles of the pooled samples; sparse
   adjacent cells are merged so no event rests on a few lucky counts.
2. **Select** an event on the first half of the samples: order the bins by
   their estimated likelihood ratio (both directions) and take the prefix
   set -- a Neyman-Pearson threshold test -- or a tail of the output (a
   threshold, the best event of a monotone likelihood ratio), whichever has
   the best bound on that half (scored at a stricter level,
   :data:`SELECTION_STRICTNESS`, so that events resting on few counts lose).
3. **Test** the chosen event on the second, independent half: with
   one-sided Clopper-Pearson bounds at level ``(1 - confidence) / 2`` each,
   ``ε_lower = ln((p_lower(E | x) - δ) / p_upper(E | x'))``.

With probability at least ``confidence`` the true ε of the mechanism is at
least ``eps_lower`` (the event is fixed before the test half is looked at, so
no multiple-comparison correction is needed). A correct ε-DP mechanism
therefore shows ``eps_lower < ε`` except with probability ``1 - confidence``;
a bound above the claim is evidence of a bug.

Examples
--------
>>> import numpy as np
>>> from ppknn.core.dp.mechanisms import Laplace
>>> mech = Laplace(epsilon=1.0)
>>> result = audit(lambda x, rng, n: mech.randomise(np.full(n, x), rng).value, 0.0, 1.0,
...                n_samples=20_000, rng=np.random.default_rng(0), vectorized=True)
>>> 0.5 < result.eps_lower < 1.0
True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ppknn.core.dp.validation import check_delta, check_positive_int, check_probability
from ppknn.core.errors import ConfigError

MAX_CATEGORIES = 256
"""Outputs with at most this many distinct values get one cell per value."""

MIN_CELL_FRACTION = 0.005
"""Sparse cells are merged until each holds at least this share of the samples."""

SELECTION_STRICTNESS = 0.05
"""The selection half scores events at this fraction of the test's level: a stricter bound
penalises events resting on few counts, so the noise of the selection half picks a narrow
band over the whole region of the same likelihood ratio less often (validity is unaffected:
the test half alone makes the bound)."""


@dataclass(frozen=True)
class AuditResult:
    """What :func:`audit` measured.

    Attributes
    ----------
    eps_lower:
        Lower confidence bound on ε (>= 0).
    confidence:
        The probability with which the bound holds.
    n_samples:
        Runs per input (half selected the event, half tested it).
    event:
        The tested event, in words.
    hits:
        How often the event occurred in the test half on (the numerator
        input, the denominator input).
    delta:
        The δ the bound accounts for.
    """

    eps_lower: float
    confidence: float
    n_samples: int
    event: str
    hits: tuple[int, int]
    delta: float = 0.0


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """One-sided Clopper-Pearson bounds ``(lower, upper)``, each at level ``alpha``.

    >>> lo, hi = clopper_pearson(50, 100, 0.025)
    >>> round(lo, 3), round(hi, 3)
    (0.398, 0.602)
    """
    from scipy import stats  # imported here: a party that never audits never loads it

    lower = 0.0 if k == 0 else float(stats.beta.ppf(alpha, k, n - k + 1))
    upper = 1.0 if k == n else float(stats.beta.ppf(1 - alpha, k + 1, n - k))
    return lower, upper


def _bound(ha: int, hb: int, n: int, alpha: float, delta: float) -> float:
    p_low, _ = clopper_pearson(ha, n, alpha)
    _, p_high = clopper_pearson(hb, n, alpha)
    if p_low <= delta or p_high <= 0:
        return 0.0
    return max(0.0, math.log((p_low - delta) / p_high))


def certifiable_epsilon(n_test: int, confidence: float = 0.95, delta: float = 0.0) -> float:
    """The largest ε lower bound ``n_test`` test draws per input can certify.

    Reached when the event hits every draw of one input and none of the other;
    an audit whose mechanism spends more ε than this cannot show it.

    >>> round(certifiable_epsilon(500), 3)
    4.906
    """
    n = check_positive_int(n_test, name="n_test")
    confidence = check_probability(confidence, name="confidence")
    return _bound(n, 0, n, (1.0 - confidence) / 2.0, check_delta(delta))


def expected_bound(p_num: float, p_den: float, n_test: int, confidence: float = 0.95,
                   delta: float = 0.0) -> float:
    """The bound an event with these probabilities gives at its expected hit counts.

    ``p_num`` and ``p_den`` are the event's probabilities on the two inputs;
    the audit's test half of ``n_test`` draws per input is assumed to hit
    ``round(p n_test)`` times each (a planning figure, not a bound).

    >>> round(expected_bound(0.5, 0.5 * math.exp(-1.0), 20_000), 2)
    0.96
    """
    n = check_positive_int(n_test, name="n_test")
    alpha = (1.0 - check_probability(confidence, name="confidence")) / 2.0
    return _bound(round(p_num * n), round(p_den * n), n, alpha, check_delta(delta))


def trials_to_certify(epsilon: float, confidence: float = 0.95, *, p_event: float = 0.5,
                      fraction: float = 0.9, delta: float = 0.0) -> int:
    """Draws per input an audit needs to show ``fraction`` of ``epsilon`` (its power).

    The planning event hits with probability ``p_event`` on one input and
    ``p_event e^(-epsilon)`` on the other (the ratio of an ε-DP mechanism's
    best event, e.g. a Laplace count above the larger mean). The returned
    count is the smallest (half to select the event, half to test it) whose
    expected bound reaches ``fraction * epsilon``; its ceiling
    :func:`certifiable_epsilon` is then above ``epsilon`` as well.

    >>> trials_to_certify(5.0)
    9640
    """
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ConfigError(f"epsilon to certify = {epsilon!r}: allowed a finite value > 0")
    if not 0 < fraction < 1:
        raise ConfigError(f"fraction = {fraction!r}: allowed 0 < fraction < 1")
    target = fraction * epsilon

    def enough(n: int) -> bool:
        return expected_bound(p_event, p_event * math.exp(-epsilon), n, confidence,
                              delta) >= target

    hi = 64
    while not enough(hi):
        hi *= 2
        if hi > 2**31:
            raise ConfigError(f"no trial count below 2^31 certifies {fraction:g} of "
                              f"ε = {epsilon:g}")
    lo = hi // 2
    while hi - lo > max(1, hi // 200):
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid, hi)
    return 2 * (-(-hi // 10) * 10)  # round the test half up to tens; both halves


def one_run_epsilon(correct: int, guesses: int, confidence: float = 0.95) -> float:
    """ε lower bound of a one-run audit (Steinke, Nasr & Jagielski 2023, pure DP).

    ``guesses`` canaries, each included or not by an independent fair coin
    and released in one run by independent ε-DP releases, were guessed from
    the output and ``correct`` guesses were right. Under ε-DP the number of
    right guesses is dominated by ``Binomial(guesses, e^ε / (1 + e^ε))``, so
    every ε whose tail ``P[Bin >= correct]`` is below ``1 - confidence`` is
    rejected; the bound is the largest rejected ε (0 if none).

    >>> round(one_run_epsilon(100, 100), 3)
    3.493
    >>> one_run_epsilon(50, 100)
    0.0
    """
    from scipy import stats

    r = check_positive_int(guesses, name="guesses")
    v = int(correct)
    if not 0 <= v <= r:
        raise ConfigError(f"correct = {correct!r}: allowed 0 <= correct <= guesses = {r}")
    alpha = 1.0 - check_probability(confidence, name="confidence")

    def tail(eps: float) -> float:
        p = 1.0 / (1.0 + math.exp(-eps))
        return float(stats.binom.sf(v - 1, r, p))

    if tail(0.0) > alpha:
        return 0.0
    lo, hi = 0.0, 1.0
    while tail(hi) <= alpha and hi < 60:
        lo, hi = hi, 2 * hi
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if tail(mid) <= alpha else (lo, mid)
    return lo


def _scalars(outputs: Any, n: int) -> np.ndarray:
    arr = np.asarray(outputs, dtype=np.float64)
    if arr.shape != (n,):
        raise ConfigError(
            f"each output must reduce to one number (use feature=...), got shape {arr.shape} "
            f"for {n} runs"
        )
    if not np.all(np.isfinite(arr)):
        raise ConfigError("mechanism outputs must be finite numbers")
    return arr


def _draw(mechanism, x, n, rng, feature, vectorized) -> np.ndarray:
    def unwrap(out):
        out = getattr(out, "value", out)  # a Release -> its value
        return feature(out) if feature is not None else out

    if vectorized:
        batch = mechanism(x, rng, n)
        batch = getattr(batch, "value", batch)
        values = [feature(v) for v in batch] if feature is not None else batch
        return _scalars(values, n)
    return _scalars([unwrap(mechanism(x, rng)) for _ in range(n)], n)


def _cells(pooled: np.ndarray, bins: int) -> tuple[np.ndarray, list[str]]:
    """Cell edges for the pooled selection samples, and a description of each cell.

    Discrete outputs (few distinct values) get one cell per value, continuous
    ones ``bins`` quantile cells. Adjacent cells holding fewer than
    ``MIN_CELL_FRACTION`` of the samples are then merged, so that no event is
    chosen for a handful of lucky counts in a sparse tail.
    """
    values, counts = np.unique(pooled, return_counts=True)
    if values.size <= MAX_CATEGORIES:
        edges = (values[:-1] + values[1:]) / 2.0
        members = [[v] for v in values]
    else:
        edges = np.unique(np.quantile(pooled, np.linspace(0, 1, bins + 1)[1:-1]))
        counts = np.bincount(np.searchsorted(edges, pooled, side="right"), minlength=edges.size + 1)
        members = [[] for _ in range(edges.size + 1)]
    minimum = max(20, math.ceil(MIN_CELL_FRACTION * pooled.size))
    keep: list[int] = []  # indices of the edges that survive merging
    kept_members: list[list[float]] = [[]]
    acc = 0
    for i, c in enumerate(counts):
        acc += int(c)
        kept_members[-1].extend(members[i])
        if i < edges.size and acc >= minimum and counts[i + 1 :].sum() >= minimum:
            keep.append(i)
            kept_members.append([])
            acc = 0
    edges = edges[keep]
    lo = np.concatenate([[-np.inf], edges])
    hi = np.concatenate([edges, [np.inf]])
    names = []
    for j in range(edges.size + 1):
        vals = kept_members[j]
        if vals and len(vals) <= 3:
            names.append("{" + ", ".join(f"{v:g}" for v in vals) + "}")
        else:
            names.append(f"[{lo[j]:.4g}, {hi[j]:.4g})")
    return edges, names


def _describe(cells: np.ndarray, names: list[str], first: str) -> str:
    parts = [names[c] for c in sorted(cells)]
    what = " u ".join(parts[:8]) + (" u ..." if len(parts) > 8 else "")
    return f"output in {what}; more likely under input {first}"


def _select_event(edges: np.ndarray, sel_a: np.ndarray, sel_b: np.ndarray, alpha: float,
                  delta: float) -> tuple[float, np.ndarray, str]:
    """The event with the best bound on the selection halves: ``(bound, cells, "a" or "b")``.

    ``"a"``/``"b"``: the input whose probability of the event is the numerator.
    """
    n_cells = edges.size + 1
    half = len(sel_a)
    ca = np.bincount(np.searchsorted(edges, sel_a, side="right"), minlength=n_cells)
    cb = np.bincount(np.searchsorted(edges, sel_b, side="right"), minlength=n_cells)
    best = (-1.0, np.array([0]), "a")
    up, down = np.arange(n_cells), np.arange(n_cells)[::-1]
    for name, c_num, c_den in (("a", ca, cb), ("b", cb, ca)):
        by_ratio = np.argsort(-(c_num + 0.5) / (c_den + 0.5), kind="stable")
        # prefixes by estimated ratio (a Neyman-Pearson set) and the two tails (thresholds,
        # the best events of a monotone likelihood ratio, less noisy when ε is small)
        for order in (by_ratio, up, down):
            hits_num, hits_den = np.cumsum(c_num[order]), np.cumsum(c_den[order])
            for m in range(1, n_cells):  # the full set (ratio 1) is never useful
                bound = _bound(int(hits_num[m - 1]), int(hits_den[m - 1]), half, alpha, delta)
                if bound > best[0]:
                    best = (bound, order[:m], name)
    return best


def audit(
    mechanism: Callable[..., Any],
    input_a: Any,
    input_b: Any,
    *,
    n_samples: int,
    rng: np.random.Generator,
    confidence: float = 0.95,
    delta: float = 0.0,
    bins: int = 40,
    feature: Callable[[Any], float] | None = None,
    vectorized: bool = False,
) -> AuditResult:
    """Lower-bound the ε of ``mechanism`` on the neighbouring inputs ``input_a``, ``input_b``.

    Parameters
    ----------
    mechanism:
        ``(input, rng) -> output``; with ``vectorized=True``,
        ``(input, rng, n) -> n outputs``. A :class:`~core.dp.mechanisms.Release`
        output is replaced by its ``value``.
    input_a, input_b:
        Neighbouring inputs.
    n_samples:
        Runs per input (>= 100); half select the event, half test it.
    rng:
        The generator handed to every run.
    confidence:
        Probability that the returned bound holds.
    delta:
        The mechanism's claimed δ (subtracted before taking the ratio).
    bins:
        Number of quantile bins for continuous outputs.
    feature:
        Maps one output to a number (required for vector outputs).
    vectorized:
        Whether ``mechanism`` takes a run count (see above).
    """
    n = check_positive_int(n_samples, name="n_samples", minimum=100)
    confidence = check_probability(confidence, name="confidence")
    delta = check_delta(delta)
    bins = check_positive_int(bins, name="bins", minimum=2)
    alpha = (1.0 - confidence) / 2.0

    a = _draw(mechanism, input_a, n, rng, feature, vectorized)
    b = _draw(mechanism, input_b, n, rng, feature, vectorized)
    half = n // 2
    sel_a, test_a, sel_b, test_b = a[:half], a[half:], b[:half], b[half:]
    edges, names = _cells(np.concatenate([sel_a, sel_b]), bins)
    best = _select_event(edges, sel_a, sel_b, alpha * SELECTION_STRICTNESS, delta)
    _, cells, first = best
    ta = np.searchsorted(edges, test_a, side="right")
    tb = np.searchsorted(edges, test_b, side="right")
    hit_a, hit_b = int(np.isin(ta, cells).sum()), int(np.isin(tb, cells).sum())
    n_test = n - half
    num, den = (hit_a, hit_b) if first == "a" else (hit_b, hit_a)
    eps_lower = _bound(num, den, n_test, alpha, delta)
    return AuditResult(
        eps_lower=eps_lower,
        confidence=confidence,
        n_samples=n,
        event=_describe(cells, names, first),
        hits=(num, den),
        delta=delta,
    )


__all__ = ["AuditResult", "audit", "certifiable_epsilon", "clopper_pearson", "expected_bound",
           "one_run_epsilon", "trials_to_certify"]
