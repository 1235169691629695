"""Calibration checks of ``ring-nb``'s attacks (:mod:`simulations.leakage.calibrate_attacks`)."""

from __future__ import annotations

from typing import Any

from ppknn.simulations.leakage.calibrate_attacks import (
    CONTROL,
    PLANTED,
    Check,
    Variant,
    held_out_as_members,
)


def scenario(seed: int) -> dict[str, Any]:
    """Five banknote owners, ε = 1, 200 held-out rows, the ring sum, in-process."""
    return {"run": {"name": "calibration-ring-nb", "seed": seed, "output": "unused"},
            "data": {"dataset": "banknote", "test_fraction": 0.3333, "max_queries": 200,
                     "bounds": {"lower": [-8.0, -14.0, -6.0, -9.0],
                                "upper": [7.0, 13.0, 18.0, 3.0]}},
            "parties": {"n": 5},
            "protocol": {"name": "ring-nb", "epsilon": 1.0},
            "runtime": {"kind": "inprocess", "channels": False}}


SHARED = Variant("shared sum", {"protocol": {"secure_sum": "shared"}})
WEAK_MI = ("the released model is two moments per class and feature of ~900 rows: one "
           "record moves it by about 1/900 of a range, below what 100 members and 100 "
           "held-out rows resolve even without noise (the worst-case audit, `ppknn audit`, "
           "is the check with power)")
ONE_TRIAL = ("one run holds one aggregate: one paired trial, whose 95% interval cannot "
             "exclude 0 however exact the recovery (the rate itself is 1 in every planted "
             "seed)")

CHECKS = (
    Check("model-membership-inference", CONTROL,
          "both samples held-out rows (the model saw neither): a random half named members",
          alter=held_out_as_members),
    Check("model-membership-inference", PLANTED,
          "ε = 10^6 (noise off): the model's exact statistics",
          variant=Variant("ε = 10^6", {"protocol": {"epsilon": 1e6}}), limit=WEAK_MI),
    Check("secure-sum-neighbours", CONTROL,
          "the secret-shared sum: no mask the two neighbours can subtract (the five targets' "
          "rows pooled)", variant=SHARED, pool=True),
    Check("secure-sum-neighbours", PLANTED,
          "the ring sum: its two neighbours hold what the target added (the five targets' "
          "rows pooled)", pool=True),
    Check("start-node-aggregate", CONTROL,
          "the secret-shared sum: the start node holds no mask to subtract", variant=SHARED),
    Check("start-node-aggregate", PLANTED,
          "the ring sum: the start node unmasks the total by design", limit=ONE_TRIAL),
)
"""The checks (one control and one planted leak per default attack)."""
