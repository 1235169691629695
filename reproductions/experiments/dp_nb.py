"""Cross-validated accuracy and training time of the private Naive Bayes methods.

:func:`cross_validate` runs the paper's protocol (§7.2): repetitions of
stratified k-fold cross-validation; in every fold each method is trained on
the training part (encoded once, so a fit is Algorithm 1 alone) and scored
on the held-out part, for every ε. Non-private Naive Bayes and the majority
class do not depend on ε and are fitted once per fold. The noise of every
(repetition, fold, method, ε) comes from its own stream of one root seed.

:func:`time_training` measures Fig. 13: training time against dataset size
for the global- and smooth-sensitivity versions, side by side in one process.

Examples
--------
>>> from ppknn.protocols.dp_nb.datasets import load_nb_dataset
>>> ds = load_nb_dataset("seeds")
>>> rows = cross_validate(ds, [MethodSpec("smooth", "smooth")], [1.0], repetitions=1, folds=3,
...                       seed=0)
>>> sorted({r["method"] for r in rows}), len(rows)
(['majority', 'non-private', 'smooth'], 9)
"""

from __future__ import annotations

import math
import time
import warnings
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sklearn.model_selection import KFold

from ppknn.core.errors import ConfigError
from ppknn.core.rng import SeedPolicy
from ppknn.protocols.dp_nb.datasets import NBDataset
from ppknn.protocols.dp_nb.schema import BoundsWarning, FeatureSchema
from ppknn.protocols.dp_nb.sensitivity import smooth_sensitivity_direct, trimmed_statistics
from ppknn.protocols.dp_nb.training import NBConfig, train
from ppknn.simulations.prepare import stratified_kfold


@dataclass(frozen=True)
class MethodSpec:
    """One curve of the accuracy figures.

    ``delta`` is a number, or ``"1/n"`` / ``"1/n^2"`` with n the training size.
    """

    label: str
    method: str
    noise: str = "polynomial"
    delta: float | str = 0.0
    neighbours: str = "add-remove"
    var_floor: float = 1e-3
    sensitivity: str | None = None
    """``"exact"``, ``"bound"`` or ``None`` (exact under replace, bound under add/remove)."""
    fallback: bool = False
    """Release at global sensitivity where smooth cannot win (not in the paper)."""

    def config(self, epsilon: float, n_train: int) -> NBConfig:
        """The training configuration at ``epsilon`` for ``n_train`` training rows."""
        delta = self.delta
        if isinstance(delta, str):
            delta = {"1/n": 1.0 / n_train, "1/n^2": 1.0 / n_train**2}[delta]
        return NBConfig(method=self.method, epsilon=epsilon, noise=self.noise, delta=delta,
                        neighbours=self.neighbours, var_floor=self.var_floor,
                        sensitivity=self.sensitivity, global_fallback=self.fallback)


PAPER_METHODS = (
    MethodSpec("smooth", "smooth"),
    MethodSpec("smooth, paper constant", "smooth", noise="paper"),
    MethodSpec("smooth, Gaussian δ=1/n", "smooth", noise="gaussian", delta="1/n"),
    MethodSpec("smooth, Gaussian δ=1/n²", "smooth", noise="gaussian", delta="1/n^2"),
    MethodSpec("vaidya", "vaidya"),
    MethodSpec("bun-steinke", "bun-steinke"),
)


def encode(ds: NBDataset) -> tuple[np.ndarray, np.ndarray, FeatureSchema]:
    """The numeric block, category codes and schema of a dataset (encoded once)."""
    schema = FeatureSchema.build(ds.X.shape[1], bounds=ds.bounds,
                                 categories={c: list(v) for c, v in ds.categories.items()})
    numeric, categorical = schema.encode(ds.X, out_of_bounds="error")
    return numeric, categorical, schema


def fold_schema(ds: NBDataset, train_rows: np.ndarray, bounds: str,
                widen: float = 1.0) -> FeatureSchema:
    """The schema one fold trains with: the dataset's bounds, or its training rows' range.

    ``bounds="train"`` reads the extremes of the training rows only (never the held-out
    rows; they leak the training rows' extremes, which the report states);
    ``"dataset"`` keeps the dataset's own (declared or public) bounds. ``widen``
    (``"train"`` only) makes the range ``widen`` times wider around its centre.
    """
    if bounds == "dataset":
        return FeatureSchema.build(ds.X.shape[1], bounds=ds.bounds,
                                   categories={c: list(v) for c, v in ds.categories.items()})
    if bounds != "train":
        raise ConfigError(f"bounds must be 'train' or 'dataset', got {bounds!r}")
    num = list(ds.numeric)
    part = ds.X[np.ix_(train_rows, num)].astype(np.float64)
    lower, upper = part.min(axis=0), part.max(axis=0)
    upper = np.where(upper > lower, upper, lower + 1.0)
    extra = (widen - 1.0) * (upper - lower) / 2.0
    return FeatureSchema.build(ds.X.shape[1], bounds=(lower - extra, upper + extra),
                               categories={c: list(v) for c, v in ds.categories.items()})


