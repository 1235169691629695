"""The leakage table of a run: one row per (protocol, observer, target, attack).

Every row says who observes (a party or a coalition, members joined by
``+``), whose secret is at stake (a party, a record set, the queries), the
attack, the measured quantity with a 95% interval, the bound the protocol
promises for that quantity where it has one, and a verdict:

``within bound``
    the interval's lower end does not exceed the bound;
``above bound``
    it does (the measured leak is larger than the promise allows);
``no bound``
    the protocol promises nothing this quantity can be compared with
    (e.g. PP-kNN's disclosure, which the paper measures but does not bound).

Quantities that are empirical ε lower bounds carry the point estimate in
``value`` and the one-sided Clopper-Pearson bounds in ``ci_low``/``ci_high``
(``ci_low`` is the lower confidence bound on ε that is compared with the
promise).

Every row also states its **baseline**: what an attacker *without the
transcript* scores on the same targets (the best constant label, a guess of
each value from the attacker's own rows, a random claim among the values it
holds, a membership score that reads no model), computed from the run's
ground truth with its 95% interval (``baseline``, ``baseline_low``,
``baseline_high``, named in ``baseline_name``), and the **advantage** over it
with its 95% interval (``advantage``, ``advantage_low``, ``advantage_high``).
The advantage is positive when the attacker does better than the baseline: a
rate minus the baseline's rate, an empirical ε minus the baseline test's ε,
the baseline's error minus the attacker's for an error. The interval of a
difference of two rates on the same targets is Newcombe's for paired
proportions (method 10, Newcombe 1998, with the Wilson interval of each
rate); on different trials, Newcombe's hybrid score interval for two
independent proportions; of errors on the same targets, Student's t on the
per-target differences; of two ε bounds, the difference of their ends (each
end at 95%, so the interval is conservative).

Examples
--------
>>> row = LeakageRow(protocol="dptt", observer="server", target="client", attack="a",
...                  quantity="empirical ε per decision", value=0.6, ci_low=0.5,
...                  ci_high=0.7, trials=1000, bound=1.0, bound_name="ε per decision")
>>> row.verdict
'within bound'
>>> LeakageRow(protocol="p", observer="o", target="t", attack="a", quantity="q", value=0.2,
...            ci_low=0.1, ci_high=0.3, trials=10).verdict
'no bound'
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
from scipy import special

from ppknn.core.dp.audit import clopper_pearson
from ppknn.core.leakage import wilson_interval
from ppknn.simulations.reporting.csvio import read_rows, write_rows

WITHIN, ABOVE, NO_BOUND = "within bound", "above bound", "no bound"
COLUMNS = ("protocol", "observer", "target", "attack", "quantity", "value", "ci_low",
           "ci_high", "trials", "bound", "bound_name", "verdict", "baseline", "baseline_low",
           "baseline_high", "advantage", "advantage_low", "advantage_high", "baseline_name",
           "note")


@dataclass(frozen=True, kw_only=True)
class LeakageRow:
    """One (observer, target, attack) measurement (module docstring)."""

    protocol: str
    observer: str
    target: str
    attack: str
    quantity: str
    value: float
    ci_low: float
    ci_high: float
    trials: int
    bound: float | None = None
    bound_name: str = ""
    note: str = ""
    baseline: float = math.nan
    baseline_low: float = math.nan
    baseline_high: float = math.nan
    advantage: float = math.nan
    advantage_low: float = math.nan
    advantage_high: float = math.nan
    baseline_name: str = ""

    @property
    def verdict(self) -> str:
        """``within bound``, ``above bound`` or ``no bound`` (module docstring)."""
        if self.bound is None or not math.isfinite(self.bound):
            return NO_BOUND
        if math.isnan(self.ci_low):
            return NO_BOUND
        return ABOVE if self.ci_low > self.bound + 1e-12 else WITHIN

    def as_dict(self) -> dict[str, Any]:
        """The row as written to ``leakage.csv``."""
        # every field is a scalar: read them directly (``asdict`` deep-copies, ~50 µs a
        # row, which a 100,000-node ring pays 300,000 times)
        return {c: self.verdict if c == "verdict" else getattr(self, c) for c in COLUMNS}


def proportion_row(*, successes: int, trials: int, **fields: Any) -> LeakageRow:
    """A rate with its Wilson 95% interval."""
    lo, hi = wilson_interval(int(successes), int(trials))
    value = successes / trials if trials else float("nan")
    return LeakageRow(value=float(value), ci_low=float(lo), ci_high=float(hi),
                      trials=int(trials), **fields)


def clustered_proportion_row(*, hits: np.ndarray, **fields: Any) -> LeakageRow:
    """A rate over ``(clusters, items)`` outcomes whose clusters, not items, are independent.

    The value is the fraction of hits over every item. Items of one cluster
    (the values of one record) can be correlated, so counting them as
    independent trials would give too narrow an interval. The interval is
    Wilson's at the effective sample size ``N / deff`` (Kish), with ``deff``
    the design effect: the variance of the mean of per-cluster rates over the
    binomial variance ``p (1 - p) / N``, kept within [1, cluster size]. When every item hits
    (or none does) the variance says nothing, and ``deff`` is the cluster size
    (the items of a cluster taken as one trial). ``trials`` is ``N``; the note
    gives ``deff``.

    >>> h = np.repeat(np.array([[True], [False]] * 10), 5, axis=1)  # 20 records of 5
    >>> row = clustered_proportion_row(hits=h, protocol="p", observer="o", target="t",
    ...                                attack="a", quantity="q")
    >>> row.value, row.trials, [round(x, 4) for x in (row.ci_low, row.ci_high)]
    (0.5, 100, [0.2993, 0.7007])
    """
    h = np.asarray(hits, dtype=bool)
    h = h.reshape(len(h), -1) if h.ndim else h.reshape(1, 1)
    n, per = h.shape
    total = int(h.size)
    if total == 0:
        return LeakageRow(value=float("nan"), ci_low=float("nan"), ci_high=float("nan"),
                          trials=0, **fields)
    p = float(h.mean())
    rates = h.mean(axis=1)
    if 0 < p < 1 and n >= 2:
        # 1 + (size - 1)·ρ lies in [1, size]: the estimate is kept there
        deff = min(float(per), max(1.0, float(rates.var(ddof=1)) / n
                                   / (p * (1 - p) / total)))
    else:
        deff = float(per)
    n_eff = total / deff
    lo, hi = wilson_interval(p * n_eff, n_eff)
    note = fields.pop("note", "")
    extra = (f"interval at the effective sample size {n_eff:.1f} of {total} values "
             f"({n} independent records, design effect {deff:.3g})")
    return LeakageRow(value=p, ci_low=float(lo), ci_high=float(hi), trials=total,
                      note=f"{note}; {extra}" if note else extra, **fields)


def mean_row(*, values: np.ndarray, **fields: Any) -> LeakageRow:
    """A mean with its Student-t 95% interval."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    n = int(v.size)
    if n == 0:
        return LeakageRow(value=float("nan"), ci_low=float("nan"), ci_high=float("nan"),
                          trials=0, **fields)
    mean = float(v.mean())
    if n == 1:
        return LeakageRow(value=mean, ci_low=float("nan"), ci_high=float("nan"), trials=1,
                          **fields)
    half = float(special.stdtrit(n - 1, 0.975) * v.std(ddof=1) / math.sqrt(n))
    return LeakageRow(value=mean, ci_low=mean - half, ci_high=mean + half, trials=n, **fields)


