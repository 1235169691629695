# examples/dp_count/src/dp_count/calibration.py
"""Calibration of the attack: a control where nothing leaks, a planted leak.

ppknn's attack calibration (``python -m ppknn.simulations.leakage.calibrate --only
attacks``) finds this module beside the plugin and runs each check over many seeds: the
control must flag at most 5% of them, the planted leak at least 95%.
"""

from __future__ import annotations

from typing import Any

from ppknn.simulations.leakage.calibrate_attacks import (
    CONTROL,
    PLANTED,
    Check,
    Variant,
    permute,
)


def scenario(seed: int) -> dict[str, Any]:
    """The example scenario, in-process, on the seed asked for."""
    return {"run": {"name": "calibration-dp-count", "seed": seed, "output": "unused"},
            "data": {"dataset": "sklearn:iris", "max_queries": 30, "scale": "minmax",
                     "bounds": {"lower": [4.0, 2.0, 1.0, 0.0],
                                "upper": [8.0, 4.5, 7.0, 2.6]}},
            "parties": {"analysts": 2},
            "protocol": {"name": "dp-count", "epsilon": 1.0, "radius": 0.2},
            "runtime": {"kind": "inprocess"}}


CHECKS = (
    Check("count-rounding", CONTROL,
          "the true counts permuted across the queries: the noisy ones say nothing of them",
          alter=permute("counts")),
    Check("count-rounding", PLANTED,
          "an owner adding 1% of the noise it charges for",
          variant=Variant("weak noise", deviation=({"party": "owner",
                                                    "kind": "weak-noise-count",
                                                    "params": {"scale": 0.01}},))),
)
"""One control and one planted leak of the attack."""