def cross_validate(ds: NBDataset, methods: Sequence[MethodSpec], epsilons: Sequence[float], *,
                   repetitions: int, folds: int, seed: int, bounds: str = "train",
                   shuffle: bool = True, widen: float = 1.0) -> list[dict]:
    """Accuracy per (repetition, fold, method, ε); see the module docstring.

    ``bounds``: ``"train"`` (default) takes each fold's bounds from its training rows
    and clips the held-out rows to them on the client side; ``"dataset"`` uses the
    dataset's bounds. ``shuffle=False``: unshuffled (and unstratified) k-fold, the same
    folds every repetition.
    """
    n_classes = len(ds.classes)
    policy = SeedPolicy(root=seed)
    rows: list[dict] = []
    for rep in range(repetitions):
        splits = fold_splits(ds, folds, rep, policy, shuffle)
        for fold, (tr, te) in enumerate(splits):
            schema = fold_schema(ds, tr, bounds, widen)
            with warnings.catch_warnings():  # held-out rows outside the training range:
                warnings.simplefilter("ignore", BoundsWarning)  # clipped, client side
                numeric, categorical = schema.encode(ds.X, out_of_bounds="clip")

            def score(config: NBConfig, stream: tuple, tr=tr, te=te, rep=rep,
                      fold=fold, schema=schema, numeric=numeric,
                      categorical=categorical) -> tuple[float, float]:
                rng = policy.generator("noise", ds.name, rep, fold, *stream)
                t0 = time.perf_counter()
                result = train(numeric[tr], categorical[tr], ds.y[tr], n_classes=n_classes,
                               schema=schema, config=config, rng=rng)
                seconds = time.perf_counter() - t0
                pred = result.params.predict(numeric[te], categorical[te])
                return float(np.mean(pred == ds.y[te])), seconds

            base = dict(dataset=ds.name, repetition=rep, fold=fold, n_train=len(tr))
            acc, sec = score(NBConfig(method="non-private"), ("non-private",))
            majority = int(np.argmax(np.bincount(ds.y[tr], minlength=n_classes)))
            for eps in epsilons:
                rows.append(dict(base, method="non-private", epsilon=eps, accuracy=acc,
                                 seconds=sec))
                rows.append(dict(base, method="majority", epsilon=eps,
                                 accuracy=float(np.mean(ds.y[te] == majority)), seconds=0.0))
            for spec in methods:
                for k, eps in enumerate(epsilons):
                    acc, sec = score(spec.config(eps, len(tr)), (spec.label, k))
                    rows.append(dict(base, method=spec.label, epsilon=eps, accuracy=acc,
                                     seconds=sec))
    return rows


def fold_splits(ds: NBDataset, folds: int, rep: int, policy: SeedPolicy,
                shuffle: bool) -> list[tuple[np.ndarray, np.ndarray]]:
    """Stratified shuffled folds of one repetition, or unshuffled k-fold.

    The folds of repetition ``rep`` are the scenario's ``[data] folds, stratify = true``
    folds with ``split_seed`` = :func:`split_seed` (``policy.root + rep``): the same
    splitter (:func:`ppknn.simulations.prepare.stratified_kfold`), so a scenario grid
    over the ``dp-nb`` plugin cuts exactly these folds.
    """
    if not shuffle:
        return list(KFold(n_splits=folds).split(ds.X))
    seed = split_seed(policy.root, rep)
    return [stratified_kfold(ds.y, folds, f, SeedPolicy(root=seed).generator("split"))
            for f in range(folds)]


def split_seed(seed: int, rep: int) -> int:
    """``[data] split_seed`` of repetition ``rep`` under the root ``seed``: ``seed + rep``."""
    return seed + rep


