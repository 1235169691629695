"""The DP owner's request estimate against measured requests: time and peak memory.

Run:  python benchmarks/bench_request_estimate.py [--cases 2000:5:1,6000:5:0.95]
      [--seeds 1,2] [--repeats 1]

Each case ``n:d:share`` is one r-N ``proposed`` request of n random test
instances in ``[0, 1]^d`` whose common radius joins about ``share`` of the
pairs (1: every pair, a complete graph), to an owner of 3,000 random training
rows with no request limits, answered once in a **fresh process** per seed and
repeat (so the peak resident memory is that request's: ``ru_maxrss`` after the
answer minus before it). It prints the wall time and the RSS growth beside
:func:`~protocols.dp_knn.cost.estimate_request`'s figures, their ratios, and
the clique search's paths; a ratio above 1 is a request the estimate
under-states. The last line is the range of the ratios over every run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

DEFAULT_CASES = ("2000:5:1,2000:5:0.95,4000:5:0.95,6000:5:0.95,6000:5:0.6,6000:50:0.95,"
                 "8000:5:0.97")

ONE = r"""
import resource, sys, time
import numpy as np
from ppknn.protocols.dp_knn.cliques import METHODS
from ppknn.protocols.dp_knn.cost import estimate_request
from ppknn.protocols.dp_knn.parties.dp_owner import DPOwner
from ppknn.protocols.dp_knn.protocol import Answer, Query

n, d, share, seed = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(seed)
X = rng.random((3000, d))
x = rng.random((n, d))
pairs = rng.integers(0, n, (20000, 2))
gap = np.linalg.norm(x[pairs[:, 0]] - x[pairs[:, 1]], axis=1)
r = float(np.quantile(gap, share) / 2) if share < 1 else 10.0
owner = DPOwner(party_id="o", X=X, y=(X[:, 0] > 0.5).astype(int), classes=[0, 1],
                lower=np.zeros(d), upper=np.ones(d), epsilon=10.0, run_id="r", seed=seed,
                request_time_limit_s=None, request_memory_limit_bytes=None)
msg = Query(task="rn", algorithm="proposed", x=x, radius=r, epsilon=1.0).to_message(
    run_id="r", sender="a", receiver="o", request=0)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
t0 = time.perf_counter()
reply = owner.answer(msg)
seconds = time.perf_counter() - t0
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
paths = sorted({METHODS[m] for m in Answer.from_message(reply).clique_method if m >= 0})
e = estimate_request(n, d, task="rn", algorithm="proposed")
print(seconds, e.seconds, grown, e.bytes, "+".join(paths))
"""


def main(argv: list[str] | None = None) -> int:
    """Measure every case (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=DEFAULT_CASES)
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args(argv)
    time_ratios, size_ratios = [], []
    print(f"{'n':>6} {'d':>4} {'share':>6} {'seed':>4} {'s':>7} {'est s':>7} {'ratio':>6} "
          f"{'RSS MB':>8} {'est MB':>8} {'ratio':>6}  clique paths")
    for case in args.cases.split(","):
        n, d, share = case.split(":")
        for seed in args.seeds.split(","):
            for _ in range(args.repeats):
                out = subprocess.run([sys.executable, "-c", ONE, n, d, share, seed],
                                     capture_output=True, text=True, check=True).stdout
                s, est_s, size, est_b, paths = out.split()
                tr, br = float(s) / float(est_s), float(size) / float(est_b)
                time_ratios.append(tr)
                size_ratios.append(br)
                print(f"{n:>6} {d:>4} {share:>6} {seed:>4} {float(s):7.2f} {float(est_s):7.2f} "
                      f"{tr:6.2f} {float(size) / 1e6:8.0f} {float(est_b) / 1e6:8.0f} {br:6.2f}  "
                      f"{paths}", flush=True)
    print(f"{len(time_ratios)} requests: time / estimate {min(time_ratios):.2f}-"
          f"{max(time_ratios):.2f}, RSS growth / estimate {min(size_ratios):.2f}-"
          f"{max(size_ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
