"""Reproduction of Gursoy, Inan, Nergiz & Saygin (2017): DP r-N and k-NN classification.

``ppknn reproduce gursoy [--quick] [--runtime ray]`` re-runs §5 of the paper --
r-N accuracy vs the number of test instances at ε = 0.5, 1, 2 (Figs. 7-9),
the k-NN → r-N conversion error in r (AvRE, Fig. 10) and in k (RMSE,
Fig. 11) vs ε̂ at k = 30, and k-NN accuracy vs k at ε = 0.5, 1, 2
(Figs. 12-14) -- as **scenario grids** (:func:`grids`): every point is one
``dp-knn`` scenario run through the protocol registry exactly as ``ppknn run``
runs it (fivefold cross-validation as ``[data] folds/fold``, noise
repetitions as ``[run].seed``), fanned out over Ray with ``--runtime ray``. The
r-N radius is released by the DP owner under its ledger (``radius =
"auto"``), not read off the data. Studies that are not protocol runs --
the non-interactive grid's resolution, the empirical privacy audit, the
timing against scikit-learn -- stay experiment functions. It writes one
CSV and one PNG per figure and the Markdown report: a
:class:`~ppknn.simulations.reporting.Report` whose claims are
:class:`~ppknn.simulations.reporting.Claim` data (the paper's statement,
the measured value with its 95% interval, the verdict computed by the
model), every number computed by this run.
"""

from __future__ import annotations

import math
import shutil
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from ppknn.core.data import load_dataset
from ppknn.core.rng import SeedPolicy
from ppknn.simulations.grids import Grid, run_grids, write_grid_rows
from ppknn.simulations.reporting import (
    Claim,
    Figure,
    Report,
    Run,
    Section,
    Series,
    Table,
    fmt,
    interval,
    jsonio,
    plot,
    write,
    write_rows,
)
from ppknn_reproductions.experiments.dp_knn import (
    DEFAULT_CLIQUE_WORK,
    PAPER_DATASETS,
    STAND_INS,
    benchmark,
    grid_resolution,
    kfold,
    load_experiment_data,
    run_audits,
    write_datasets,
)

DESCRIPTION = "Gursoy, Inan, Nergiz & Saygin: DP r-N and k-NN classification (Figs. 7-14, audit)"
"""One line for ``ppknn reproduce``'s list of reproductions."""


PAPER = ("Gursoy, Inan, Nergiz & Saygin (2017), differentially private nearest neighbour "
         "classification")
