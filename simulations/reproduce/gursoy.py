"""Reproduction of Gursoy, Inan, Nergiz & Saygin (2017): DP r-N and k-NN classification.

``ppknn reproduce gursoy [--quick] [--ray]`` re-runs §5 of the paper --
r-N accuracy vs the number of test instances at ε = 0.5, 1, 2 (Figs. 7-9),
the k-NN → r-N conversion error in r (AvRE, Fig. 10) and in k (RMSE,
Fig. 11) vs ε̂ at k = 30, and k-NN accuracy vs k at ε = 0.5, 1, 2
(Figs. 12-14) -- with fivefold cross-validation, every private answer asked
of a :class:`~parties.dp_owner.DPOwner` through the chosen runtime. It
writes one CSV and one PNG per figure, checks the paper's headline claims,
audits the r-N classifiers empirically, times the proposed classifier
against scikit-learn, and writes the Markdown report (every number in it
computed by this run; the text around the numbers states the claims).
"""

from __future__ import annotations

import csv
import json
import math
import shutil
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from core.rng import SeedPolicy
from simulations.experiments.dp_knn import (
    PAPER_DATASETS,
    STAND_INS,
    FoldPlan,
    benchmark,
    grid_resolution,
    kfold,
    load_experiment_data,
    run_audits,
    run_fold,
)

LOW_DIMENSIONAL = ("banana", "phoneme", "banknote")
STYLE = {  # classifier -> (label as in the paper, colour), the same in every figure
    "non-private": ("non-private", "black"),
    "proposed": ("proposed", "tab:green"),
    "baseline-laplace": ("baseline", "tab:red"),
    "baseline": ("private-baseline", "tab:red"),
    "interactive": ("private-INT / interactive", "tab:blue"),
    "noninteractive": ("private-NONINT / non-interactive", "tab:green"),
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
    clique_time_limit_s: float = 2.0
    audit_samples: int = 200_000
    grid_sizes: tuple[int, ...] = (2, 4, 6, 8, 10, 14, 20)
    bench_queries: int = 1000
    seed: int = 2017


FULL = Settings()
QUICK = Settings(folds_run=1, repeats=1, rn_sizes=(50, 200), conv_epsilons=(0.1, 1.0),
                 knn_ks=(10, 30), audit_samples=20_000, grid_sizes=(4, 8), bench_queries=300,
                 clique_time_limit_s=0.5)


def _plan(s: Settings) -> FoldPlan:
    return FoldPlan(rn_sizes=s.rn_sizes, rn_epsilons=s.rn_epsilons,
                    conv_epsilons=s.conv_epsilons, conv_k=s.conv_k,
                    conv_queries=s.conv_queries, knn_ks=s.knn_ks,
                    knn_epsilons=s.knn_epsilons, knn_queries=s.knn_queries,
                    repeats=s.repeats, weight=s.weight, radius_target=s.radius_target,
                    clique_time_limit_s=s.clique_time_limit_s)


# ------------------------------------------------------------------ aggregation
def summarise(rows: Iterable[dict[str, Any]], figure: str, keys: Sequence[str], value: str
              ) -> dict[tuple, tuple[float, float, int]]:
    """Mean, standard deviation and count of ``value`` per ``keys`` among ``figure``'s rows."""
    groups: dict[tuple, list[float]] = defaultdict(list)
    for row in rows:
        if row["figure"] == figure and value in row:
            groups[tuple(row.get(k) for k in keys)].append(float(row[value]))
    return {k: (float(np.mean(v)), float(np.std(v)), len(v)) for k, v in groups.items()}


def _write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        for row in rows:
            writer.writerow([f"{v:.6g}" if isinstance(v, float) else v for v in row])


# ------------------------------------------------------------------ figures
def _figure(path: Path, panels: dict[str, dict[str, tuple[list, list, list]]], *, title: str,
            xlabel: str, ylabel: str, logx: bool = False) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4), squeeze=False)
    for ax, (name, lines) in zip(axes[0], panels.items()):
        for key, (xs, ys, sds) in sorted(lines.items()):
            label, colour = STYLE.get(key, (key, None))
            ax.errorbar(xs, ys, yerr=sds, marker="o", ms=3, capsize=2, label=label, color=colour)
        ax.set_title(name + (" (stand-in)" if name in STAND_INS else ""))
        ax.set_xlabel(xlabel)
        if logx:
            ax.set_xscale("log")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(ylabel)
    axes[0][-1].legend(fontsize=7)
    fig.suptitle(title)
    fig.subplots_adjust(left=0.05, right=0.99, bottom=0.16, top=0.84, wspace=0.25)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _series(stats: dict[tuple, tuple[float, float, int]], dataset: str
            ) -> dict[str, tuple[list, list, list]]:
    """``{line label: (xs, means, sds)}`` from stats keyed (dataset, x, label)."""
    out: dict[str, tuple[list, list, list]] = {}
    for (ds, x, label), (mean, sd, _) in sorted(stats.items(), key=lambda t: str(t[0])):
        if ds == dataset:
            xs, ys, sds = out.setdefault(label, ([], [], []))
            xs.append(x)
            ys.append(mean)
            sds.append(sd)
    for xs, ys, sds in out.values():
        order = np.argsort(xs)
        xs[:], ys[:], sds[:] = [xs[i] for i in order], [ys[i] for i in order], \
            [sds[i] for i in order]
    return out