def t_interval(values: Sequence[float]) -> tuple[float, float, float]:
    """Mean and its 95% Student-t interval (clipped to [0, 1] for accuracies).

    One value gives the degenerate interval ``(v, v)``.
    """
    from scipy import stats

    v = np.asarray(values, dtype=np.float64)
    mean = float(v.mean())
    if v.size < 2:
        return mean, mean, mean
    half = float(stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))
    return mean, max(mean - half, 0.0), min(mean + half, 1.0)


def summarise(rows: Sequence[dict]) -> list[dict]:
    """Accuracy per dataset, method and ε: mean, sd and 95% t interval over (repetition, fold)."""
    groups: dict[tuple, list[float]] = defaultdict(list)
    for r in rows:
        groups[(r["dataset"], r["method"], r["epsilon"])].append(r["accuracy"])
    out = []
    for (d, m, e), v in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        mean, low, high = t_interval(v)
        out.append(dict(dataset=d, method=m, epsilon=e, mean=mean,
                        std=float(np.std(v, ddof=1)) if len(v) > 1 else 0.0, ci_low=low,
                        ci_high=high, runs=len(v)))
    return out


def paired_difference(rows: Sequence[dict], a: str, b: str) -> list[dict]:
    """Per dataset and ε: mean of accuracy(a) - accuracy(b) over paired folds, with 2·SE."""
    acc = {(r["dataset"], r["method"], r["epsilon"], r["repetition"], r["fold"]): r["accuracy"]
           for r in rows}
    keys = sorted({(d, e) for (d, m, e, _, _) in acc if m == a})
    out = []
    for d, e in keys:
        diffs = [acc[(d, a, e, rep, fold)] - acc[(d, b, e, rep, fold)]
                 for (dd, m, ee, rep, fold) in acc if (dd, m, ee) == (d, a, e)
                 and (d, b, e, rep, fold) in acc]
        if diffs:
            se = float(np.std(diffs, ddof=1) / math.sqrt(len(diffs))) if len(diffs) > 1 else 0.0
            out.append(dict(dataset=d, epsilon=e, a=a, b=b, mean_difference=float(np.mean(diffs)),
                            two_se=2 * se, pairs=len(diffs)))
    return out


def time_training(ds: NBDataset, *, epsilon: float, repeats: int, seed: int,
                  direct: bool) -> list[dict]:
    """Training seconds (best of ``repeats``) of each version on ``ds``, side by side.

    ``direct`` adds the quadratic procedure (every distance k, no early stop) for the
    smooth sensitivities, timed on the same trimmed samples.
    """
    numeric, categorical, schema = encode(ds)
    n_classes = len(ds.classes)
    policy = SeedPolicy(root=seed)
    configs = {"non-private": NBConfig(method="non-private"),
               "global (vaidya)": NBConfig(method="vaidya", epsilon=epsilon),
               "smooth": NBConfig(method="smooth", epsilon=epsilon)}
    best: dict[str, float] = {k: math.inf for k in configs}
    trims: np.ndarray | None = None
    for r in range(repeats):
        for name, config in configs.items():  # interleaved: load affects all alike
            rng = policy.generator("timing", name, r)
            t0 = time.perf_counter()
            result = train(numeric, categorical, ds.y, n_classes=n_classes, schema=schema,
                           config=config, rng=rng)
            best[name] = min(best[name], time.perf_counter() - t0)
            if name == "smooth":
                trims = result.trim
    rows = [dict(dataset=ds.name, n=len(ds.y), version=k, seconds=v) for k, v in best.items()]
    if direct and trims is not None:
        beta = configs["smooth"].calibration(epsilon / (2 * numeric.shape[1] + 1), 0.0).beta
        t0 = time.perf_counter()
        for c in range(n_classes):
            rows_c = numeric[ds.y == c]
            for j in range(numeric.shape[1]):
                lo, hi = float(schema.lower[j]), float(schema.upper[j])
                trimmed_statistics(rows_c[:, j], trim=int(trims[c]), lower=lo, upper=hi)
                smooth_sensitivity_direct(rows_c[:, j], trim=int(trims[c]), lower=lo, upper=hi,
                                          beta=beta)
        rows.append(dict(dataset=ds.name, n=len(ds.y), version="smooth, every k (direct)",
                         seconds=time.perf_counter() - t0))
    return rows


__all__ = ["PAPER_METHODS", "MethodSpec", "cross_validate", "encode", "fold_schema",
           "fold_splits", "paired_difference", "split_seed", "t_interval",
           "summarise", "time_training"]
