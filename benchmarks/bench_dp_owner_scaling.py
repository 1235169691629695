"""DP owner scaling: interactive DP k-NN, the current code beside the previous one.

Run:  python benchmarks/bench_dp_owner_scaling.py [--cases phoneme:1000,phoneme:10000,adult:1000]
      [--repeats 3] [--no-previous] [--profile] [--deadline SECONDS] [--no-compiled]

Each case: a min-max-normalised dataset split 75/25 (seed 0); the queries are the
held-out rows, and when more are asked than are held out, held-out rows drawn with
replacement plus Gaussian jitter (sd 0.01, clipped to the unit cube). k = 30, ε = 1,
w = 0.5, the owner's default clique work budget (``DEFAULT_CLIQUE_WORK``, no wall-clock
cap). One BLAS thread for everything.
Times, measured one after the other in this process:

* ``cold``: index construction + the first answer (:func:`classify_knn`), and its
  phases (conversion, overlap graph, clique bounds, counts and noise);
* ``warm``: the median of ``--repeats`` answers on the built index;
* ``previous``: the same answer by the previous code (kept verbatim in
  ``tests/dpknn/reference``), once, cold;
* scikit-learn's ``KNeighborsClassifier(30, algorithm="brute")`` fit + predict
  (first call and median).

It prints the ratios to scikit-learn, the time per query, the clique search's work and
seconds, a digest of the answer (labels, radii, sensitivities; equal for every answer of
the run, else ``repeatable`` is False) to compare runs on other machines or under load,
and whether the answers are equal to the previous code's (run with its 5 s clique time
bound). ``--deadline S`` also answers once with the search under the old
semantics (no budget, an S-second wall-clock cap) and prints that answer's digest and
clique bound (``deadline_*``): it depends on the machine's speed and load. ``--profile`` prints
a cProfile summary of one cold answer per case.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import pstats
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.neighbors import KNeighborsClassifier
from threadpoolctl import threadpool_limits

from ppknn.core.data import DomainBounds, load_dataset
from ppknn.protocols.dp_knn import cliques as cliques_module
from ppknn.protocols.dp_knn import overlap as overlap_module
from ppknn.protocols.dp_knn.cliques import STOPS, clique_bounds
from ppknn.protocols.dp_knn.conversion import convert_interactive
from ppknn.protocols.dp_knn.index import LabelIndex
from ppknn.protocols.dp_knn.knn import classify_knn
from ppknn.protocols.dp_knn.overlap import overlap_graph

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the previous code (tests/)


def _data(name: str, q: int) -> tuple[np.ndarray, np.ndarray, int, np.ndarray]:
    ds = load_dataset(name)
    X = np.asarray(ds.X, dtype=np.float64)
    lo, hi = X.min(0), X.max(0)
    X = (X - lo) / np.where(hi > lo, hi - lo, 1.0)
    _, y = np.unique(np.asarray(ds.y), return_inverse=True)
    rng = np.random.default_rng(0)
    perm = rng.permutation(len(X))
    held = len(X) // 4
    test, train = perm[:held], perm[held:]
    if q <= held:
        x = X[test[:q]]
    else:
        x = X[test[rng.integers(0, held, q)]] + rng.normal(0.0, 0.01, (q, X.shape[1]))
    return X[train], y[train].astype(np.int64), int(y.max()) + 1, np.clip(x, 0.0, 1.0)


def _digest(res) -> str:
    """sha256 (first 16 hex digits) of an answer's labels, radii and sensitivities."""
    h = hashlib.sha256()
    for a in (res.labels, res.radii, res.rn.sensitivity):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def run_case(name: str, q: int, repeats: int, previous: bool, profile: bool,
             deadline: float | None = None) -> dict:
    Xtr, ytr, c, x = _data(name, q)
    bounds = DomainBounds(np.zeros(x.shape[1]), np.ones(x.shape[1]))

    def answer(index, **limits):
        return classify_knn(index, x, 30, algorithm="interactive", epsilon=1.0,
                            rng=np.random.default_rng(1), bounds=bounds, **limits)

    row: dict = {"case": f"{name}:{q}", "features": x.shape[1], "train": len(Xtr)}
    cold, (index, res) = _timed(lambda: (lambda i: (i, answer(i)))(
        LabelIndex(Xtr, ytr, n_classes=c)))
    row["cold_s"] = cold
    warm = [_timed(lambda: answer(index)) for _ in range(repeats)]
    row["warm_s"] = statistics.median(t for t, _ in warm)
    digests = {_digest(r) for r in [res, *(r for _, r in warm)]}
    row.update(digest=min(digests), repeatable=len(digests) == 1)
    if deadline is not None:
        old = answer(index, work_limit=None, time_limit_s=deadline)
        row.update(deadline_digest=_digest(old), deadline_bound=int(old.rn.sensitivity.max()),
                   deadline_exact=bool(old.rn.exact.all()))
    # phases of one answer (the same steps classify_knn takes)
    fresh = LabelIndex(Xtr, ytr, n_classes=c)
    t_conv, conv = _timed(lambda: convert_interactive(
        fresh, x, 30, epsilon=0.5, bounds=bounds, rng=np.random.default_rng(1)))
    t_graph, graph = _timed(lambda: overlap_graph(x, conv.radii))
    t_cliq, cb = _timed(lambda: clique_bounds(graph))
    t_counts, _ = _timed(lambda: fresh.radius_counts(x, conv.radii))
    row.update(conversion_s=t_conv, graph_s=t_graph, cliques_s=t_cliq, counts_s=t_counts,
               edges=graph.n_edges, max_clique=int(cb.size.max()), paths=cb.counts(),
               search_s=cb.search_seconds, work=int(cb.work.sum()), work_limit=cb.work_limit,
               stopped_by=sorted({STOPS[t] for t in cb.stop}))
    sk = [_timed(lambda: KNeighborsClassifier(30, algorithm="brute").fit(Xtr, ytr).predict(x)
                 )[0] for _ in range(max(2, repeats))]
    row.update(sklearn_first_s=sk[0], sklearn_median_s=statistics.median(sk))
    if profile:
        prof = cProfile.Profile()
        prof.runcall(answer, LabelIndex(Xtr, ytr, n_classes=c))
        pstats.Stats(prof).sort_stats("cumulative").print_stats(12)
    if previous:
        from tests.dpknn.reference import reference_knn

        t_prev, ref = _timed(lambda: reference_knn(
            Xtr, ytr, c, x, 30, epsilon=1.0, bounds=bounds, rng=np.random.default_rng(1),
            time_limit_s=5.0))
        row["previous_s"] = t_prev
        row["equal"] = bool(np.array_equal(ref[0], res.labels)
                            and np.array_equal(ref[1], res.radii)
                            and np.array_equal(ref[2], res.rn.sensitivity))
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="phoneme:1000,phoneme:10000,adult:1000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-previous", action="store_true")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--deadline", type=float, default=None)
    ap.add_argument("--no-compiled", action="store_true",
                    help="run the numpy / Python paths (what an install without a C compiler runs)")
    args = ap.parse_args()
    if args.no_compiled:
        overlap_module._kernel = None
        cliques_module._kernel = None
    print(f"overlap graph: {'compiled' if overlap_module._kernel else 'numpy'}; "
          f"clique search: {'compiled' if cliques_module._kernel else 'Python'}")
    rows = []
    with threadpool_limits(limits=1):
        for case in args.cases.split(","):
            name, q = case.split(":")
            row = run_case(name, int(q), args.repeats, not args.no_previous, args.profile,
                           args.deadline)
            rows.append(row)
            print(row, flush=True)
    print(f"\n{'case':<16}{'cold s':>8}{'warm s':>8}{'prev s':>8}{'sk s':>7}"
          f"{'cold/sk':>9}{'warm/sk':>9}{'prev/sk':>9}{'ms/query':>10}  equal  digest")
    for r in rows:
        sk = r["sklearn_median_s"]
        prev = r.get("previous_s", float("nan"))
        q = int(r["case"].split(":")[1])
        print(f"{r['case']:<16}{r['cold_s']:>8.2f}{r['warm_s']:>8.2f}{prev:>8.2f}{sk:>7.3f}"
              f"{r['cold_s'] / sk:>9.1f}{r['warm_s'] / sk:>9.1f}{prev / sk:>9.1f}"
              f"{1e3 * r['warm_s'] / q:>10.3f}  {r.get('equal', '-')}  {r['digest']}"
              f"{'' if r['repeatable'] else ' (not repeatable)'}")
    # time per query, the largest batch of a dataset against its smallest (flat: ~1)
    for name in dict.fromkeys(r["case"].split(":")[0] for r in rows):
        mine = sorted((int(r["case"].split(":")[1]), r["warm_s"]) for r in rows
                      if r["case"].split(":")[0] == name)
        if len(mine) > 1:
            (q0, t0), (q1, t1) = mine[0], mine[-1]
            print(f"{name}: warm time per query at {q1:,} / at {q0:,} queries = "
                  f"{(t1 / q1) / (t0 / q0):.2f}")


if __name__ == "__main__":
    main()
