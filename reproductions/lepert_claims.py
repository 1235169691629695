"""The thesis's quantitative claims (chapter 6) as :class:`~simulations.reporting.Claim` data.

:func:`check_claims` reads every claim off a sweep: the thesis's statement,
the measured quantity, the comparison and the thesis's value, the measured
value with its 95% interval where it is an accuracy (binomial, over the
run's queries) and what explains a difference; the verdict is computed by
the reporting model. Accuracy claims read off a curve at a given final ε by
linear interpolation in log(final ε) between measured grid points.

Examples
--------
>>> from ppknn_reproductions.experiments.dptt_evaluation import Row
>>> rows = [Row(method="DP-TT", dims=1, n_points=10, n_queries=1, utility="cmp",
...             variant="E8", epsilon=e, radius=0.0, compositions=9, final_epsilon_br=9 * e,
...             final_epsilon_sum=9 * e, geo_per_unit=0.0, nn_accuracy=a, top5_accuracy=a,
...             released_mean=1.0, seen_fraction=0.1, rounds=9, messages=20)
...         for e, a in [(1.0, 0.2), (10.0, 0.9)]]
>>> round(at_final_epsilon(rows, 30.0, "nn_accuracy"), 3)
0.566
>>> round(reaching(rows, 0.55, "nn_accuracy"), 1)
28.5
>>> accuracy_interval(0.5, 100)
(0.402, 0.598)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ppknn.protocols.dptt.config import DPTTSetup
from ppknn.protocols.dptt.utility import Utility
from ppknn.protocols.dptt.variants import Variant
from ppknn.simulations.reporting import Claim, pct
from ppknn_reproductions.experiments.dptt_evaluation import Row, binomial_se
from ppknn_reproductions.experiments.dptt_sweeps import CALIBRATION_VARIANTS, LIMIT_EPSILON, Sweep

Z95 = 1.96
"""Normal quantile of a two-sided 95% interval."""

TOL = 0.05
"""E8 claims: the accepted distance from the thesis's accuracy (5 points)."""
PLATEAU_TOL = 0.1
"""Plateau readings ("≈ 30%", "≈ 80%", "≈ 90%"): the accepted distance (10 points)."""


def accuracy_interval(p: float, n: int) -> tuple[float, float]:
    """The 95% interval of an accuracy ``p`` on ``n`` queries (normal, clipped to [0, 1])."""
    half = Z95 * binomial_se(p, n)
    return (round(max(0.0, p - half), 12), round(min(1.0, p + half), 12))


def _curve(rows: Sequence[Row], metric: str, x: str) -> tuple[np.ndarray, np.ndarray]:
    pts = sorted((getattr(r, x), getattr(r, metric)) for r in rows if getattr(r, x) > 0)
    return np.log([p[0] for p in pts]), np.array([p[1] for p in pts])


def at_final_epsilon(rows: Sequence[Row], target: float, metric: str,
                     x: str = "final_epsilon_br") -> float:
    """The metric at final ε = ``target`` (log-linear interpolation; clamped at the ends)."""
    lx, y = _curve(rows, metric, x)
    return float(np.interp(math.log(target), lx, y))


def cmp_setup_at(variant: str, height: int, stated: float, *, delta: float,
                 calibration: str) -> DPTTSetup:
    """The CMP set-up whose stated final ε (ε-bounded-range decisions) is ``stated``.

    Its per-decision ε is solved from ``stated`` over the worst-case
    ``height``, as ``final_epsilon`` is in a scenario; what the run is charged
    and what it really spends are then exact
    (:meth:`~protocols.dptt.config.DPTTSetup.account`,
    :meth:`~protocols.dptt.config.DPTTSetup.spent_account`), not interpolated.

    >>> s = cmp_setup_at("E8", 17, 50.0, delta=1e-7, calibration="proven")
    >>> round(s.epsilon, 4), round(s.account(17).epsilon_br, 6), round(
    ...     s.spent_account(17).epsilon_br, 6)
    (5.5556, 50.0, 25.0)
    """
    eps = Variant.parse(variant).epsilon_for(height, stated, delta=delta)
    return DPTTSetup(variant=variant, utility=Utility.cmp(), epsilon=eps, delta=delta,
                     calibration=calibration)


