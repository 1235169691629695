"""Reproduction of Mukherjee, Banerjee, Chen & Gangopadhyay (2008): ``ppknn reproduce mukherjee``.

The experiments are :mod:`ppknn_reproductions.experiments.pca` (every
release through a sanitizer and a miner party, the attacks over the miner's
view from the transcript). This module turns their results into one CSV
table and one PNG per figure in ``output``,

- ``fig5_tradeoff``: average privacy (after the attacks) against accuracy;
- ``fig6_worst_case``: amplification, the largest rho2 for rho1 = 0.1%, and
  the empirical audit of a released column (plus Rand-U/Rand-N audits);
- ``fig8_attacks``: privacy with no filtering, PCA + filtering, No-PCA + filtering;
- ``fig9_accuracy``: PCA-radius, PCA-best-k, PCA-k=5 for b = 0 ... 0.3;
- ``fig10_sanitize_time`` and ``fig11_mining_time``;
- ``distortion_check`` (a table): eqs. (12)-(13) beside the measured distortion,

copies the figures (PNG and CSV) next to the Markdown report (``<report
stem>/``) and writes the report: a :class:`~simulations.reporting.Report`
whose claims are :class:`~simulations.reporting.Claim` data
(:mod:`ppknn_reproductions.mukherjee_claims`), every number from this run.
Figs. 8-11 are drawn by the shared plot style; Fig. 5 (with PCA-radius's
regression line) and Fig. 6 (with the analytic curves) by their own
functions here.
"""

from __future__ import annotations

import math
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from threadpoolctl import threadpool_limits

from ppknn.core.errors import ConfigError
from ppknn.protocols.pca_perturbation.datasets import UNAVAILABLE, PaperDataset
from ppknn.simulations.grids import write_grid_rows
from ppknn.simulations.reporting import (
    Claim,
    Figure,
    Report,
    Run,
    Section,
    Series,
    Table,
    fmt,
    jsonio,
    pct,
    plot,
    save_png,
    write,
    write_rows,
)
from ppknn_reproductions.experiments.pca import (
    BS,
    FULL,
    LARGE,
    QUICK,
    RHO1,
    Settings,
    additive_audit,
    aggregate,
    run_grid_experiments,
    timing,
    worst_case,
)
from ppknn_reproductions.mukherjee_claims import ON_LINE, check_claims, tradeoff_points

if TYPE_CHECKING:
    from matplotlib.figure import Figure as MplFigure

DESCRIPTION = "Mukherjee et al.: PCA + Laplace release, modified kNN, attacks (Figs. 5-11)"
"""One line for ``ppknn reproduce``'s list of reproductions."""


Tables = dict[str, list[dict]]
METHOD_OF = {"pca-laplace": "PCA-radius", "rand-p": "Rand-P", "rand-u": "Rand-U",
             "rand-n": "Rand-N"}
PAPER = "Mukherjee, Banerjee, Chen & Gangopadhyay (2008)"


def _m(stats: dict, key: str) -> float:
    return stats.get(key, (math.nan, math.nan))[0]


def _sd(stats: dict, key: str) -> float:
    return stats.get(key, (math.nan, math.nan))[1]


def _ci(stats: dict, key: str, name: str | None = None) -> dict[str, float]:
    """``{name_low, name_high}``: the 95% t interval of the mean over repetitions.

    Accuracies (``acc_*``) are shares: their interval is clipped to [0, 1].
    """
    mean, _, half = stats.get(key, (math.nan, math.nan, math.nan))
    name = name or key
    low, high = mean - half, mean + half
    if key.startswith("acc_"):
        low, high = float(np.clip(low, 0.0, 1.0)), float(np.clip(high, 0.0, 1.0))  # NaN stays
    return {f"{name}_low": low, f"{name}_high": high}