def epsilon_from_rates(hit_a: int, n_a: int, hit_b: int, n_b: int, *, delta: float = 0.0,
                       confidence: float = 0.95) -> tuple[float, float, float]:
    """Empirical ε of a test ``E``: ``ln(P(E | a) / P(E | b))``, point and 95% bounds.

    The lower bound uses one-sided Clopper-Pearson bounds at ``(1 - confidence) / 2``
    each (as :func:`core.dp.audit.audit` does); ``(point, lower, upper)``, each >= 0.

    >>> p, lo, hi = epsilon_from_rates(900, 1000, 100, 1000)
    >>> round(p, 3), lo < p < hi
    (2.197, True)
    """
    alpha = (1 - confidence) / 2
    if n_a == 0 or n_b == 0:
        return float("nan"), float("nan"), float("nan")
    pa_lo, pa_hi = clopper_pearson(int(hit_a), int(n_a), alpha)
    pb_lo, pb_hi = clopper_pearson(int(hit_b), int(n_b), alpha)
    pa, pb = hit_a / n_a, hit_b / n_b

    def ratio(num: float, den: float) -> float:
        if num - delta <= 0:
            return 0.0
        if den <= 0:
            return math.inf
        return max(0.0, math.log((num - delta) / den))

    return ratio(pa, pb), ratio(pa_lo, pb_hi), ratio(pa_hi, pb_lo)