FIGURE_DIR = "gursoy"
LOW_DIMENSIONAL = ("banana", "phoneme", "banknote")
LABELS = {  # classifier -> its name in the paper's figures (plots only; the CSVs keep the keys)
    "rn": {"non-private": "non-private", "proposed": "proposed",
           "baseline-laplace": "baseline"},
    "conversion": {"interactive": "interactive", "noninteractive": "non-interactive"},
    "knn": {"non-private": "non-private", "baseline": "private-baseline",
            "interactive": "private-INT", "noninteractive": "private-NONINT"},
}


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Sizes of one reproduction run (``FULL`` or ``QUICK``)."""

    datasets: tuple[str, ...] = PAPER_DATASETS
    folds: int = 5
    folds_run: int = 5
    repeats: int = 3
    rn_sizes: tuple[int, ...] = (25, 50, 100, 200, 400, 800)
    rn_epsilons: tuple[float, ...] = (0.5, 1.0, 2.0)
    conv_epsilons: tuple[float, ...] = (0.01, 0.05, 0.1, 0.5, 1.0, 2.0)
    conv_k: int = 30
    conv_queries: int = 100
    knn_ks: tuple[int, ...] = (5, 10, 20, 30, 50, 100)
    knn_epsilons: tuple[float, ...] = (0.5, 1.0, 2.0)
    knn_queries: int = 100
    weight: float = 0.5
    radius_target: float = 10.0
    radius_epsilon: float = 1.0
    clique_work_limit: int = DEFAULT_CLIQUE_WORK
    audit_samples: int = 200_000
    grid_sizes: tuple[int, ...] = (2, 4, 6, 8, 10, 14, 20)
    bench_queries: int = 1000
    seed: int = 2017


FULL = Settings()
QUICK = Settings(folds_run=1, repeats=1, rn_sizes=(50, 200), conv_epsilons=(0.1, 1.0),
                 knn_ks=(10, 30), audit_samples=20_000, grid_sizes=(4, 8), bench_queries=300,
                 clique_work_limit=DEFAULT_CLIQUE_WORK // 4)


# ------------------------------------------------------------------ grids
RN_CLASSIFIERS = ("proposed", "baseline-laplace")
KNN_CLASSIFIERS = ("baseline", "interactive", "noninteractive")


def _seeds(s: Settings) -> tuple[int, ...]:
    """``[run].seed`` of the noise repetitions (the split is fixed by the row order)."""
    return tuple(s.seed + rep for rep in range(s.repeats))


def _base(s: Settings, protocol: dict[str, Any], data_dir: Path) -> dict[str, Any]:
    """One dataset-independent scenario: 5-fold CV, min-max scaling from the training rows."""
    return {"data": {"folds": s.folds, "shuffle": False, "scale": "minmax",
                     "data_dir": str(data_dir)},
            "parties": {"n": 1, "analysts": 1},
            "protocol": {"name": "dp-knn", "clique_work_limit": s.clique_work_limit,
                         **protocol}}


def grids(s: Settings, data_dir: Path, sizes: dict[str, list[int]] | None = None
          ) -> list[Grid]:
    """The scenario grids of Figs. 7-14: every point is one ``ppknn run`` of ``dp-knn``.

    ``data_dir`` holds the datasets, rows in a seeded random order (:func:`write_datasets`),
    cut into contiguous folds: one split for every repetition, whose ``[run].seed`` redraws
    the noise only. ``sizes``: the r-N batch sizes per dataset (default ``s.rn_sizes``;
    :func:`run` caps them at the smallest test fold, so every fold has the same sizes).
    """
    datasets = list(s.datasets)
    folds = list(range(s.folds_run))
    rn = Grid("rn", base=_base(s, {"task": "rn", "radius": "auto",
                                   "radius_target": s.radius_target,
                                   "radius_epsilon": s.radius_epsilon}, data_dir),
              axes={("data.dataset", "data.max_queries"): [
                        (d, n) for d in datasets for n in (sizes or {}).get(d, s.rn_sizes)],
                    "data.fold": folds, "protocol.epsilon": list(s.rn_epsilons),
                    "protocol.algorithm": list(RN_CLASSIFIERS)},
              seeds=_seeds(s))
    conversion = Grid("conversion", base=_base(s, {"task": "convert", "k": s.conv_k},
                                               data_dir),
                      axes={"data.dataset": datasets, "data.fold": folds,
                            "data.max_queries": [s.conv_queries],
                            "protocol.epsilon": list(s.conv_epsilons),
                            "protocol.algorithm": ["interactive", "noninteractive"]},
                      seeds=_seeds(s))
    knn = Grid("knn", base=_base(s, {"task": "knn", "weight": s.weight}, data_dir),
               axes={"data.dataset": datasets, "data.fold": folds,
                     "data.max_queries": [s.knn_queries], "protocol.k": list(s.knn_ks),
                     "protocol.epsilon": list(s.knn_epsilons),
                     "protocol.algorithm": list(KNN_CLASSIFIERS)},
               seeds=_seeds(s))
    return [rn, conversion, knn]


def rows_from_grids(grid_rows: dict[str, list[dict[str, Any]]], s: Settings
                    ) -> list[dict[str, Any]]:
    """The figures' long rows from the grid rows (one per run, plus the non-private ones).

    The non-private classifier of a (dataset, fold, batch) is the run's
    ``baseline_accuracy`` -- scikit-learn on the same split (r-N at the non-private
    rule's radius, k-NN at the same k) -- once per fold, not per repetition.
    """
    seeds = _seeds(s)
    out: list[dict[str, Any]] = []
    seen: set[tuple] = set()
    for r in grid_rows["rn"]:
        d, fold, n = r["data.dataset"], r["data.fold"], r["queries"]
        row = {"figure": "rn", "dataset": d, "fold": fold, "rep": seeds.index(r["seed"]),
               "epsilon": r["protocol.epsilon"], "n_test": n,
               "classifier": r["protocol.algorithm"], "accuracy": r["accuracy"],
               "mean_sensitivity": r["mean_sensitivity"], "radius": r["radius"],
               "baseline_radius": r["baseline_radius"], "empty_regions": r["empty_regions"],
               "epsilon_spent": r["epsilon_spent"], "epsilon_budget": r["epsilon_budget"]}
        if r["protocol.algorithm"] == "proposed":  # share of instances with an exact clique
            row["exact_cliques"] = 1.0 - r["clique_upper_bounds"] / n
        out.append(row)
        if (d, fold, n) not in seen:
            seen.add((d, fold, n))
            out.append({"figure": "rn", "dataset": d, "fold": fold, "rep": 0, "n_test": n,
                        "classifier": "non-private", "epsilon": math.nan,
                        "accuracy": r["baseline_accuracy"], "radius": r["baseline_radius"]})
    for r in grid_rows["conversion"]:
        out.append({"figure": "conversion", "dataset": r["data.dataset"],
                    "fold": r["data.fold"], "rep": seeds.index(r["seed"]),
                    "epsilon": r["protocol.epsilon"], "classifier": r["protocol.algorithm"],
                    "avre": r["avre"], "rmse": r["rmse_k"],
                    "epsilon_spent": r["epsilon_spent"], "epsilon_budget": r["epsilon_budget"]})
    seen = set()
    for r in grid_rows["knn"]:
        d, fold, k = r["data.dataset"], r["data.fold"], r["protocol.k"]
        out.append({"figure": "knn", "dataset": d, "fold": fold, "rep": seeds.index(r["seed"]),
                    "epsilon": r["protocol.epsilon"], "k": k,
                    "classifier": r["protocol.algorithm"], "accuracy": r["accuracy"],
                    "epsilon_spent": r["epsilon_spent"], "epsilon_budget": r["epsilon_budget"]})
        if (d, fold, k) not in seen:
            seen.add((d, fold, k))
            out.append({"figure": "knn", "dataset": d, "fold": fold, "rep": 0, "k": k,
                        "classifier": "non-private", "epsilon": math.nan,
                        "accuracy": r["baseline_accuracy"]})
    return out


# ------------------------------------------------------------------ aggregation
def summarise(rows: Iterable[dict[str, Any]], figure: str, keys: Sequence[str], value: str
              ) -> dict[tuple, tuple[float, float, int]]:
    """Mean, standard deviation and count of ``value`` per ``keys`` among ``figure``'s rows."""
    groups: dict[tuple, list[float]] = defaultdict(list)
    for row in rows:
        if row["figure"] == figure and value in row:
            groups[tuple(row.get(k) for k in keys)].append(float(row[value]))
    return {k: (float(np.mean(v)), float(np.std(v)), len(v)) for k, v in groups.items()}


def _mean(rows: list[dict[str, Any]], value: str = "accuracy", **match: Any) -> float:
    """Mean of ``value`` over the rows matching ``match`` (NaN when none)."""
    vals = [r[value] for r in rows if all(r.get(k) == v for k, v in match.items())]
    return float(np.mean(vals)) if vals else math.nan


def _units(rows: list[dict[str, Any]], value: str = "accuracy", **match: Any
           ) -> dict[tuple[int, int], float]:
    """Mean of ``value`` per (fold, repetition) over the rows matching ``match``.

    The units of the 95% intervals: each fold × repetition is one independent
    draw of the data split and the noise; within it, the batch sizes (or k
    values) are averaged as the reported mean averages them.
    """
    groups: dict[tuple[int, int], list[float]] = defaultdict(list)
    for r in rows:
        if value in r and all(r.get(k) == v for k, v in match.items()):
            groups[(r["fold"], r["rep"])].append(float(r[value]))
    return {k: float(np.mean(v)) for k, v in sorted(groups.items())}


def t_interval(values: Iterable[float]) -> tuple[float, float] | None:
    """Student-t 95% interval of the mean of ``values`` (``None`` below two values)."""
    x = np.asarray(list(values), dtype=float)
    if len(x) < 2:
        return None
    half = float(stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))
    return (float(x.mean()) - half, float(x.mean()) + half)