def reaching(rows: Sequence[Row], level: float, metric: str, x: str = "final_epsilon_br"
             ) -> float:
    """The smallest x at which the (interpolated) metric first reaches ``level``; inf if never."""
    lx, y = _curve(rows, metric, x)
    above = np.flatnonzero(y >= level)
    if above.size == 0:
        return math.inf
    i = int(above[0])
    if i == 0:
        return float(math.exp(lx[0]))
    t = (level - y[i - 1]) / (y[i] - y[i - 1])
    return float(math.exp(lx[i - 1] + t * (lx[i] - lx[i - 1])))


def _accuracy(key: str, where: str, statement: str, quantity: str, paper: float, value: float,
              n_queries: int, *, tol: float, explanation: str = "") -> Claim:
    """A claim that an accuracy is about ``paper`` (within ``tol``), with its 95% interval."""
    ok = math.isfinite(value)
    return Claim(id=key, where=where, statement=statement, quantity=quantity,
                 comparison="within", paper=paper, abs_tol=tol, measured=value,
                 interval=accuracy_interval(value, n_queries) if ok else None, percent=True,
                 explanation=explanation)


def _ranking(values: dict[str, float]) -> str:
    """``"E8 95.9%, N20 54.8%, ..."``, best first."""
    return ", ".join(f"{v} {pct(a)}" for v, a in sorted(values.items(), key=lambda t: -t[1]))


def calibration_claims(sweep: Sweep) -> list[Claim]:
    """The E8 claims again under exp(εu/Δ), at the stated final ε (the calibration reading)."""
    g = sweep.grid
    out: list[Claim] = []
    if "E8" in CALIBRATION_VARIANTS:
        for dims, target, level, where in ((2, 100.0, 1.0, "Fig. 6.22"),
                                           (1, 50.0, 0.95, "§6.2.3, Fig. 6.21")):
            if dims not in g.dims:
                continue
            rows = [sweep.cmp(dims, "E8", e, calibration="thesis-reading")
                    for e in g.cmp_epsilons]
            n = rows[0].n_queries
            raw = at_final_epsilon(rows, target, "nn_accuracy", x="stated_final_epsilon_br")
            height = sweep.height(dims)
            spent = {cal: cmp_setup_at("E8", height, target, delta=g.delta,
                                       calibration=cal).spent_account(height)
                     for cal in ("proven", "thesis-reading")}
            proven = at_final_epsilon([sweep.cmp(dims, "E8", e) for e in g.cmp_epsilons],
                                      target, "nn_accuracy")
            out.append(_accuracy(
                f"calibration-e8-{dims}d", where, f"{dims}-D, DP-TT-CMP E8 at final ε ≈ "
                f"{target:g} reaches {pct(level)}, if the mechanism was exp(εu/Δ) (a reading)",
                f"raw NN accuracy at stated final ε = {target:g}, exp(εu/Δ) (interpolated)",
                level, raw, n, tol=TOL,
                explanation=f"the proven exp(εu/2Δ) gives {pct(proven)} at the same stated "
                f"final ε, while really spending {spent['proven'].epsilon_br:.3g} (its CMP "
                "decisions are ε/2-DP); under exp(εu/Δ) the run really spends final ε = "
                f"{spent['thesis-reading'].epsilon_br:.3g} (bounded range or sum, whichever is "
                "smaller)"))
    return out


