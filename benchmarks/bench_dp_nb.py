"""Training cost of private Naive Bayes with smooth sensitivity, as ratios measured side by side.

Run: ``python benchmarks/bench_dp_nb.py [--rows 1000000] [--repeats 3] [--epsilon 1]
[--diffprivlib]``

On synthetic bounded data (6 numeric features in [0, 100], two classes) the
versions are trained alternately in one process, ``--repeats`` times each,
and the median is reported; the figures to read are the ratios (smooth /
non-private, smooth / global sensitivity), not the absolute seconds. The
quadratic procedure (every distance k, no early stop) is timed against the
fast one on a smaller sample.

``--diffprivlib`` also runs IBM diffprivlib's GaussianNB, which needs
scikit-learn < 1.7: the benchmark creates (once) a separate environment under
``~/.cache/ppknn/diffprivlib-venv`` with ``python -m venv`` and pip, times
its fit on the same rows, and compares its accuracy with ours on adult's six
numeric features, glass and seeds (10 folds, the same bounds). When the
environment cannot be made, it says why and carries on.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sklearn.naive_bayes import GaussianNB  # noqa: E402

from ppknn.protocols.dp_nb.datasets import load_nb_dataset, synthetic_bounded  # noqa: E402
from ppknn.protocols.dp_nb.sensitivity import (  # noqa: E402
    smooth_sensitivity,
    smooth_sensitivity_direct,
)
from ppknn.protocols.dp_nb.training import NBConfig, train  # noqa: E402
from ppknn_reproductions.experiments.diffprivlib_peer import ensure_venv, run_diffprivlib  # noqa: E402
from ppknn_reproductions.experiments.dp_nb import MethodSpec, cross_validate, encode  # noqa: E402


def _time_versions(rows: int, repeats: int, epsilon: float) -> dict[str, float]:
    ds = synthetic_bounded(rows, seed=1)
    num, cat, schema = encode(ds)
    versions = {
        "non-private NB": NBConfig(method="non-private"),
        "global (Vaidya)": NBConfig(method="vaidya", epsilon=epsilon),
        "smooth, replace": NBConfig(epsilon=epsilon, neighbours="replace"),
        "smooth, add/remove": NBConfig(epsilon=epsilon),
        "bun-steinke": NBConfig(method="bun-steinke", epsilon=epsilon, neighbours="replace"),
    }
    times: dict[str, list[float]] = {k: [] for k in [*versions, "scikit-learn GaussianNB"]}
    for r in range(repeats):
        for name, config in versions.items():
            t0 = time.perf_counter()
            train(num, cat, ds.y, n_classes=2, schema=schema, config=config,
                  rng=np.random.default_rng(r))
            times[name].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        GaussianNB().fit(ds.X, ds.y)
        times["scikit-learn GaussianNB"].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def _direct_vs_fast(rows: int, epsilon: float) -> tuple[float, float, int, int]:
    x = synthetic_bounded(rows, seed=2, features=1).X[:, 0]
    beta = NBConfig(epsilon=epsilon).calibration(epsilon / 3, 0.0).beta
    trim = int(0.05 * rows)
    t0 = time.perf_counter()
    fast = smooth_sensitivity(x, trim=trim, lower=0.0, upper=100.0, beta=beta)
    t_fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    direct = smooth_sensitivity_direct(x, trim=trim, lower=0.0, upper=100.0, beta=beta)
    t_direct = time.perf_counter() - t0
    assert np.isclose(fast.mean, direct.mean) and np.isclose(fast.variance, direct.variance)
    return t_fast, t_direct, fast.pairs, direct.pairs


def _diffprivlib(rows: int, epsilon: float) -> None:
    python, message = ensure_venv(create=True)
    print(f"\ndiffprivlib: {message}")
    if python is None:
        return
    ds = synthetic_bounded(rows, seed=1)
    test = np.arange(min(1000, rows))
    job = dict(name="synthetic", X=ds.X, y=ds.y, lower=ds.lower, upper=ds.upper,
               splits=[(0, 0, np.arange(rows), test)])
    out, msg = run_diffprivlib(python, [job], [epsilon])
    if out is None:
        print(f"  {msg}")
        return
    num, cat, schema = encode(ds)
    t0 = time.perf_counter()
    train(num, cat, ds.y, n_classes=2, schema=schema,
          config=NBConfig(epsilon=epsilon, neighbours="replace"), rng=np.random.default_rng(0))
    ours = time.perf_counter() - t0
    print(f"  fit on {rows:,} rows: diffprivlib GaussianNB {out[0]['seconds']:.3f} s; "
          f"smooth (replace) / diffprivlib = {ours / out[0]['seconds']:.2f}")
    import warnings

    from sklearn.model_selection import StratifiedKFold

    eps = [0.1, 1.0, 10.0]
    specs = [MethodSpec("smooth", "smooth", neighbours="replace"), MethodSpec("vaidya", "vaidya")]
    print("  accuracy, 10-fold CV, bounds = the data's min/max (mean over folds):")
    print(f"  {'dataset':16s} {'method':24s} " + " ".join(f"eps={e:<6g}" for e in eps))
    for name in ("adult", "glass", "seeds"):
        d = load_nb_dataset(name)
        d = d.numeric_only() if name == "adult" else d
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="The least populated class")
            splits = [(0, f, tr, te) for f, (tr, te) in enumerate(
                StratifiedKFold(10, shuffle=True, random_state=0).split(d.X, d.y))]
        rows_d, msg = run_diffprivlib(python, [dict(name=d.name, X=d.X, y=d.y, lower=d.lower,
                                                    upper=d.upper, splits=splits)], eps)
        ours_rows = cross_validate(d, specs, eps, repetitions=1, folds=10, seed=0)
        table: dict[str, dict[float, list[float]]] = {}
        for r in (rows_d or []):
            table.setdefault("diffprivlib GaussianNB", {}).setdefault(r["epsilon"], []).append(
                r["accuracy"])
        for r in ours_rows:
            table.setdefault(r["method"], {}).setdefault(r["epsilon"], []).append(r["accuracy"])
        for method, by in table.items():
            print(f"  {d.name:16s} {method:24s} "
                  + " ".join(f"{np.mean(by[e]):<10.3f}" for e in eps))
        if rows_d is None:
            print(f"  {msg}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--direct-rows", type=int, default=20_000)
    parser.add_argument("--diffprivlib", action="store_true")
    args = parser.parse_args()

    times = _time_versions(args.rows, args.repeats, args.epsilon)
    base, glob = times["non-private NB"], times["global (Vaidya)"]
    print(f"training on {args.rows:,} rows x 6 numeric features, epsilon = {args.epsilon:g}, "
          f"median of {args.repeats} interleaved repeats")
    print(f"{'version':26s} {'seconds':>9s} {'/ non-private':>14s} {'/ global':>9s}")
    for name, sec in times.items():
        print(f"{name:26s} {sec:9.3f} {sec / base:14.2f} {sec / glob:9.2f}")
    t_fast, t_direct, p_fast, p_direct = _direct_vs_fast(args.direct_rows, args.epsilon)
    print(f"\nsmooth sensitivity of one sample of {args.direct_rows:,} values (trim 5%): "
          f"fast {t_fast * 1e3:.1f} ms ({p_fast:,} pair evaluations), every k (direct) "
          f"{t_direct * 1e3:.1f} ms ({p_direct:,}); direct / fast = {t_direct / t_fast:.0f}")
    if args.diffprivlib:
        _diffprivlib(args.rows, args.epsilon)


if __name__ == "__main__":
    main()