def _ratio_interval(num: np.ndarray, den: np.ndarray, rng: np.random.Generator,
                    resamples: int = 2000) -> tuple[float, float] | None:
    """Percentile-bootstrap 95% interval of ``mean(num) / mean(den)`` over paired units."""
    if len(num) < 2:
        return None
    pick = rng.integers(0, len(num), (resamples, len(num)))
    n, d = num[pick].mean(axis=1), den[pick].mean(axis=1)
    ratios = np.where(d > 0, n / np.where(d > 0, d, 1.0), math.inf)
    low, high = np.quantile(ratios, [0.025, 0.975], method="inverted_cdf")
    return (float(low), float(high))


def _snap(x: float, bounds: Sequence[float]) -> float:
    """``x``, or the bound it equals up to float rounding (so 3.0000000000000004 reads 3)."""
    return next((b for b in bounds if abs(x - b) <= 1e-12 * abs(b)), x)


def _with_ci(mean: float, iv: tuple[float, float] | None) -> str:
    """A table cell: the mean and, when there is one, its 95% interval."""
    return fmt(mean) + ("" if iv is None else " " + interval(*iv))


# ------------------------------------------------------------------ figures
def _stats_table(name: str, rows: list[dict[str, Any]], figure: str, keys: Sequence[str],
                 value: str, columns: Sequence[str]) -> Table:
    """Mean, sd and count of ``value`` per ``keys`` (named ``columns``), in the CSV's order."""
    stats_ = summarise(rows, figure, keys, value)
    table = Table(name=name, columns=(*columns, f"{value}_mean", f"{value}_sd", "runs"))
    for key, (mean, sd, n) in sorted(stats_.items(), key=lambda t: str(t[0])):
        table.add(**dict(zip(columns, key)), **{f"{value}_mean": mean, f"{value}_sd": sd},
                  runs=n)
    return table


def _series(value: str) -> tuple[Series, ...]:
    return (Series(y=f"{value}_mean", low=f"{value}_low", high=f"{value}_high"),)


def figure_tables(rows: list[dict[str, Any]], s: Settings) -> list[tuple[Figure, Table]]:
    """One figure of the paper and the table it is drawn from (its CSV), per figure."""
    ci = "95% t intervals over folds × repetitions"
    out: list[tuple[Figure, Table]] = []
    for no, eps in zip((7, 8, 9), s.rn_epsilons):
        picked = [r for r in rows if r["figure"] == "rn" and
                  (r["classifier"] == "non-private" or r["epsilon"] == eps)]
        table = _stats_table(f"fig{no:02d}_rn_eps{eps:g}", picked, "rn",
                             ("dataset", "n_test", "classifier"), "accuracy",
                             ("dataset", "n_test", "classifier"))
        out.append((Figure(name=table.name, x="n_test", group_by="classifier",
                           panel_by="dataset", series=_series("accuracy"),
                           title=f"Fig. {no}: r-N classification, ε = {eps:g}; {ci}",
                           xlabel="number of test instances", ylabel="accuracy"), table))
    for no, metric, label in ((10, "avre", "AvRE in r (%)"), (11, "rmse", "RMSE in k")):
        table = _stats_table(f"fig{no}_conversion_{metric}", rows, "conversion",
                             ("dataset", "epsilon", "classifier"), metric,
                             ("dataset", "epsilon_hat", "algorithm"))
        out.append((Figure(name=table.name, x="epsilon_hat", group_by="algorithm",
                           panel_by="dataset", logx=True, series=_series(metric),
                           title=f"Fig. {no}: k-NN → r-N conversion, k = {s.conv_k}; {ci}",
                           xlabel="ε̂ (conversion budget)", ylabel=label), table))
    for no, eps in zip((12, 13, 14), s.knn_epsilons):
        picked = [r for r in rows if r["figure"] == "knn" and
                  (r["classifier"] == "non-private" or r["epsilon"] == eps)]
        table = _stats_table(f"fig{no}_knn_eps{eps:g}", picked, "knn",
                             ("dataset", "k", "classifier"), "accuracy",
                             ("dataset", "k", "classifier"))
        out.append((Figure(name=table.name, x="k", group_by="classifier", panel_by="dataset",
                           series=_series("accuracy"),
                           title=f"Fig. {no}: k-NN classification, ε = {eps:g}, "
                                 f"{s.knn_queries} test instances; {ci}",
                           xlabel="k", ylabel="accuracy"), table))
    return out


def _shown(figure: Figure, table: Table, datasets: Sequence[str]) -> Table:
    """The table as plotted: the paper's classifier names, stand-ins marked, panels in order.

    Each point's 95% t interval comes from its row's mean, sd (ddof 0) and runs.
    """
    labels = LABELS["conversion" if "conversion" in figure.name else
                    "rn" if "_rn_" in figure.name else "knn"]
    group, value = figure.group_by, figure.series[0].y.removesuffix("_mean")
    assert group is not None
    shown = []
    for r in sorted(table.rows, key=lambda r: datasets.index(r["dataset"])):
        mean, sd, n = r[f"{value}_mean"], r[f"{value}_sd"], r["runs"]
        half = (float(stats.t.ppf(0.975, n - 1)) * sd / math.sqrt(n - 1) if n > 1
                else math.nan)  # sd·√(n/(n-1)) / √n
        shown.append(dict(r, **{group: labels.get(r[group], r[group]),
                                "dataset": r["dataset"] + (" (stand-in)"
                                                           if r["dataset"] in STAND_INS else ""),
                                f"{value}_low": mean - half, f"{value}_high": mean + half}))
    return Table.from_rows(table.name, shown)


def write_figures(rows: list[dict[str, Any]], s: Settings, out: Path, *, run: str
                  ) -> list[Figure]:
    """One CSV and one PNG per figure of the paper into ``out``; returns the figures."""
    figures = []
    for figure, table in figure_tables(rows, s):
        table.write_csv(out / figure.csv)
        plot(figure, _shown(figure, table, s.datasets), folder=out, run=run)
        figures.append(figure)
    return figures


# ------------------------------------------------------------------ the paper's claims
CLAIM_RN = ("With ε = 1.0, on the average we obtain 5-10% accuracy loss (discrepancy with the "
            "non-private classifier) using the proposed solution. Using the baseline solution or "
            "PrivBayes, this amount is usually doubled or tripled.")