def write_figures(rows: list[dict[str, Any]], s: Settings, out: Path) -> dict[str, Path]:
    """One CSV and one PNG per figure of the paper; returns the PNG paths by figure id."""
    pngs: dict[str, Path] = {}
    for fig_no, eps in zip((7, 8, 9), s.rn_epsilons):
        stats = summarise([r for r in rows if r["figure"] == "rn" and
                           (r["classifier"] == "non-private" or r["epsilon"] == eps)],
                          "rn", ("dataset", "n_test", "classifier"), "accuracy")
        name = f"fig{fig_no:02d}_rn_eps{eps:g}"
        _write_csv(out / f"{name}.csv", ("dataset", "n_test", "classifier", "accuracy_mean",
                                         "accuracy_sd", "runs"),
                   (k + v for k, v in sorted(stats.items(), key=lambda t: str(t[0]))))
        _figure(out / f"{name}.png", {d: _series(stats, d) for d in s.datasets},
                title=f"Fig. {fig_no}: r-N classification, ε = {eps:g}",
                xlabel="number of test instances", ylabel="accuracy")
        pngs[name] = out / f"{name}.png"
    for fig_no, metric, label in ((10, "avre", "AvRE in r (%)"), (11, "rmse", "RMSE in k")):
        stats = summarise(rows, "conversion", ("dataset", "epsilon", "classifier"), metric)
        name = f"fig{fig_no}_conversion_{metric}"
        _write_csv(out / f"{name}.csv", ("dataset", "epsilon_hat", "algorithm", f"{metric}_mean",
                                         f"{metric}_sd", "runs"),
                   (k + v for k, v in sorted(stats.items(), key=lambda t: str(t[0]))))
        _figure(out / f"{name}.png", {d: _series(stats, d) for d in s.datasets},
                title=f"Fig. {fig_no}: k-NN → r-N conversion, k = {s.conv_k}",
                xlabel="ε̂ (conversion budget)", ylabel=label, logx=True)
        pngs[name] = out / f"{name}.png"
    for fig_no, eps in zip((12, 13, 14), s.knn_epsilons):
        stats = summarise([r for r in rows if r["figure"] == "knn" and
                           (r["classifier"] == "non-private" or r["epsilon"] == eps)],
                          "knn", ("dataset", "k", "classifier"), "accuracy")
        name = f"fig{fig_no}_knn_eps{eps:g}"
        _write_csv(out / f"{name}.csv", ("dataset", "k", "classifier", "accuracy_mean",
                                         "accuracy_sd", "runs"),
                   (k + v for k, v in sorted(stats.items(), key=lambda t: str(t[0]))))
        _figure(out / f"{name}.png", {d: _series(stats, d) for d in s.datasets},
                title=f"Fig. {fig_no}: k-NN classification, ε = {eps:g}, "
                      f"{s.knn_queries} test instances", xlabel="k", ylabel="accuracy")
        pngs[name] = out / f"{name}.png"
    return pngs


# ------------------------------------------------------------------ report
CLAIM_RN = ("With ε = 1.0, on the average we obtain 5-10% accuracy loss (discrepancy with the "
            "non-private classifier) using the proposed solution. Using the baseline solution or "
            "PrivBayes, this amount is usually doubled or tripled.")
