"""Calibration checks of ``dp-knn``'s attacks (:mod:`simulations.leakage.calibrate_attacks`)."""

from __future__ import annotations

from typing import Any

from ppknn.simulations.leakage.calibrate_attacks import (
    CONTROL,
    PLANTED,
    Check,
    Variant,
    permute,
    uniform_rows,
)


def scenario(seed: int) -> dict[str, Any]:
    """Two analysts of 50 phoneme instances each, r-N at ε = 0.5, in-process."""
    return {"run": {"name": "calibration-dp-knn", "seed": seed, "output": "unused"},
            "data": {"dataset": "phoneme", "test_fraction": 1 / 3, "max_queries": 100,
                     "scale": "minmax", "bounds": {"lower": [-2.0] * 5, "upper": [5.0] * 5}},
            "parties": {"n": 1, "analysts": 2},
            "protocol": {"name": "dp-knn", "task": "rn", "algorithm": "proposed",
                         "epsilon": 0.5, "radius": 0.1},
            "runtime": {"kind": "inprocess", "channels": False}}


NO_NOISE = Variant("ε = 1000", {"protocol": {"epsilon": 1000.0}})

CHECKS = (
    Check("analyst-label-inference", CONTROL,
          "the noiseless labels permuted across the instances (claims carry nothing of them)",
          alter=permute("nonprivate")),
    Check("analyst-label-inference", PLANTED,
          "ε = 1000 per request (noise off): the answers are the noiseless labels",
          variant=NO_NOISE),
    Check("owner-sees-queries", CONTROL,
          "the analysts' instances replaced by rows drawn independently (uniform on the "
          "scaled domain): none is in the owner's view", alter=uniform_rows("queries")),
    Check("owner-sees-queries", PLANTED,
          "the honest run: the owner reads the instances by design"),
)
"""The checks (one control and one planted leak per default attack)."""