CLAIM_BANKNOTE = ("on the banknote dataset, accuracy is roughly 0.75 when ε = 0.5. It increases "
                  "to 0.85 and 0.9-0.95 respectively when ε = 1.0 and ε = 2.0")
BANKNOTE = ((0.5, 0.75, 0.05), (1.0, 0.85, 0.05), (2.0, 0.925, 0.025))
"""(ε, the paper's banknote accuracy, accepted distance): "roughly" 0.75 and 0.85 ± 5 points,
"0.9-0.95" exactly as the paper's range."""
CLAIM_CONV = ("as we move to more realistic ε̂ (e.g., 0.5 or 1) at least one of our algorithms "
              "(interactive and non-interactive) yields below 30% error on all datasets. With "
              "ε̂ = 1 we achieve AvRE as low as 10-20%. The exception to this is the thyroid "
              "dataset")
CLAIM_KNN = ("non-private k-NN is above 0.85 on all four sets; the baseline \"performs poorly on "
             "all datasets\"; the non-interactive conversion is \"generally preferable unless data "
             "dimensionality is exceedingly high or ε is restrictively small\"")
LOSS_BAND, RATIO_BAND = (0.05, 0.10), (2.0, 3.0)
PARTLY = 0.2
"""A ``between`` claim is *partly* met within 20% of its lower bound outside the band."""


def rn_claims(rn: list[dict[str, Any]], datasets: Iterable[str], seed: int
              ) -> tuple[Claim, ...]:
    """Per dataset: the proposed r-N loss at ε = 1 in 5-10 points, the baseline's 2-3 times it."""
    claims = []
    sens = summarise([r for r in rn if r["classifier"] == "proposed"], "rn",
                     ("dataset", "n_test"), "mean_sensitivity")
    for d in datasets:
        base_np = _mean(rn, dataset=d, classifier="non-private")
        largest = max(n for (ds, n) in sens if ds == d)
        noise = (f"non-private {fmt(base_np)}; noise scale MCS/ε with mean MCS "
                 f"{fmt(sens[(d, largest)][0])} at |X| = {largest}")
        if d == "banknote":
            noise += (f"; the paper's own banknote 0.85 at ε = 1 would lose "
                      f"{100 * (base_np - 0.85):.0f} points against this non-private accuracy")
        loss_p = base_np - _mean(rn, dataset=d, epsilon=1.0, classifier="proposed")
        loss_b = base_np - _mean(rn, dataset=d, epsilon=1.0, classifier="baseline-laplace")
        lp, lb = 100 * loss_p, 100 * loss_b
        ratio = lb / lp if lp > 0 else math.inf
        loss_p, ratio = _snap(loss_p, LOSS_BAND), _snap(ratio, RATIO_BAND)
        nonpriv = _units(rn, dataset=d, classifier="non-private")
        prop = _units(rn, dataset=d, epsilon=1.0, classifier="proposed")
        base = _units(rn, dataset=d, epsilon=1.0, classifier="baseline-laplace")
        unit_lp = np.array([nonpriv[(f, 0)] - prop[(f, r)] for f, r in prop])
        unit_lb = np.array([nonpriv[(f, 0)] - base[(f, r)] for f, r in prop])
        rng = SeedPolicy(root=seed).generator("gursoy", "report", "ratio", d)
        stand_in = " (stand-in data)" if d in STAND_INS else ""
        claims += [
            Claim(id=f"rn-loss-{d}", where=f"Figs. 7-9, {d}",
                  statement="with ε = 1 the proposed r-N classifier loses 5-10 points of "
                            "accuracy against the non-private one",
                  quantity=f"{d}: non-private minus proposed r-N accuracy at ε = 1",
                  comparison="between", paper=LOSS_BAND, measured=loss_p,
                  interval=t_interval(unit_lp), margin=PARTLY * LOSS_BAND[0], percent=True,
                  explanation=noise + stand_in),
            Claim(id=f"rn-ratio-{d}", where=f"Figs. 7-9, {d}",
                  statement="the baseline's loss is usually double or triple the proposed one's",
                  quantity=f"{d}: baseline loss / proposed loss at ε = 1",
                  comparison="between", paper=RATIO_BAND, measured=ratio,
                  interval=_ratio_interval(unit_lb, unit_lp, rng),
                  margin=PARTLY * RATIO_BAND[0],
                  explanation=f"baseline loss {lb:.1f} points, proposed {lp:.1f}{stand_in}"),
        ]
    return tuple(claims)


def banknote_claims(rn: list[dict[str, Any]]) -> tuple[Claim, ...]:
    """The proposed r-N accuracy on banknote at ε = 0.5, 1, 2 against the paper's."""
    return tuple(
        Claim(id=f"banknote-eps{eps:g}", where="Figs. 7-9, banknote",
              statement=f"on banknote the proposed r-N accuracy is about {paper:g} at ε = {eps:g}",
              quantity=f"banknote: proposed r-N accuracy at ε = {eps:g}", comparison="within",
              paper=paper, abs_tol=tol, margin=0.025,
              measured=_mean(rn, dataset="banknote", epsilon=eps, classifier="proposed"),
              interval=t_interval(_units(rn, dataset="banknote", epsilon=eps,
                                         classifier="proposed").values()))
        for eps, paper, tol in BANKNOTE)


def conversion_claims(rows: list[dict[str, Any]], grids: list[dict[str, Any]],
                      datasets: Iterable[str]) -> tuple[Claim, ...]:
    """Per low-dimensional dataset: the better conversion's AvRE at ε̂ = 1 at most 30%."""
    av = summarise(rows, "conversion", ("dataset", "epsilon", "classifier"), "avre")
    conv = [r for r in rows if r["figure"] == "conversion"]
    claims = []
    for d in (d for d in LOW_DIMENSIONAL if d in datasets):
        alg = min(("interactive", "noninteractive"), key=lambda a: av[(d, 1.0, a)][0])
        best = min(av[(d, 1.0, "interactive")][0], av[(d, 1.0, "noninteractive")][0])
        rule = [g for g in grids if g["dataset"] == d and g["rule"]]
        why = f"the {LABELS['conversion'][alg]} conversion"
        if best > 30 and rule and rule[0]["avre_noise_free"] >= 0.8 * rule[0]["avre_noisy"]:
            why += (f"; the noise-free grid of the rule's size (m = {rule[0]['m']}) errs "
                    f"{fmt(rule[0]['avre_noise_free'])}% too: the grid's coarseness, not its "
                    "noise (see the grid table)")
        claims.append(Claim(
            id=f"conv-avre-{d}", where=f"Fig. 10, {d}",
            statement="at ε̂ = 1 at least one of the two conversions errs below 30% (AvRE) on "
                      "all datasets but thyroid",
            quantity=f"{d}: best AvRE in r at ε̂ = 1 (%)", comparison="at_most", paper=30.0,
            measured=best,
            interval=t_interval(_units(conv, "avre", dataset=d, epsilon=1.0,
                                       classifier=alg).values()),
            explanation=why))
    return tuple(claims)