def epsilon_row(*, hit_a: int, n_a: int, hit_b: int, n_b: int, delta: float = 0.0,
                **fields: Any) -> LeakageRow:
    """An empirical ε lower bound of a distinguishing test, as a row."""
    point, lo, hi = epsilon_from_rates(hit_a, n_a, hit_b, n_b, delta=delta)
    return LeakageRow(value=point, ci_low=lo, ci_high=hi, trials=int(n_a + n_b), **fields)


def newcombe_paired(hits: np.ndarray, base: np.ndarray, confidence: float = 0.95
                    ) -> tuple[float, float, float]:
    """Difference of two rates on the same trials, ``mean(hits) - mean(base)``, with its interval.

    Newcombe's (1998) method 10 for paired proportions: the Wilson interval of
    each rate, combined with the correlation of the two outcomes (the 2x2
    table's phi, its numerator corrected by ``n / 2`` towards zero).

    >>> a = np.array([1, 1, 1, 1, 1, 1, 1, 1, 0, 0], bool)
    >>> b = np.array([1, 1, 1, 0, 0, 0, 0, 0, 0, 0], bool)
    >>> d, lo, hi = newcombe_paired(a, b)
    >>> round(d, 2), round(lo, 3), round(hi, 3)
    (0.5, 0.078, 0.733)
    """
    x, y = np.asarray(hits, dtype=bool).ravel(), np.asarray(base, dtype=bool).ravel()
    if x.shape != y.shape:
        raise ValueError(f"paired outcomes of different sizes: {x.size} and {y.size}")
    n = int(x.size)
    if n == 0:
        return math.nan, math.nan, math.nan
    a, b = int(np.sum(x & y)), int(np.sum(x & ~y))
    c, d = int(np.sum(~x & y)), int(np.sum(~x & ~y))
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = wilson_interval(a + b, n, confidence)
    l2, u2 = wilson_interval(a + c, n, confidence)
    den = (a + b) * (c + d) * (a + c) * (b + d)
    num = a * d - b * c
    num = max(num - n / 2, 0.0) if num > 0 else num
    phi = num / math.sqrt(den) if den else 0.0
    delta = p1 - p2
    dl = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    du = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return delta, max(-1.0, delta - dl), min(1.0, delta + du)


def newcombe_unpaired(x1: float, n1: float, x2: float, n2: float, confidence: float = 0.95
                      ) -> tuple[float, float, float]:
    """Difference ``x1/n1 - x2/n2`` of two independent rates with Newcombe's hybrid interval.

    >>> d, lo, hi = newcombe_unpaired(56, 70, 48, 80)
    >>> round(d, 4), round(lo, 4), round(hi, 4)
    (0.2, 0.0524, 0.3339)
    """
    if n1 <= 0 or n2 <= 0:
        return math.nan, math.nan, math.nan
    p1, p2 = x1 / n1, x2 / n2
    l1, u1 = wilson_interval(x1, n1, confidence)
    l2, u2 = wilson_interval(x2, n2, confidence)
    delta = p1 - p2
    return (delta, delta - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2),
            delta + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2))