def build_tables(rows: list[dict], worst: list[dict], additive: list[dict], san: list[dict],
                 mine: list[dict]) -> Tables:
    """The per-figure tables from the flat release rows and the side measurements."""
    agg = aggregate(rows)
    names = list(dict.fromkeys(r["dataset"] for r in rows))
    labels = {(r["dataset"], r["label"]): r for r in rows}
    reps: dict[tuple[str, str], int] = {}
    for r in rows:
        reps[(r["dataset"], r["label"])] = reps.get((r["dataset"], r["label"]), 0) + 1
    fig5, fig8, fig9, dist = [], [], [], []
    for (name, label), st in agg.items():
        scheme = labels[(name, label)]["scheme"]
        if scheme not in METHOD_OF:
            continue
        priv = "privacy_nofilter" if scheme == "rand-p" else "privacy_filter"
        acc = "acc_radius" if scheme == "pca-laplace" else "acc_best-k"
        fig5.append({"dataset": name, "method": METHOD_OF[scheme], "release": label,
                     "param": labels[(name, label)]["param"], "privacy": _m(st, priv),
                     "privacy_sd": _sd(st, priv), **_ci(st, priv, "privacy"),
                     "accuracy": _m(st, acc), "accuracy_sd": _sd(st, acc),
                     **_ci(st, acc, "accuracy"), "best_k": _m(st, "best_k"),
                     "reps": reps[(name, label)]})
    for name in names:
        ref = agg[(name, "PCA no noise")]
        fig9.append({"dataset": name, "b": 0.0, "radius": _m(ref, "acc_fixed-k"),
                     "best_k": _m(ref, "acc_best-k"), "k5": _m(ref, "acc_fixed-k"),
                     "radius_sd": _sd(ref, "acc_fixed-k"), "best_k_sd": _sd(ref, "acc_best-k"),
                     "k5_sd": _sd(ref, "acc_fixed-k"), **_ci(ref, "acc_fixed-k", "radius"),
                     **_ci(ref, "acc_best-k", "best_k"), **_ci(ref, "acc_fixed-k", "k5"),
                     "chosen_k": _m(ref, "best_k"), "in_radius": math.nan,
                     "fallback": math.nan})
        for b in BS:
            p = agg[(name, f"PCA-radius b={b:g}")]
            q = agg[(name, f"No-PCA Laplace b={b:g}")]
            fig9.append({"dataset": name, "b": b, "radius": _m(p, "acc_radius"),
                         "best_k": _m(p, "acc_best-k"), "k5": _m(p, "acc_fixed-k"),
                         "radius_sd": _sd(p, "acc_radius"), "best_k_sd": _sd(p, "acc_best-k"),
                         "k5_sd": _sd(p, "acc_fixed-k"), **_ci(p, "acc_radius", "radius"),
                         **_ci(p, "acc_best-k", "best_k"), **_ci(p, "acc_fixed-k", "k5"),
                         "chosen_k": _m(p, "best_k"), "in_radius": _m(p, "in_radius"),
                         "fallback": _m(p, "fallback")})
            fig8.append({"dataset": name, "b": b, "no_filter": _m(p, "privacy_nofilter"),
                         "pca_filter": _m(p, "privacy_filter"),
                         **_ci(p, "privacy_nofilter", "no_filter"),
                         **_ci(p, "privacy_filter", "pca_filter"),
                         **_ci(q, "privacy_filter", "nopca_filter"),
                         "nopca_nofilter": _m(q, "privacy_nofilter"),
                         "nopca_filter": _m(q, "privacy_filter"),
                         "pca_best_s2": _m(p, "best_s2"), "nopca_best_s2": _m(q, "best_s2"),
                         "pca_nsr_min": _m(p, "nsr_min"), "pca_nsr_median": _m(p, "nsr_median"),
                         "nopca_nsr_median": _m(q, "nsr_median"),
                         "amp_min": _m(p, "amp_min"), "amp_max": _m(p, "amp_max")})
            dist.append({"dataset": name, "b": b, "E_formula": _m(p, "E"),
                         "E_measured": _m(p, "E_measured"), "Var_formula": _m(p, "Var"),
                         "Var_measured": _m(p, "Var_measured")})
    return {"fig5_tradeoff": fig5, "fig6_worst_case": worst, "fig6_additive_audit": additive,
            "fig8_attacks": fig8, "fig9_accuracy": fig9, "fig10_sanitize_time": san,
            "fig11_mining_time": mine, "distortion_check": dist}


# ------------------------------------------------------------------------------ figures
FIG5 = Figure(
    name="fig5_tradeoff", x="privacy", panel_by="dataset",
    title="Fig. 5: average privacy (after the attacks) against accuracy, with PCA-radius's "
          "least-squares line (bars: 95% t intervals over repetitions)",
    xlabel="average privacy (share of the attribute range)", ylabel="accuracy",
    series=tuple(Series(label=m, y="accuracy", where={"method": m})
                 for m in ("PCA-radius", "Rand-P", "Rand-U", "Rand-N")))
FIG6 = Figure(
    name="fig6_worst_case", x="b",
    title="Fig. 6: amplification e^(1/b) of a released column, the largest rho2 for rho1 = "
          f"{100 * RHO1:g}% (eq. 2), and audited lower bounds",
    xlabel="b (Laplace scale, share of the range)", ylabel="amplification",
    series=(Series(label="release", y="amp_max"),
            Series(label="audited lower bound", y="audit_amp_lower")))
FIG8 = Figure(
    name="fig8_attacks", kind="bar", x="b", panel_by="dataset",
    title="Fig. 8: average privacy under the correlation attack (bars: 95% t intervals over "
          "repetitions)",
    xlabel="b (Laplace scale, share of the range)",
    ylabel="average privacy (share of the range)",
    series=(Series(label="No-Filtering", y="no_filter", low="no_filter_low",
                   high="no_filter_high"),
            Series(label="PCA + Filtering", y="pca_filter", low="pca_filter_low",
                   high="pca_filter_high"),
            Series(label="No-PCA + Filtering", y="nopca_filter", low="nopca_filter_low",
                   high="nopca_filter_high")))