def knn_claims(knn: list[dict[str, Any]], datasets: Sequence[str], s: Settings
               ) -> tuple[Claim, ...]:
    """Non-private k-NN above 0.85 per dataset; the non-interactive conversion preferable."""
    claims = [Claim(id=f"knn-nonprivate-{d}", where=f"Figs. 12-14, {d}",
                    statement="non-private k-NN accuracy is above 0.85 on all four datasets",
                    quantity=f"{d}: non-private k-NN accuracy (mean over k)",
                    comparison="at_least", paper=0.85,
                    measured=_mean(knn, dataset=d, classifier="non-private"),
                    interval=t_interval(_units(knn, dataset=d,
                                               classifier="non-private").values()),
                    explanation="stand-in data" if d in STAND_INS else "")
              for d in datasets]
    points = [(d, e) for d in LOW_DIMENSIONAL if d in datasets for e in s.knn_epsilons]
    worse = [f"{d} at ε = {e:g}" for d, e in points
             if _mean(knn, dataset=d, epsilon=e, classifier="noninteractive")
             < _mean(knn, dataset=d, epsilon=e, classifier="interactive")]
    if points:
        claims.append(Claim(
            id="knn-nonint-preferable", where="Figs. 12-14",
            statement="the non-interactive conversion is generally preferable unless the data's "
                      "dimensionality is exceedingly high or ε restrictively small",
            quantity="share of (low-dimensional dataset, ε) points where private-NONINT's mean "
                     "accuracy is at least private-INT's",
            comparison="holds", measured=1 - len(worse) / len(points),
            explanation=f"{len(points) - len(worse)} of {len(points)} points"
                        + (f"; not on {', '.join(worse)}" if worse else "")))
    return tuple(claims)


def audit_claims(audits: list[dict[str, Any]]) -> tuple[Claim, ...]:
    """Each r-N classifier, calibrated as claimed: empirical ε lower bound at most ε."""
    return tuple(
        Claim(id=f"audit-{a['algorithm']}", where="Privacy guarantee",
              statement=f"the {a['algorithm']} r-N classifier is ε-differentially private",
              quantity=f"{a['algorithm']}: empirical ε lower bound (95% confidence), "
                       f"claimed ε = {a['epsilon']:g}",
              comparison="at_most", paper=a["epsilon"], measured=a["eps_lower"])
        for a in audits if a["calibration"] == "claimed")


# ------------------------------------------------------------------ report
def _deviations(rn: list[dict[str, Any]], datasets: Sequence[str], s: Settings, quick: bool
                ) -> tuple[str, ...]:
    stand = [f"{n} ({STAND_INS[n]})" for n in datasets if n in STAND_INS]
    thyroid = ""
    sens = summarise([r for r in rn if r["classifier"] == "proposed"], "rn",
                     ("dataset", "n_test"), "mean_sensitivity")
    sizes = [n for (d, n) in sens if d == "thyroid"]
    if sizes:
        n = max(sizes)
        thyroid = (f" On the 21-dimensional thyroid stand-in the test regions overlap heavily: "
                   f"the mean clique size at |X| = {n} is {sens[('thyroid', n)][0]:.1f}, against "
                   f"about {s.radius_target:g} training rows per region, so the proposed "
                   "classifier's noise (scale MCS/ε) still swamps most votes.")
    return (
        "**Radius.** The paper sets r non-privately from the data (\"so that on average a "
        "test instance would have between 5 and 20 training instances in its proximity "
        "region\") and does not charge it. Here the owner releases r with the exponential "
        f"mechanism at ε_r = {s.radius_epsilon:g} per request, charged to its ledger on top of "
        "the classification's ε, so each request costs ε + ε_r; a noisy r moves the accuracy "
        "too (compare the released and the rule's mean r in the setup table). A scenario can "
        "instead declare a public radius (`radius = 0.05`).",
        "**Bounds.** The features are scaled with bounds read from the training rows (a "
        "PrivacyLeakWarning in every run: the extremes of the training data are revealed); "
        "the paper does not say how it scaled. No test row enters the bounds.",
        "**Datasets.** The paper's banana and thyroid sets are not available offline; "
        f"{'; '.join(stand)} replace them. Their numbers are not comparable with the paper's, "
        "only the shape of the comparison is." + thyroid,
        "**PrivBayes** (and the comparison with other private classifiers, Fig. 15) is not "
        "reproduced: its implementation is not available here.",
        "**Grid size.** The paper defers the non-interactive grid to Su et al. (2016) without a "
        "formula; we use m = ⌊(|D|ε/10)^(2/(2+d))⌋ cells per axis (Qardaji et al.'s rule for "
        "d = 2, generalised). On the 4- and 5-dimensional sets this grid is coarse and the "
        "conversion error is dominated by the uniform-within-cell assumption (see the grid "
        "table), which is why our AvRE is higher than the paper's 10-20%.",
        "**Interactive conversion.** With |X| = 100 each exponential mechanism gets "
        "(1 - 0.05) ε̂ / 100, so below ε̂ ≈ 2 it picks nearly uniformly among its 10 "
        "candidates; the paper also finds it worse than the non-interactive one on "
        "low-dimensional data.",
        "**Scales.** The paper does not state its feature scaling, exact batch sizes or k "
        "values; ours are listed above. Its baseline may use either Algorithm 1 or 2; the "
        "figures use the Laplace version (the exponential one is tested and audited).",
        f"**Repetitions.** The paper repeats each experiment 20 times; here {s.folds_run} "
        f"fold(s) x {s.repeats} repetition(s) per point"
        + (" (quick settings: expect noisy curves)." if quick else "."),
    )