def paired_mean_difference(values: np.ndarray, base: np.ndarray
                           ) -> tuple[float, float, float]:
    """``mean(values - base)`` over the same targets with its Student-t 95% interval."""
    diff = np.asarray(values, dtype=np.float64) - np.asarray(base, dtype=np.float64)
    diff = diff[np.isfinite(diff)]
    n = int(diff.size)
    if n == 0:
        return math.nan, math.nan, math.nan
    mean = float(diff.mean())
    if n == 1:
        return mean, math.nan, math.nan
    half = float(special.stdtrit(n - 1, 0.975) * diff.std(ddof=1) / math.sqrt(n))
    return mean, mean - half, mean + half


def with_baseline(row: LeakageRow, *, name: str, baseline: Sequence[float],
                  advantage: Sequence[float]) -> LeakageRow:
    """``row`` with its baseline ``(value, low, high)`` and advantage ``(value, low, high)``."""
    b, bl, bh = (float(v) for v in baseline)
    a, al, ah = (float(v) for v in advantage)
    return replace(row, baseline=b, baseline_low=bl, baseline_high=bh, advantage=a,
                   advantage_low=al, advantage_high=ah, baseline_name=name)


def paired_rate_baseline(row: LeakageRow, *, hits: np.ndarray, base: np.ndarray, name: str
                         ) -> LeakageRow:
    """A rate's baseline from paired outcomes: the baseline's hit per trial of ``row``.

    ``hits`` are the attack's outcomes (their mean is ``row.value``), ``base`` the
    baseline's on the same trials; Wilson interval for the baseline, Newcombe's paired
    interval for the advantage.
    """
    base = np.asarray(base, dtype=bool).ravel()
    k, n = int(base.sum()), int(base.size)
    lo, hi = wilson_interval(k, n) if n else (math.nan, math.nan)
    return with_baseline(row, name=name, baseline=(k / n if n else math.nan, lo, hi),
                         advantage=newcombe_paired(hits, base))


def rate_baseline(row: LeakageRow, *, successes: float, trials: float, name: str
                  ) -> LeakageRow:
    """A rate's baseline measured on other (independent) trials: Newcombe's hybrid interval."""
    if trials <= 0 or row.trials <= 0 or not math.isfinite(row.value):
        return with_baseline(row, name=name, baseline=(math.nan,) * 3, advantage=(math.nan,) * 3)
    lo, hi = wilson_interval(successes, trials)
    return with_baseline(row, name=name, baseline=(successes / trials, lo, hi),
                         advantage=newcombe_unpaired(row.value * row.trials, row.trials,
                                                     successes, trials))


def bound_baseline(row: LeakageRow, *, baseline: Sequence[float], name: str) -> LeakageRow:
    """A baseline for a row whose interval is not a rate's (an ε, an error).

    The advantage is ``value - baseline`` with the conservative interval
    ``[ci_low - baseline_high, ci_high - baseline_low]``.
    """
    b, bl, bh = (float(v) for v in baseline)
    return with_baseline(row, name=name, baseline=(b, bl, bh),
                         advantage=(row.value - b, row.ci_low - bh, row.ci_high - bl))


def write_table(rows: Sequence[LeakageRow], path: Path) -> Path:
    """``leakage.csv``."""
    return write_rows(path, [r.as_dict() for r in rows], columns=list(COLUMNS))


def read_table(path: Path) -> list[dict[str, Any]]:
    """Rows of a ``leakage.csv`` (cells parsed)."""
    return read_rows(path)


_FLOATS = ("value", "ci_low", "ci_high", "baseline", "baseline_low", "baseline_high",
           "advantage", "advantage_low", "advantage_high")