CLAIM_BANKNOTE = ("on the banknote dataset, accuracy is roughly 0.75 when ε = 0.5. It increases "
                  "to 0.85 and 0.9-0.95 respectively when ε = 1.0 and ε = 2.0")
CLAIM_CONV = ("as we move to more realistic ε̂ (e.g., 0.5 or 1) at least one of our algorithms "
              "(interactive and non-interactive) yields below 30% error on all datasets. With "
              "ε̂ = 1 we achieve AvRE as low as 10-20%. The exception to this is the thyroid "
              "dataset")


def _f(x: float, digits: int = 3) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines + [""]


def _band(value: float, low: float, high: float) -> str:
    """'holds' inside [low, high], 'roughly' within 20% of it, else 'differs' (and which way)."""
    if low <= value <= high:
        return "holds"
    if 0.8 * low <= value <= 1.2 * high:
        return "roughly"
    return "differs (higher)" if value > high else "differs (lower)"


def _mean(rows: list[dict[str, Any]], **match: Any) -> float:
    vals = [r["accuracy"] for r in rows if all(r.get(k) == v for k, v in match.items())]
    return float(np.mean(vals)) if vals else math.nan


def render(*, rows: list[dict[str, Any]], s: Settings, quick: bool, runtime: str,
           facts: dict[str, dict[str, Any]], grids: list[dict[str, Any]],
           audits: list[dict[str, Any]], bench: dict[str, float], figures: list[str],
           elapsed_s: float) -> str:
    """The Markdown report; every number comes from the arguments."""
    rn = [r for r in rows if r["figure"] == "rn"]
    knn = [r for r in rows if r["figure"] == "knn"]
    out = ["# Reproduction: Gursoy, Inan, Nergiz & Saygin (2017), differentially private "
           "nearest neighbour classification", "",
           f"Generated by `ppknn reproduce gursoy{' --quick' if quick else ''}"
           f"{' --ray' if runtime == 'ray' else ''}` in {elapsed_s / 60:.1f} min "
           f"({'quick' if quick else 'full'} settings, {runtime} runtime). Every number below "
           "was computed by that run; the tables and plots are in the output folder "
           "(`results/reproduce/gursoy/` by default) and the figures beside this file.", "",
           "## Setup", ""]
    out += _table(("dataset", "data", "rows", "features", "classes", "r (mean)",
                   "train / test per fold", "ε budget spent / ledger budget"),
                  ((n, f["source"], f["rows"], f["features"], f["classes"], _f(f["radius"], 4),
                    f"{f['train']} / {f['test']}", f"{f['spent']:.2f} / {f['budget']:.2f}")
                   for n, f in facts.items()))
    out += [f"- {s.folds}-fold cross-validation (80% training at the DP owner, 20% test at the "
            f"analyst); {s.folds_run} fold(s) run, {s.repeats} noise repetition(s) per fold and "
            "point. Features min-max normalised to [0, 1]^d, declared as the public domain.",
            f"- r-N radius: calibrated on the training rows so that a row has "
            f"{s.radius_target:g} other rows within r on average (the paper: 5-20).",
            f"- k-NN: {s.knn_queries} test instances, w = {s.weight:g}; conversion: k = "
            f"{s.conv_k}, {s.conv_queries} test instances, n = 10 candidates, γ = 0.01% of "
            "|Ω(D)|; 5% of a conversion's budget buys the noisy |D|.",
            "- Neighbouring datasets: add or remove one record. Every private answer was asked "
            "of the DP owner party through the runtime and charged to its ledger (each figure "
            "point is a separate experiment; the ledger's budget is their sum).", ""]

    out += ["## r-N classification (Figs. 7-9)", ""]
    out += [f"![{n}](gursoy/{n}.png)" for n in figures if n.startswith("fig0")] + [""]
    header = ["dataset"] + [f"{c} ε={e:g}" for e in s.rn_epsilons
                            for c in ("proposed", "baseline")] + ["non-private"]
    out += ["Mean accuracy over the batch sizes, folds and repetitions:", ""]
    out += _table(header, ([d] + [_f(_mean(rn, dataset=d, epsilon=e, classifier=c))
                                  for e in s.rn_epsilons
                                  for c in ("proposed", "baseline-laplace")]
                           + [_f(_mean(rn, dataset=d, classifier="non-private"))]
                           for d in facts))
    out += ["### Headline check at ε = 1", "", f"> {CLAIM_RN}", ""]
    check_rows, holds = [], 0
    for d in facts:
        base_np = _mean(rn, dataset=d, classifier="non-private")
        lp = 100 * (base_np - _mean(rn, dataset=d, epsilon=1.0, classifier="proposed"))
        lb = 100 * (base_np - _mean(rn, dataset=d, epsilon=1.0, classifier="baseline-laplace"))
        ratio = lb / lp if lp > 0 else math.inf
        v1, v2 = _band(lp, 5, 10), _band(ratio, 2, 3)
        holds += not v1.startswith("differs") and not v2.startswith("differs")
        check_rows.append((d, _f(lp, 1), _f(lb, 1), _f(ratio, 2), v1, v2))
    out += _table(("dataset", "proposed loss (points)", "baseline loss (points)",
                   "baseline / proposed", "5-10 points?", "2-3 times?"), check_rows)
    out += [f"Both parts hold at least roughly (within 20% of the stated bands) on {holds} of "
            f"{len(facts)} datasets.", ""]
    if "banknote" in facts:
        bn = [_f(_mean(rn, dataset="banknote", epsilon=e, classifier="proposed"), 2)
              for e in s.rn_epsilons]
        bn_np = _mean(rn, dataset="banknote", classifier="non-private")
        out += [f"Banknote, proposed: the paper reports \"{CLAIM_BANKNOTE}\"; measured "
                + ", ".join(f"{v} at ε = {e:g}" for v, e in zip(bn, s.rn_epsilons))
                + f". Our non-private banknote accuracy is {bn_np:.3f}; against a similar "
                "non-private accuracy the paper's own 0.85 at ε = 1 would be a loss of about "
                f"{100 * (bn_np - 0.85):.0f} points, "
                f"{'outside' if not 5 <= 100 * (bn_np - 0.85) <= 10 else 'within'} its 5-10 "
                "point summary.", ""]
    sens = summarise([r for r in rn if r["classifier"] == "proposed"], "rn",
                     ("dataset", "n_test"), "mean_sensitivity")
    exact = summarise([r for r in rn if r["classifier"] == "proposed"], "rn",
                      ("dataset", "n_test"), "exact_cliques")
    out += ["Noise of the proposed classifier: mean sensitivity (clique size of an instance's "
            "component) against the baseline's |X|, and the share of instances whose clique "
            f"size was exact (search limit {s.clique_time_limit_s:g} s per batch; otherwise a "
            "valid upper bound was used):", ""]
    out += _table(("dataset", "batch size", "mean MCS", "MCS / batch size", "exact"),
                  ((d, n, _f(m, 1), _f(m / n, 3), _f(exact[(d, n)][0], 2))
                   for (d, n), (m, _, _) in sorted(sens.items(),
                                                   key=lambda t: (str(t[0][0]), t[0][1]))))

    out += ["## k-NN → r-N conversion (Figs. 10-11)", ""]
    out += [f"![{n}](gursoy/{n}.png)" for n in figures if n.startswith("fig1") and
            "conversion" in n] + [""]
    av = summarise(rows, "conversion", ("dataset", "epsilon", "classifier"), "avre")
    rm = summarise(rows, "conversion", ("dataset", "epsilon", "classifier"), "rmse")
    out += _table(("dataset", "ε̂", "AvRE interactive (%)", "AvRE non-interactive (%)",
                   "RMSE interactive", "RMSE non-interactive"),
                  ((d, f"{e:g}", _f(av[(d, e, "interactive")][0], 1),
                    _f(av[(d, e, "noninteractive")][0], 1), _f(rm[(d, e, "interactive")][0], 1),
                    _f(rm[(d, e, "noninteractive")][0], 1))
                   for d in facts for e in s.conv_epsilons if e >= 0.5))
    out += [f"> {CLAIM_CONV}", ""]
    verdicts = []
    for d in (d for d in LOW_DIMENSIONAL if d in facts):
        best = min(av[(d, 1.0, "interactive")][0], av[(d, 1.0, "noninteractive")][0])
        verdicts.append(f"{d} {best:.1f}% ({'holds' if best <= 30 else 'differs'})")
    out += ["Best AvRE at ε̂ = 1 on the low-dimensional sets (claim: at most about 30%): "
            + "; ".join(verdicts) + ".", ""]
    if grids:
        out += ["Why the non-interactive conversion errs: AvRE at ε̂ = 1 for several grid "
                "sizes m (cells per axis), noisy grid (mean of 3) and the noise-free grid of the "
                "same size; `rule` marks the size our grid-size rule picks. Where the noise-free "
                "column is as large as the noisy one the error is the grid's coarseness (the "
                "uniform-within-cell assumption), not its noise.", ""]
        out += _table(("dataset", "m", "rule", "AvRE noisy (%)", "AvRE noise-free (%)"),
                      ((g["dataset"], g["m"], "rule" if g["rule"] else "",
                        _f(g["avre_noisy"], 1), _f(g["avre_noise_free"], 1)) for g in grids))

    out += ["## k-NN classification (Figs. 12-14)", ""]
    out += [f"![{n}](gursoy/{n}.png)" for n in figures if "knn" in n] + [""]
    header = ["dataset", "ε", "non-private", "baseline", "private-INT", "private-NONINT"]
    out += ["Mean accuracy over k, folds and repetitions:", ""]
    out += _table(header, ((d, f"{e:g}", _f(_mean(knn, dataset=d, classifier="non-private")),
                            *(_f(_mean(knn, dataset=d, epsilon=e, classifier=c))
                              for c in ("baseline", "interactive", "noninteractive")))
                           for d in facts for e in s.knn_epsilons))
    out += ["The paper: non-private k-NN is above 0.85 on all four sets; the baseline "
            "\"performs poorly on all datasets\"; the non-interactive conversion is \"generally "
            "preferable unless data dimensionality is exceedingly high or ε is restrictively "
            "small\".", ""]

    out += ["## Empirical privacy audit", "",
            "The DP core's auditor on neighbouring training sets (D and D plus one record placed "
            "in the common intersection of 4 of 6 test regions), ε = 1, "
            f"{s.audit_samples:,} runs per set, 95% confidence. A correct classifier's lower "
            "bound stays below ε; the control calibrates the noise as if no two regions could "
            "share a record.", ""]
    out += _table(("classifier", "noise calibration", "claimed ε", "ε lower bound"),
                  ((a["algorithm"], a["calibration"], _f(a["epsilon"], 1), _f(a["eps_lower"]))
                   for a in audits))
    if bench:
        out += ["## Performance", "",
                f"Proposed r-N on {int(bench['queries'])} phoneme test instances (overlap graph, "
                f"{int(bench['components'])} components, cliques up to "
                f"{int(bench['max_clique'])}{' all exact' if bench['exact'] else ''}, counts, "
                f"noise): {bench['proposed_s']:.3f} s; scikit-learn's non-private "
                f"RadiusNeighborsClassifier (fit + predict) on the same batch: "
                f"{bench['sklearn_s']:.3f} s; ratio {bench['ratio']:.1f} (best of 3, same "
                "process).", ""]
    out += ["## Where this differs from the paper, and why", ""]
    stand = [f"{n} ({STAND_INS[n]})" for n in facts if n in STAND_INS]
    out += [f"- **Datasets.** The paper's banana and thyroid sets are not available offline; "
            f"{'; '.join(stand)} replace them. Their numbers are not comparable with the "
            "paper's, only the shape of the comparison is." + _thyroid_note(sens, s),
            "- **PrivBayes** (and the comparison with other private classifiers, Fig. 15) is "
            "not reproduced: its implementation is not available here.",
            "- **Grid size.** The paper defers the non-interactive grid to Su et al. (2016) "
            "without a formula; we use m = ⌊(|D|ε/10)^(2/(2+d))⌋ cells per axis (Qardaji et al.'s "
            "rule for d = 2, generalised). On the 4- and 5-dimensional sets this grid is coarse "
            "and the conversion error is dominated by the uniform-within-cell assumption (see "
            "the grid table), which is why our AvRE is higher than the paper's 10-20%.",
            "- **Interactive conversion.** With |X| = 100 each exponential mechanism gets "
            "(1 - 0.05) ε̂ / 100, so below ε̂ ≈ 2 it picks nearly uniformly among its 10 "
            "candidates; the paper also finds it worse than the non-interactive one on "
            "low-dimensional data.",
            "- **Scales.** The paper does not state its feature scaling, exact batch sizes or "
            "k values; ours are listed above. Its baseline may use either Algorithm 1 or 2; "
            "the figures use the Laplace version (the exponential one is tested and audited).",
            "- **Repetitions.** The paper repeats each experiment 20 times; here "
            f"{s.folds_run} fold(s) x {s.repeats} repetition(s) per point"
            + (" (quick settings: expect noisy curves)." if quick else "."), ""]
    return "\n".join(out)