FIG9 = Figure(
    name="fig9_accuracy", x="b", panel_by="dataset", ylim=(0.0, 1.02),
    title="Fig. 9: accuracy of the three kNN variants (b = 0: no noise; bars: 95% t "
          "intervals over repetitions)",
    xlabel="b (Laplace scale, share of the range)", ylabel="accuracy",
    series=(Series(label="PCA-radius", y="radius", low="radius_low", high="radius_high"),
            Series(label="PCA-best-k", y="best_k", low="best_k_low", high="best_k_high"),
            Series(label="PCA-k=5", y="k5", low="k5_low", high="k5_high")))
FIG10 = Figure(
    name="fig10_sanitize_time", x="size", panel_by="vary",
    title="Fig. 10: sanitisation time (synthetic data, sd 2, b = 0.3, s = m/2)",
    xlabel="the varied size (n rows or m attributes)", ylabel="seconds",
    series=(Series(label="normalise + PCA", y="pca_s"), Series(label="noise", y="noise_s")))
FIG11 = Figure(
    name="fig11_mining_time", x="size", panel_by="vary",
    title="Fig. 11: mining time per test point (synthetic data, sd 2, b = 0.3, s = m/2)",
    xlabel="the varied size (n rows or m attributes)", ylabel="ms per test point",
    series=(Series(label="PCA-radius", y="radius_ms"),
            Series(label="weighted kNN, k = 5", y="knn5_ms"),
            Series(label="scikit-learn kNN, k = 5", y="sklearn5_ms")))
FIGURES = (FIG5, FIG6, FIG8, FIG9, FIG10, FIG11)


def _varied(rows: list[dict]) -> list[dict]:
    """Timing rows with the varied size as ``size`` and the panel named by the fixed one."""
    return [dict(r, size=r[r["vary"]], vary=f"n varies (m = {r['m']})" if r["vary"] == "n"
                 else f"m varies (n = {r['n']:,})") for r in rows]