def rows_from_csv(path: Path) -> list[LeakageRow]:
    """The rows of a ``leakage.csv`` as written (for plotting a folder's table again)."""
    rows = []
    for cells in read_table(path):
        kw: dict[str, Any] = {}
        for f in fields(LeakageRow):
            value = cells.get(f.name)
            empty = value is None or value == ""
            if f.name == "bound":
                kw["bound"] = None if empty or math.isnan(float(value)) else float(value)
            elif f.name in _FLOATS:
                kw[f.name] = math.nan if empty else float(value)
            elif f.name == "trials":
                kw["trials"] = 0 if empty else int(value)
            else:
                kw[f.name] = "" if empty else str(value)
        rows.append(LeakageRow(**kw))
    return rows


SUMMARY_ROWS = 200
"""``summary.json`` lists the whole table up to this many rows; beyond, this many of its
rows (those above their bound first, then the largest values): ``leakage.csv`` has them all."""


def summary(rows: Sequence[LeakageRow]) -> dict[str, Any]:
    """The ``leakage`` section of ``summary.json``.

    Counts by verdict, one line per (protocol, attack, quantity) with its
    largest value and who measured it, and the table itself, whole up to
    :data:`SUMMARY_ROWS` rows (a 20,000-party ring has one row per party and
    attack: ``leakage.csv`` holds those).
    """
    verdicts = [r.verdict for r in rows]
    groups: dict[tuple[str, str, str], list[LeakageRow]] = {}
    for r in rows:
        groups.setdefault((r.protocol, r.attack, r.quantity), []).append(r)
    by_attack = []
    for (protocol, attack, quantity), group in groups.items():
        values = np.array([r.value for r in group], dtype=float)
        finite = np.isfinite(values)
        top = group[int(np.argmax(np.where(finite, values, -np.inf)))] if finite.any() else None
        bounds = {r.bound for r in group if r.bound is not None}
        adv = np.array([r.advantage for r in group], dtype=float)
        by_attack.append(_json_row_dict({
            "protocol": protocol, "attack": attack, "quantity": quantity, "rows": len(group),
            "above_bound": sum(r.verdict == ABOVE for r in group),
            "bound": bounds.pop() if len(bounds) == 1 else None,
            "mean": float(values[finite].mean()) if finite.any() else None,
            "max": None if top is None else float(top.value),
            "max_observer": None if top is None else top.observer,
            "max_target": None if top is None else top.target,
            "max_advantage": float(np.nanmax(adv)) if np.isfinite(adv).any() else None,
            "baseline_name": group[0].baseline_name}))
    shown = list(rows) if len(rows) <= SUMMARY_ROWS else sorted(
        rows, key=lambda r: (r.verdict != ABOVE,
                             -r.value if math.isfinite(r.value) else math.inf))[:SUMMARY_ROWS]
    return {
        "rows": len(rows),
        "above_bound": verdicts.count(ABOVE),
        "within_bound": verdicts.count(WITHIN),
        "no_bound": verdicts.count(NO_BOUND),
        "definition": "one row per (observer, target, attack): measured quantity with a 95% "
                      "interval, the bound the protocol promises, verdict 'above bound' when "
                      "the interval's lower end exceeds it; the baseline (an attacker "
                      "without the transcript, on the same targets) and the advantage over "
                      "it, each with a 95% interval (leakage.csv)",
        "by_attack": by_attack,
        "table_complete": len(shown) == len(rows),
        "table": [_json_row(r) for r in shown],
    }


def _json_row_dict(row: dict[str, Any]) -> dict[str, Any]:
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v
            for k, v in row.items()}


def _json_row(row: LeakageRow) -> dict[str, Any]:
    return _json_row_dict(row.as_dict())


PLOT_ROWS = 16
"""Most rows drawn per panel of ``leakage.svg`` (the strongest; :func:`strongest`)."""


