"""DP r-N / k-NN benchmark: the proposed classifier vs scikit-learn, measured side by side.

Run:  python benchmarks/bench_dp_knn.py [--dataset phoneme] [--queries 1000] [--repeats 3]

On a batch of test instances of a normalised dataset (radius calibrated to
about 10 training rows per region, as in the paper's §5.1) it times, each
the median of ``--repeats`` runs made one after the other in this process:

* the proposed r-N classifier, split into its steps -- overlap graph
  (spatial index), components, clique bounds, counts and noise;
* the Laplace baseline (counts and noise);
* scikit-learn's non-private ``RadiusNeighborsClassifier`` (fit + predict)
  on the same batch;
* the converted k-NN classifiers (k = 30) and scikit-learn's ``KNeighborsClassifier``;
* the DP owner answering the batch as a message (validation, ledger, reply);

and prints every time as a ratio to scikit-learn's r-N.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

import numpy as np
from sklearn.neighbors import KNeighborsClassifier, RadiusNeighborsClassifier

from ppknn.core.data import DomainBounds
from ppknn.protocols.dp_knn.cliques import clique_bounds
from ppknn.protocols.dp_knn.index import LabelIndex
from ppknn.protocols.dp_knn.knn import classify_knn
from ppknn.protocols.dp_knn.overlap import overlap_edges, overlap_graph
from ppknn.protocols.dp_knn.parties.analyst import Analyst
from ppknn.protocols.dp_knn.parties.dp_owner import DPOwner
from ppknn.protocols.dp_knn.protocol import Query
from ppknn.protocols.dp_knn.rn import classify_rn, plan_rn, release_rn
from ppknn_reproductions.experiments.dp_knn import calibrate_radius, kfold, load_experiment_data


def median_time(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="phoneme")
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    data = load_experiment_data(args.dataset, seed=0)
    train, test = kfold(len(data.y), 4, np.random.default_rng(0))[0]  # 25% test: >= 1,000 rows
    Xtr, ytr, x = data.X[train], data.y[train], data.X[test][: args.queries]
    r = calibrate_radius(Xtr, 10.0)
    radii = np.full(len(x), r)
    index = LabelIndex(Xtr, ytr, n_classes=data.n_classes)
    bounds = DomainBounds(np.zeros(x.shape[1]), np.ones(x.shape[1]))
    rng = np.random.default_rng(1)
    plan = plan_rn(x, radii)
    graph = overlap_graph(x, radii)

    t = {
        "sklearn_rn": median_time(lambda: RadiusNeighborsClassifier(
            radius=r, outlier_label=0).fit(Xtr, ytr).predict(x), args.repeats),
        "graph_edges": median_time(lambda: overlap_edges(x, radii), args.repeats),
        "graph_and_components": median_time(lambda: overlap_graph(x, radii), args.repeats),
        "cliques": median_time(lambda: clique_bounds(graph), args.repeats),
        "counts_and_noise": median_time(lambda: release_rn(
            index.radius_counts(x, radii), algorithm="proposed", epsilon=1.0, rng=rng,
            plan=plan), args.repeats),
        "proposed_rn_total": median_time(lambda: classify_rn(
            index, x, radii, algorithm="proposed", epsilon=1.0, rng=rng), args.repeats),
        "baseline_rn_total": median_time(lambda: classify_rn(
            index, x, radii, algorithm="baseline-laplace", epsilon=1.0, rng=rng), args.repeats),
        "sklearn_knn_k30": median_time(lambda: KNeighborsClassifier(30).fit(Xtr, ytr).predict(x),
                                       args.repeats),
        "knn_interactive_k30": median_time(lambda: classify_knn(
            index, x, 30, algorithm="interactive", epsilon=1.0, rng=rng, bounds=bounds),
            args.repeats),
        "knn_noninteractive_k30": median_time(lambda: classify_knn(
            index, x, 30, algorithm="noninteractive", epsilon=1.0, rng=rng, bounds=bounds),
            args.repeats),
    }

    def owner_answer() -> None:
        owner = DPOwner(party_id="owner", X=Xtr, y=ytr, classes=list(range(data.n_classes)),
                        lower=bounds.lower, upper=bounds.upper, epsilon=10.0, run_id="bench")
        me = Analyst(party_id="analyst", owner="owner", run_id="bench")
        owner.answer(me.request(Query(task="rn", algorithm="proposed", x=x, radius=r,
                                      epsilon=1.0)))

    t["owner_message_round_trip"] = median_time(owner_answer, args.repeats)
    base = t["sklearn_rn"]
    print(f"{args.dataset}: {len(x)} test instances, {len(Xtr)} training rows, r = {r:.4f}; "
          f"{graph.n_components} components, {graph.n_edges} edges, max clique "
          f"{int(plan.cliques.size.max())} ({plan.cliques.counts()})")
    print(f"{'step':<28}{'seconds':>10}{'x sklearn r-N':>16}")
    for name, secs in t.items():
        print(f"{name:<28}{secs:>10.4f}{secs / base:>16.2f}")
    print(json.dumps({k: round(v / base, 3) for k, v in t.items()}))


if __name__ == "__main__":
    main()