def _canvas(width: float, height: float) -> MplFigure:
    """A blank matplotlib figure on an Agg canvas (no pyplot, no global backend)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as NewFigure

    fig = NewFigure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig: MplFigure, figure: Figure, run: str, out: Path) -> Path:
    fig.suptitle(f"{figure.title}\n{run}", fontsize=10)
    return save_png(fig, out / figure.png)


def plot_tradeoff(fig5: list[dict], out: Path, *, run: str) -> Path:
    """Fig. 5: a panel per dataset with PCA-radius's least-squares line (own style)."""
    names = list(dict.fromkeys(r["dataset"] for r in fig5))
    cols = min(4, max(1, len(names)))
    rows = math.ceil(len(names) / cols)
    fig = _canvas(3.9 * cols, 3.2 * rows + 0.8)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax in axes[len(names):]:
        ax.set_visible(False)
    markers = {"PCA-radius": "o", "Rand-P": "s", "Rand-U": "^", "Rand-N": "v"}
    for ax, name in zip(axes, names):
        for method, style in markers.items():
            pts = [r for r in fig5 if r["dataset"] == name and r["method"] == method]
            xs, ys = [p["privacy"] for p in pts], [p["accuracy"] for p in pts]
            yerr = np.array([[max(0.0, p["accuracy"] - p["accuracy_low"]) for p in pts],
                             [max(0.0, p["accuracy_high"] - p["accuracy"]) for p in pts]])
            bars = ax.errorbar(xs, ys, yerr=np.nan_to_num(yerr), fmt=style, capsize=2, lw=0.8,
                               label=method)
            if method == "PCA-radius" and len(xs) > 1 and np.ptp(xs) > 0:
                slope, icept = np.polyfit(xs, ys, 1)
                grid = np.array([min(xs), max(xs)])
                ax.plot(grid, icept + slope * grid, "--", color=bars[0].get_color(),
                        lw=0.8, label="PCA-radius line")
        ax.set(title=name, xlabel=FIG5.xlabel, ylabel=FIG5.ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    return _save(fig, FIG5, run, out)


def plot_worst_case(worst: list[dict], additive: list[dict], out: Path, *, run: str) -> Path:
    """Fig. 6: three panels with the analytic curves (not in the shared style)."""
    names = list(dict.fromkeys(r["dataset"] for r in worst))
    fig = _canvas(14, 4.6)
    axes = fig.subplots(1, 3)
    bgrid = np.linspace(0.1, 1.0, 91)
    axes[0].semilogy(bgrid, np.exp(1 / bgrid), "k-", label="e^(1/b)")
    for i, name in enumerate(names):
        pts = [r for r in worst if r["dataset"] == name]
        axes[0].semilogy([p["b"] for p in pts], [p["amp_max"] for p in pts], "o", ms=4,
                         label=f"{name} (release)")
        axes[0].semilogy([p["b"] for p in pts], [p["audit_amp_lower"] for p in pts], "x",
                         ms=4, color=axes[0].lines[-1].get_color(),
                         label="audited lower bound (x)" if i == 0 else None)
    axes[0].set(title="amplification", xlabel=FIG6.xlabel, ylabel="amplification (log scale)")
    axes[0].legend(fontsize=6)
    axes[1].plot(bgrid, [100 * (math.exp(1 / b) * RHO1 / (1 + (math.exp(1 / b) - 1) * RHO1))
                         for b in bgrid], "k-", label="eq. (2)")
    axes[1].set(title=f"largest rho2 for rho1 = {100 * RHO1:g}%", xlabel=FIG6.xlabel,
                ylabel="largest rho2 (%)")
    axes[1].legend(fontsize=7)
    lap = [r for r in worst if r["b"] == 0.3]
    axes[2].bar([f"{r['dataset']}\nLaplace 0.3" for r in lap],
                [r["audit_eps_lower"] for r in lap], color="tab:blue",
                label="PCA-radius, Laplace b = 0.3")
    axes[2].bar([f"{r['noise']}\nsd {r['sd']:g}" for r in additive],
                [r["audit_eps_lower"] for r in additive], color="tab:red",
                label="Rand-U / Rand-N")
    axes[2].axhline(1 / 0.3, color="k", ls="--", lw=1, label="1/0.3")
    axes[2].set(title="audited lower bound on ln(amplification)", xlabel="release",
                ylabel="ln(amplification), lower bound")
    axes[2].tick_params(axis="x", labelsize=5, rotation=90)
    axes[2].legend(fontsize=6)
    for ax in axes:
        ax.grid(alpha=0.3)
    return _save(fig, FIG6, run, out)


def plot_all(tables: Tables, out: Path, *, run: str) -> list[Figure]:
    """One PNG per figure into ``out``; returns the figures (their CSVs are the tables)."""
    plot_tradeoff(tables["fig5_tradeoff"], out, run=run)
    plot_worst_case(tables["fig6_worst_case"], tables["fig6_additive_audit"], out, run=run)
    for figure, rows in ((FIG8, tables["fig8_attacks"]), (FIG9, tables["fig9_accuracy"]),
                         (FIG10, _varied(tables["fig10_sanitize_time"])),
                         (FIG11, _varied(tables["fig11_mining_time"]))):
        plot(figure, Table.from_rows(figure.name, rows), folder=out, run=run)
    return list(FIGURES)


# ------------------------------------------------------------------------------ report
def deviations(tables: Tables, datasets: dict[str, PaperDataset], settings: Settings
               ) -> tuple[str, ...]:
    """Where and why the run and its setup differ from the paper (this run's numbers)."""
    fig8, fig9 = tables["fig8_attacks"], tables["fig9_accuracy"]
    out = []
    n_train = {n: len(d.y) - max(1, round(0.1 * len(d.y))) for n, d in datasets.items()}
    flat = [(r["dataset"], r["b"], r["in_radius"] / n_train[r["dataset"]], r["radius"],
             r["best_k"]) for r in fig9 if r["b"] >= 0.2 and r["dataset"] in n_train]
    wide = [f for f in flat if f[2] > 0.8]
    worse = [f for f in wide if f[4] - f[3] > 0.05]
    if wide:
        shown = "; ".join(f"{n} b={b:g}: {100 * frac:.0f}% of the rows inside, radius "
                          f"{pct(acc)} vs best-k {pct(best)}" for n, b, frac, acc, best in worse)
        out.append("**The radius holds almost every training row at high noise.** The "
                   "radius assumes the original distance d^2 is negligible beside the "
                   f"distortion; at b = 0.2-0.3 over 80% of the rows are inside in {len(wide)} "
                   f"of {len(flat)} cases. The inverse-square weights of noise-dominated "
                   "distances are then almost flat and the vote drifts towards the majority "
                   "class; the radius is more than 5 points below best-k in "
                   f"{len(worse)} of them" + (f": {shown}." if worse else "."))
    small = [r for r in fig9 if math.isfinite(r["fallback"]) and r["fallback"] > 0.01]
    if small:
        shown = "; ".join(f"{r['dataset']} b={r['b']:g}: {r['in_radius']:.0f} rows inside on "
                          f"average, {pct(r['fallback'])} of queries with an empty radius"
                          for r in small)
        out.append("**At low noise the radius can be nearly empty** (E(D) is negative when "
                   "the dropped components' variance exceeds the noise), and the 5-nearest "
                   f"fallback decides: {shown}.")
    hi = [r for r in fig8 if r["b"] >= 0.2]
    lo = [r for r in fig8 if r["b"] < 0.2]
    if hi:
        def drop(rows: list[dict], key: str, ref: str) -> str:
            return pct(float(np.mean([1 - r[key] / r[ref] for r in rows]))) if rows else "n/a"

        out.append(
            "**The correlation attack also gains against PCA-radius at b >= 0.2.** Noise of "
            "scale b * range has variance 2 b^2 range^2; with a component's range about six of "
            "its standard deviations, that exceeds the component's own variance once b is "
            "about 0.12, so most kept components are more noise than signal (median "
            f"noise/signal ratio {np.median([r['pca_nsr_median'] for r in hi]):.2g}) and the "
            "closest reconstruction keeps few components (mean s2 "
            f"{np.mean([r['pca_best_s2'] for r in hi]):.1f}). The paper's argument (noise in "
            "proportion to each component defeats filtering) holds while the ratio is below "
            f"1: at b = 0.1 the mean relative drop is {drop(lo, 'pca_filter', 'no_filter')} "
            f"against {drop(hi, 'pca_filter', 'no_filter')} at b >= 0.2. Without PCA the "
            f"drop is larger still (mean {drop(hi, 'nopca_filter', 'nopca_nofilter')} of the "
            "unfiltered No-PCA privacy).")
    syn = [r for r in fig8 if r["dataset"].startswith("synthetic") and r["b"] == 0.3]
    if syn:
        out.append("**Average privacy cannot exceed the data's own spread after an oracle "
                   "filter.** An attacker who drops every noisy component predicts the "
                   "attribute mean, whose 95% error interval is the attribute's central 95% "
                   "range; on the synthetic clusters that range is narrow, so the "
                   "measured privacy at b = 0.3 is "
                   + ", ".join(f"{r['dataset']} {pct(r['pca_filter'])}" for r in syn)
                   + " where the paper reports over 100%.")
    return (*out, *CHOICES, (
        f"**Sizes.** The synthetic sets use {settings.reps_large} repetitions and classify "
        f"{settings.max_queries:,} of their test rows, to stay within the time budget on two "
        "cores; the waveform data come from our generator of Breiman et al.'s definition, "
        "the synthetic clusters from our generator of the paper's description (centres "
        "uniform in [-5, 5]^100, standard deviation 2 or 8). Pendigits and Magic04 are "
        "missing."),
        "**Timing** excludes loading and saving files (the paper includes them) and is "
        "not comparable in absolute terms (Matlab on a 2008 Pentium 4 against numpy).")


CHOICES = (
    "**Test points are not noised.** The miner normalises its rows with the released "
    "bounds and projects them on the released components; eqs. (12)-(13) describe the "
    "distortion between a noisy training point and such a clean test point.",
    "**Normalisation bounds (deviation).** The paper normalises the whole table before "
    "splitting, so its bounds read the test rows. Here they are the training rows' minimum "
    "and maximum (`[data] bounds = \"data\"`, which warns that they reveal the training "
    "extremes), released to the miner; the miner clips its own rows to them (a test row "
    "outside the training range is moved onto its edge). No parameter of the release reads "
    "a test row (checked by a test: moving the test rows leaves the release unchanged).",
    "**Splits.** Each repetition is a new random 90/10 split of the scenario's data "
    "(`test_fraction = 0.1`, `max_queries` test rows drawn at random, stratified by class) "
    "and new noise; every release of a repetition shares its split and its noise stream "
    "(the sanitizer's draws are common to the releases of one repetition, as in one "
    "session of the paper's).",
    "**s = floor(m/2)** (the paper: half the attributes). Ionosphere's constant "
    "attribute is dropped (the sanitizer rejects constant columns), leaving 33.",
    "**Weights** are 1/d^2 (squared Euclidean distance, eq. 11) for every kNN variant "
    "and baseline; ties go to the lowest class index. A query whose radius is empty "
    "falls back to its 5 nearest points; zero-distance points, if any, vote alone.",
    "**Best k** is cross-validated on the sanitised release (the miner has nothing "
    "else); validation rows are noisy while test rows are clean, which can favour "
    "smaller k than is best for the test rows.",
    "**The correlation attack's s2** is the one whose reconstruction has the smallest "
    "mean squared error to the original data (an oracle, as in the paper); for "
    "PCA-radius s2 < s, for No-PCA s2 < m, for Rand-U/Rand-N s2 <= m (m = no filtering).",
    "**Average privacy** = mean over attributes of the width of the central 95% of "
    "the attack's errors, divided by the attribute range (1 after normalisation), over "
    "the released rows (every k-th row when there are more than 20,000).",
    "**Amplification is per released column**, as in the paper. A record's s columns "
    "are noised independently, so the ratio for a whole record is up to e^(s/b); and the "
    "guarantee covers records whose scores lie in the training range (the 'domain' "
    "column of the Fig. 6 table is larger).",
)
"""Choices of this reproduction that the paper leaves open or makes differently."""


def _clearly_below(fig5: list[dict], names: Sequence[str]) -> tuple[int, int]:
    """Baseline points whose 95% interval lies wholly below / wholly above PCA-radius's line."""
    below = above = 0
    for n in names:
        pca = [r for r in fig5 if r["dataset"] == n and r["method"] == "PCA-radius"]
        x = np.array([r["privacy"] for r in pca])
        if len(pca) < 2 or np.ptp(x) == 0:
            continue
        slope, icept = np.polyfit(x, [r["accuracy"] for r in pca], 1)
        for r in fig5:
            if r["dataset"] == n and r["method"] != "PCA-radius":
                line = icept + slope * r["privacy"]
                below += bool(r.get("accuracy_high", math.nan) < line - ON_LINE)
                above += bool(r.get("accuracy_low", math.nan) > line + ON_LINE)
    return below, above


def headline(claims: Sequence[Claim], fig5: list[dict], names: Sequence[str]) -> str:
    """The paper's main result (Fig. 5's trade-off) in plain words, from the claim's verdict."""
    tradeoff = next(c for c in claims if c.id == "fig5-tradeoff")
    below, on, total = tradeoff_points(fig5, names)
    sure_below, sure_above = _clearly_below(fig5, names)
    said = {"reproduced": "reproduced", "partly": "only partly reproduced",
            "differs": "not reproduced", "not measured": "not measured"}[tradeoff.verdict]
    text = (f"**Headline: the paper's main result is {said} here "
            f"({tradeoff.verdict}).** The paper's Fig. 5 has PCA-radius dominating Rand-P, "
            "Rand-U and Rand-N (almost all of their points below and left of its line); in "
            f"this run **{below} of {total} baseline points ({pct(tradeoff.measured)}) lie "
            f"below PCA-radius's least-squares line**, {on} lie on it (the same accuracy) and "
            f"{total - below - on} above it; {sure_below} are below and {sure_above} above "
            "it by more than their 95% interval")
    if tradeoff.verdict != "reproduced":
        text += (", so PCA-radius does not dominate the baselines: at the same privacy they "
                 "are often as accurate or more")
    return text + (". (A baseline point within " + f"{ON_LINE:g}".replace("e-0", "e-")
                   + " of the line counts as on it, "
                   "neither below nor above: where PCA-radius is 100% accurate at every b, as "
                   "on synthetic-2, its least-squares line lands about 1e-16 off 100% by "
                   "rounding, and the baselines at 100% lie on it.)")


def _ci_text(row: dict, key: str) -> str:
    """``mean [low, high]`` in percent (the interval is NaN with one repetition)."""
    low, high = row.get(f"{key}_low", math.nan), row.get(f"{key}_high", math.nan)
    if not (math.isfinite(low) and math.isfinite(high)):
        return pct(row[key])
    return f"{pct(row[key])} [{pct(max(0.0, low))}, {pct(min(1.0, high))}]"


def _number_of(x: float) -> str:
    return fmt(int(round(x))) if math.isfinite(x) else fmt(x)


def _tables(tables: Tables, datasets: dict[str, PaperDataset]) -> dict[str, Table]:
    """The tables shown in the report (formatted cells; the CSVs hold the numbers)."""
    fig5, fig8, fig9 = tables["fig5_tradeoff"], tables["fig8_attacks"], tables["fig9_accuracy"]
    shown = {
        "datasets": [{"name": n, "rows": len(d.y), "attributes": d.X.shape[1],
                      "classes": d.n_classes, "s (kept)": max(1, d.X.shape[1] // 2),
                      "source": d.note} for n, d in datasets.items()],
        "fig5": [{"dataset": r["dataset"], "release": r["release"], "privacy": pct(r["privacy"]),
                  "accuracy (95% CI)": _ci_text(r, "accuracy"),
                  "k": "radius" if r["method"] == "PCA-radius" else _number_of(r["best_k"])}
                 for r in fig5],
        "fig6": [{"dataset": r["dataset"], "b": f"{r['b']:g}", "e^(1/b)": fmt(r["exp_1_over_b"], 4),
                  "release min-max": f"{r['amp_min']:.4f}-{r['amp_max']:.4f}",
                  "audited lower bound": fmt(r["audit_amp_lower"], 4),
                  "domain max": fmt(r["domain_amp_max"]), "largest rho2": pct(r["rho2_max"])}
                 for r in tables["fig6_worst_case"] if r["b"] in (0.25, 0.3)],
        "fig6_additive": [{"additive noise": r["noise"], "sd": f"{r['sd']:g}",
                           "audited lower bound on amplification": fmt(r["audit_amp_lower"])}
                          for r in tables["fig6_additive_audit"]],
        "fig8": [{"dataset": r["dataset"], "b": f"{r['b']:g}", "No-Filtering": pct(r["no_filter"]),
                  "PCA + Filtering (s2)": f"{pct(r['pca_filter'])} ({r['pca_best_s2']:.1f})",
                  "noise/signal PCA": f"{fmt(r['pca_nsr_min'], 2)} / "
                                      f"{fmt(r['pca_nsr_median'], 2)}",
                  "No-PCA": pct(r["nopca_nofilter"]),
                  "No-PCA + Filtering (s2)": f"{pct(r['nopca_filter'])} "
                                             f"({r['nopca_best_s2']:.1f})",
                  "noise/signal No-PCA": fmt(r["nopca_nsr_median"], 2)} for r in fig8],
        "fig9": [{"dataset": r["dataset"], "b": f"{r['b']:g}",
                  "PCA-radius (95% CI)": _ci_text(r, "radius"),
                  "PCA-best-k (95% CI; k)": f"{_ci_text(r, 'best_k')}; "
                                            f"{_number_of(r['chosen_k'])}",
                  "PCA-k=5 (95% CI)": _ci_text(r, "k5"),
                  "points in radius": _number_of(r["in_radius"])
                  if math.isfinite(r["in_radius"]) else "-",
                  "empty radius": pct(r["fallback"]) if math.isfinite(r["fallback"]) else "-"}
                 for r in fig9],
        "timing": [{"n": a["n"], "m": a["m"], "normalise + PCA (s)": a["pca_s"],
                    "noise (s)": a["noise_s"], "PCA-radius (ms/pt)": b["radius_ms"],
                    "kNN k=5 (ms/pt)": b["knn5_ms"], "scikit-learn k=5 (ms/pt)": b["sklearn5_ms"]}
                   for a, b in zip(tables["fig10_sanitize_time"], tables["fig11_mining_time"])],
        "distortion": [{"dataset": r["dataset"], "b": f"{r['b']:g}", "E formula": r["E_formula"],
                        "E measured": r["E_measured"], "Var formula": r["Var_formula"],
                        "Var measured": r["Var_measured"]} for r in tables["distortion_check"]],
    }
    return {name: Table.from_rows(name, rows) for name, rows in shown.items()}


def build_report(*, tables: Tables, datasets: dict[str, PaperDataset], releases: list[dict],
                 settings: Settings, command: str, runtime: str, quick: bool,
                 seconds: dict[str, float], output: Path, figure_dir: str) -> Report:
    """The report as data: claims beside measured figures, every number from ``tables``."""
    names = list(dict.fromkeys(r["dataset"] for r in tables["fig9_accuracy"]))
    claims = check_claims(tables, releases)
    shown = _tables(tables, datasets)
    st = settings
    intro = (
        "*A privacy preserving technique for distance-based classification with worst case "
        "privacy guarantees* (Data & Knowledge Engineering 66, 2008). Tables: "
        f"`{output}/*.csv`; the figures and their CSVs are beside this file in "
        f"`{figure_dir}/`.",
        headline(claims, tables["fig5_tradeoff"], names),
        f"**Run.** {st.reps} repetitions per dataset ({st.reps_large} for the 100,000-row "
        "synthetic sets); 10% of the rows are the miner's test split, of which at most "
        f"{st.max_queries:,} are classified; best k by 5-fold cross-validation on the "
        f"release ({st.max_validation:,} rows validated); grid runs "
        f"{seconds['experiments']:.0f} s, timing sweeps {seconds['timing']:.0f} s.",
        f"**Where the numbers come from.** Figs. 5, 8 and 9 and the distortion table come "
        f"from {seconds.get('runs', 0):,.0f} scenario runs of the `pca-perturbation` protocol "
        "in one grid per dataset (its 16 releases x the repetitions), each run through the "
        "protocol registry exactly as `ppknn run` runs a scenario file (the rows are "
        f"`{output}/grids/grid-mukherjee-<dataset>.csv`, the data files the scenarios read "
        f"`{output}/datasets/`). Fig. 6 (an audit of the Laplace mechanism on one released "
        "column) and Figs. 10-11 (a timing micro-benchmark of the parties' functions) are "
        "studies, not protocol runs. Every interval is a 95% Student-t interval over the "
        "repetitions.",
        "Every release goes from a sanitizer party to a miner party as a recorded message; "
        "the miner classifies its own (not noised) rows, and the attacks run over the "
        "miner's view read back from the transcript.",
    )
    sections = (
        Section(heading="Datasets", tables=(shown["datasets"],), text=(
            f"Not reproduced: {', '.join(UNAVAILABLE)} (not available offline).",)),
        Section(heading="Claims beside measurements", claims=claims, text=(
            "A statement the paper makes about every case of a figure is measured as the "
            "share of cases in which it holds (reproduced when all do, differs when none "
            "does). Accuracies are means over the repetitions with their 95% Student-t "
            "interval; how the paper's words are read is in the last column.",)),
        Section(heading="Fig. 5: average privacy and accuracy", figures=(FIG5,),
                tables=(shown["fig5"],), text=(
            "Privacy is measured after the attacks the paper assumes: PCA-radius after the "
            "transform and the correlation attack (PCA + Filtering), Rand-P after the "
            "pseudo-inverse, Rand-U and Rand-N after the correlation attack. PCA-radius uses "
            "the modified kNN, the others distance-weighted kNN with the cross-validated k. "
            "Accuracy is the mean over repetitions (each a new split and new noise) with its "
            "95% Student-t interval.",)),
        Section(heading="Fig. 6: worst-case privacy", figures=(FIG6,),
                tables=(shown["fig6"], shown["fig6_additive"]), text=(
            "Amplification of a released column is `exp(range_i / b_i)` computed from the "
            "release; the audit draws a column's output for a record at each end of its range "
            f"({st.audit_samples:,} samples each) and reports a lower confidence bound "
            f"(confidence {st.audit_confidence}) on the log of the density ratio "
            "(`core.dp.audit`). The domain column is the amplification for any record of the "
            "normalised domain, not only the training rows' range.",)),
        Section(heading="Fig. 8: privacy under the correlation attack", figures=(FIG8,),
                tables=(shown["fig8"],), text=(
            "s2 is the attacker's choice (mean over repetitions). The noise-to-signal columns "
            "give the noise variance 2 b_i^2 over the variance of each released column (PCA: "
            "minimum and median over the kept components; No-PCA: median over attributes): "
            "where it exceeds 1, dropping that column lowers the attacker's squared error, so "
            "the closest reconstruction keeps few components.",)),
        Section(heading="Fig. 9: accuracy of the three kNN variants", figures=(FIG9,),
                tables=(shown["fig9"],), text=(
            "At b = 0 (no noise, the reference) PCA-radius is kNN with k = 5, as in the "
            "paper.",)),
        Section(heading="Figs. 10-11: execution time", figures=(FIG10, FIG11),
                tables=(shown["timing"],), text=(
            "Synthetic data (standard deviation 2), b = 0.3, s = m/2, in-process functions the "
            "parties run; mining times per test point are for a batch of "
            f"{st.timing_queries} points, measured side by side in one run.",)),
        Section(heading="Distortion statistics (eqs. 12-13) beside the measured distortion",
                tables=(shown["distortion"],), text=(
            "Measured over pairs of a noisy training row and a clean test row of each "
            "repetition. The formulas assume the dropped principal components are independent "
            "normals; real data are not, so differences here are model error, not sampling "
            "error (the unit tests check the formulas by Monte Carlo where their assumptions "
            "hold).",)),
    )
    shown_settings: dict[str, Any] = dict(asdict(st), rows=", ".join(
        f"{k} {v:,}" for k, v in st.rows.items()) or "the paper's sizes")
    return Report(
        title=f"Reproduction: {PAPER}",
        run=Run(command=command, runtime=runtime, quick=quick, seed=st.seed,
                seconds=seconds["total"]),
        intro=intro, settings=shown_settings, sections=sections,
        deviations=deviations(tables, datasets, st), figure_dir=figure_dir)


# --------------------------------------------------------------------------- entry point
def run(output: Path, *, quick: bool, runtime: str, report: Path,
        settings: Settings | None = None, workers: int | None = None,
        log: Callable[[str], None] | None = None) -> Path:
    """Run the reproduction (see module docstring); returns the report's path.

    ``settings`` overrides the quick/full sizes (tests); ``workers`` overrides their
    ``workers`` (``--set workers=1``: the grid runs one after the other in this process,
    no Ray; ``> 1``: fanned out as Ray tasks); progress goes to ``log`` (default: the
    experiments' logger).
    """
    settings = settings or (QUICK if quick else FULL)
    if workers is not None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ConfigError(f"workers = {workers!r}: allowed an integer >= 1")
        settings = replace(settings, workers=workers)
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    # Single-threaded BLAS: the products here are small, and on a shared two-core
    # machine threaded BLAS spends more time waiting than computing.
    parallel = "ray" if runtime == "ray" or settings.workers > 1 else "sequential"
    if workers == 1:
        parallel = "sequential"
    with threadpool_limits(limits=1, user_api="blas"):
        datasets, grids, grid_rows, rows = run_grid_experiments(settings, output,
                                                                parallel=parallel, log=log)
        t_exp = time.perf_counter() - t0
        write_grid_rows(grid_rows, output / "grids")
        write_rows(output / "releases.csv", rows)
        worst = worst_case(datasets, settings)
        additive = additive_audit(settings)
        t1 = time.perf_counter()
        san, mine = timing(settings, log=log)
        t_time = time.perf_counter() - t1
    tables = build_tables(rows, worst, additive, san, mine)
    for name, table in tables.items():
        write_rows(output / f"{name}.csv", table)
    command = ("ppknn reproduce mukherjee" + (" --quick" if quick else "")
               + (" --runtime ray" if runtime == "ray" else ""))
    run_name = (f"{command}, scenario grids "
                + ("fanned out over Ray" if parallel == "ray" else "run in sequence"))
    figures = plot_all(tables, output, run=run_name)
    report = Path(report)
    figdir = report.parent / report.stem
    figdir.mkdir(parents=True, exist_ok=True)
    for figure in figures:
        for file in (figure.png, figure.csv):
            if (output / file).resolve() != (figdir / file).resolve():
                shutil.copyfile(output / file, figdir / file)
    seconds = {"experiments": t_exp, "timing": t_time, "total": time.perf_counter() - t0,
               "runs": float(sum(len(r) for r in grid_rows.values()))}
    meta = {"quick": quick, "runtime": runtime, "settings": asdict(settings),
            "large": list(LARGE), "seconds_experiments": t_exp, "seconds_timing": t_time,
            "seconds_total": seconds["total"], "unavailable": list(UNAVAILABLE),
            "output": str(output)}
    (output / "run.json").write_text(jsonio.dumps(meta, default=str))
    return write(build_report(tables=tables, datasets=datasets, releases=rows,
                              settings=settings, command=command, runtime=runtime,
                              quick=quick, seconds=seconds, output=output,
                              figure_dir=figdir.name), report)


__all__ = ["FIGURES", "build_report", "build_tables", "deviations", "plot_all", "run"]