def strongest(rows: Sequence[LeakageRow], limit: int) -> list[LeakageRow]:
    """The ``limit`` strongest of ``rows``, in their order when all fit.

    Strongest first: rows above their bound, then the largest advantage over the
    baseline (an attacker without the transcript; rows without a baseline rank
    after those with one), then the largest measured value; ties keep the table's
    order. NaN ranks last.

    >>> from dataclasses import replace
    >>> base = LeakageRow(protocol="p", observer="a", target="t", attack="x",
    ...                   quantity="q", value=0.5, ci_low=0.4, ci_high=0.6, trials=10)
    >>> rows = [replace(base, target=f"t{i}", value=v) for i, v in enumerate([0.1, 0.9, 0.5])]
    >>> [r.target for r in strongest(rows, 2)]
    ['t1', 't2']
    """
    if len(rows) <= limit:
        return list(rows)

    def rank(item: tuple[int, LeakageRow]) -> tuple:
        i, r = item
        adv = r.advantage if math.isfinite(r.advantage) else -math.inf
        value = r.value if not math.isnan(r.value) else -math.inf
        return (r.verdict != ABOVE, not math.isfinite(r.advantage), -adv, -value, i)

    return [r for _, r in sorted(enumerate(rows), key=rank)[:limit]]


def plot_table(rows: Sequence[LeakageRow], path: Path, *, title: str) -> Path:
    """``leakage.svg`` at ``path``: :func:`leakage_figure` saved; returns ``path``."""
    return leakage_figure(rows, title=title).save(path)


def leakage_figure(rows: Sequence[LeakageRow], *, title: str) -> Any:
    """The leakage figure: one panel per protocol, each row's value with its 95% interval.

    Rows are grouped by quantity (different units sit in different panels);
    a promised bound is drawn as a red tick beside its row, the no-transcript
    baseline as an open diamond. A panel draws at most :data:`PLOT_ROWS` rows, the
    strongest (:func:`strongest`), and says how many it left out; ``leakage.csv``
    has every row. Drawn as SVG text (:mod:`~simulations.reporting.svg`).
    """
    from ppknn.simulations.reporting.svg import Figure, Key, colour

    groups: dict[tuple[str, str], list[LeakageRow]] = {}
    for r in rows:
        groups.setdefault((r.protocol, r.quantity), []).append(r)
    row_in = 0.34  # inches per row: two-line labels fit
    heights = [min(len(g), PLOT_ROWS) * row_in + 1.1 for g in groups.values()] or [1.5]
    fig, axes = Figure.grid(11, sum(heights), rows=len(heights), cols=1,
                            height_ratios=heights, title=f"leakage: {title}")
    if not groups:
        axes[0].text(0.5, 0.5, "no party observes anything", ha="center", va="center")
        axes[0].set_axis_off()
    for ax, ((protocol, quantity), group) in zip(axes, groups.items()):
        _plot_group(ax, protocol, quantity, group)
    grey, red, blue = colour("gray"), colour("tab:red"), colour("tab:blue")
    fig.legend([Key("measured, 95% CI (within its bound or none)", face=blue, edge=blue,
                    line=grey, marker="o"),
                Key("measured, 95% CI (above its bound)", face=red, edge=red, line=grey,
                    marker="o"),
                Key("promised bound", face=red, edge=red, marker="|"),
                Key("baseline (no transcript)", edge=colour("black"), marker="D")],
               ncol=4, fontsize=8)
    return fig