def _thyroid_note(sens: dict[tuple, tuple[float, float, int]], s: Settings) -> str:
    sizes = [n for (d, n) in sens if d == "thyroid"]
    if not sizes:
        return ""
    n = max(sizes)
    mcs = sens[("thyroid", n)][0]
    return (f" On the 21-dimensional thyroid stand-in the test regions overlap heavily: the "
            f"mean clique size at |X| = {n} is {mcs:.1f}, against about {s.radius_target:g} "
            "training rows per region, so the proposed classifier's noise (scale MCS/ε) still "
            "swamps most votes.")


# ------------------------------------------------------------------ entry point
def run(output: Path, *, quick: bool, runtime: str, report: Path) -> Path:
    """Run the reproduction (module docstring); returns the report's path."""
    start = time.perf_counter()
    s = QUICK if quick else FULL
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    facts: dict[str, dict[str, Any]] = {}
    grids: list[dict[str, Any]] = []
    bench: dict[str, float] = {}
    for name in s.datasets:
        data = load_experiment_data(name, seed=s.seed)
        splits = kfold(len(data.y), s.folds, SeedPolicy(root=s.seed).generator("folds", name))
        radii, budget, spent = [], 0.0, 0.0
        smallest = min(len(test) for _, test in splits)  # the same batch sizes in every fold
        plan = replace(_plan(s), rn_sizes=sorted({min(n, smallest) for n in s.rn_sizes}))
        for fold, (train, test) in enumerate(splits[: s.folds_run]):
            res = run_fold(data, train, test, plan, fold=fold, seed=s.seed, runtime=runtime)
            rows += [dict(r, fold=fold) for r in res.rows]
            radii.append(res.radius)
            budget, spent = budget + res.budget, spent + res.spent
        train, test = splits[0]
        facts[name] = {"rows": len(data.y), "features": data.X.shape[1],
                       "classes": data.n_classes, "source": data.source,
                       "radius": float(np.mean(radii)), "train": len(train), "test": len(test),
                       "budget": budget, "spent": spent}
        if name in LOW_DIMENSIONAL:
            grids += grid_resolution(data, train, test, sizes=s.grid_sizes, k=s.conv_k,
                                     queries=s.conv_queries, seed=s.seed)
        if name == "phoneme":
            bench = benchmark(data, train, test, radius=radii[0], queries=s.bench_queries,
                              seed=s.seed, time_limit_s=s.clique_time_limit_s)
    audits = run_audits(samples=s.audit_samples, seed=s.seed)
    pngs = write_figures(rows, s, output)
    columns = sorted({k for r in rows for k in r})
    _write_csv(output / "rows.csv", columns, ([r.get(k, "") for k in columns] for r in rows))
    _write_csv(output / "grid_resolution.csv", ("dataset", "m", "rule", "avre_noisy",
                                                "avre_noise_free"),
               ([g["dataset"], g["m"], g["rule"], g["avre_noisy"], g["avre_noise_free"]]
                for g in grids))
    _write_csv(output / "audit.csv", ("algorithm", "calibration", "epsilon", "eps_lower"),
               ([a["algorithm"], a["calibration"], a["epsilon"], a["eps_lower"]] for a in audits))
    (output / "settings.json").write_text(json.dumps(
        {"quick": quick, "runtime": runtime, "benchmark": bench, **asdict(s)}, indent=1))
    report = Path(report)
    figures_dir = report.parent / "gursoy"
    figures_dir.mkdir(parents=True, exist_ok=True)
    for name, png in pngs.items():
        shutil.copyfile(png, figures_dir / f"{name}.png")
    text = render(rows=rows, s=s, quick=quick, runtime=runtime, facts=facts, grids=grids,
                  audits=audits, bench=bench, figures=list(pngs),
                  elapsed_s=time.perf_counter() - start)
    report.write_text(text)
    return report


__all__ = ["FULL", "QUICK", "Settings", "render", "run", "summarise", "write_figures"]