def build_report(*, rows: list[dict[str, Any]], s: Settings, quick: bool, runtime: str,
                 facts: dict[str, dict[str, Any]], grids: list[dict[str, Any]],
                 audits: list[dict[str, Any]], bench: dict[str, float],
                 figures: Sequence[Figure], elapsed_s: float) -> Report:
    """The report of one run; every number comes from the arguments."""
    rn = [r for r in rows if r["figure"] == "rn"]
    knn = [r for r in rows if r["figure"] == "knn"]
    datasets = list(facts)
    units = f"{s.folds_run} fold(s) × {s.repeats} repetition(s)"

    def ci_note(over: str) -> str:
        return (f"95% intervals: Student t over the {units} (each unit the mean over {over}); "
                "the non-private classifier has no noise, so its interval is over the "
                f"{s.folds_run} fold(s). No interval with a single unit. The folds share "
                "training rows, so the intervals are approximate (somewhat narrow).")

    setup = Section(heading="Setup", text=(
        "Every point of Figs. 7-14 is one scenario run through the protocol registry, "
        "exactly as `ppknn run` runs a `dp-knn` scenario (scenario grids: `grid-rn.csv`, "
        "`grid-conversion.csv`, `grid-knn.csv` in the output folder, one row per run). The "
        "grid-size table, the privacy audit and the timing are studies on one fold, not "
        "protocol runs.\n"
        f"- {s.folds}-fold cross-validation (80% training at the DP owner, 20% test at the "
        f"analyst): each dataset's rows are put once in a seeded random order and cut into "
        f"{s.folds} contiguous folds; {s.folds_run} fold(s) run, {s.repeats} noise "
        "repetition(s) per fold and point (`[run].seed`; the split stays). Features min-max "
        "scaled to [0, 1]^d with bounds read from the **training rows only** (`[data] bounds "
        "= \"data\"`, which warns: the bounds reveal the training extremes; test rows outside "
        "them are clipped by the analyst).\n"
        "- r-N radius: **chosen privately by the DP owner for each request** (`radius = "
        f"\"auto\"`): the exponential mechanism at ε_r = {s.radius_epsilon:g} over a public "
        f"ladder of radii picks one at which the batch's test instances have about "
        f"{s.radius_target:g} training rows within r on average (the paper's rule, 5-20, "
        "made private); ε_r is charged to the ledger on top of the classification's ε (the "
        "figures' axis). The non-private column uses the same rule without noise.\n"
        f"- k-NN: {s.knn_queries} test instances, w = {s.weight:g}; conversion: k = "
        f"{s.conv_k}, {s.conv_queries} test instances, n = 10 candidates, γ = 0.01% of "
        "|Ω(D)|; 5% of a conversion's budget buys the noisy |D|.\n"
        "- Neighbouring datasets: add or remove one record. Every private answer was asked "
        "of the DP owner party through the runtime and charged to its ledger; each run has "
        "its own owner and ledger (the table sums them over the dataset's runs).",),
        tables=(Table.from_rows("setup", (
            {"dataset": n, "data": f["source"], "rows": f["rows"], "features": f["features"],
             "classes": f["classes"], "r released (mean)": f["radius"],
             "r by the non-private rule (mean)": f["radius_rule"],
             "train / test per fold": f"{f['train']} / {f['test']}", "runs": f["runs"],
             "ε spent / ledger budgets (sum over runs)": f"{f['spent']:.2f} / "
                                                         f"{f['budget']:.2f}"}
            for n, f in facts.items())),))

    rn_rows = []
    for d in datasets:
        nonpriv = _with_ci(_mean(rn, dataset=d, classifier="non-private"),
                           t_interval(_units(rn, dataset=d, classifier="non-private").values()))
        for e in s.rn_epsilons:
            cells = {c: _with_ci(_mean(rn, dataset=d, epsilon=e, classifier=c),
                                 t_interval(_units(rn, dataset=d, epsilon=e,
                                                   classifier=c).values()))
                     for c in ("proposed", "baseline-laplace")}
            rn_rows.append({"dataset": d, "ε": f"{e:g}", "proposed": cells["proposed"],
                            "baseline": cells["baseline-laplace"], "non-private": nonpriv})
    rn_section = Section(
        heading="r-N classification (Figs. 7-9)",
        text=("Mean accuracy over the batch sizes, folds and repetitions [95% interval]. "
              + ci_note("batch sizes"),),
        figures=tuple(f for f in figures if "_rn_" in f.name),
        tables=(Table.from_rows("rn_accuracy", rn_rows),))

    headline = Section(
        heading="Headline check at ε = 1", level=3,
        text=(f"> {CLAIM_RN}",
              "Loss in accuracy points; its interval pairs each fold's non-private accuracy "
              "with that fold's noisy repetitions (t interval). The ratio's interval is a "
              "percentile bootstrap (2,000 resamples of the fold × repetition units). Both "
              f"claims count as *partly* met within {PARTLY:.0%} of the band's lower bound "
              f"outside the band ({PARTLY * 100 * LOSS_BAND[0]:g} point, "
              f"{PARTLY * RATIO_BAND[0]:g} in the ratio). PrivBayes is not reproduced."),
        claims=rn_claims(rn, datasets, s.seed))

    banknote: tuple[Section, ...] = ()
    if "banknote" in facts:
        bn_np = _mean(rn, dataset="banknote", classifier="non-private")
        loss = 100 * (bn_np - 0.85)
        banknote = (Section(
            heading="Banknote", level=3,
            text=(f"> {CLAIM_BANKNOTE}",
                  "Accepted: 0.75 and 0.85 ± 0.05 (the paper's \"roughly\"), 0.925 ± 0.025 (its "
                  "0.9-0.95); *partly* within a further 0.025. Our non-private banknote accuracy "
                  f"is {bn_np:.3f}; against a similar non-private accuracy the paper's own 0.85 "
                  f"at ε = 1 would be a loss of about {loss:.0f} points, "
                  f"{'outside' if not 5 <= loss <= 10 else 'within'} its 5-10 point summary."),
            claims=banknote_claims(rn)),)

    sens = summarise([r for r in rn if r["classifier"] == "proposed"], "rn",
                     ("dataset", "n_test"), "mean_sensitivity")
    exact = summarise([r for r in rn if r["classifier"] == "proposed"], "rn",
                      ("dataset", "n_test"), "exact_cliques")
    noise = Section(
        heading="Noise of the proposed classifier", level=3,
        text=("Mean sensitivity (clique size of an instance's component) against the "
              "baseline's |X| [95% t interval over the runs: folds × repetitions × ε, whose "
              "released radii differ], the released radius, and the share of instances whose "
              f"clique size was exact (search budget {s.clique_work_limit:,} work units per "
              "batch, deterministic; "
              "otherwise a valid upper bound was used).",),
        tables=(Table.from_rows("mcs", (
            {"dataset": d, "batch size": n,
             "mean MCS": _with_ci(m, t_interval(
                 r["mean_sensitivity"] for r in rn if r["classifier"] == "proposed"
                 and r["dataset"] == d and r["n_test"] == n)),
             "MCS / batch size": m / n,
             "released r (mean)": _mean(rn, "radius", dataset=d, n_test=n,
                                        classifier="proposed"),
             "exact": exact[(d, n)][0]}
            for (d, n), (m, _, _) in sorted(sens.items(),
                                            key=lambda t: (str(t[0][0]), t[0][1])))),))

    conv_rows = [r for r in rows if r["figure"] == "conversion"]
    conv_rows = [r for r in rows if r["figure"] == "conversion"]
    av = summarise(rows, "conversion", ("dataset", "epsilon", "classifier"), "avre")
    rm = summarise(rows, "conversion", ("dataset", "epsilon", "classifier"), "rmse")
    conversion = Section(
        heading="k-NN → r-N conversion (Figs. 10-11)",
        text=("Mean over folds and repetitions [95% t interval over the "
              f"{units}]; the claims' intervals are the same for the better conversion. Each "
              "conversion is one `task = \"convert\"` run: the owner releases the radii alone "
              "and spends all of ε̂ on them.", f"> {CLAIM_CONV}"),
        figures=tuple(f for f in figures if "conversion" in f.name),
        tables=(Table.from_rows("conversion", (
            {"dataset": d, "ε̂": f"{e:g}",
             **{f"{label} {name}": _with_ci(
                 table[(d, e, alg)][0],
                 t_interval(_units(conv_rows, metric, dataset=d, epsilon=e,
                                   classifier=alg).values()))
                for metric, label, table in (("avre", "AvRE (%)", av), ("rmse", "RMSE", rm))
                for alg, name in (("interactive", "interactive"),
                                  ("noninteractive", "non-interactive"))}}
            for d in datasets for e in s.conv_epsilons if e >= 0.5)),),
        claims=conversion_claims(rows, grids, datasets))

    grid: tuple[Section, ...] = ()
    if grids:
        grid = (Section(
            heading="Grid size of the non-interactive conversion", level=3,
            text=("Why the non-interactive conversion errs: AvRE at ε̂ = 1 for several grid "
                  "sizes m (cells per axis), noisy grid (mean of 3 [95% t interval over the 3]) "
                  "and the noise-free grid of "
                  "the same size; `rule` marks the size our grid-size rule picks. Where the "
                  "noise-free column is as large as the noisy one the error is the grid's "
                  "coarseness (the uniform-within-cell assumption), not its noise.",),
            tables=(Table.from_rows("grid", (
                {"dataset": g["dataset"], "m": g["m"], "rule": g["rule"],
                 "AvRE noisy (%)": _with_ci(g["avre_noisy"],
                                            t_interval(g["avre_noisy_values"])),
                 "AvRE noise-free (%)": g["avre_noise_free"]} for g in grids)),)),)

    knn_rows = [{"dataset": d, "ε": f"{e:g}",
                 "non-private": _with_ci(_mean(knn, dataset=d, classifier="non-private"),
                                         t_interval(_units(knn, dataset=d,
                                                           classifier="non-private").values())),
                 **{name: _with_ci(_mean(knn, dataset=d, epsilon=e, classifier=c),
                                   t_interval(_units(knn, dataset=d, epsilon=e,
                                                     classifier=c).values()))
                    for c, name in (("baseline", "baseline"), ("interactive", "private-INT"),
                                    ("noninteractive", "private-NONINT"))}}
                for d in datasets for e in s.knn_epsilons]
    knn_section = Section(
        heading="k-NN classification (Figs. 12-14)",
        text=("Mean accuracy over k, folds and repetitions [95% interval]. "
              + ci_note("k values"),
              f"> The paper: {CLAIM_KNN}.",
              "The baseline's \"performs poorly\" is not quantified in the paper; compare its "
              "column with the others. The preference claim is checked on the low-dimensional "
              "sets only (thyroid's 21 dimensions may count as \"exceedingly high\")."),
        figures=tuple(f for f in figures if "knn" in f.name),
        tables=(Table.from_rows("knn_accuracy", knn_rows),),
        claims=knn_claims(knn, datasets, s))

    audit = Section(
        heading="Empirical privacy audit",
        text=("The DP core's auditor on neighbouring training sets (D and D plus one record "
              "placed in the common intersection of 4 of 6 test regions), ε = 1, "
              f"{s.audit_samples:,} runs per set, 95% confidence. A correct classifier's lower "
              "bound stays below ε; the control (`ignore-overlaps`) calibrates the noise as if "
              "no two regions could share a record, and should exceed it.",),
        tables=(Table.from_rows("audit", (
            {"classifier": a["algorithm"], "noise calibration": a["calibration"],
             "claimed ε": a["epsilon"], "ε lower bound": a["eps_lower"]} for a in audits)),),
        claims=audit_claims(audits))

    performance: tuple[Section, ...] = ()
    if bench:
        performance = (Section(heading="Performance", text=(
            f"Proposed r-N on {int(bench['queries'])} phoneme test instances (overlap graph, "
            f"{int(bench['components'])} components, cliques up to {int(bench['max_clique'])}"
            f"{' all exact' if bench['exact'] else ''}, counts, noise): "
            f"{bench['proposed_s']:.3f} s; scikit-learn's non-private RadiusNeighborsClassifier "
            f"(fit + predict) on the same batch: {bench['sklearn_s']:.3f} s; ratio "
            f"{bench['ratio']:.1f} (best of 3, same process).",)),)

    return Report(
        title=f"Reproduction: {PAPER}",
        run=Run(command=command(quick=quick, runtime=runtime), runtime=runtime, quick=quick,
                seed=s.seed, seconds=elapsed_s),
        intro=("The tables and plots are in the output folder (`results/reproduce/gursoy/` by "
               f"default); the figures and their CSVs are beside this file in `{FIGURE_DIR}/`.",),
        settings=asdict(s),
        sections=(setup, rn_section, headline, *banknote, noise, conversion, *grid,
                  knn_section, audit, *performance),
        deviations=_deviations(rn, datasets, s, quick),
        figure_dir=FIGURE_DIR)