def _plot_group(ax: Any, protocol: str, quantity: str, group: list[LeakageRow]) -> None:
    """One panel of :func:`plot_table`: the group's strongest rows, strongest on top."""
    shown = strongest(group, PLOT_ROWS)
    y = np.arange(len(shown))
    vals = _finite([r.value for r in shown])
    lo = _finite([r.ci_low for r in shown])
    hi = _finite([r.ci_high for r in shown])
    with np.errstate(invalid="ignore"):
        err = np.vstack([np.maximum(vals - lo, 0), np.maximum(hi - vals, 0)])
    err[~np.isfinite(err)] = 0
    colours = ["tab:red" if r.verdict == ABOVE else "tab:blue" for r in shown]
    ax.errorbar(vals, y, xerr=err, fmt="none", ecolor="gray", capsize=2)
    ax.scatter(vals, y, c=colours, s=22, zorder=3)
    based = [(i, r.baseline) for i, r in enumerate(shown) if math.isfinite(r.baseline)]
    if based:
        ax.scatter([b for _, b in based], [i for i, _ in based], marker="D",
                   facecolors="none", edgecolors="black", s=22, zorder=2)
    bounded = [(i, r.bound) for i, r in enumerate(shown)
               if r.bound is not None and math.isfinite(r.bound)]
    if bounded:
        ax.scatter([b for _, b in bounded], [i for i, _ in bounded], marker="|",
                   color="tab:red", s=140, zorder=2)
    attacks = {r.attack for r in group}
    common = attacks.pop() if len(attacks) == 1 else None  # then named in the title
    ax.set_yticks(y, [_row_label(r, attack=common is None) for r in shown], fontsize=7.5)
    ax.set_ylim(len(shown) - 0.4, -0.6)  # the first (strongest) row on top
    ax.set_xlabel(quantity, fontsize=9)
    more = ("" if len(group) == len(shown) else
            f"({len(shown)} strongest of {len(group)}; every row in leakage.csv)")
    what = f"{protocol}: {quantity}" + ("" if common is None else f", attack {common}")
    ax.set_title(what + (f"\n{more.strip()}" if more else ""), fontsize=9.5)
    ax.grid(axis="x", alpha=0.3)


def _row_label(row: LeakageRow, *, attack: bool = True) -> str:
    """``observer → target (attack)``, on two lines when long (never cut).

    ``attack=False``: without the attack's name (the panel's title names it).
    """
    pair = f"{row.observer} → {row.target}"
    if len(pair) > 70:  # a large coalition: its size and its first members
        members = row.observer.split("+")
        pair = f"{'+'.join(members[:2])}+... ({len(members)} parties) → {row.target}"
    tail = f"({row.attack})" if attack else ""
    if math.isfinite(row.advantage):  # the advantage over the baseline (no transcript)
        adv = 0.0 if abs(row.advantage) < 1e-12 else row.advantage  # rounding noise: 0
        tail += f" adv. {adv:+.3g}"
    tail = tail.strip()
    label = f"{pair} {tail}".strip()
    return label if len(label) <= 48 or not tail else f"{pair}\n{tail}"


def _finite(values: Sequence[float]) -> np.ndarray:
    """Values for plotting: infinite ends drawn at the largest finite value (NaN stays)."""
    v = np.array(values, dtype=np.float64)
    finite = v[np.isfinite(v)]
    cap = float(finite.max()) if finite.size else 1.0
    return np.where(np.isinf(v), cap, v)


def rows_equal(a: Iterable[Mapping[str, Any]], b: Iterable[Mapping[str, Any]]) -> bool:
    """Whether two read-back tables are the same (NaN equals NaN)."""
    la, lb = list(a), list(b)
    if len(la) != len(lb):
        return False
    for x, y in zip(la, lb):
        if set(x) != set(y):
            return False
        for k in x:
            u, v = x[k], y[k]
            if isinstance(u, float) and isinstance(v, float) and math.isnan(u) and math.isnan(v):
                continue
            if u != v:
                return False
    return True


def dumps(rows: Sequence[LeakageRow]) -> str:
    """The rows as JSON text (for logs and tests)."""
    return json.dumps([_json_row(r) for r in rows], indent=1)


__all__ = ["ABOVE", "COLUMNS", "NO_BOUND", "WITHIN", "LeakageRow", "bound_baseline",
           "clustered_proportion_row", "dumps", "epsilon_from_rates", "epsilon_row", "mean_row",
           "newcombe_paired", "newcombe_unpaired", "paired_mean_difference",
           "paired_rate_baseline", "PLOT_ROWS", "leakage_figure", "plot_table", "proportion_row",
           "rate_baseline", "read_table",
           "rows_equal", "strongest", "summary", "with_baseline", "write_table"]
