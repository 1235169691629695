"""PP-kNN benchmark: Ray vs in-process, PP-kNN vs scikit-learn, measured side by side.

Run:  python benchmarks/bench_ppknn.py [--parties 4 16 64] [--queries 1000] [--repeats 3]

For a batch of queries on abalone split over n parties it prints, per n:
the in-process run cold (runtime start-up plus the first run, which computes
every distance), the first run alone and the median of the repeats (which reuse
the owners' cached distances); the same for Ray with one actor per party and
with the hosted layout (one host actor per CPU); and the in-process PP-kNN /
scikit-learn ratio, cold against scikit-learn's first brute-force fit +
predict on one thread. Repeat figures are reported beside the cold ones, never
instead of them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
import ray
from sklearn.neighbors import KNeighborsClassifier
from threadpoolctl import threadpool_limits

from ppknn.core.data import DomainBounds, load_dataset, partition
from ppknn.core.runtime import PartySpec, RunContext, make_runtime
from ppknn.protocols.ppknn_ring import PPKNNConfig, random_ring, ring_from_start, run_ppknn
from ppknn.protocols.ppknn_ring.parties.ring_owner import RingDataOwner
from ppknn.protocols.ppknn_ring.pp_topk import TopKParams


def build(n, n_queries, seed=0):
    ds = load_dataset("abalone")
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(ds.y))
    test, train = perm[:n_queries], perm[n_queries:]
    parts = partition(ds.y[train], n, rng=rng)
    names = [f"owner-{i:02d}" for i in range(n)]
    specs = [PartySpec(nm, RingDataOwner, {"party_id": nm, "index": i, "X": ds.X[train][p],
                                           "y": ds.y[train][p], "n_classes": ds.n_classes,
                                           "run_id": "bench", "seed": seed})
             for i, (nm, p) in enumerate(zip(names, parts))]
    bounds = DomainBounds.from_data(ds.X, warn=False)
    ring, start = random_ring(names, rng)
    by_name = {s.party_id: s for s in specs}
    specs = [by_name[p] for p in ring_from_start(ring, start)]  # hosted: neighbours share a host
    return ds, train, test, specs, ring, start, bounds


def time_protocol(kind, specs, ring, start, queries, config, repeats, channels, **options):
    """(start-up s, first run s, median of the repeats s, predictions) on a fresh runtime."""
    rt = make_runtime(kind, **options)
    t0 = time.perf_counter()
    rt.start(specs, RunContext(run_id="bench", secure_channels=channels,
                               record_batch=4096, flush_every=1 << 20))
    startup = time.perf_counter() - t0
    times, preds = [], None
    for _ in range(1 + repeats):
        t0 = time.perf_counter()
        res = run_ppknn(rt, queries, config, ring=ring, start=start)
        times.append(time.perf_counter() - t0)
        preds = res.predictions
    rt.close_transcript()
    rt.shutdown()
    return startup, times[0], statistics.median(times[1:]), preds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parties", type=int, nargs="+", default=[4, 16, 64])
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--channels", choices=["on", "off"], default="on")
    ap.add_argument("--json", help="also write the rows to this JSON file")
    args = ap.parse_args()
    ray.init(address="local", include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    rows = []
    header = (f"{'n':>4} {'cold s':>8} {'first s':>8} {'repeat s':>8} {'ray cold s':>10} "
              f"{'ray/inproc':>10} {'hosted cold s':>13} {'hosted/inproc':>13} "
              f"{'sklearn s':>10} {'cold/sklearn':>12} {'repeat/sklearn':>14}")
    print(f"abalone, {args.queries} queries, k={args.k}, r={args.rounds}, P0=1, d=0.5, "
          f"channels {args.channels}; cold = start-up + first run; repeat = median of "
          f"{args.repeats} further runs (distances cached); Ray ratios cold vs cold")
    print(header)
    for n in args.parties:
        ds, train, test, specs, ring, start, bounds = build(n, args.queries)
        queries = ds.X[test]
        config = PPKNNConfig(params=TopKParams(k=args.k, p0=1.0, d=0.5, rounds=args.rounds,
                                               max_distance=bounds.diameter))
        channels = args.channels == "on"
        local = time_protocol("inprocess", specs, ring, start, queries, config, args.repeats,
                              channels)
        on_ray = time_protocol("ray", specs, ring, start, queries, config, args.repeats,
                               channels)
        hosted = time_protocol("ray", specs, ring, start, queries, config, args.repeats,
                               channels, layout="hosted")
        assert np.array_equal(local[3], on_ray[3]), "runtimes disagree"
        assert np.array_equal(local[3], hosted[3]), "layouts disagree"
        sk = []
        with threadpool_limits(limits=1):
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                KNeighborsClassifier(n_neighbors=args.k, algorithm="brute").fit(
                    ds.X[train], ds.y[train]).predict(queries)
                sk.append(time.perf_counter() - t0)
        cold, ray_cold, hosted_cold = (local[0] + local[1], on_ray[0] + on_ray[1],
                                       hosted[0] + hosted[1])
        row = {"n": n, "inprocess_startup_s": local[0], "inprocess_first_s": local[1],
               "inprocess_repeat_s": local[2], "inprocess_cold_s": cold,
               "ray_startup_s": on_ray[0], "ray_first_s": on_ray[1], "ray_repeat_s": on_ray[2],
               "ray_cold_over_inprocess": ray_cold / cold, "hosted_startup_s": hosted[0],
               "hosted_first_s": hosted[1], "hosted_repeat_s": hosted[2],
               "hosted_cold_over_inprocess": hosted_cold / cold, "sklearn_first_s": sk[0],
               "sklearn_median_s": statistics.median(sk),
               "cold_over_sklearn": cold / sk[0],
               "repeat_over_sklearn": local[2] / statistics.median(sk)}
        rows.append(row)
        print(f"{n:>4} {cold:>8.3f} {local[1]:>8.3f} {local[2]:>8.3f} {ray_cold:>10.2f} "
              f"{ray_cold / cold:>10.1f} {hosted_cold:>13.2f} {hosted_cold / cold:>13.1f} "
              f"{sk[0]:>10.4f} {cold / sk[0]:>12.1f} {row['repeat_over_sklearn']:>14.1f}",
              flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    ray.shutdown()


if __name__ == "__main__":
    main()