# ------------------------------------------------------------------ entry point
def command(*, quick: bool, runtime: str) -> str:
    """The ``ppknn reproduce`` command that makes this report (the runtime by its option).

    >>> command(quick=False, runtime="ray")
    'ppknn reproduce gursoy --runtime ray'
    >>> command(quick=True, runtime="inprocess")
    'ppknn reproduce gursoy --quick'
    """
    return ("ppknn reproduce gursoy" + (" --quick" if quick else "")
            + (" --runtime ray" if runtime == "ray" else ""))


def _test_size(n: int, folds: int) -> int:
    """Rows in the smallest test fold (``numpy.array_split`` sizes)."""
    return n // folds


def _dataset_facts(name: str, ds: Any, rows: list[dict[str, Any]], test: int
                   ) -> dict[str, Any]:
    """The report's facts about one dataset: its shape, radii and budget over its runs."""
    mine = [r for r in rows if r["dataset"] == name and "epsilon_spent" in r]
    released = [r["radius"] for r in rows if r["dataset"] == name and r["figure"] == "rn"
                and r["classifier"] == "proposed"]
    rule = [r["radius"] for r in rows if r["dataset"] == name and r["figure"] == "rn"
            and r["classifier"] == "non-private"]
    return {"rows": len(ds.y), "features": ds.X.shape[1], "classes": ds.n_classes,
            "source": STAND_INS.get(name, f"{name}.csv from the data directory"),
            "radius": float(np.mean(released)), "radius_rule": float(np.mean(rule)),
            "train": len(ds.y) - test, "test": test, "runs": len(mine),
            "budget": float(sum(r["epsilon_budget"] for r in mine)),
            "spent": float(sum(r["epsilon_spent"] for r in mine))}


