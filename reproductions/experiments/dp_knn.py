"""The experiments of Gursoy et al. §5 on one cross-validation fold, through a runtime.

Datasets (§5): *phoneme* and *banknote* are read from the data directory
(:func:`core.data.load_dataset`). *banana* and *thyroid* are not available
offline, so clearly labelled synthetic stand-ins of the same shape are
generated instead (:data:`STAND_INS`). Every dataset is min-max normalised
to ``[0, 1]^d``, which is declared as the public domain (the paper does not
say how it scaled features; the bounds are read off the data, which a
deployment would declare instead).

One fold: a DP owner holds the training part (80%), one analyst holds the
test part, and every private result is asked of the owner through a
:class:`~core.runtime.Runtime` (in-process or Ray). The owner's budget is
exactly the sum of the batches asked (each figure point is a separate
experiment on the same data, as in the paper); the non-private references
are scikit-learn's classifiers on the same split.

Examples
--------
>>> data = load_experiment_data("banana", seed=0, limit=200)
>>> data.X.shape, float(data.X.min()), float(data.X.max()), data.stand_in
((200, 2), 0.0, 1.0, True)
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from scipy.spatial import cKDTree
from sklearn.neighbors import KNeighborsClassifier, RadiusNeighborsClassifier

from ppknn.core.data import DomainBounds, load_dataset
from ppknn.core.errors import ConfigError
from ppknn.core.rng import SeedPolicy
from ppknn.core.runtime import RunContext, make_runtime
from ppknn.protocols.dp_knn.audit import audit_rn, overlap_scenario
from ppknn.protocols.dp_knn.conversion import (
    MAX_CELLS,
    avre,
    build_grid,
    convert_noninteractive,
    grid_cells_per_axis,
    rmse_k,
)
from ppknn.protocols.dp_knn.driver import ask
from ppknn.protocols.dp_knn.index import LabelIndex
from ppknn.protocols.dp_knn.parties import analyst_spec, dp_owner_spec
from ppknn.protocols.dp_knn.protocol import Answer, Query
from ppknn.protocols.dp_knn.rn import DEFAULT_CLIQUE_WORK, classify_rn
from ppknn.simulations.reporting import jsonio

PAPER_DATASETS = ("banana", "phoneme", "banknote", "thyroid")
STAND_INS = {
    "banana": "synthetic stand-in: scikit-learn make_moons, 5,300 x 2, noise 0.25 "
              "(two interleaved banana-shaped classes, like KEEL banana)",
    "thyroid": "synthetic stand-in: scikit-learn make_classification, 7,200 x 21 "
               "(6 continuous + 15 binarised features), 3 classes in thyroid's proportions "
               "2.3% / 5.1% / 92.6%",
}


@dataclass(frozen=True)
class ExperimentData:
    """A normalised dataset of the experiments."""

    name: str
    X: np.ndarray
    y: np.ndarray
    n_classes: int
    source: str
    stand_in: bool


def _stand_in(name: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    from sklearn import datasets as skd

    state = np.random.RandomState(int(rng.integers(2**31 - 1)))
    if name == "banana":
        X, y = skd.make_moons(n_samples=5300, noise=0.25, random_state=state)
        return X, y.astype(np.int64)
    X, y = skd.make_classification(
        n_samples=7200, n_features=21, n_informative=6, n_redundant=3, n_repeated=0,
        n_classes=3, n_clusters_per_class=2, weights=[0.023, 0.051, 0.926], class_sep=1.5,
        flip_y=0.005, shuffle=False, random_state=state)
    X[:, 6:] = (X[:, 6:] > np.median(X[:, 6:], axis=0)).astype(np.float64)  # 15 binary
    return X, y.astype(np.int64)


def load_experiment_data(name: str, *, seed: int, limit: int | None = None) -> ExperimentData:
    """Dataset ``name`` (one of :data:`PAPER_DATASETS`), normalised to ``[0, 1]^d``."""
    if name not in PAPER_DATASETS:
        raise ConfigError(f"unknown dataset {name!r}; allowed: {list(PAPER_DATASETS)}")
    rng = SeedPolicy(root=seed).generator("gursoy", "data", name)
    if name in STAND_INS:
        X, y = _stand_in(name, rng)
        source, stand_in = STAND_INS[name], True
    else:
        ds = load_dataset(name)
        X, y, source, stand_in = ds.X, ds.y, f"{name}.csv from the data directory", False
    if limit is not None and limit < len(y):
        keep = np.sort(rng.permutation(len(y))[:limit])
        X, y = X[keep], y[keep]
    lo, hi = X.min(axis=0), X.max(axis=0)
    X = (X - lo) / np.where(hi > lo, hi - lo, 1.0)
    return ExperimentData(name, X, y, int(y.max()) + 1, source, stand_in)


def write_datasets(folder: Path, *, seed: int, names: Sequence[str] = PAPER_DATASETS,
                   directory: str | None = None) -> Path:
    """Write the experiments' datasets, rows in a seeded random order, as CSV into ``folder``.

    Each dataset -- a stand-in (:data:`STAND_INS`) or a file of the data directory
    (``directory``) -- is written with its raw features and integer labels, its rows
    permuted once by a stream of ``seed``, beside a ``manifest.json``. The scenario grids
    of the reproduction read them by name with ``[data] data_dir = folder`` and
    contiguous folds (``shuffle = false``): the same as shuffled k-fold, and a batch of
    the first n rows of a test fold (``max_queries``) is a random subset of it (the
    shipped banknote file and the thyroid stand-in are sorted by class). Returns ``folder``.
    """
    folder.mkdir(parents=True, exist_ok=True)
    manifest = {}
    for name in names:
        rng = SeedPolicy(root=seed).generator("gursoy", "data", name)
        if name in STAND_INS:
            X, y = _stand_in(name, rng)
        else:
            ds = load_dataset(name, directory=directory)
            X, y = ds.X, ds.y
        order = rng.permutation(len(y))
        X, y = X[order], y[order]
        header = ",".join([*(f"x{i}" for i in range(X.shape[1])), "class"])
        lines = [",".join(map(repr, row)) + f",{label}"
                 for row, label in zip(X.tolist(), y.tolist())]
        (folder / f"{name}.csv").write_text(header + "\n" + "\n".join(lines) + "\n")
        manifest[name] = {"file": f"{name}.csv", "label": "class"}
    (folder / "manifest.json").write_text(jsonio.dumps(manifest))
    return folder


def kfold(n: int, folds: int, rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    """Shuffled k-fold split of ``range(n)``: (train, test) index pairs."""
    parts = np.array_split(rng.permutation(n), folds)
    return [(np.sort(np.concatenate(parts[:i] + parts[i + 1:])), np.sort(parts[i]))
            for i in range(folds)]


def calibrate_radius(X: np.ndarray, target: float, *, rows: int = 1000, seed: int = 0) -> float:
    """The r at which training rows have ``target`` other rows within r on average.

    A non-private tuning of the public parameter r, as in §5.1 ("we set the
    radius r so that on average a test instance would have between 5 and 20
    training instances in its proximity region"): the quantile of the
    distances from (up to ``rows`` sampled) rows to all other rows at level
    ``target / (N - 1)``.
    """
    n = len(X)
    sample = np.random.default_rng(seed).permutation(n)[:min(rows, n)]
    dist = np.sqrt(np.maximum(
        (X[sample] ** 2).sum(1)[:, None] + (X**2).sum(1)[None, :] - 2 * X[sample] @ X.T, 0.0))
    dist[np.arange(len(sample)), sample] = np.inf  # not its own neighbour
    level = min(1.0, target / (n - 1))
    return float(np.quantile(dist[np.isfinite(dist)], level))


@dataclass(frozen=True, kw_only=True)
class FoldPlan:
    """What to measure on one fold (the figures' axes)."""

    rn_sizes: Sequence[int]
    rn_epsilons: Sequence[float]
    conv_epsilons: Sequence[float]
    conv_k: int
    conv_queries: int
    knn_ks: Sequence[int]
    knn_epsilons: Sequence[float]
    knn_queries: int
    repeats: int
    weight: float = 0.5
    radius_target: float = 10.0
    clique_work_limit: int = DEFAULT_CLIQUE_WORK


@dataclass
class FoldResult:
    """Rows of measurements (one dict each) and facts about the fold."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    radius: float = math.nan
    budget: float = 0.0
    spent: float = 0.0


def run_fold(data: ExperimentData, train: np.ndarray, test: np.ndarray, plan: FoldPlan, *,
             fold: int, seed: int, runtime: str = "inprocess") -> FoldResult:
    """Run every experiment of ``plan`` on one fold (see the module docstring)."""
    rng = SeedPolicy(root=seed).generator("gursoy", "fold", data.name, fold)
    Xtr, ytr, Xte, yte = data.X[train], data.y[train], data.X[test], data.y[test]
    result = FoldResult(radius=calibrate_radius(Xtr, plan.radius_target, seed=seed))
    asks: list[tuple[dict[str, Any], Query]] = []
    # r-N (Figs. 7-9): accuracy vs the number of test instances
    for size in sorted({min(size, len(Xte)) for size in plan.rn_sizes}):
        pick = np.sort(rng.permutation(len(Xte))[:size])
        for eps in plan.rn_epsilons:
            for rep in range(plan.repeats):
                for alg in ("proposed", "baseline-laplace"):
                    tag = {"figure": "rn", "epsilon": eps, "n_test": len(pick), "rep": rep,
                           "classifier": alg, "pick": pick}
                    asks.append((tag, Query(task="rn", algorithm=alg, x=Xte[pick],
                                            radius=result.radius, epsilon=eps)))
    # conversion (Figs. 10-11) and k-NN (Figs. 12-14) on a fixed set of test instances
    conv_pick = np.sort(rng.permutation(len(Xte))[:min(plan.conv_queries, len(Xte))])
    for eps in plan.conv_epsilons:
        for rep in range(plan.repeats):
            for alg in ("interactive", "noninteractive"):
                tag = {"figure": "conversion", "epsilon": eps, "rep": rep, "classifier": alg}
                asks.append((tag, Query(task="convert", algorithm=alg, x=Xte[conv_pick],
                                        k=plan.conv_k, epsilon=eps)))
    knn_pick = np.sort(rng.permutation(len(Xte))[:min(plan.knn_queries, len(Xte))])
    for k in plan.knn_ks:
        for eps in plan.knn_epsilons:
            for rep in range(plan.repeats):
                for alg in ("baseline", "interactive", "noninteractive"):
                    tag = {"figure": "knn", "epsilon": eps, "k": k, "rep": rep, "classifier": alg}
                    asks.append((tag, Query(task="knn", algorithm=alg, x=Xte[knn_pick], k=k,
                                            epsilon=eps, weight=plan.weight)))
    total = sum((Fraction(repr(q.epsilon)) for _, q in asks), Fraction(0))
    result.budget = math.nextafter(float(total), math.inf)
    answers = _ask_all(data, Xtr, ytr, [q for _, q in asks], result.budget, plan, runtime,
                       seed, fold)
    result.spent = float(sum(a.epsilon for a in answers))
    _score(result, asks, answers, data, Xtr, ytr, Xte, yte, conv_pick, knn_pick, plan)
    return result


def _ask_all(data: ExperimentData, Xtr: np.ndarray, ytr: np.ndarray, queries: list[Query],
             budget: float, plan: FoldPlan, runtime: str, seed: int, fold: int) -> list[Answer]:
    run_id = f"gursoy-{data.name}-{fold}"
    rt = make_runtime(runtime)
    rt.start([dp_owner_spec(party_id="owner", X=Xtr, y=ytr,
                            classes=list(range(data.n_classes)),
                            lower=np.zeros(Xtr.shape[1]), upper=np.ones(Xtr.shape[1]),
                            epsilon=budget, run_id=run_id, seed=seed,
                            clique_work_limit=plan.clique_work_limit),
              analyst_spec(party_id="analyst", owner="owner", run_id=run_id)],
             RunContext(run_id=run_id, record=False, party_timeout_s=600))
    try:
        answers = ask(rt, [("analyst", "owner", q) for q in queries])
        return [a for a in answers if isinstance(a, Answer)]  # refusals raise (the default)
    finally:
        rt.shutdown()


def _score(result: FoldResult, asks: list[tuple[dict[str, Any], Query]], answers: list[Answer],
           data: ExperimentData, Xtr: np.ndarray, ytr: np.ndarray, Xte: np.ndarray,
           yte: np.ndarray, conv_pick: np.ndarray, knn_pick: np.ndarray, plan: FoldPlan) -> None:
    radius = result.radius
    rnc = RadiusNeighborsClassifier(radius=radius, outlier_label=0).fit(Xtr, ytr)
    nonprivate_rn: dict[int, float] = {}
    tree = cKDTree(Xtr)
    knn_true: dict[int, float] = {}
    truth_r = np.sort(tree.query(Xte[conv_pick], k=plan.conv_k)[0].reshape(len(conv_pick), -1),
                      axis=1)[:, -1]
    truth_c = tree.query_ball_point(Xte[conv_pick], truth_r, return_length=True)
    for (tag, _), ans in zip(asks, answers):
        row = {k: v for k, v in tag.items() if k != "pick"}
        row["dataset"] = data.name
        if tag["figure"] == "rn":
            pick = tag["pick"]
            row["accuracy"] = float(np.mean(ans.labels == yte[pick]))
            if tag["classifier"] == "proposed":  # share of instances with an exact clique size
                row["exact_cliques"] = float(np.mean(ans.clique_method <= 2))
            row["mean_sensitivity"] = float(np.mean(ans.sensitivity))
            key = len(pick)
            if key not in nonprivate_rn:
                nonprivate_rn[key] = float(np.mean(rnc.predict(Xte[pick]) == yte[pick]))
                result.rows.append({"figure": "rn", "dataset": data.name, "n_test": key,
                                    "classifier": "non-private", "epsilon": math.nan,
                                    "rep": 0, "accuracy": nonprivate_rn[key]})
        elif tag["figure"] == "conversion":
            counts = tree.query_ball_point(Xte[conv_pick], ans.radius, return_length=True)
            row["avre"] = avre(truth_r, ans.radius)
            row["rmse"] = rmse_k(truth_c, counts)
        else:
            row["accuracy"] = float(np.mean(ans.labels == yte[knn_pick]))
            k = tag["k"]
            if k not in knn_true:
                knc = KNeighborsClassifier(n_neighbors=k).fit(Xtr, ytr)
                knn_true[k] = float(np.mean(knc.predict(Xte[knn_pick]) == yte[knn_pick]))
                result.rows.append({"figure": "knn", "dataset": data.name, "k": k,
                                    "classifier": "non-private", "epsilon": math.nan, "rep": 0,
                                    "accuracy": knn_true[k]})
        result.rows.append(row)


# ---------------------------------------------------------------- side studies
def grid_resolution(data: ExperimentData, train: np.ndarray, test: np.ndarray, *,
                    sizes: Sequence[int], k: int, queries: int, seed: int,
                    epsilon: float = 1.0) -> list[dict[str, Any]]:
    """AvRE of the non-interactive conversion at ε̂ = ``epsilon`` for grid sizes m.

    For each m (plus the default rule's), three noisy grids and the noise-free
    grid of the same size: separates the grid's coarseness from its noise.
    """
    d = data.X.shape[1]
    index = LabelIndex(data.X[train], data.y[train], n_classes=data.n_classes)
    bounds = DomainBounds(np.zeros(d), np.ones(d))
    x = data.X[test][:queries]
    truth = index.kth_distance(x, np.full(len(x), k))
    rule = grid_cells_per_axis(len(train), 0.95 * epsilon, d)
    out = []
    for m in sorted({rule, *sizes}):
        if m**d > MAX_CELLS:
            continue
        noisy = []
        for rep in range(3):
            rng = SeedPolicy(root=seed).generator("gursoy", "grid", data.name, m, rep)
            grid = build_grid(index, epsilon=epsilon, bounds=bounds, rng=rng, cells_per_axis=m)
            conv = convert_noninteractive(index, x, k, epsilon=epsilon, bounds=bounds, rng=rng,
                                          grid=grid)
            noisy.append(avre(truth, conv.radii))
        exact = build_grid(index, epsilon=math.inf, bounds=bounds, rng=rng, cells_per_axis=m)
        free = convert_noninteractive(index, x, k, epsilon=epsilon, bounds=bounds, rng=rng,
                                      grid=exact)
        out.append({"dataset": data.name, "m": m, "rule": m == rule,
                    "avre_noisy": float(np.mean(noisy)), "avre_noisy_values": noisy,
                    "avre_noise_free": avre(truth, free.radii)})
    return out


def run_audits(*, samples: int, seed: int, epsilon: float = 1.0) -> list[dict[str, Any]]:
    """Empirical ε lower bounds (95% confidence) of the r-N classifiers, and the broken control."""
    scenario = overlap_scenario(clique=4, far=2)
    out = []
    for algorithm, calibration in (("proposed", "claimed"), ("baseline-laplace", "claimed"),
                                   ("baseline-exponential", "claimed"),
                                   ("proposed", "ignore-overlaps")):
        rng = SeedPolicy(root=seed).generator("gursoy", "audit", algorithm, calibration)
        res = audit_rn(scenario, algorithm=algorithm, epsilon=epsilon, n_samples=samples,
                       rng=rng, confidence=0.95, calibration=calibration)
        out.append({"algorithm": algorithm, "calibration": calibration, "epsilon": epsilon,
                    "eps_lower": res.eps_lower, "event": res.event})
    return out


def benchmark(data: ExperimentData, train: np.ndarray, test: np.ndarray, *, radius: float,
              queries: int, seed: int, work_limit: int = DEFAULT_CLIQUE_WORK
              ) -> dict[str, float]:
    """Proposed r-N (graph, cliques, counts, noise) vs scikit-learn's r-N on one batch.

    Best of three, measured side by side in this process.
    """
    index = LabelIndex(data.X[train], data.y[train], n_classes=data.n_classes)
    x = data.X[test][:queries]
    best = {"proposed": math.inf, "sklearn": math.inf}
    for rep in range(3):
        rng = SeedPolicy(root=seed).generator("gursoy", "bench", rep)
        t0 = time.perf_counter()
        res = classify_rn(index, x, radius, algorithm="proposed", epsilon=1.0, rng=rng,
                          work_limit=work_limit)
        t1 = time.perf_counter()
        RadiusNeighborsClassifier(radius=radius, outlier_label=0).fit(
            data.X[train], data.y[train]).predict(x)
        t2 = time.perf_counter()
        best["proposed"] = min(best["proposed"], t1 - t0)
        best["sklearn"] = min(best["sklearn"], t2 - t1)
    assert res.plan is not None
    return {"queries": float(len(x)), "proposed_s": best["proposed"],
            "sklearn_s": best["sklearn"], "ratio": best["proposed"] / best["sklearn"],
            "components": float(res.plan.graph.n_components),
            "max_clique": float(res.plan.cliques.size.max()),
            "exact": float(res.plan.cliques.exact.all())}


__all__ = [
    "PAPER_DATASETS",
    "benchmark",
    "grid_resolution",
    "run_audits",
    "STAND_INS",
    "ExperimentData",
    "DEFAULT_CLIQUE_WORK",
    "FoldPlan",
    "FoldResult",
    "calibrate_radius",
    "kfold",
    "load_experiment_data",
    "run_fold",
    "write_datasets",
]
