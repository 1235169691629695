"""Control runs of the single-run membership test: how often an honest release is flagged.

An honest ε-DP release must be called "above bound" in at most the test's 5%
of runs. :func:`membership_control` runs a protocol (one whose attacks
include the membership test: :func:`protocols`) at a given ε over many
seeds on one dataset, in-process, at the comparison's settings
(``scale = "minmax"``, 100 queries, four owners, the declared bounds below),
and counts the seeds in which any membership row of the run is above
its bound (the comparison's reading: a seed's figure is its largest bound).

The four class-sorted files (``seeds``, ``banknote``, ``glass``, ``wine``) are
where a biased sample (the first rows of a sorted split, one class) made the
test separate classes instead of members::

    python -m ppknn.simulations.leakage.controls            # 4 files x 2 protocols x 100 seeds
    python -m ppknn.simulations.leakage.controls --seeds 20 --datasets seeds
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ppknn.core.errors import PrivacyLeakWarning
from ppknn.core.leakage import wilson_interval

SORTED_FILES = ("seeds", "banknote", "glass", "wine")
"""The class-sorted files of the package (rows grouped by class)."""

BOUNDS: dict[str, tuple[list[float], list[float]]] = {
    # the comparison's declared bounds (each dataset's range rounded outward)
    "seeds": ([10.0, 12.0, 0.8, 4.0, 2.0, 0.0, 4.0], [30.0, 18.0, 1.0, 7.0, 5.0, 9.0, 7.0]),
    "banknote": ([-10.0, -20.0, -10.0, -10.0], [10.0, 20.0, 20.0, 10.0]),
    "glass": ([1.51, 10.0, 0.0, 0.0, 69.0, 0.0, 0.0, 0.0, 0.0],
              [1.54, 18.0, 5.0, 4.0, 76.0, 7.0, 20.0, 4.0, 0.6]),
    "wine": ([11.0, 0.0, 1.0, 10.0, 70.0, 0.0, 0.0, 0.1, 0.0, 0.0, 0.0, 1.0, 0.0],
             [15.0, 6.0, 4.0, 30.0, 170.0, 4.0, 6.0, 0.7, 4.0, 20.0, 2.0, 4.0, 2000.0]),
}
"""Declared public bounds per dataset (``lower``, ``upper``)."""

ATTACK = "model-membership-inference"


def protocols() -> list[str]:
    """The registered protocols whose attacks include :data:`ATTACK` (the controls' choice)."""
    from ppknn.simulations import registry
    from ppknn.simulations.leakage import attacks

    return [n for n in registry.names() if ATTACK in attacks.allowed(n)]


@dataclass(frozen=True)
class ControlResult:
    """Seeds flagged "above bound" among those run."""

    protocol: str
    dataset: str
    epsilon: float
    seeds: int
    above: int
    largest_lower_bound: float

    @property
    def rate(self) -> float:
        """The share of seeds flagged."""
        return self.above / self.seeds if self.seeds else math.nan

    def line(self) -> str:
        """One line of the report."""
        lo, hi = wilson_interval(self.above, self.seeds)
        return (f"{self.protocol:8s} {self.dataset:9s} ε = {self.epsilon:g}: {self.above} of "
                f"{self.seeds} seeds above bound ({self.rate:.1%}, Wilson 95% [{lo:.3f}, "
                f"{hi:.3f}]); largest lower bound {self.largest_lower_bound:.3g}")


def control_scenario(protocol: str, dataset: str, seed: int, epsilon: float) -> dict[str, Any]:
    """The scenario of one control run (module docstring)."""
    allowed = protocols()
    if protocol not in allowed:
        raise ValueError(f"protocol {protocol!r}: allowed {allowed}")
    if dataset not in BOUNDS:
        raise ValueError(f"dataset {dataset!r}: allowed {list(BOUNDS)}")
    lower, upper = BOUNDS[dataset]
    return {"run": {"name": f"control-{protocol}-{dataset}", "seed": seed, "output": "unused"},
            "data": {"dataset": dataset, "scale": "minmax", "max_queries": 100,
                     "bounds": {"lower": lower, "upper": upper}},
            "parties": {"n": 4},
            "protocol": {"name": protocol, "epsilon": epsilon},
            "runtime": {"kind": "inprocess", "channels": False}}


def membership_control(protocol: str, dataset: str, seeds: Sequence[int], *,
                       epsilon: float = 0.1) -> ControlResult:
    """Run ``protocol`` on ``dataset`` for each seed; count the seeds flagged above bound."""
    from ppknn.simulations.leakage.measure import run_table
    from ppknn.simulations.runner import execute
    from ppknn.simulations.scenario import parse_scenario

    above, largest = 0, -math.inf
    for seed in seeds:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            result = execute(parse_scenario(control_scenario(protocol, dataset, seed,
                                                             epsilon)))
        rows = [r for r in run_table(result, save=False) if r.attack == ATTACK]
        if not rows:
            raise RuntimeError(f"{protocol} on {dataset}, seed {seed}: no {ATTACK} row")
        lows = [r.ci_low for r in rows if math.isfinite(r.ci_low)]
        largest = max([largest, *lows])
        above += any(r.verdict == "above bound" for r in rows)
    return ControlResult(protocol, dataset, epsilon, len(seeds), above, largest)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line (module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m ppknn.simulations.leakage.controls",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=100, help="seeds 0..N-1 (default 100)")
    parser.add_argument("--epsilon", type=float, default=0.1)
    parser.add_argument("--datasets", nargs="+", default=list(SORTED_FILES),
                        choices=sorted(BOUNDS))
    parser.add_argument("--protocols", nargs="+", default=protocols(), choices=protocols())
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error(f"--seeds {args.seeds}: allowed >= 1")
    if not (math.isfinite(args.epsilon) and args.epsilon > 0):
        parser.error(f"--epsilon {args.epsilon}: allowed a finite value > 0")
    for protocol in args.protocols:
        for dataset in args.datasets:
            res = membership_control(protocol, dataset, range(args.seeds), epsilon=args.epsilon)
            print(res.line(), flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