def check_claims(sweep: Sweep) -> list[Claim]:
    """Evaluate every claim (the rows come from the sweep's cache or are measured now).

    The order of the sweep's calls is fixed: a configuration not yet cached
    (the ε → ∞ limits) draws from the client's stream in that order.
    """
    g = sweep.grid
    out: list[Claim] = []
    cmp_rows = {(d, v): [sweep.cmp(d, v, e) for e in g.cmp_epsilons]
                for d in g.dims for v in {*g.cmp_comparison, "basic", "E8", "GS", "P4", "P8"}}

    # Figs. 6.21/6.22: E8 at a given final ε, raw and top-5 as two claims
    for dims, target, level, where in ((2, 100.0, 1.0, "Fig. 6.22"),
                                       (1, 50.0, 0.95, "§6.2.3, Fig. 6.21")):
        rows = cmp_rows[(dims, "E8")]
        n = rows[0].n_queries
        raw, top5 = (at_final_epsilon(rows, target, m) for m in ("nn_accuracy", "top5_accuracy"))
        c = rows[0].compositions
        p = 1 / (1 + math.exp(-(target / c) / 2))  # per decision at ε = target / c
        mark = min(level, 0.95)
        need = reaching(rows, mark, "nn_accuracy")
        limit = sweep.cmp(dims, "E8", LIMIT_EPSILON)
        why = (f"all {c} decisions right has probability p^{c} = {p ** c:.2f} at ε = "
               f"{target / c:.2f} per decision (p = e^(ε/2)/(1+e^(ε/2)) = {p:.3f}); with every "
               f"decision right (ε → ∞) E8 finds the nearest neighbour for "
               f"{pct(limit.nn_accuracy)} of the queries (top-5 {pct(limit.top5_accuracy)}): the "
               "released subtree can miss a neighbour just across its boundary")
        reach = (f"raw reaches {pct(mark)} at final ε ≈ {need:.0f}" if math.isfinite(need)
                 else f"raw reaches {pct(mark)} nowhere on the ε grid")
        statement = (f"{dims}-D, DP-TT-CMP E8 (N = {g.n_points:,}) at final ε ≈ {target:g} "
                     f"reaches {pct(level)}")
        out.append(_accuracy(f"e8-{dims}d-raw", where, statement,
                             f"raw NN accuracy at final ε = {target:g} (interpolated)", level,
                             raw, n, tol=TOL, explanation=f"{reach}; {why}"))
        out.append(_accuracy(f"e8-{dims}d-top5", where, statement,
                             f"top-5 accuracy at final ε = {target:g} (interpolated)", level,
                             top5, n, tol=TOL))

    out += calibration_claims(sweep)

    # §6.2.1/§6.3: DIS never beats GEO, one claim per accuracy
    wins = {"nn_accuracy": 0, "top5_accuracy": 0}
    total = 0
    for family in g.families.values():
        for v in family:
            for dims in g.dims:
                for r in g.radii:
                    dis, geo = sweep.dis(dims, v, r)
                    total += 1
                    for m in wins:
                        a, b = getattr(dis, m), getattr(geo, m)
                        se = math.hypot(binomial_se(a, dis.n_queries),
                                        binomial_se(b, geo.n_queries))
                        wins[m] += int(a - b > 2 * se)
    for m, name in (("nn_accuracy", "raw"), ("top5_accuracy", "top-5")):
        out.append(Claim(
            id=f"dis-geo-{'raw' if m == 'nn_accuracy' else 'top5'}", where="§6.2.1, §6.3",
            statement="DP-TT-DIS never beats GEO at equal privacy radius (ε* = DIS's final ε, "
                      "fair release)",
            quantity=f"share of configurations where DIS's {name} accuracy is not better than "
                     "GEO's by > 2 SE",
            comparison="holds", measured=1 - wins[m] / total if total else None,
            explanation=f"DIS better by > 2 SE in {wins[m]} of {total} configurations"))

    # Fig. 6.2: both ≈ 90% (top-5, 1-D), one claim each
    geo5 = sweep.dis(1, "basic", 1e5)[1] if 1e5 in g.radii else None
    dis3 = sweep.dis(1, "basic", 1e3)[0] if 1e3 in g.radii else None
    gap1 = sweep.median_gap(1)
    density = ("both depend on how dense the data is around a query, i.e. on the reading of "
               "the data law: the median distance from a query to its nearest point is "
               f"{gap1:.3g} here")
    for key, row, what in (("geo", geo5, "GEO at r = 10^5"), ("dis", dis3, "DIS at r = 10^3")):
        out.append(_accuracy(
            f"fig6.2-{key}", "§6.2.1, Fig. 6.2", "1-D top-5: GEO at r = 10^5 and DIS at "
            "r = 10^3 both ≈ 90%", f"1-D top-5 accuracy, {what}", 0.9,
            row.top5_accuracy if row else math.nan, row.n_queries if row else 0,
            tol=PLATEAU_TOL, explanation=density))

    # Fig. 6.3: 2-D basic DIS plateau
    best_dis = max((sweep.dis(2, "basic", r)[0] for r in g.radii),
                   key=lambda row: row.top5_accuracy)
    out.append(_accuracy(
        "fig6.3-plateau", "§6.2.1, Fig. 6.3", "2-D basic DP-TT-DIS top-5 plateau ≈ 30%",
        "largest top-5 accuracy over the radii", 0.3, best_dis.top5_accuracy,
        best_dis.n_queries, tol=PLATEAU_TOL,
        explanation="without backtracking a 2-D descent that follows the nearer child often "
                    "ends in a cell that does not hold the nearest neighbours"))

    # Fig. 6.14: ordering of the 1-D DIS variants
    best: dict[int, list[str]] = {}
    for dims in g.dims:
        mean_top5 = {v: float(np.mean([sweep.dis(dims, v, r)[0].top5_accuracy for r in g.radii]))
                     for v in g.dis_comparison}
        best[dims] = sorted(g.dis_comparison, key=lambda v: -mean_top5[v])
    finals = {v: sweep.dis(g.dims[0], v, g.radii[0])[0].final_epsilon_br
              for v in g.dis_comparison}
    out.append(Claim(
        id="fig6.14-order", where="Fig. 6.14",
        statement="1-D DIS variants: E8 best, P8 worst (mean top-5 over radii)",
        quantity="E8 first and P8 last by mean top-5 accuracy over the radii",
        comparison="holds",
        measured=(best[1][0] == "E8" and best[1][-1] == "P8") if 1 in best else None,
        explanation=("measured order " + " > ".join(best[1]) + "; " if 1 in best else "")
        + f"on this axis every variant spends ε = {g.dis_epsilon:g} per decision, so their "
        "final ε differ: " + ", ".join(f"{v} {e:.3g}" for v, e in finals.items())))

    # Fig. 6.15: 2-D DIS at r = 10^4, GS-N best at about 85%
    if 1e4 in g.radii and 2 in g.dims:
        r4 = {v: sweep.dis(2, v, 1e4)[0] for v in g.dis_comparison}
        top = max(r4, key=lambda v: r4[v].top5_accuracy)
        order = "measured order: " + _ranking({v: r.top5_accuracy for v, r in r4.items()})
        out.append(Claim(
            id="fig6.15-best", where="Fig. 6.15", statement="2-D DIS at r = 10^4: GS-N best",
            quantity="a GS-N variant has the best top-5 accuracy at r = 10^4",
            comparison="holds", measured=top.startswith("GS-N"), explanation=order))
        out.append(_accuracy(
            "fig6.15-level", "Fig. 6.15", "2-D DIS at r = 10^4: the best variant about 85%",
            f"top-5 accuracy of the best variant at r = 10^4 ({top})", 0.85,
            r4[top].top5_accuracy, r4[top].n_queries, tol=PLATEAU_TOL))

    # Fig. 6.18: 2-D basic CMP plateau
    for dims, claim_top5 in ((2, 0.8),):
        last = cmp_rows[(dims, "basic")][-1]
        out.append(_accuracy(
            "fig6.18-plateau", "§6.2.2, Fig. 6.18", f"{dims}-D basic DP-TT-CMP top-5 plateau "
            f"≈ {pct(claim_top5)}", f"top-5 accuracy at the largest ε ({last.epsilon:g} per "
            "decision)", claim_top5, last.top5_accuracy, last.n_queries, tol=PLATEAU_TOL))

    # §6.2.2: raw / top-5 ratio, one claim per dimension
    for d in g.dims:
        last = cmp_rows[(d, "basic")][-1]
        out.append(Claim(
            id=f"ratio-{d}d", where="§6.2.2",
            statement="basic DP-TT-CMP: raw accuracy is half the top-5 accuracy",
            quantity=f"{d}-D raw / top-5 accuracy at the largest ε", comparison="within",
            paper=0.5, abs_tol=0.1, measured=last.nn_accuracy / last.top5_accuracy,
            explanation="in 1-D the comparison descent ends at the query's predecessor, which "
                        "is the nearest point about half of the time" if d == 1 else ""))

    # Fig. 6.23: GS high in 1-D, at most 40% top-5 in 2-D
    gs = {d: max(cmp_rows[(d, "GS")], key=lambda row: row.top5_accuracy) for d in g.dims}
    gs_limit = {d: sweep.cmp(d, "GS", LIMIT_EPSILON).top5_accuracy for d in g.dims}
    limit_note = ("GS as described (the unchosen child starts a thread that keeps using the EM "
                  "but no longer splits) visits the sibling of every node on the path; with "
                  "every decision right it reaches a top-5 neighbour for "
                  + ", ".join(f"{pct(v)} ({d}-D)" for d, v in gs_limit.items())
                  + " of the queries, so a 2-D ceiling of 40% does not follow from the text")
    if 1 in gs:
        out.append(Claim(
            id="fig6.23-1d", where="Fig. 6.23", statement="DP-TT-CMP GS: high accuracy in 1-D",
            quantity="1-D largest top-5 accuracy over ε (\"high\" read as ≥ 80%)",
            comparison="at_least", paper=0.8, measured=gs[1].top5_accuracy,
            interval=accuracy_interval(gs[1].top5_accuracy, gs[1].n_queries), percent=True))
    if 2 in gs:
        out.append(Claim(
            id="fig6.23-2d", where="Fig. 6.23",
            statement="DP-TT-CMP GS: at most 40% top-5 in 2-D",
            quantity="2-D largest top-5 accuracy over ε (up to 50% counts as partly)",
            comparison="at_most", paper=0.4, margin=0.1, measured=gs[2].top5_accuracy,
            interval=accuracy_interval(gs[2].top5_accuracy, gs[2].n_queries), percent=True,
            explanation=limit_note))

    # Figs. 6.28/6.29 and 6.19/6.20: orderings at final ε = 100
    for dims in g.dims:
        at = {v: at_final_epsilon(cmp_rows[(dims, v)], 100.0, "nn_accuracy")
              for v in g.cmp_comparison}
        top = max(at, key=lambda v: at[v])
        out.append(Claim(
            id=f"fig6.{27 + dims}-e8", where=f"Fig. 6.{27 + dims}",
            statement=f"{dims}-D CMP: early stopping is the best variant for a given budget",
            quantity="E8 has the best raw accuracy at final ε = 100 (interpolated)",
            comparison="holds", measured=top == "E8",
            explanation="measured: " + _ranking(at)))
        p_at = {v: at_final_epsilon(cmp_rows[(dims, v)], 100.0, "nn_accuracy")
                for v in ("basic", "P4", "P8")}
        out.append(Claim(
            id=f"fig6.19-20-p-{dims}d", where=f"Figs. 6.19/6.20 ({dims}-D)",
            statement="CMP P does not help: P4, P8 below basic at equal final ε",
            quantity="P4 and P8 raw accuracy at most basic's at final ε = 100 (interpolated)",
            comparison="holds",
            measured=p_at["P4"] <= p_at["basic"] and p_at["P8"] <= p_at["basic"],
            explanation="measured: " + ", ".join(f"{v} {pct(a)}" for v, a in p_at.items())))

    # §6.2.3: GEO alone reaches 95% raw at ε*/Δ ≈ 10^-5
    if 1 in g.dims:
        alone = [sweep.geo_alone(1, x) for x in g.geo_ratios]
        need = reaching(alone, 0.95, "nn_accuracy", x="geo_per_unit")
        gap = sweep.median_gap(1)
        out.append(Claim(
            id="geo-1e-5", where="§6.2.3",
            statement="1-D GEO reaches 95% raw accuracy at ε*/Δ ≈ 10^-5",
            quantity="log10 of the smallest ε*/Δ with 95% raw accuracy (interpolated)",
            comparison="within", paper=-5.0, abs_tol=0.5, measured=math.log10(need),
            explanation=(f"reached at ε*/Δ = {need:.1e}" if math.isfinite(need)
                         else "not reached on the grid")
            + "; at ε*/Δ = 10^-5 the Laplace noise has scale 10^5, while the median distance "
            f"from a query to its nearest point is {gap:.3g}: the noisy point then rarely keeps "
            "the same nearest neighbour"))

    # §6.1, Fig. 6.1: share of the data sent against N
    sent = [sweep.cmp(2, "basic", g.sent_epsilon, n) for n in g.sent_sizes]
    slope, r2 = _loglog(sent)
    out.append(Claim(
        id="fig6.1-sent", where="§6.1, Fig. 6.1",
        statement="share of the data sent against N is near linear",
        quantity="R² of a straight line through the share sent against N on log-log axes",
        comparison="at_least", paper=0.98, measured=r2,
        explanation=f"log-log slope {slope:.2f}; basic sends "
        + ", ".join(f"{100 * r.seen_fraction:.3g}% of {r.n_points:,}" for r in sent)
        + "; the points a traversal sees grow like log N, so their share falls like log(N)/N: "
        "a straight line of slope about -1 on log-log axes (the thesis's 'near linear' read "
        "on those axes)"))
    return out


def _loglog(rows: Sequence[Row]) -> tuple[float, float]:
    x = np.log([r.n_points for r in rows])
    y = np.log([r.seen_fraction for r in rows])
    if len(x) < 2:
        return math.nan, math.nan
    slope, icpt = np.polyfit(x, y, 1)
    resid = y - (slope * x + icpt)
    ss = float(((y - y.mean()) ** 2).sum())
    return float(slope), 1.0 - float((resid**2).sum()) / ss if ss > 0 else 1.0


__all__ = ["LIMIT_EPSILON", "accuracy_interval", "at_final_epsilon", "calibration_claims",
           "check_claims", "cmp_setup_at", "reaching"]
