"""Cost of secure vs reproducible DP sampling, per million draws, measured side by side.

Run: ``python benchmarks/bench_dp_sampling.py [--secure-draws N] [--rounds R]``

For each mechanism the two modes are timed alternately in the same process
(R rounds; the median of each is reported), so machine load affects both
alike. Reproducible mode draws one million values in one vectorised call;
secure mode (exact integer samplers on OS entropy, pure Python) draws
``--secure-draws`` values and is scaled to a million. The ratio
secure / reproducible is the figure to read; absolute times are noise.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ppknn.core.dp import (  # noqa: E402
    ExponentialMechanism,
    Gaussian,
    Geometric,
    Laplace,
    PlanarLaplace,
    ReportNoisyMax,
)

MILLION = 1_000_000


def _per_million(call, draws: int) -> float:
    start = time.perf_counter()
    call(draws)
    return (time.perf_counter() - start) * MILLION / draws


def _cases():
    rng = np.random.default_rng(0)
    util = np.random.default_rng(1).normal(size=10)

    def additive(factory):
        rep, sec = factory("reproducible"), factory("secure")
        return (
            lambda n: rep.randomise(np.zeros(n), rng),
            lambda n: sec.randomise(np.zeros(n)),
        )

    def select(factory, per_row=10):
        rep, sec = factory("reproducible"), factory("secure")
        return (
            lambda n: rep.randomise(np.tile(util, (n // per_row, 1)), rng),
            lambda n: sec.randomise(np.tile(util, (n // per_row, 1))),
        )

    return {
        "laplace": additive(lambda m: Laplace(epsilon=1.0, mode=m)),
        "geometric": (
            lambda n: Geometric(epsilon=1.0).randomise(np.zeros(n, dtype=np.int64), rng),
            lambda n: Geometric(epsilon=1.0, mode="secure").randomise(np.zeros(n, dtype=np.int64)),
        ),
        "gaussian": additive(lambda m: Gaussian(epsilon=1.0, delta=1e-5, mode=m)),
        "planar_laplace (points)": (
            lambda n: PlanarLaplace(epsilon=1.0).randomise(np.zeros((n, 2)), rng),
            lambda n: PlanarLaplace(epsilon=1.0, mode="secure").randomise(np.zeros((n, 2))),
        ),
        "exponential (10 cand.)": select(lambda m: ExponentialMechanism(epsilon=1.0, mode=m)),
        "rnm-exp (10 cand.)": select(
            lambda m: ReportNoisyMax(epsilon=1.0, noise="exponential", mode=m)
        ),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--secure-draws", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)

    print(f"{'mechanism':26s} {'reproducible s/1M':>18s} {'secure s/1M':>12s} {'ratio':>8s}")
    for name, (reproducible, secure) in _cases().items():
        rep_times, sec_times = [], []
        for _ in range(args.rounds):  # alternate so both modes see the same load
            rep_times.append(_per_million(reproducible, MILLION))
            sec_times.append(_per_million(secure, args.secure_draws))
        rep, sec = statistics.median(rep_times), statistics.median(sec_times)
        print(f"{name:26s} {rep:18.3f} {sec:12.2f} {sec / rep:8.0f}x")
    print(
        "\nsecure = exact CKS samplers on OS entropy (pure Python); "
        "reproducible = vectorised numpy.\n"
        "Selection rows count as 10 draws each (one per candidate)."
    )


if __name__ == "__main__":
    main()
