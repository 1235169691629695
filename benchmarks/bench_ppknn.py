"""PP-kNN benchmark: Ray vs in-process, PP-kNN vs scikit-learn, measured side by side.

Run:  python benchmarks/bench_ppknn.py [--parties 4 16 64] [--queries 1000] [--repeats 3]

For a batch of queries on abalone split over n parties it prints, per n:
the RayRuntime / InProcessRuntime wall-time ratio of the protocol with one
actor per party and with the hosted layout (one host actor per CPU; actors
already started, start-up reported separately) and the in-process PP-kNN /
scikit-learn non-private brute-force kNN ratio. Every figure is the median of
``--repeats`` runs made in this process, one after the other.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
import ray
from sklearn.neighbors import KNeighborsClassifier

from ppknn.core.data import DomainBounds, load_dataset, partition
from ppknn.core.runtime import PartySpec, RunContext, make_runtime
from ppknn.parties.ring_owner import RingDataOwner
from ppknn.protocols.ppknn import PPKNNConfig, random_ring, ring_from_start, run_ppknn
from ppknn.protocols.ppknn.pp_topk import TopKParams


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
    rt = make_runtime(kind, **options)
    t0 = time.perf_counter()
    rt.start(specs, RunContext(run_id="bench", secure_channels=channels,
                               record_batch=4096, flush_every=1 << 20))
    startup = time.perf_counter() - t0
    times, preds = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = run_ppknn(rt, queries, config, ring=ring, start=start)
        times.append(time.perf_counter() - t0)
        preds = res.predictions
    rt.close_transcript()
    rt.shutdown()
    return startup, statistics.median(times), preds


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
    ray.init(include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    rows = []
    header = (f"{'n':>4} {'inproc s':>9} {'ray s':>8} {'ray/inproc':>10} {'hosted s':>9} "
              f"{'hosted/inproc':>13} {'sklearn s':>10} {'ppknn/sklearn':>13} "
              f"{'ray startup s':>13}")
    print(f"abalone, {args.queries} queries, k={args.k}, r={args.rounds}, P0=1, d=0.5, "
          f"channels {args.channels}, median of {args.repeats}")
    print(header)
    for n in args.parties:
        ds, train, test, specs, ring, start, bounds = build(n, args.queries)
        queries = ds.X[test]
        config = PPKNNConfig(params=TopKParams(k=args.k, p0=1.0, d=0.5, rounds=args.rounds,
                                               max_distance=bounds.diameter))
        channels = args.channels == "on"
        _, t_local, p_local = time_protocol("inprocess", specs, ring, start, queries, config,
                                            args.repeats, channels)
        startup, t_ray, p_ray = time_protocol("ray", specs, ring, start, queries, config,
                                              args.repeats, channels)
        _, t_hosted, p_hosted = time_protocol("ray", specs, ring, start, queries, config,
                                              args.repeats, channels, layout="hosted")
        assert np.array_equal(p_local, p_ray), "runtimes disagree"
        assert np.array_equal(p_local, p_hosted), "layouts disagree"
        sk = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            KNeighborsClassifier(n_neighbors=args.k, algorithm="brute").fit(
                ds.X[train], ds.y[train]).predict(queries)
            sk.append(time.perf_counter() - t0)
        t_sk = statistics.median(sk)
        row = {"n": n, "inprocess_s": t_local, "ray_s": t_ray, "ray_over_inprocess":
               t_ray / t_local, "hosted_s": t_hosted, "hosted_over_inprocess":
               t_hosted / t_local, "sklearn_s": t_sk, "ppknn_over_sklearn": t_local / t_sk,
               "ray_startup_s": startup}
        rows.append(row)
        print(f"{n:>4} {t_local:>9.3f} {t_ray:>8.3f} {t_ray / t_local:>10.2f} "
              f"{t_hosted:>9.3f} {t_hosted / t_local:>13.2f} {t_sk:>10.4f} "
              f"{t_local / t_sk:>13.1f} {startup:>13.1f}", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    ray.shutdown()


if __name__ == "__main__":
    main()