def run(output: Path, *, quick: bool, runtime: str, report: Path,
        log: Callable[[str], None] | None = None) -> Path:
    """Run the reproduction (module docstring); returns the report's path.

    The figures' points are scenario grids (:func:`grids`) run through the protocol
    registry -- one ``ppknn run`` of ``dp-knn`` each, fanned out over Ray with
    ``runtime = "ray"`` (each run in-process inside its task), one after the other
    otherwise. The grid-size study, the audit and the timing are studies, not runs.
    ``log`` (the CLI's console) hears the grid runs' progress.
    """
    start = time.perf_counter()
    s = QUICK if quick else FULL
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    data_dir = write_datasets(output / "data", seed=s.seed, names=s.datasets)
    raw = {d: load_dataset(d, directory=data_dir) for d in s.datasets}
    smallest = {d: _test_size(len(ds.y), s.folds) for d, ds in raw.items()}
    sizes = {d: sorted({min(n, smallest[d]) for n in s.rn_sizes}) for d in s.datasets}

    plan = grids(s, data_dir, sizes)
    shown = [-1]

    def progress(done: int, total: int) -> None:
        step = max(1, total // 20)
        if log is not None and (done // step > shown[0] or done == total):
            shown[0] = done // step
            log(f"grid runs {done}/{total}")

    grid_rows = run_grids(plan, parallel="ray" if runtime == "ray" else "sequential",
                          progress=progress)
    write_grid_rows(grid_rows, output)
    rows = rows_from_grids(grid_rows, s)
    facts: dict[str, dict[str, Any]] = {}
    studies: list[dict[str, Any]] = []
    bench: dict[str, float] = {}
    for name in s.datasets:
        facts[name] = _dataset_facts(name, raw[name], rows, smallest[name])
        if name in LOW_DIMENSIONAL or name == "phoneme":
            data = load_experiment_data(name, seed=s.seed)
            splits = kfold(len(data.y), s.folds,
                           SeedPolicy(root=s.seed).generator("folds", name))
            train, test = splits[0]
            if name in LOW_DIMENSIONAL:
                studies += grid_resolution(data, train, test, sizes=s.grid_sizes, k=s.conv_k,
                                           queries=s.conv_queries, seed=s.seed)
            if name == "phoneme":
                bench = benchmark(data, train, test, radius=facts[name]["radius"],
                                  queries=s.bench_queries, seed=s.seed,
                                  work_limit=s.clique_work_limit)
    audits = run_audits(samples=s.audit_samples, seed=s.seed)
    run_name = f"{command(quick=quick, runtime=runtime)}, {runtime} runtime"
    figures = write_figures(rows, s, output, run=run_name)
    write_rows(output / "rows.csv", rows, columns=sorted({k for r in rows for k in r}))
    write_rows(output / "grid_resolution.csv",
               [{k: v for k, v in g.items() if k != "avre_noisy_values"} for g in studies],
               columns=("dataset", "m", "rule", "avre_noisy", "avre_noise_free"))
    audit_cols = ("algorithm", "calibration", "epsilon", "eps_lower")
    write_rows(output / "audit.csv", [{k: a[k] for k in audit_cols} for a in audits],
               columns=audit_cols)
    (output / "settings.json").write_text(jsonio.dumps(
        {"quick": quick, "runtime": runtime, "benchmark": bench, **asdict(s)}))
    report = Path(report)
    figures_dir = report.parent / FIGURE_DIR
    figures_dir.mkdir(parents=True, exist_ok=True)
    for figure in figures:
        for file in (figure.png, figure.csv):
            if (output / file).resolve() != (figures_dir / file).resolve():
                shutil.copyfile(output / file, figures_dir / file)
    return write(build_report(rows=rows, s=s, quick=quick, runtime=runtime, facts=facts,
                              grids=studies, audits=audits, bench=bench, figures=figures,
                              elapsed_s=time.perf_counter() - start), report)


__all__ = ["FULL", "QUICK", "Settings", "build_report", "command", "figure_tables", "grids", "run",
           "rows_from_grids", "summarise", "t_interval", "write_figures"]
