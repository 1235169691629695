"""DP-TT performance: tree build, a batch of basic queries in-process and on Ray, as ratios.

    python benchmarks/bench_dptt.py [--points 1000000] [--queries 10000] [--repeat 3]

Measured side by side in one run (best of ``--repeat``):

* building the modified kd-tree (Algorithm 10) vs scipy's cKDTree on the same points;
* the basic DP-TT-CMP batch through the in-process runtime (client and server parties, every
  message recorded) vs exact non-private nearest neighbours (cKDTree) and vs the plain
  non-private descent of the same tree;
* the same batch with the client and server as Ray actors vs in-process (actor start-up,
  which ships the tree to the server actor once, is reported apart).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.spatial import cKDTree

from ppknn.protocols.dptt.config import DPTTSetup
from ppknn.protocols.dptt.data import synthetic_points
from ppknn.protocols.dptt.tree import ModifiedKDTree
from ppknn.protocols.dptt.utility import Utility
from ppknn_reproductions.experiments.dptt_session import DPTTSession


def best(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--points", type=int, default=1_000_000)
    p.add_argument("--queries", type=int, default=10_000)
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    rng = np.random.default_rng(0)
    x = synthetic_points(a.points, 2, rng)
    q = synthetic_points(a.queries, 2, rng)
    setup = DPTTSetup(variant="basic", utility=Utility.cmp(), epsilon=5.0)

    t_build, tree = best(lambda: ModifiedKDTree.build(x), a.repeat)
    t_ckd_build, ckd = best(lambda: cKDTree(x), a.repeat)
    t_exact, _ = best(lambda: ckd.query(q, k=1), a.repeat)
    t_plain, _ = best(lambda: tree.descend(q, rule="cmp"), a.repeat)

    with DPTTSession(tree=tree, runtime="inprocess", record=True) as local:
        t_local, res = best(lambda: local.run(q, setup), a.repeat)
    t0 = time.perf_counter()
    on_ray = DPTTSession(tree=tree, runtime="ray", record=True)
    t_start = time.perf_counter() - t0
    try:
        on_ray.run(q, setup)  # warm-up: first calls import modules in the workers
        t_ray, res_ray = best(lambda: on_ray.run(q, setup), a.repeat)
    finally:
        on_ray.close()

    print(f"DP-TT benchmark: {a.points:,} 2-D points, {a.queries:,} basic CMP queries, "
          f"{res.rounds} rounds, {res.messages} messages (best of {a.repeat})")
    print(f"  build modified kd-tree            {t_build:8.3f} s   "
          f"ratio to cKDTree build     {t_build / t_ckd_build:6.2f}")
    print(f"  DP-TT batch, in-process           {t_local:8.3f} s   "
          f"ratio to exact cKDTree NN  {t_local / t_exact:6.2f}")
    print(f"                                                ratio to plain descent     "
          f"{t_local / t_plain:6.2f}")
    print(f"  DP-TT batch, Ray actors           {t_ray:8.3f} s   "
          f"ratio Ray / in-process     {t_ray / t_local:6.2f}")
    print(f"  Ray actor start-up (tree shipped) {t_start:8.3f} s")
    same = np.array_equal(res.outcome.released, res_ray.outcome.released)
    print(f"  per-query release sizes equal on both runtimes: {same}")


if __name__ == "__main__":
    main()
