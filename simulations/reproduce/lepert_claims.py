"""The thesis's quantitative claims (chapter 6), each checked against a sweep.

Every :class:`Claim` carries the thesis's statement and value, the measured
value, a verdict and, where the two differ, what explains it. Accuracy
claims read off a curve at a given final ε by linear interpolation in
log(final ε) between measured grid points.

Examples
--------
>>> from simulations.experiments.dptt_evaluation import Row
>>> rows = [Row(method="DP-TT", dims=1, n_points=10, n_queries=1, utility="cmp",
...             variant="E8", epsilon=e, radius=0.0, compositions=9, final_epsilon_br=9 * e,
...             final_epsilon_sum=9 * e, geo_per_unit=0.0, nn_accuracy=a, top5_accuracy=a,
...             released_mean=1.0, seen_fraction=0.1, rounds=9, messages=20)
...         for e, a in [(1.0, 0.2), (10.0, 0.9)]]
>>> round(at_final_epsilon(rows, 30.0, "nn_accuracy"), 3)
0.566
>>> round(reaching(rows, 0.55, "nn_accuracy"), 1)
28.5
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from simulations.experiments.dptt_evaluation import Row, binomial_se
from simulations.experiments.dptt_sweeps import Sweep

LIMIT_EPSILON = 200.0
"""ε per decision at which CMP is deterministic in practice (a wrong side has chance e^-100)."""


@dataclass(frozen=True)
class Claim:
    """One claim of the thesis beside the measurement."""

    where: str
    statement: str
    thesis: str
    measured: str
    verdict: str
    note: str = ""


def _curve(rows: Sequence[Row], metric: str, x: str) -> tuple[np.ndarray, np.ndarray]:
    pts = sorted((getattr(r, x), getattr(r, metric)) for r in rows if getattr(r, x) > 0)
    return np.log([p[0] for p in pts]), np.array([p[1] for p in pts])


def at_final_epsilon(rows: Sequence[Row], target: float, metric: str,
                     x: str = "final_epsilon_br") -> float:
    """The metric at final ε = ``target`` (log-linear interpolation; clamped at the ends)."""
    lx, y = _curve(rows, metric, x)
    return float(np.interp(math.log(target), lx, y))


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


def _pct(v: float) -> str:
    return f"{100 * v:.1f}%"


def _agree(ok: bool) -> str:
    return "agrees" if ok else "differs"


def _within(raw: float, top5: float, level: float, tol: float = 0.05) -> str:
    """Both accuracies within ``tol`` of the claim: agrees; one of them: partly."""
    hits = (abs(raw - level) <= tol) + (abs(top5 - level) <= tol)
    return ("differs", "partly (one of raw, top-5 within 5 points)", "agrees")[hits]


def check_claims(sweep: Sweep) -> list[Claim]:
    """Evaluate every claim (the rows come from the sweep's cache or are measured now)."""
    g = sweep.grid
    out: list[Claim] = []
    cmp_rows = {(d, v): [sweep.cmp(d, v, e) for e in g.cmp_epsilons]
                for d in g.dims for v in {*g.cmp_comparison, "basic", "E8", "GS", "P4", "P8"}}

    for dims, target, level, where in ((2, 100.0, 1.0, "Fig. 6.22"),
                                       (1, 50.0, 0.95, "§6.2.3, Fig. 6.21")):
        rows = cmp_rows[(dims, "E8")]
        raw, top5 = (at_final_epsilon(rows, target, m) for m in ("nn_accuracy", "top5_accuracy"))
        c = rows[0].compositions
        p = 1 / (1 + math.exp(-(target / c) / 2))  # per decision at ε = target / c
        mark = min(level, 0.95)
        need = reaching(rows, mark, "nn_accuracy")
        limit = sweep.cmp(dims, "E8", LIMIT_EPSILON)
        out.append(Claim(
            where, f"{dims}-D, DP-TT-CMP E8 (N = {g.n_points:,}) at final ε ≈ {target:g}",
            _pct(level), f"raw {_pct(raw)}, top-5 {_pct(top5)}; raw reaches {_pct(mark)} "
            + (f"at final ε ≈ {need:.0f}" if math.isfinite(need) else "nowhere on the ε grid"),
            _within(raw, top5, level),
            f"all {c} decisions right has probability p^{c} = {p ** c:.2f} at ε = "
            f"{target / c:.2f} per decision (p = e^(ε/2)/(1+e^(ε/2)) = {p:.3f}); with every "
            f"decision right (ε → ∞) E8 finds the nearest neighbour for {_pct(limit.nn_accuracy)}"
            f" of the queries (top-5 {_pct(limit.top5_accuracy)}): the released subtree can "
            "miss a neighbour just across its boundary"))

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
    out.append(Claim("§6.2.1, §6.3", "DP-TT-DIS does not beat GEO at equal privacy radius "
                     "(ε* = DIS's final ε, fair release)", "never",
                     f"DIS better by > 2 SE in {wins['nn_accuracy']} (raw) and "
                     f"{wins['top5_accuracy']} (top-5) of {total} configurations",
                     _agree(wins["nn_accuracy"] == 0 and wins["top5_accuracy"] == 0)))

    geo5 = sweep.dis(1, "basic", 1e5)[1].top5_accuracy if 1e5 in g.radii else math.nan
    dis3 = sweep.dis(1, "basic", 1e3)[0].top5_accuracy if 1e3 in g.radii else math.nan
    gap1 = float(np.median(sweep.bench(1).truth.nearest)) if 1 in g.dims else math.nan
    out.append(Claim("§6.2.1, Fig. 6.2", "1-D top-5: GEO at r = 10^5 and DIS at r = 10^3",
                     "both ≈ 90%", f"GEO {_pct(geo5)}, DIS {_pct(dis3)}",
                     _agree(abs(geo5 - 0.9) <= 0.1 and abs(dis3 - 0.9) <= 0.1),
                     "both depend on how dense the data is around a query, i.e. on the "
                     "reading of the data law: the median distance from a query to its nearest "
                     f"point is {gap1:.3g} here"))
    plateau = max(sweep.dis(2, "basic", r)[0].top5_accuracy for r in g.radii)
    out.append(Claim("§6.2.1, Fig. 6.3", "2-D basic DP-TT-DIS top-5 plateau", "≈ 30%",
                     _pct(plateau), _agree(abs(plateau - 0.3) <= 0.1),
                     "without backtracking a 2-D descent that follows the nearer child "
                     "often ends in a cell that does not hold the nearest neighbours"))
    best: dict[int, list[str]] = {}
    for dims in g.dims:
        mean_top5 = {v: float(np.mean([sweep.dis(dims, v, r)[0].top5_accuracy for r in g.radii]))
                     for v in g.dis_comparison}
        best[dims] = sorted(g.dis_comparison, key=lambda v: -mean_top5[v])
    finals = {v: sweep.dis(g.dims[0], v, g.radii[0])[0].final_epsilon_br
              for v in g.dis_comparison}
    out.append(Claim("Fig. 6.14", "1-D DIS variants: E8 best, P8 worst (mean top-5 over radii)",
                     "E8 first, P8 last", " > ".join(best[1]) if 1 in best else "-",
                     _agree(1 in best and best[1][0] == "E8" and best[1][-1] == "P8"),
                     f"on this axis every variant spends ε = {g.dis_epsilon:g} per decision, so "
                     "their final ε differ: " + ", ".join(f"{v} {e:.3g}" for v, e in
                                                         finals.items())))
    if 1e4 in g.radii and 2 in g.dims:
        at = {v: sweep.dis(2, v, 1e4)[0].top5_accuracy for v in g.dis_comparison}
        top = max(at, key=lambda v: at[v])
        out.append(Claim("Fig. 6.15", "2-D DIS at r = 10^4: GS-N best, about 85%",
                         "GS-N ≈ 85%", f"best {top} {_pct(at[top])}; GS-N20 "
                         f"{_pct(at.get('GS-N20', math.nan))}",
                         _agree(top.startswith("GS-N") and abs(at[top] - 0.85) <= 0.1)))

    for dims, claim_top5 in ((2, 0.8),):
        rows = cmp_rows[(dims, "basic")]
        out.append(Claim("§6.2.2, Fig. 6.18", f"{dims}-D basic DP-TT-CMP top-5 plateau",
                         _pct(claim_top5), _pct(rows[-1].top5_accuracy),
                         _agree(abs(rows[-1].top5_accuracy - claim_top5) <= 0.1)))
    ratios = {d: cmp_rows[(d, "basic")][-1].nn_accuracy / cmp_rows[(d, "basic")][-1].top5_accuracy
              for d in g.dims}
    out.append(Claim("§6.2.2", "basic DP-TT-CMP: raw accuracy is half the top-5 accuracy "
                     "(largest ε)", "ratio 0.5",
                     ", ".join(f"{d}-D {r:.2f}" for d, r in ratios.items()),
                     _agree(all(abs(r - 0.5) <= 0.1 for r in ratios.values())),
                     "in 1-D the comparison descent ends at the query's predecessor, which is "
                     "the nearest point about half of the time"))
    gs = {d: max(r.top5_accuracy for r in cmp_rows[(d, "GS")]) for d in g.dims}
    gs_limit = {d: sweep.cmp(d, "GS", LIMIT_EPSILON).top5_accuracy for d in g.dims}
    out.append(Claim("Fig. 6.23", "DP-TT-CMP GS: high accuracy in 1-D, at most 40% top-5 in 2-D",
                     "1-D high, 2-D ≤ 40%", ", ".join(f"{d}-D {_pct(v)}" for d, v in gs.items()),
                     _agree(gs.get(1, 0) >= 0.8 and gs.get(2, 1) <= 0.5),
                     "GS as described (the unchosen child starts a thread that keeps using the "
                     "EM but no longer splits) visits the sibling of every node on the path; with "
                     "every decision right it reaches a top-5 neighbour for "
                     + ", ".join(f"{_pct(v)} ({d}-D)" for d, v in gs_limit.items())
                     + " of the queries, so a 2-D ceiling of 40% does not follow from the text"))
    for dims in g.dims:
        at = {v: at_final_epsilon(cmp_rows[(dims, v)], 100.0, "nn_accuracy")
              for v in g.cmp_comparison}
        top = max(at, key=lambda v: at[v])
        out.append(Claim(f"Fig. 6.{27 + dims}", f"{dims}-D CMP: early stopping is the best "
                         "variant for a given budget (raw, at final ε = 100)", "E8 best",
                         ", ".join(f"{v} {_pct(a)}" for v, a in sorted(at.items(),
                                                                     key=lambda t: -t[1])),
                         _agree(top == "E8")))
        p_at = {v: at_final_epsilon(cmp_rows[(dims, v)], 100.0, "nn_accuracy")
                for v in ("basic", "P4", "P8")}
        out.append(Claim(f"Figs. 6.19/6.20 ({dims}-D)", "CMP P does not help: P4, P8 below "
                         "basic at equal final ε (raw, at 100)", "P below basic",
                         ", ".join(f"{v} {_pct(a)}" for v, a in p_at.items()),
                         _agree(p_at["P4"] <= p_at["basic"] and p_at["P8"] <= p_at["basic"])))
    if 1 in g.dims:
        alone = [sweep.geo_alone(1, x) for x in g.geo_ratios]
        need = reaching(alone, 0.95, "nn_accuracy", x="geo_per_unit")
        gap = float(np.median(sweep.bench(1).truth.nearest))
        out.append(Claim("§6.2.3", "1-D GEO reaches 95% raw accuracy at ε*/Δ ≈ 10^-5", "1e-5",
                         f"{need:.1e}" if math.isfinite(need) else "not on the grid",
                         _agree(math.isfinite(need) and abs(math.log10(need) + 5) <= 0.5),
                         f"at ε*/Δ = 10^-5 the Laplace noise has scale 10^5, while the median "
                         f"distance from a query to its nearest point is {gap:.3g}: the noisy "
                         "point then rarely keeps the same nearest neighbour"))
    sent = [sweep.cmp(2, "basic", g.sent_epsilon, n) for n in g.sent_sizes]
    slope, r2 = _loglog(sent)
    out.append(Claim("§6.1, Fig. 6.1", "share of the data sent against N is near linear",
                     "near linear", f"log-log slope {slope:.2f} (R² {r2:.3f}); basic sends "
                     + ", ".join(f"{100 * r.seen_fraction:.3g}% of {r.n_points:,}" for r in sent),
                     "agrees on log-log axes" if r2 > 0.98 else "differs",
                     "the points a traversal sees grow like log N, so their share falls like "
                     "log(N)/N: a straight line of slope about -1 on log-log axes"))
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


__all__ = ["Claim", "at_final_epsilon", "check_claims", "reaching"]
